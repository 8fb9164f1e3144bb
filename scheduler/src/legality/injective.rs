//! Injectivity: two different instances that a schedule runs at the same time. Their order
//! is then not defined by the schedule (code generation picks one), so `polyc verify` warns
//! about it even when no dependence relates them.

use super::report::{Instance, ParamValues};
use super::witness::{smallest, split_instance};
use super::CheckError;
use poly::isl::End;
use poly::model::Program;
use poly::order::AnySchedule;
use std::fmt;

/// Two different instances with the same time, for some parameter values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Collision {
    /// The parameter values of the witness.
    pub params: ParamValues,
    /// One instance.
    pub first: Instance,
    /// Another, run at the same time.
    pub second: Instance,
    /// Their common time.
    pub time: Vec<i64>,
}

impl fmt::Display for Collision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let time: Vec<String> = self.time.iter().map(i64::to_string).collect();
        write!(
            f,
            "{} and {} both run at time [{}]",
            self.first,
            self.second,
            time.join(", ")
        )?;
        if !self.params.is_empty() {
            let params: Vec<String> = (self.params.iter())
                .map(|(n, v)| format!("{n} = {v}"))
                .collect();
            write!(f, " (for {})", params.join(", "))?;
        }
        Ok(())
    }
}

/// Two different instances of `program` that `schedule` runs at the same time (the
/// smallest parameter values and instances for which it happens, statements in program
/// order), or `None` if the schedule is injective.
pub fn collision(
    program: &Program,
    schedule: &AnySchedule,
) -> Result<Option<Collision>, CheckError> {
    let _analysis = program.ctx.analysis();
    let time = schedule.time_relation(program)?;
    let same = time.apply_range(&time.reverse()?)?;
    let different = same.subtract(&program.domains()?.identity()?)?;
    let mut maps = different.maps()?;
    let position = |tuple: String| program.statements.iter().position(|s| s.tuple == tuple);
    maps.sort_by_key(|m| {
        (
            position(m.tuple_name_of(End::Source)),
            position(m.tuple_name_of(End::Sink)),
        )
    });
    for map in maps {
        let Some(w) = smallest(program, &map.wrap()?)? else {
            continue;
        };
        let (first, rest) = split_instance(program, &map.tuple_name_of(End::Source), &w.point);
        let second = Instance {
            tuple: map.tuple_name_of(End::Sink),
            point: rest,
        };
        let time = super::witness::image(program, &time, &first, &w.fixed)?
            .into_iter()
            .flat_map(|(_, points)| points)
            .next()
            .unwrap_or_default();
        return Ok(Some(Collision {
            params: w.params,
            first,
            second,
            time,
        }));
    }
    Ok(None)
}
