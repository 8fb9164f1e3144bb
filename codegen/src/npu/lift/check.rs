//! The program's GM accesses against the kernel's, proved with isl for every instance.

use super::{accesses, Access, Kind, Traffic};
use crate::npu::NpuError;
use frontend::ir::{ArrayId, Kernel, Role};
use npu_sim::program::{elements, Direction, Program, TensorId};
use npu_sim::Machine;
use poly::isl::{Ctx, End, IslError, Map, Set};
use poly::model::isl_text::isl_name;
use std::collections::BTreeMap;

/// What a check found wrong.
#[derive(Debug)]
enum Wrong {
    /// An access outside its tensor.
    Outside,
    /// Two instances of one store write the same element.
    Twice,
    /// Two stores write the same element (the other named).
    Both(String),
    /// A store or an add writes an element the kernel does not.
    Foreign,
    /// The stores, none twice and none foreign, write fewer elements than the kernel (how
    /// many each).
    Unwritten {
        /// Elements the stores write.
        stored: u64,
        /// Elements the kernel writes.
        kernel: u64,
    },
    /// No load reads an element the kernel reads.
    Unloaded,
}

/// A problem, found at which instruction.
struct Found {
    wrong: Wrong,
    what: String,
    /// A flat element where it shows, if one was asked for.
    at: Option<i64>,
}

/// Proves, for every instance of `program`'s `dma`s on `machine`'s cores:
/// - every GM access lies within its tensor;
/// - for the tensor of an array the kernel writes: the stores write every element the kernel
///   writes exactly once and no other (an atomic add is not a store: its elements must be
///   ones the kernel writes); a temporary the program keeps on chip is not stored at all;
///   a tensor that is none of the kernel's arrays must be a workspace (`scratch`, and
///   no array may be), whose accesses are only kept in bounds;
/// - for the tensor of an input array: the loads read every element the kernel reads.
///
/// Each is a question of emptiness to isl (no projection or set difference of the
/// program's relations, which isl answers slowly where they have many divisions): an
/// instance outside, two instances storing one element, an instance storing an element
/// the kernel does not write; then, with none of these, the stores' executions counted
/// (`count * len` each) equal the elements the kernel writes. Which elements the loads
/// read is marked from the simulator's walk of the program ([`Traffic`]): the union of the loads' images,
/// against the kernel's reads, is the projection isl answers slowly.
///
/// A failure is an internal error naming the instruction and an element.
pub fn check(
    kernel: &Kernel,
    params: &BTreeMap<String, i64>,
    program: &Program,
    machine: &Machine,
) -> Result<(), NpuError> {
    let ctx = Ctx::default();
    let model = poly::model::Program::build(&ctx, kernel, params)
        .map_err(|e| NpuError::Internal(format!("lifting the kernel to check its program: {e}")))?;
    let all = {
        let _analysis = ctx.analysis();
        accesses(&ctx, program, machine.cores as i64)?
    };
    let traffic = Traffic::of(program, machine)?;
    for (t, decl) in program.tensors.iter().enumerate() {
        let array = kernel.array_by_name(&decl.name);
        // the kernel's arrays are given or read back; any other tensor is a workspace
        if array.is_some() == (decl.dir == Direction::Scratch) {
            return Err(NpuError::Internal(format!(
                "GM tensor `{}` is declared `{}` but is {} of the kernel's arrays",
                decl.name,
                decl.dir,
                if array.is_some() { "one" } else { "none" }
            )));
        }
        let tensor = Tensor {
            id: TensorId(t as u32),
            shape: &decl.shape,
            array,
            traffic: &traffic,
        };
        let mine: Vec<&Access> = (all.iter()).filter(|a| a.tensor == tensor.id).collect();
        // each tensor's proof has a budget of its own
        let _analysis = ctx.analysis();
        let found = tensor.check(&ctx, &model, &mine).map_err(|e| match e {
            // isl's limit, not a fault of the program: the user may try other sizes
            IslError::OperationLimit(_) => NpuError::Unsupported(format!(
                "proving the program's stores into `{}` took isl beyond its budget: {e}",
                decl.name
            )),
            e => NpuError::Internal(format!("checking the accesses to `{}`: {e}", decl.name)),
        })?;
        if let Some(f) = found {
            return Err(NpuError::Internal(f.describe(&decl.name)));
        }
    }
    Ok(())
}

impl Found {
    fn describe(&self, tensor: &str) -> String {
        let what = &self.what;
        let at = match self.at {
            Some(at) => format!(" (flat element {at})"),
            None => String::new(),
        };
        let said = match &self.wrong {
            Wrong::Outside => format!("{what} touches an element outside `{tensor}`{at}"),
            Wrong::Twice => format!("{what} stores the same element of `{tensor}` twice{at}"),
            Wrong::Both(other) => {
                format!("{what} and {other} store the same element of `{tensor}`{at}")
            }
            Wrong::Foreign => {
                format!("{what} stores an element of `{tensor}` the kernel does not write{at}")
            }
            Wrong::Unwritten { stored, kernel } => format!(
                "the stores write {stored} elements of `{tensor}`, once each, where the kernel writes {kernel}"
            ),
            Wrong::Unloaded => {
                format!("{what} leave unread an element of `{tensor}` the kernel reads{at}")
            }
        };
        format!("{said}; found by isl over every instance of the program")
    }
}

/// One GM tensor of the program.
struct Tensor<'a> {
    id: TensorId,
    shape: &'a [u64],
    /// The kernel's array of the same name, if any.
    array: Option<ArrayId>,
    /// What the program's executions move.
    traffic: &'a Traffic,
}

impl Tensor<'_> {
    /// The checks of [`check`] on this tensor's accesses `mine`.
    fn check(
        &self,
        ctx: &Ctx,
        model: &poly::model::Program,
        mine: &[&Access],
    ) -> Result<Option<Found>, IslError> {
        let t = &self.name();
        let size = elements(self.shape);
        let outside = ctx.set(&format!("{{ {t}[f] : f < 0 or f >= {size} }}"))?;
        for a in mine {
            if let Some(f) = hit(Wrong::Outside, a, &a.map.intersect_range(&outside)?)? {
                return Ok(Some(f));
            }
        }
        let Some(array) = self.array else {
            return Ok(None);
        };
        let (stores, adds): (Vec<&Access>, Vec<&Access>) = (mine.iter())
            .filter(|a| a.kind != Kind::Load)
            .partition(|a| a.kind == Kind::Store);
        let role = model.kernel.array(array).role;
        if role == Role::In {
            if let Some(f) = self.loads(ctx, model, array)? {
                return Ok(Some(f));
            }
        }
        if role == Role::Temp && stores.is_empty() && adds.is_empty() {
            // kept on chip
            return Ok(None);
        }
        let writes = (model.statements.iter())
            .filter(|s| s.write.array == array)
            .map(|s| s.write.relation.clone());
        let written = self.footprint(ctx, model, array, writes)?;
        let foreign = whole(ctx, t, size)?.subtract(&written)?;
        for a in stores.iter().chain(&adds) {
            if let Some(f) = hit(Wrong::Foreign, a, &a.map.intersect_range(&foreign)?)? {
                return Ok(Some(f));
            }
        }
        if let Some(f) = once(&stores)? {
            return Ok(Some(f));
        }
        let (stored, kernel) = (
            self.traffic.stored[self.id.0 as usize],
            count(&written, size)?,
        );
        if stored != kernel {
            let wrong = Wrong::Unwritten { stored, kernel };
            let what = "the program's stores".into();
            return Ok(Some(Found {
                wrong,
                what,
                at: None,
            }));
        }
        Ok(None)
    }

    /// The loads of an input array read every element the kernel reads for its outputs
    /// (not what a copy into a temporary reads for elements nothing reads back).
    fn loads(
        &self,
        ctx: &Ctx,
        model: &poly::model::Program,
        array: ArrayId,
    ) -> Result<Option<Found>, IslError> {
        let size = elements(self.shape);
        let Some(first) = self.traffic.first_unloaded(self.id, size) else {
            return Ok(None);
        };
        let reads = (model.statements.iter())
            .flat_map(|s| (s.reads.iter().filter(|r| r.array == array)).map(move |r| (s, r)))
            .map(|(s, r)| live(model, s, &r.relation))
            .collect::<Result<Vec<Map>, IslError>>()?;
        let read = self.footprint(ctx, model, array, reads.into_iter())?;
        let at = if read.is_equal(&whole(ctx, &self.name(), size)?)? {
            Some(first)
        } else {
            // the kernel reads part of the tensor: each element it reads
            (read.points()?.into_iter())
                .map(|p| p[0])
                .find(|&f| !self.traffic.is_loaded(self.id, f))
        };
        let what = "the program's loads".into();
        Ok(at.map(|at| Found {
            wrong: Wrong::Unloaded,
            what,
            at: Some(at),
        }))
    }

    /// The tensor's isl tuple name in the accesses.
    fn name(&self) -> String {
        format!("T{}", self.id.0)
    }

    /// The flat elements of the tensor that `accesses` (`{ S[..] -> A[..] }`) touch, with
    /// the kernel's parameters at their values.
    fn footprint(
        &self,
        ctx: &Ctx,
        model: &poly::model::Program,
        array: ArrayId,
        accesses: impl Iterator<Item = Map>,
    ) -> Result<Set, IslError> {
        let flat = self.flatten(ctx, model, array)?;
        let mut out = ctx.set(&format!("{{ {}[f] : 1 = 0 }}", self.name()))?;
        for a in accesses {
            let elems = a.range()?.intersect_params(&model.context)?;
            out = out.union(
                &flat
                    .intersect_domain(&elems)?
                    .range()?
                    .project_out_all_params()?,
            )?;
        }
        out.coalesce()
    }

    /// `{ A[i..] -> T[f] }`: the array's elements at their row-major flat index (a scalar
    /// is the tensor's one element).
    fn flatten(
        &self,
        ctx: &Ctx,
        model: &poly::model::Program,
        array: ArrayId,
    ) -> Result<Map, IslError> {
        let a = model.kernel.array(array);
        let n = a.dims.len();
        let idx: Vec<String> = (0..n).map(|k| format!("i{k}")).collect();
        let mut flat = "0".to_string();
        let mut weight = 1u64;
        for (k, &extent) in self.shape.iter().enumerate().rev().filter(|&(k, _)| k < n) {
            flat = format!("{flat} + {weight}*i{k}");
            weight *= extent;
        }
        ctx.map(&format!(
            "{{ {}[{}] -> {}[f] : f = {flat} }}",
            isl_name(&a.name),
            idx.join(", "),
            self.name()
        ))
    }
}

/// `Some` problem `wrong` of `a` if `at` (instances of `a` and the elements they touch)
/// is not empty.
fn hit(wrong: Wrong, a: &Access, at: &Map) -> Result<Option<Found>, IslError> {
    if at.is_empty()? {
        return Ok(None);
    }
    Ok(Some(Found {
        wrong,
        what: a.what.clone(),
        at: element(&at.range()?)?,
    }))
}

/// No store of `stores` writes an element twice, nor two of them the same element.
fn once(stores: &[&Access]) -> Result<Option<Found>, IslError> {
    for (k, a) in stores.iter().enumerate() {
        // pairs of different instances writing the same element
        let same = a.map.apply_range(&a.map.reverse()?)?;
        let twice = same.intersect(&distinct(&a.map)?)?;
        if !twice.is_empty()? {
            return hit(Wrong::Twice, a, &a.map.intersect_domain(&twice.domain()?)?);
        }
        for b in &stores[k + 1..] {
            let both = a.map.apply_range(&b.map.reverse()?)?;
            if !both.is_empty()? {
                let at = a.map.intersect_domain(&both.domain()?)?;
                return hit(Wrong::Both(b.what.clone()), a, &at);
            }
        }
    }
    Ok(None)
}

/// Every element of tensor `t` (its isl tuple name) of `size` elements.
fn whole(ctx: &Ctx, t: &str, size: u64) -> Result<Set, IslError> {
    ctx.set(&format!("{{ {t}[f] : 0 <= f < {size} }}"))
}

/// The number of elements of `set`, a set of flat elements of a tensor of `size`.
fn count(set: &Set, size: u64) -> Result<u64, IslError> {
    let t = set.tuple_name().unwrap_or_default();
    if set.is_equal(&whole(set.ctx(), &t, size)?)? {
        return Ok(size);
    }
    Ok(set.points()?.len() as u64)
}

/// `{ I[x] -> I[y] : x != y }` on the instances of `map` (`{ I[..] -> .. }`).
fn distinct(map: &Map) -> Result<Map, IslError> {
    let name = map.tuple_name_of(End::Source);
    let n = map.n_dims(End::Source)?;
    let (xs, ys): (Vec<String>, Vec<String>) =
        (0..n).map(|k| (format!("x{k}"), format!("y{k}"))).unzip();
    let differ: Vec<String> = (0..n).map(|k| format!("x{k} != y{k}")).collect();
    map.ctx().map(&format!(
        "{{ {name}[{}] -> {name}[{}] : {} }}",
        xs.join(", "),
        ys.join(", "),
        differ.join(" or ")
    ))
}

/// One element of a set of flat tensor elements, if it has any.
fn element(set: &Set) -> Result<Option<i64>, IslError> {
    if set.is_empty()? {
        return Ok(None);
    }
    Ok(set.sample()?.points_up_to(1)?.first().map(|p| p[0]))
}

/// The instances of `read` (a read of statement `s`) whose value can reach an output: all of
/// them, unless `s` writes a temporary, then those whose element some statement reads.
fn live(
    model: &poly::model::Program,
    s: &poly::model::Statement,
    read: &Map,
) -> Result<Map, IslError> {
    let temp = s.write.array;
    if model.kernel.array(temp).role != Role::Temp {
        return Ok(read.clone());
    }
    let mut used = s
        .write
        .relation
        .range()?
        .subtract(&s.write.relation.range()?)?;
    for t in &model.statements {
        for r in t.reads.iter().filter(|r| r.array == temp) {
            used = used.union(&r.relation.intersect_domain(&t.domain)?.range()?)?;
        }
    }
    let instances = s.write.relation.intersect_range(&used)?.domain()?;
    read.intersect_domain(&instances)
}
