//! Multi-dimensional affine schedules, the common output of the schedulers.
//!
//! Row `d` gives every statement `S` a time coordinate `phi_S^d(i) = c . i + p . N + c0`
//! (iterators `i`, parameters `N`). A [`RowKind::Loop`] row is a hyperplane (a loop after code
//! generation); a [`RowKind::Scalar`] row gives each statement a constant and orders groups
//! of statements (a sequence node: a fusion or distribution decision). Consecutive loop rows
//! of one [`Band`] are permutable (they may be tiled).

/// The coefficients of one statement in one row: iterators, then parameters, then the
/// constant (lengths given by the statement and the kernel).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StmtRow {
    /// One coefficient per iterator of the statement, outermost first.
    pub iterators: Vec<i64>,
    /// One coefficient per kernel parameter, in declaration order.
    pub params: Vec<i64>,
    /// The constant term.
    pub constant: i64,
}

/// What a row means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    /// A hyperplane: becomes a loop.
    Loop {
        /// Whether no dependence is carried by this row among those not yet satisfied by
        /// outer rows (the loop may run in parallel).
        coincident: bool,
    },
    /// A statement-wise constant ordering groups of statements.
    Scalar,
}

/// One schedule dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// What it means.
    pub kind: RowKind,
    /// One function per statement, in the program's statement order.
    pub stmts: Vec<StmtRow>,
}

/// A maximal run of consecutive loop rows that are permutable together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Band {
    /// First row.
    pub start: usize,
    /// Number of rows.
    pub len: usize,
}

/// A multi-dimensional affine schedule with its band structure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AffineSchedule {
    /// The rows, outermost first.
    pub rows: Vec<Row>,
    /// The permutable bands (loop rows only, disjoint, in order).
    pub bands: Vec<Band>,
}

use poly::isl::{IslError, IslResult, Schedule, UnionMap};
use poly::model::isl_text::isl_name;
use poly::model::{Program, Statement};

impl StmtRow {
    /// The all-zero function of a statement with `n_iterators` iterators and `n_params`
    /// parameters.
    pub fn zero(n_iterators: usize, n_params: usize) -> StmtRow {
        StmtRow {
            iterators: vec![0; n_iterators],
            params: vec![0; n_params],
            constant: 0,
        }
    }

    /// The constant function `value`.
    pub fn constant(n_iterators: usize, n_params: usize, value: i64) -> StmtRow {
        StmtRow {
            constant: value,
            ..StmtRow::zero(n_iterators, n_params)
        }
    }

    /// Whether the function is a constant (no iterator or parameter term).
    pub fn is_constant(&self) -> bool {
        self.iterators.iter().chain(&self.params).all(|&c| c == 0)
    }

    /// The function in isl's notation over the statement's iterators and the kernel's
    /// parameters, e.g. `(2*t + i + 1)`.
    pub fn isl_expr(&self, iterators: &[String], params: &[String]) -> String {
        let mut terms: Vec<String> = self
            .iterators
            .iter()
            .zip(iterators)
            .chain(self.params.iter().zip(params))
            .filter(|(&c, _)| c != 0)
            .map(|(&c, name)| match c {
                1 => isl_name(name),
                -1 => format!("-{}", isl_name(name)),
                _ => format!("{c}*{}", isl_name(name)),
            })
            .collect();
        if self.constant != 0 || terms.is_empty() {
            terms.push(self.constant.to_string());
        }
        format!("({})", terms.join(" + "))
    }
}

impl AffineSchedule {
    /// The band containing row `row`, if it is a loop row of one.
    pub fn band_of(&self, row: usize) -> Option<Band> {
        self.bands
            .iter()
            .copied()
            .find(|b| b.start <= row && row < b.start + b.len)
    }

    /// The flat schedule `{ S[i] -> [phi^0(i), phi^1(i), ...] }` of every statement.
    pub fn to_union_map(&self, program: &Program) -> IslResult<UnionMap> {
        let params = param_names(program);
        let pieces: Vec<String> = program
            .statements
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let values: Vec<String> = self
                    .rows
                    .iter()
                    .map(|r| r.stmts[k].isl_expr(&s.iterators, &params))
                    .collect();
                format!("{} -> [{}]", stmt_tuple(s), values.join(", "))
            })
            .collect();
        program.ctx.union_map(&format!(
            "{}{{ {} }}",
            param_prefix(&params),
            pieces.join("; ")
        ))
    }

    /// The schedule as an isl schedule tree.
    ///
    /// A scalar row splits the current group of statements by constant into a sequence
    /// node (filters in increasing constant order; no node when the group has one constant);
    /// the loop rows of one band become one band node per group, `permutable` when it has
    /// more than one row, with the rows' coincidence flags. Rows that are the same constant
    /// for every statement of a group order nothing and are left out of that group's band.
    pub fn to_tree(&self, program: &Program) -> IslResult<Schedule> {
        self.check_shape(program)?;
        let builder = TreeText {
            schedule: self,
            program,
            params: param_names(program),
        };
        let all: Vec<usize> = (0..program.statements.len()).collect();
        let domain = program.domains()?;
        let text = match builder.subtree(&all, 0) {
            Some(child) => format!("{{ domain: \"{domain}\", child: {child} }}"),
            None => format!("{{ domain: \"{domain}\" }}"),
        };
        program.ctx.schedule(&text)
    }

    /// Checks that every row has one function of the right size per statement and that
    /// the bands cover loop rows only.
    fn check_shape(&self, program: &Program) -> IslResult<()> {
        let n_params = program.kernel.params.len();
        for (d, row) in self.rows.iter().enumerate() {
            let fits = row.stmts.len() == program.statements.len()
                && row.stmts.iter().zip(&program.statements).all(|(f, s)| {
                    f.iterators.len() == s.iterators.len() && f.params.len() == n_params
                });
            let scalar_ok =
                row.kind != RowKind::Scalar || row.stmts.iter().all(StmtRow::is_constant);
            if !fits || !scalar_ok {
                return Err(IslError::Isl(format!(
                    "malformed affine schedule: row {d} does not match the program's statements"
                )));
            }
        }
        let bands_ok = self.bands.iter().all(|b| {
            b.len > 0
                && b.start + b.len <= self.rows.len()
                && self.rows[b.start..b.start + b.len]
                    .iter()
                    .all(|r| r.kind != RowKind::Scalar)
        });
        if bands_ok {
            Ok(())
        } else {
            Err(IslError::Isl(
                "malformed affine schedule: a band covers a scalar row or no row".into(),
            ))
        }
    }
}

/// Writes the YAML text of a schedule tree for an [`AffineSchedule`].
struct TreeText<'a> {
    schedule: &'a AffineSchedule,
    program: &'a Program,
    params: Vec<String>,
}

impl TreeText<'_> {
    /// The subtree scheduling statements `group` from row `row` on, if it has a node.
    fn subtree(&self, group: &[usize], row: usize) -> Option<String> {
        let r = self.schedule.rows.get(row)?;
        match r.kind {
            RowKind::Scalar => {
                let mut constants: Vec<i64> = group.iter().map(|&k| r.stmts[k].constant).collect();
                constants.sort_unstable();
                constants.dedup();
                if constants.len() == 1 {
                    return self.subtree(group, row + 1);
                }
                let items: Vec<String> = constants
                    .iter()
                    .map(|&c| {
                        let part: Vec<usize> = group
                            .iter()
                            .copied()
                            .filter(|&k| r.stmts[k].constant == c)
                            .collect();
                        let filter = self.filter(&part);
                        match self.subtree(&part, row + 1) {
                            Some(t) => format!("{{ filter: \"{filter}\", child: {t} }}"),
                            None => format!("{{ filter: \"{filter}\" }}"),
                        }
                    })
                    .collect();
                Some(format!("{{ sequence: [ {} ] }}", items.join(", ")))
            }
            RowKind::Loop { .. } => {
                let end = self
                    .schedule
                    .band_of(row)
                    .map_or(row + 1, |b| b.start + b.len);
                let below = self.subtree(group, end);
                let Some(band) = self.band(group, row..end) else {
                    return below;
                };
                Some(match below {
                    Some(c) => format!("{{ {band}, child: {c} }}"),
                    None => format!("{{ {band} }}"),
                })
            }
        }
    }

    /// The band node fields for `group` over `rows`, without the rows that are one
    /// constant for the whole group (`None` if no row is left).
    fn band(&self, group: &[usize], rows: std::ops::Range<usize>) -> Option<String> {
        let kept: Vec<&Row> = self.schedule.rows[rows]
            .iter()
            .filter(|r| {
                let first = &r.stmts[group[0]];
                !group
                    .iter()
                    .all(|&k| r.stmts[k].is_constant() && r.stmts[k].constant == first.constant)
            })
            .collect();
        if kept.is_empty() {
            return None;
        }
        let columns: Vec<String> = kept
            .iter()
            .map(|r| {
                let pieces: Vec<String> = group
                    .iter()
                    .map(|&k| {
                        let s = &self.program.statements[k];
                        format!(
                            "{} -> [{}]",
                            stmt_tuple(s),
                            r.stmts[k].isl_expr(&s.iterators, &self.params)
                        )
                    })
                    .collect();
                format!("{{ {} }}", pieces.join("; "))
            })
            .collect();
        let coincident: Vec<&str> = kept
            .iter()
            .map(|r| match r.kind {
                RowKind::Loop { coincident: true } => "1",
                _ => "0",
            })
            .collect();
        Some(format!(
            "schedule: \"{}[{}]\", permutable: {}, coincident: [ {} ]",
            param_prefix(&self.params),
            columns.join(", "),
            u8::from(kept.len() > 1),
            coincident.join(", ")
        ))
    }

    /// `{ S0[i, j]; S1[i, k, j] }` for the statements of `group`.
    fn filter(&self, group: &[usize]) -> String {
        let tuples: Vec<String> = group
            .iter()
            .map(|&k| stmt_tuple(&self.program.statements[k]))
            .collect();
        format!("{}{{ {} }}", param_prefix(&self.params), tuples.join("; "))
    }
}

/// The kernel's parameter names.
fn param_names(program: &Program) -> Vec<String> {
    program
        .kernel
        .params
        .iter()
        .map(|p| p.name.clone())
        .collect()
}

/// `[N, M] -> ` or nothing.
fn param_prefix(params: &[String]) -> String {
    if params.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = params.iter().map(|p| isl_name(p)).collect();
        format!("[{}] -> ", names.join(", "))
    }
}

/// The statement's isl tuple with its iterators, `S1[i, k, j]`.
fn stmt_tuple(s: &Statement) -> String {
    let its: Vec<String> = s.iterators.iter().map(|i| isl_name(i)).collect();
    format!("{}[{}]", s.tuple, its.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::program;

    /// A row of gemm's two statements `S0[i, j]`, `S1[i, k, j]` (parameters NI, NJ, NK).
    fn row(kind: RowKind, s0: [i64; 3], s1: [i64; 4]) -> Row {
        let f = |c: &[i64]| StmtRow {
            iterators: c[..c.len() - 1].to_vec(),
            params: vec![0; 3],
            constant: c[c.len() - 1],
        };
        Row {
            kind,
            stmts: vec![f(&s0), f(&s1)],
        }
    }

    /// gemm's original order in 2d+1 form: `S0 -> [0, i, 0, j, 0, 0, 0]`,
    /// `S1 -> [0, i, 1, k, 0, j, 0]`.
    fn gemm_identity() -> AffineSchedule {
        let lp = RowKind::Loop { coincident: false };
        let sc = RowKind::Scalar;
        AffineSchedule {
            rows: vec![
                row(sc, [0, 0, 0], [0, 0, 0, 0]),
                row(lp, [1, 0, 0], [1, 0, 0, 0]),
                row(sc, [0, 0, 0], [0, 0, 0, 1]),
                row(lp, [0, 1, 0], [0, 1, 0, 0]),
                row(sc, [0, 0, 0], [0, 0, 0, 0]),
                row(lp, [0, 0, 0], [0, 0, 1, 0]),
                row(sc, [0, 0, 0], [0, 0, 0, 0]),
            ],
            bands: vec![
                Band { start: 1, len: 1 },
                Band { start: 3, len: 1 },
                Band { start: 5, len: 1 },
            ],
        }
    }

    #[test]
    fn identity_tree_has_the_original_flat_map() {
        let p = program("polybench/gemm.pk");
        let tree = gemm_identity().to_tree(&p).unwrap();
        assert_eq!(tree.map().unwrap(), p.schedule.map().unwrap());
        let flat = gemm_identity().to_union_map(&p).unwrap();
        let expected = p
            .ctx
            .union_map(
                "{ S0[i, j] -> [0, i, 0, j, 0, 0, 0]; S1[i, k, j] -> [0, i, 1, k, 0, j, 0] }",
            )
            .unwrap();
        assert!(flat.is_equal(&expected).unwrap(), "{flat}");
    }

    #[test]
    fn bands_are_permutable_with_coincidence_flags() {
        let p = program("polybench/gemm.pk");
        let lp = |coincident| RowKind::Loop { coincident };
        let s = AffineSchedule {
            rows: vec![
                row(RowKind::Scalar, [0, 0, 0], [0, 0, 0, 1]),
                row(lp(true), [1, 0, 0], [1, 0, 0, 0]),
                row(lp(true), [0, 1, 0], [0, 0, 1, 0]),
                row(lp(false), [0, 0, 0], [0, 1, 0, 0]),
            ],
            bands: vec![Band { start: 1, len: 3 }],
        };
        let text = s.to_tree(&p).unwrap().to_string();
        // S0's band keeps its two non-constant rows, S1's all three.
        assert!(
            text.contains("permutable: 1, coincident: [ 1, 1 ]"),
            "{text}"
        );
        assert!(
            text.contains("permutable: 1, coincident: [ 1, 1, 0 ]"),
            "{text}"
        );
        assert!(text.contains("sequence"), "{text}");
    }

    #[test]
    fn malformed_schedules_are_errors() {
        let p = program("polybench/gemm.pk");
        let mut s = gemm_identity();
        s.rows[0].stmts.pop();
        assert!(s.to_tree(&p).is_err());
        let mut s = gemm_identity();
        s.bands[0].start = 0;
        assert!(s.to_tree(&p).is_err());
    }
}
