//! [`Obj`]: an isl object together with the context it lives in.

use super::{ffi, Ctx, IslError, IslResult};
use isl_rs::{Context, DimType, LibISLError};
use libc::{c_int, c_void, uintptr_t};
use std::ffi::CStr;
use std::fmt;

/// What [`Obj`] needs of an isl-rs type. Crate-private: no other crate sees isl-rs types.
pub(crate) trait RawIsl: Sized {
    /// The isl-rs object's raw pointer.
    fn ptr(&self) -> uintptr_t;
    /// Takes ownership of a raw pointer.
    ///
    /// # Safety
    /// `ptr` must be a non-null, owned (`__isl_give`) pointer to an object of this type.
    unsafe fn from_ptr(ptr: uintptr_t) -> Self;
    /// Gives up ownership: the pointer will not be freed by this value.
    fn into_ptr(self) -> uintptr_t;
    /// A new reference to the same object.
    fn copy_raw(&self) -> Result<Self, LibISLError>;
    /// Prints the object in isl's notation (caller frees the string).
    ///
    /// # Safety
    /// `ptr` must point to a live object of this type.
    unsafe fn print(ptr: uintptr_t) -> *mut libc::c_char;
}

/// isl-rs types that isl can parse from its notation.
pub(crate) trait Parse: RawIsl {
    /// Parses the object from isl's notation.
    fn read(ctx: &Context, text: &str) -> Result<Self, LibISLError>;
}

macro_rules! raw_isl {
    ($ty:ident, $print:ident) => {
        impl RawIsl for isl_rs::$ty {
            fn ptr(&self) -> uintptr_t {
                self.ptr
            }
            unsafe fn from_ptr(ptr: uintptr_t) -> Self {
                isl_rs::$ty {
                    ptr,
                    should_free_on_drop: true,
                }
            }
            fn into_ptr(mut self) -> uintptr_t {
                self.do_not_free_on_drop();
                self.ptr
            }
            fn copy_raw(&self) -> Result<Self, LibISLError> {
                self.copy()
            }
            unsafe fn print(ptr: uintptr_t) -> *mut libc::c_char {
                unsafe { ffi::$print(ptr) }
            }
        }
    };
    ($ty:ident, $print:ident, parse) => {
        raw_isl!($ty, $print);
        impl Parse for isl_rs::$ty {
            fn read(ctx: &Context, text: &str) -> Result<Self, LibISLError> {
                isl_rs::$ty::read_from_str(ctx, text)
            }
        }
    };
}

raw_isl!(Set, isl_set_to_str, parse);
raw_isl!(Map, isl_map_to_str, parse);
raw_isl!(UnionSet, isl_union_set_to_str, parse);
raw_isl!(UnionMap, isl_union_map_to_str, parse);
raw_isl!(BasicSet, isl_basic_set_to_str, parse);
raw_isl!(Schedule, isl_schedule_to_str, parse);
raw_isl!(Val, isl_val_to_str, parse);
raw_isl!(ScheduleNode, isl_schedule_node_to_str);

/// An isl object and its context. Cloning shares the object (isl reference counting).
#[allow(private_bounds)]
pub struct Obj<T: RawIsl> {
    // Declared before `ctx` so that it is dropped first: the context outlives its objects.
    raw: T,
    ctx: Ctx,
}

/// An isl set (`isl_set`).
pub type Set = Obj<isl_rs::Set>;
/// An isl relation (`isl_map`).
pub type Map = Obj<isl_rs::Map>;
/// A union of sets in different spaces (`isl_union_set`).
pub type UnionSet = Obj<isl_rs::UnionSet>;
/// A union of relations in different spaces (`isl_union_map`).
pub type UnionMap = Obj<isl_rs::UnionMap>;
/// A convex set (`isl_basic_set`), e.g. the Farkas dual of a polyhedron.
pub type BasicSet = Obj<isl_rs::BasicSet>;
/// A schedule tree (`isl_schedule`).
pub type Schedule = Obj<isl_rs::Schedule>;
/// A rational value (`isl_val`).
pub type Val = Obj<isl_rs::Val>;
/// A position in a schedule tree (`isl_schedule_node`), see `isl::node`.
pub type ScheduleNode = Obj<isl_rs::ScheduleNode>;

/// An integer point, as its coordinates (parameters first are not included: set dimensions
/// only).
pub type Point = Vec<i64>;

#[allow(private_bounds)]
impl<T: RawIsl> Obj<T> {
    /// Wraps a raw isl-rs object made in `ctx`.
    pub(crate) fn from_raw(ctx: &Ctx, raw: T) -> Obj<T> {
        Obj {
            raw,
            ctx: ctx.clone(),
        }
    }
    /// The context the object lives in.
    pub fn ctx(&self) -> &Ctx {
        &self.ctx
    }
    /// The raw isl pointer, valid while `self` lives (for hand-declared isl functions that
    /// take the object without consuming it, `__isl_keep`).
    pub(crate) fn ptr(&self) -> uintptr_t {
        self.raw.ptr()
    }
    /// Whether `self` and `other` are the very same isl object (not merely equal sets: a
    /// cheap test that a value was handed on unchanged).
    pub fn is_same_object(&self, other: &Self) -> bool {
        self.ptr() == other.ptr()
    }
    /// A new owned reference as a raw isl-rs object, for isl-rs functions that consume it.
    pub(crate) fn to_raw(&self) -> T {
        self.raw
            .copy_raw()
            .expect("copying an isl object only increments its reference count")
    }
    /// A new owned raw pointer (`__isl_take` arguments of hand-declared isl functions).
    pub(crate) fn to_ptr(&self) -> uintptr_t {
        self.to_raw().into_ptr()
    }
    /// Applies an isl-rs operation that consumes a copy of `self`.
    pub(crate) fn apply<U: RawIsl>(
        &self,
        f: impl FnOnce(T) -> Result<U, LibISLError>,
    ) -> IslResult<Obj<U>> {
        let out = self.ctx.check(f(self.to_raw()))?;
        Ok(Obj::from_raw(&self.ctx, out))
    }
    /// Applies an isl-rs operation that consumes copies of `self` and `other`.
    pub(crate) fn apply2<A: RawIsl, U: RawIsl>(
        &self,
        other: &Obj<A>,
        f: impl FnOnce(T, A) -> Result<U, LibISLError>,
    ) -> IslResult<Obj<U>> {
        let out = self.ctx.check(f(self.to_raw(), other.to_raw()))?;
        Ok(Obj::from_raw(&self.ctx, out))
    }
    /// Evaluates an isl-rs query that borrows `self`.
    pub(crate) fn query<R>(&self, f: impl FnOnce(&T) -> Result<R, LibISLError>) -> IslResult<R> {
        self.ctx.check(f(&self.raw))
    }
}

impl<T: RawIsl> Clone for Obj<T> {
    fn clone(&self) -> Self {
        Obj::from_raw(&self.ctx, self.to_raw())
    }
}

impl<T: RawIsl> fmt::Display for Obj<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Printing must work even after the budget ran out: lift the limit (0 = none) for the
        // call and restore it, so an exhausted analysis stays exhausted.
        let raw_ctx = self.ctx.raw();
        let budget = raw_ctx.get_max_operations();
        raw_ctx.set_max_operations(0);
        // SAFETY: `self.raw` is a live object of type T; isl returns a malloc'd string we own.
        let printed = unsafe { T::print(self.raw.ptr()) };
        raw_ctx.set_max_operations(budget);
        unsafe {
            let s = printed;
            if s.is_null() {
                return f.write_str("<isl: unprintable>");
            }
            let text = CStr::from_ptr(s).to_string_lossy().into_owned();
            libc::free(s as *mut c_void);
            f.write_str(&text)
        }
    }
}

impl<T: RawIsl> fmt::Debug for Obj<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Set-like operations shared by sets, maps and their unions.
macro_rules! lattice_ops {
    ($raw:ty) => {
        impl Obj<$raw> {
            /// Union.
            pub fn union(&self, other: &Self) -> IslResult<Self> {
                self.apply2(other, |a, b| a.union(b))
            }
            /// Intersection.
            pub fn intersect(&self, other: &Self) -> IslResult<Self> {
                self.apply2(other, |a, b| a.intersect(b))
            }
            /// Difference.
            pub fn subtract(&self, other: &Self) -> IslResult<Self> {
                self.apply2(other, |a, b| a.subtract(b))
            }
            /// Whether it has no element (for all parameter values).
            pub fn is_empty(&self) -> IslResult<bool> {
                self.query(|a| a.is_empty())
            }
            /// Set equality.
            pub fn is_equal(&self, other: &Self) -> IslResult<bool> {
                self.query(|a| a.is_equal(&other.raw))
            }
            /// Inclusion.
            pub fn is_subset(&self, other: &Self) -> IslResult<bool> {
                self.query(|a| a.is_subset(&other.raw))
            }
            /// A simpler representation of the same set, or the set as it is when isl's
            /// coalescing fails: it is only a simplification, and isl 0.27 stops some with
            /// an internal error ("cannot relax redundant constraint", on the anti
            /// dependences of fuzz seed 76). An exhausted budget is still an error.
            pub fn coalesce(&self) -> IslResult<Self> {
                match self.apply(|a| a.coalesce()) {
                    Err(IslError::Isl(_)) => Ok(self.clone()),
                    other => other,
                }
            }
            /// Restricts the parameters to those in `params`.
            pub fn intersect_params(&self, params: &Set) -> IslResult<Self> {
                self.apply2(params, |a, p| a.intersect_params(p))
            }
            /// The parameter values for which it is non-empty.
            pub fn params(&self) -> IslResult<Set> {
                self.apply(|a| a.params())
            }
            /// Lexicographic minimum (per space, per parameter value).
            pub fn lexmin(&self) -> IslResult<Self> {
                self.apply(|a| a.lexmin())
            }
            /// Lexicographic maximum (per space, per parameter value).
            pub fn lexmax(&self) -> IslResult<Self> {
                self.apply(|a| a.lexmax())
            }
        }

        impl PartialEq for Obj<$raw> {
            /// Set equality (isl's `is_equal`); an isl failure compares unequal.
            fn eq(&self, other: &Self) -> bool {
                self.is_equal(other).unwrap_or(false)
            }
        }
    };
}

lattice_ops!(isl_rs::Set);
lattice_ops!(isl_rs::Map);
lattice_ops!(isl_rs::UnionSet);
lattice_ops!(isl_rs::UnionMap);

/// Relation operations shared by maps and union maps.
macro_rules! relation_ops {
    ($raw:ty, $set:ty) => {
        impl Obj<$raw> {
            /// The inverse relation.
            pub fn reverse(&self) -> IslResult<Self> {
                self.apply(|a| a.reverse())
            }
            /// Composition: `self` then `other` (`x -> other(self(x))`).
            pub fn apply_range(&self, other: &Self) -> IslResult<Self> {
                self.apply2(other, |a, b| a.apply_range(b))
            }
            /// Maps the domain through `other`.
            pub fn apply_domain(&self, other: &Self) -> IslResult<Self> {
                self.apply2(other, |a, b| a.apply_domain(b))
            }
            /// The domain.
            pub fn domain(&self) -> IslResult<Obj<$set>> {
                self.apply(|a| a.domain())
            }
            /// The range.
            pub fn range(&self) -> IslResult<Obj<$set>> {
                self.apply(|a| a.range())
            }
            /// Restricts the domain.
            pub fn intersect_domain(&self, dom: &Obj<$set>) -> IslResult<Self> {
                self.apply2(dom, |a, d| a.intersect_domain(d))
            }
            /// Restricts the range.
            pub fn intersect_range(&self, ran: &Obj<$set>) -> IslResult<Self> {
                self.apply2(ran, |a, r| a.intersect_range(r))
            }
            /// The differences `y - x` of related pairs (domain and range in one space).
            pub fn deltas(&self) -> IslResult<Obj<$set>> {
                self.apply(|a| a.deltas())
            }
            /// The relation as a set of pairs `[x -> y]`.
            pub fn wrap(&self) -> IslResult<Obj<$set>> {
                self.apply(|a| a.wrap())
            }
        }
    };
}

relation_ops!(isl_rs::Map, isl_rs::Set);
relation_ops!(isl_rs::UnionMap, isl_rs::UnionSet);

impl UnionMap {
    /// The pairs `(x, y)` such that `self(x)` is lexicographically before `other(y)`.
    pub fn lex_lt_union_map(&self, other: &Self) -> IslResult<Self> {
        self.apply2(other, |a, b| a.lex_lt_union_map(b))
    }
    /// The pairs `(x, y)` such that `self(x)` is lexicographically at or after `other(y)`.
    pub fn lex_ge_union_map(&self, other: &Self) -> IslResult<Self> {
        self.apply2(other, |a, b| a.lex_ge_union_map(b))
    }
    /// Whether every element of the domain has at most one image.
    pub fn is_single_valued(&self) -> IslResult<bool> {
        self.query(|m| m.is_single_valued())
    }
    /// The maps of the union, one per pair of spaces.
    pub fn maps(&self) -> IslResult<Vec<Map>> {
        let mut out: Vec<Map> = Vec::new();
        foreach(
            self.ctx(),
            |f, user| unsafe { ffi::isl_union_map_foreach_map(self.ptr(), f, user) },
            &mut |ptr| {
                out.push(Obj::from_raw(self.ctx(), unsafe {
                    isl_rs::Map::from_ptr(ptr)
                }));
                true
            },
        )?;
        Ok(out)
    }
}

impl Map {
    /// The basic relations whose union the map is, each as a map.
    pub fn basic_maps(&self) -> IslResult<Vec<Map>> {
        let ctx = self.ctx();
        let list = self.query(|m| m.get_basic_map_list())?;
        (0..ctx.check(list.size())?)
            .map(|k| {
                let piece = ctx.check(list.get_at(k))?;
                Ok(Obj::from_raw(
                    ctx,
                    ctx.check(isl_rs::Map::from_basic_map(piece))?,
                ))
            })
            .collect()
    }
}

impl UnionSet {
    /// The sets of the union, one per space.
    pub fn sets(&self) -> IslResult<Vec<Set>> {
        let mut out: Vec<Set> = Vec::new();
        foreach(
            self.ctx(),
            |f, user| unsafe { ffi::isl_union_set_foreach_set(self.ptr(), f, user) },
            &mut |ptr| {
                out.push(Obj::from_raw(self.ctx(), unsafe {
                    isl_rs::Set::from_ptr(ptr)
                }));
                true
            },
        )?;
        Ok(out)
    }
    /// The identity relation on the union set.
    pub fn identity(&self) -> IslResult<UnionMap> {
        self.apply(|a| a.identity())
    }
}

impl Set {
    /// The name of the set's tuple (`S0` in `{ S0[i, j] }`), if any.
    pub fn tuple_name(&self) -> Option<String> {
        // isl-rs reads a NULL name (an anonymous tuple) as a C string: ask first.
        if !self.raw.has_tuple_name().unwrap_or(false) {
            return None;
        }
        self.raw
            .get_tuple_name()
            .ok()
            .map(str::to_owned)
            .filter(|n| !n.is_empty())
    }
    /// Number of set dimensions.
    pub fn n_dims(&self) -> IslResult<usize> {
        self.query(|s| s.dim(DimType::Set))
            .map(|d| d.max(0) as usize)
    }
    /// Fixes the parameter named `name` to `value` (no-op if the set has no such parameter).
    pub fn fix_param(&self, name: &str, value: i64) -> IslResult<Set> {
        let pos = self.query(|s| s.find_dim_by_name(DimType::Param, name))?;
        if pos < 0 {
            return Ok(self.clone());
        }
        let v = self
            .ctx
            .check(isl_rs::Val::int_from_si(self.ctx.raw(), value))?;
        self.apply(|s| s.fix_val(DimType::Param, pos as u32, v))
    }
    /// Every integer point of a bounded set (parameters must be fixed), in no particular
    /// order.
    ///
    /// The operation budget bounds the work spent finding each next point, not the whole
    /// enumeration, whose length the caller chose with the set: a schedule's order for
    /// gemm at 64^3 (266,000 instances, `polyc demo`) takes more than the whole budget.
    /// A coordinate beyond 64 bits is an error (isl would give 0 and record one).
    pub fn points(&self) -> IslResult<Vec<Point>> {
        self.points_up_to(usize::MAX)
    }

    /// At most `limit` integer points of a bounded set (the first ones isl's scan finds):
    /// what a report shows of a set that may be huge.
    pub fn points_up_to(&self, limit: usize) -> IslResult<Vec<Point>> {
        let n = self.n_dims()?;
        let mut out = Vec::new();
        foreach(
            self.ctx(),
            |f, user| unsafe { ffi::isl_set_foreach_point(self.ptr(), f, user) },
            &mut |pnt| {
                self.ctx().reset_budget();
                let coords = (0..n)
                    .map(|k| unsafe {
                        let v = ffi::isl_point_get_coordinate_val(
                            pnt,
                            DimType::Set.to_i32(),
                            k as c_int,
                        );
                        let x = ffi::isl_val_get_num_si(v);
                        ffi::isl_val_free(v);
                        x
                    })
                    .collect();
                unsafe { ffi::isl_point_free(pnt) };
                out.push(coords);
                out.len() < limit
            },
        )?;
        let raw = self.ctx().raw();
        if raw.last_error() != isl_rs::Error::None_ {
            let msg = raw.last_error_msg().to_string();
            raw.reset_error();
            return Err(super::IslError::TooLarge(format!(
                "a point of the set: {msg}"
            )));
        }
        Ok(out)
    }
}

impl Schedule {
    /// The schedule as a flat relation from statement instances to time vectors.
    pub fn map(&self) -> IslResult<UnionMap> {
        self.ctx
            .check(self.raw.get_map())
            .map(|m| Obj::from_raw(&self.ctx, m))
    }
    /// The statement instances it schedules.
    pub fn domain(&self) -> IslResult<UnionSet> {
        self.ctx
            .check(self.raw.get_domain())
            .map(|d| Obj::from_raw(&self.ctx, d))
    }
}

/// Runs an isl `foreach` function, handing each (owned) object pointer to `each`, which
/// returns whether to go on.
fn foreach(
    ctx: &Ctx,
    call: impl FnOnce(ffi::ForeachFn, *mut c_void) -> c_int,
    each: &mut dyn FnMut(uintptr_t) -> bool,
) -> IslResult<()> {
    /// `each` and whether it asked to stop.
    type State<'a> = (&'a mut dyn FnMut(uintptr_t) -> bool, bool);
    unsafe extern "C" fn trampoline(obj: uintptr_t, user: *mut c_void) -> c_int {
        // SAFETY: `user` is the `&mut State` passed below, alive for the call.
        let state = unsafe { &mut *(user as *mut State) };
        if (state.0)(obj) {
            ffi::ISL_STAT_OK
        } else {
            state.1 = true;
            ffi::ISL_STAT_ERROR
        }
    }
    let mut state: State = (each, false);
    let user = &mut state as *mut State as *mut c_void;
    let status = call(trampoline, user);
    if state.1 {
        // stopped on purpose: not an error (isl records none for a callback's stop)
        return Ok(());
    }
    if status == ffi::ISL_STAT_OK {
        Ok(())
    } else {
        let raw = ctx.raw();
        let msg = raw.last_error_msg().to_string();
        let quota = raw.last_error() == isl_rs::Error::Quota;
        raw.reset_error();
        Err(if quota {
            super::IslError::OperationLimit(ctx.raw().get_max_operations())
        } else {
            super::IslError::Isl(msg)
        })
    }
}
