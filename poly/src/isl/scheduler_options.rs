//! isl's scheduler options (`isl_options_set_schedule_*`), set for one computation and
//! restored after it: the context is shared by every analysis of a program.

use super::Ctx;
use isl_rs::{Context, LibISLError, Options};
use std::fmt;

/// One of isl's scheduler options, named as isl's own `--schedule-*` command-line options
/// are (without the prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchedulerOption {
    /// `isl` (0) or `feautrier` (1).
    Algorithm,
    /// Carry self-dependences before the others when a band cannot be extended.
    CarrySelfFirst,
    /// Bound on the schedule coefficients (-1: none).
    MaxCoefficient,
    /// Bound on the constant terms (-1: none).
    MaxConstantTerm,
    /// Keep bands as deep as possible rather than splitting at a coincidence loss.
    MaximizeBandDepth,
    /// Try to make as many band members coincident as possible.
    MaximizeCoincidence,
    /// Require the outermost member of each band to be coincident.
    OuterCoincidence,
    /// Schedule the weakly connected components separately.
    SeparateComponents,
    /// Never fuse strongly connected components (maximal distribution).
    SerializeSccs,
    /// Split the scaling of schedule rows.
    SplitScaled,
    /// Avoid schedules that break stride-1 (coalesced) accesses.
    TreatCoalescing,
    /// Schedule a whole component at once instead of clustering.
    WholeComponent,
}

impl SchedulerOption {
    /// Every option, in isl's alphabetical order.
    pub const ALL: [SchedulerOption; 12] = [
        SchedulerOption::Algorithm,
        SchedulerOption::CarrySelfFirst,
        SchedulerOption::MaxCoefficient,
        SchedulerOption::MaxConstantTerm,
        SchedulerOption::MaximizeBandDepth,
        SchedulerOption::MaximizeCoincidence,
        SchedulerOption::OuterCoincidence,
        SchedulerOption::SeparateComponents,
        SchedulerOption::SerializeSccs,
        SchedulerOption::SplitScaled,
        SchedulerOption::TreatCoalescing,
        SchedulerOption::WholeComponent,
    ];

    /// Its name (isl's `--schedule-NAME`).
    pub fn name(self) -> &'static str {
        match self {
            SchedulerOption::Algorithm => "algorithm",
            SchedulerOption::CarrySelfFirst => "carry-self-first",
            SchedulerOption::MaxCoefficient => "max-coefficient",
            SchedulerOption::MaxConstantTerm => "max-constant-term",
            SchedulerOption::MaximizeBandDepth => "maximize-band-depth",
            SchedulerOption::MaximizeCoincidence => "maximize-coincidence",
            SchedulerOption::OuterCoincidence => "outer-coincidence",
            SchedulerOption::SeparateComponents => "separate-components",
            SchedulerOption::SerializeSccs => "serialize-sccs",
            SchedulerOption::SplitScaled => "split-scaled",
            SchedulerOption::TreatCoalescing => "treat-coalescing",
            SchedulerOption::WholeComponent => "whole-component",
        }
    }

    /// Whether its value is a number (a bound) rather than on/off or the algorithm.
    fn numeric(self) -> bool {
        matches!(
            self,
            SchedulerOption::MaxCoefficient | SchedulerOption::MaxConstantTerm
        )
    }

    fn get(self, c: &Context) -> Result<i32, LibISLError> {
        match self {
            SchedulerOption::Algorithm => Options::get_schedule_algorithm(c),
            SchedulerOption::CarrySelfFirst => Options::get_schedule_carry_self_first(c),
            SchedulerOption::MaxCoefficient => Options::get_schedule_max_coefficient(c),
            SchedulerOption::MaxConstantTerm => Options::get_schedule_max_constant_term(c),
            SchedulerOption::MaximizeBandDepth => Options::get_schedule_maximize_band_depth(c),
            SchedulerOption::MaximizeCoincidence => Options::get_schedule_maximize_coincidence(c),
            SchedulerOption::OuterCoincidence => Options::get_schedule_outer_coincidence(c),
            SchedulerOption::SeparateComponents => Options::get_schedule_separate_components(c),
            SchedulerOption::SerializeSccs => Options::get_schedule_serialize_sccs(c),
            SchedulerOption::SplitScaled => Options::get_schedule_split_scaled(c),
            SchedulerOption::TreatCoalescing => Options::get_schedule_treat_coalescing(c),
            SchedulerOption::WholeComponent => Options::get_schedule_whole_component(c),
        }
    }

    fn set(self, c: &Context, v: i32) {
        // a failure leaves isl's value, which the schedule then shows
        let _ = match self {
            SchedulerOption::Algorithm => Options::set_schedule_algorithm(c, v),
            SchedulerOption::CarrySelfFirst => Options::set_schedule_carry_self_first(c, v),
            SchedulerOption::MaxCoefficient => Options::set_schedule_max_coefficient(c, v),
            SchedulerOption::MaxConstantTerm => Options::set_schedule_max_constant_term(c, v),
            SchedulerOption::MaximizeBandDepth => Options::set_schedule_maximize_band_depth(c, v),
            SchedulerOption::MaximizeCoincidence => {
                Options::set_schedule_maximize_coincidence(c, v)
            }
            SchedulerOption::OuterCoincidence => Options::set_schedule_outer_coincidence(c, v),
            SchedulerOption::SeparateComponents => Options::set_schedule_separate_components(c, v),
            SchedulerOption::SerializeSccs => Options::set_schedule_serialize_sccs(c, v),
            SchedulerOption::SplitScaled => Options::set_schedule_split_scaled(c, v),
            SchedulerOption::TreatCoalescing => Options::set_schedule_treat_coalescing(c, v),
            SchedulerOption::WholeComponent => Options::set_schedule_whole_component(c, v),
        };
    }
}

/// Values for some of isl's scheduler options; the others keep isl's defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchedulerOptions {
    values: Vec<(SchedulerOption, i32)>,
}

impl SchedulerOptions {
    /// Parses `NAME=VALUE`: an option of [`SchedulerOption::ALL`] by name, and `true`/`false`
    /// (or `1`/`0`), a bound (`max-coefficient=4`, `-1` for none), or for `algorithm` `isl`
    /// or `feautrier`. Later values of one option replace earlier ones.
    pub fn add(&mut self, text: &str) -> Result<(), String> {
        let (name, value) = text
            .split_once('=')
            .ok_or_else(|| format!("`{text}` is not NAME=VALUE"))?;
        let option = (SchedulerOption::ALL.into_iter())
            .find(|o| o.name() == name.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = SchedulerOption::ALL.iter().map(|o| o.name()).collect();
                format!(
                    "`{name}` is not one of isl's scheduler options ({})",
                    names.join(", ")
                )
            })?;
        let value = match (option, value.trim()) {
            (SchedulerOption::Algorithm, "isl") => 0,
            (SchedulerOption::Algorithm, "feautrier") => 1,
            (SchedulerOption::Algorithm, v) => {
                return Err(format!("`algorithm` is `isl` or `feautrier`, not `{v}`"))
            }
            (o, v) if o.numeric() => v
                .parse::<i32>()
                .ok()
                .filter(|&n| n >= -1)
                .ok_or_else(|| format!("`{}` is a bound (-1 for none), not `{v}`", o.name()))?,
            (_, "true" | "1") => 1,
            (_, "false" | "0") => 0,
            (o, v) => return Err(format!("`{}` is true or false, not `{v}`", o.name())),
        };
        self.values.retain(|(o, _)| *o != option);
        self.values.push((option, value));
        Ok(())
    }

    /// Whether no option is set.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl fmt::Display for SchedulerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = (self.values.iter())
            .map(|(o, v)| match (o, v) {
                (SchedulerOption::Algorithm, 1) => "algorithm=feautrier".into(),
                (SchedulerOption::Algorithm, _) => "algorithm=isl".into(),
                (o, v) if o.numeric() => format!("{}={v}", o.name()),
                (o, v) => format!("{}={}", o.name(), *v != 0),
            })
            .collect();
        f.write_str(&parts.join(", "))
    }
}

impl Ctx {
    /// `f`'s result with `options` set in isl, isl's previous values restored after.
    pub fn with_scheduler_options<T>(
        &self,
        options: &SchedulerOptions,
        f: impl FnOnce() -> T,
    ) -> T {
        let raw = &self.inner.raw;
        let saved: Vec<(SchedulerOption, i32)> = (options.values.iter())
            .filter_map(|&(o, _)| Some((o, o.get(raw).ok()?)))
            .collect();
        for &(o, v) in &options.values {
            o.set(raw, v);
        }
        let out = f();
        for (o, v) in saved {
            o.set(raw, v);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_apply_and_are_restored() {
        let ctx = Ctx::default();
        let mut opts = SchedulerOptions::default();
        opts.add("serialize-sccs=true").unwrap();
        opts.add("algorithm=feautrier").unwrap();
        opts.add("max-coefficient=3").unwrap();
        opts.add("serialize-sccs=1").unwrap();
        assert_eq!(
            opts.to_string(),
            "algorithm=feautrier, max-coefficient=3, serialize-sccs=true"
        );
        let raw = &ctx.inner.raw;
        let before = SchedulerOption::SerializeSccs.get(raw).unwrap();
        let inside = ctx.with_scheduler_options(&opts, || {
            (SchedulerOption::ALL.iter())
                .map(|o| o.get(raw).unwrap())
                .collect::<Vec<_>>()
        });
        assert_eq!((inside[0], inside[2], inside[8]), (1, 3, 1));
        assert_eq!(SchedulerOption::SerializeSccs.get(raw).unwrap(), before);
        for bad in [
            "serialize_sccs=1",
            "algorithm=pluto",
            "max-coefficient=x",
            "outer-coincidence=2",
            "nothing",
        ] {
            assert!(SchedulerOptions::default().add(bad).is_err(), "{bad}");
        }
    }
}
