//! The default pipeline: what every command that schedules (`schedule`, `compile`, `run
//! --target cpu`, `bench`, `c`, `compare`, `study`) does unless told otherwise, the flags
//! that turn its steps off or change them ([`PipelineArgs`]), and the words every such
//! command's `--help` uses to state it ([`help`]). As Pluto's `polycc`, it tiles and exposes
//! parallelism by default; `--no-tile` and `--no-parallel` are its `--notile` and
//! `--noparallel`.

use crate::error::CliError;
use poly::isl::SchedulerOptions;
use scheduler::FusePolicy;
use serde::Serialize;
use std::num::NonZeroU32;

/// The scheduler of `schedule`, `run --target cpu`, `compile`, `bench` and `c` when
/// `--scheduler` names none.
pub const DEFAULT_SCHEDULER: &str = "pluto";

/// A fusion policy on the command line.
#[derive(clap::ValueEnum, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Fuse {
    /// Distribute strongly connected components.
    None,
    /// Fuse when no parallel loop is lost.
    Smart,
    /// Fuse whenever legal.
    Max,
}

impl From<Fuse> for FusePolicy {
    fn from(f: Fuse) -> FusePolicy {
        match f {
            Fuse::None => FusePolicy::None,
            Fuse::Smart => FusePolicy::Smart,
            Fuse::Max => FusePolicy::Max,
        }
    }
}

/// The flags of the default pipeline's transformations, the same on every command that
/// schedules. Their defaults are the default pipeline (see [`help`]).
#[derive(clap::Args, Serialize, Debug, Clone, Default, PartialEq, Eq)]
pub struct PipelineArgs {
    /// Tile sizes per band member, comma-separated; members without a size (all of them for
    /// `--tile` alone) get the cache model's. Tiling is the default; `--tile` is needed only
    /// to tile a `--schedule FILE`.
    #[arg(
        long,
        num_args = 0..=1,
        default_missing_value = "",
        value_name = "SIZES",
        conflicts_with = "no_tile"
    )]
    pub tile: Option<String>,
    /// Tile the tile loops again with these sizes.
    #[arg(long, value_name = "SIZES", conflicts_with = "no_tile")]
    pub tile2: Option<String>,
    /// Diamond tiling (Pluto's `--diamond-tile`): where tiles of a time loop would start
    /// in a pipeline (one tile first, then two, ...), tile along the time loop's cone
    /// complement instead, so that the tiles along the first time steps start at once.
    #[arg(long, conflicts_with = "no_tile")]
    pub diamond: bool,
    /// Index-set splitting (Pluto's `--iss`, after scheduling): a loop whose dependences
    /// all run from one part of its iterations to another (`A[i]` from `A[N - 1 - i]`)
    /// becomes two loops, one per part, when that makes loops parallel.
    #[arg(long)]
    pub iss: bool,
    /// Re-decide loop fusion after scheduling (default: the scheduler's own, `smart`).
    #[arg(long, value_enum)]
    pub fuse: Option<Fuse>,
    /// Expose parallelism (the default, kept for scripts; needed only to apply it to a
    /// `--schedule FILE`): wavefront when no outer loop is parallel, stride-1 parallel loop
    /// innermost.
    #[arg(long, conflicts_with = "no_parallel")]
    pub parallel: bool,
    /// Do not tile (Pluto's `--notile`); register tiles have their own `--register-tile off`.
    #[arg(long)]
    pub no_tile: bool,
    /// Keep the schedule's loop order: no wavefront, no parallel loop moved (Pluto's
    /// `--noparallel`); loops that are parallel are still marked (`--no-openmp` drops the
    /// pragmas).
    #[arg(long)]
    pub no_parallel: bool,
    /// Pluto: also bound the distances of read-after-read (input) dependences in the
    /// objective, to bring reuse of read data closer (Pluto's --rar; mvt fuses its two
    /// products with one interchanged). They never constrain legality.
    #[arg(long)]
    pub rar: bool,
    /// One of isl's scheduler options for `--scheduler isl`, as `NAME=VALUE` (repeatable):
    /// algorithm=isl|feautrier, carry-self-first, max-coefficient=N (-1: none),
    /// max-constant-term=N, maximize-band-depth, maximize-coincidence, outer-coincidence,
    /// separate-components, serialize-sccs, split-scaled, treat-coalescing,
    /// whole-component (true or false).
    #[arg(long = "isl-option", value_name = "NAME=VALUE", value_parser = isl_option)]
    pub isl_option: Vec<String>,
}

/// A valid `--isl-option`, as written.
fn isl_option(text: &str) -> Result<String, String> {
    SchedulerOptions::default().add(text)?;
    Ok(text.to_string())
}

/// How the transformation flags apply: to a scheduler's schedule, or to one the user wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A scheduler's schedule: the default pipeline applies.
    Scheduler,
    /// A hand-written `--schedule FILE`: kept as written unless a flag asks otherwise.
    Given,
}

impl PipelineArgs {
    /// The pipeline with every optional step off: the original loop order as written
    /// (what `bench`'s baselines build).
    pub fn none() -> PipelineArgs {
        PipelineArgs {
            no_tile: true,
            no_parallel: true,
            ..PipelineArgs::default()
        }
    }

    /// The `--isl-option`s (each checked when the command line was read).
    pub fn isl_options(&self) -> SchedulerOptions {
        let mut options = SchedulerOptions::default();
        for text in &self.isl_option {
            // checked by `isl_option` already
            let _ = options.add(text);
        }
        options
    }

    /// The tile sizes asked for (`None`: no tiling; an empty list: the cache model's
    /// sizes). A scheduler's schedule is tiled unless `--no-tile`; a given one only with
    /// `--tile` or `--tile2`.
    pub fn tile_sizes(&self, origin: Origin) -> Result<Option<Vec<NonZeroU32>>, CliError> {
        let asked = self.tile.is_some() || self.tile2.is_some();
        if self.no_tile || (origin == Origin::Given && !asked) {
            return Ok(None);
        }
        parse_sizes(self.tile.as_deref().unwrap_or("")).map(Some)
    }

    /// The sizes of `--tile2`.
    pub fn tile2_sizes(&self) -> Result<Option<Vec<NonZeroU32>>, CliError> {
        self.tile2.as_deref().map(parse_sizes).transpose()
    }

    /// Whether parallelism is exposed: for a scheduler's schedule unless `--no-parallel`,
    /// for a given one only with `--parallel`.
    pub fn parallel(&self, origin: Origin) -> bool {
        match origin {
            Origin::Scheduler => !self.no_parallel,
            Origin::Given => self.parallel,
        }
    }
}

/// The default pipeline in words, as every command that schedules ends its `--help`.
pub fn help() -> String {
    format!(
        "Default pipeline (the same for schedule, compile, run --target cpu, bench, c, compare \
         and study):
  scheduler    {DEFAULT_SCHEDULER} (falls back to isl, then to the original order); compare and \
         study run every scheduler
  fusion       the scheduler's (pluto: smart); --fuse none|smart|max re-decides it
  tiling       permutable bands, sizes from a cache model of this machine (or of --machine \
         FILE); --tile SIZES sets them, --no-tile turns tiling off
  parallelism  wavefront when no outer loop is parallel, a stride-1 parallel loop innermost; \
         --no-parallel turns it off
  registers    where C is generated, innermost reduction bands register-tiled \
         (--register-tile off)
  off unless asked  --iss (index-set splitting), --diamond (diamond tiles), --rar (Pluto's \
         read-after-read reuse), --isl-option (isl's own options)
A hand-written --schedule FILE is kept as written: tiled only with --tile, made parallel only \
         with --parallel."
    )
}

/// Parses tile sizes (`8,16`; empty: none given).
pub fn parse_sizes(text: &str) -> Result<Vec<NonZeroU32>, CliError> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|s| {
            s.trim().parse::<NonZeroU32>().map_err(|_| {
                CliError::User(format!(
                    "tile size `{s}` is not a positive integer (in `{text}`)"
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_checked() {
        assert_eq!(parse_sizes("").unwrap(), Vec::new());
        assert_eq!(parse_sizes("8, 16").unwrap().len(), 2);
        assert!(parse_sizes("8,0").is_err());
        assert!(parse_sizes("x").is_err());
    }

    #[test]
    fn a_given_schedule_is_kept_unless_a_flag_asks() {
        let default = PipelineArgs::default();
        assert_eq!(default.tile_sizes(Origin::Scheduler).unwrap(), Some(vec![]));
        assert!(default.parallel(Origin::Scheduler));
        assert_eq!(default.tile_sizes(Origin::Given).unwrap(), None);
        assert!(!default.parallel(Origin::Given));
        let asked = PipelineArgs {
            tile: Some("8".into()),
            parallel: true,
            ..PipelineArgs::default()
        };
        assert_eq!(
            asked.tile_sizes(Origin::Given).unwrap().map(|s| s.len()),
            Some(1)
        );
        assert!(asked.parallel(Origin::Given));
        for origin in [Origin::Scheduler, Origin::Given] {
            assert_eq!(PipelineArgs::none().tile_sizes(origin).unwrap(), None);
            assert!(!PipelineArgs::none().parallel(origin));
        }
    }
}
