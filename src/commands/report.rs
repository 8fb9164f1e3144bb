//! What every JSON report of polyc carries (`--emit json` on `schedule`, `verify`,
//! `compare` and `bench`, and each line of a study): which polyc made it, on which host, for
//! which machine, with which options. The schema is documented in `docs/studies.md`.

use scheduler::transform::summary::BandInfo;
use scheduler::transform::tile_size::NamedMachine;
use serde::Serialize;

/// The version of the reports' layout; it changes when a field changes meaning or goes.
pub const SCHEMA: &str = "polyc-report/1";

/// The polyc that made a report.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Version {
    /// The package version.
    pub version: &'static str,
    /// The commit it was built from (12 hex digits), or `None` outside a git checkout.
    pub commit: Option<&'static str>,
    /// Whether tracked files differed from that commit.
    pub modified: bool,
}

impl Version {
    /// This build's.
    pub fn this() -> Version {
        let hash = env!("POLYC_COMMIT_HASH");
        Version {
            version: env!("CARGO_PKG_VERSION"),
            commit: (!hash.is_empty()).then_some(hash),
            modified: env!("POLYC_MODIFIED") == "true",
        }
    }
}

/// The computer polyc ran on.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// The CPU's model name (`/proc/cpuinfo`), when the system says it.
    pub cpu: Option<String>,
    /// The hardware threads this process may run.
    pub threads: u32,
    /// The operating system's host name, when it can be read.
    pub hostname: Option<String>,
    /// The OpenMP settings of the environment (`OMP_*` and `GOMP_*` variables, e.g.
    /// `OMP_NUM_THREADS`), which the programs timed by `bench`, `compare --run` and `study`
    /// inherit.
    pub openmp: std::collections::BTreeMap<String, String>,
}

impl Host {
    /// The computer running this process.
    pub fn this() -> Host {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|rest| rest.split_once(':'))
            .map(|(_, name)| name.trim().to_owned());
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_owned());
        Host {
            cpu,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            hostname,
            openmp: std::env::vars()
                .filter(|(name, _)| name.starts_with("OMP_") || name.starts_with("GOMP_"))
                .collect(),
        }
    }
}

/// A report: its header, the options in effect, the results.
#[derive(Serialize, Debug)]
pub struct Report<'a, O: Serialize, R: Serialize> {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The subcommand (`schedule`, `verify`, `compare`, `bench`, `study`).
    pub command: &'static str,
    /// The polyc that made it.
    pub polyc: Version,
    /// Where it ran.
    pub host: Host,
    /// The machine tiles were sized for (this host's caches unless `--machine` named one);
    /// `null` for commands that size no tile.
    pub machine: Option<NamedMachine>,
    /// Every option of the command, defaults included, as its arguments were parsed.
    pub options: &'a O,
    /// What the command found.
    pub results: R,
}

impl<'a, O: Serialize, R: Serialize> Report<'a, O, R> {
    /// A report of `command` made here and now.
    pub fn new(
        command: &'static str,
        machine: Option<NamedMachine>,
        options: &'a O,
        results: R,
    ) -> Self {
        Report {
            schema: SCHEMA,
            command,
            polyc: Version::this(),
            host: Host::this(),
            machine,
            options,
            results,
        }
    }

    /// Prints the report on standard output, indented.
    pub fn print(&self) -> Result<(), crate::error::CliError> {
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| crate::error::CliError::Internal(e.to_string()))?;
        println!("{text}");
        Ok(())
    }
}

/// A band of a schedule tree.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Band {
    /// The loops (band members) around it.
    pub depth: usize,
    /// Its members.
    pub members: usize,
    /// Whether its members may be permuted (it may be tiled).
    pub permutable: bool,
    /// The positions of its parallel members, from 0.
    pub parallel_members: Vec<usize>,
    /// How it came to be (`point`, `tile 32x32`, ...), as `polyc compare` tabulates it.
    pub tiling: String,
}

impl From<&BandInfo> for Band {
    fn from(b: &BandInfo) -> Band {
        Band {
            depth: b.depth,
            members: b.members,
            permutable: b.permutable,
            parallel_members: b.parallel.clone(),
            tiling: b.tiling(),
        }
    }
}
