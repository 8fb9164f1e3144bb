//! Compiling and running generated C with the system's compilers: the only part of the back
//! end that starts processes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why compiling or running failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolchainError {
    /// The compiler could not be started (not installed?).
    #[error("cannot run the C compiler `{0}`: {1}")]
    Missing(String, std::io::Error),
    /// The compiler rejected the code (a bug in the back end).
    #[error("`{command}` failed:\n{stderr}")]
    CompileFailed {
        /// The command line.
        command: String,
        /// What the compiler said.
        stderr: String,
    },
    /// The program could not be started.
    #[error("cannot run `{0}`: {1}")]
    Spawn(PathBuf, std::io::Error),
    /// Reading or writing files failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The program ran longer than the time limit and was stopped.
    #[error("`{}` ran longer than {} s and was stopped (set POLYC_RUN_TIMEOUT to allow more)", .0.display(), .1.as_secs())]
    Timeout(PathBuf, std::time::Duration),
}

/// How long a compiled program may run: `POLYC_RUN_TIMEOUT` seconds, 1800 by default (a
/// safety net against a program that never ends, far above any kernel's time).
pub fn run_timeout() -> std::time::Duration {
    let seconds = (std::env::var("POLYC_RUN_TIMEOUT").ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(1800);
    std::time::Duration::from_secs(seconds)
}

/// A C compiler with its flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CCompiler {
    /// The program (`cc`, `gcc`, `clang-16`).
    pub program: String,
    /// Flags before the source file (the float mode's flags come after them).
    pub flags: Vec<String>,
    /// How floating-point expressions may be evaluated.
    pub float: FloatMode,
    /// Libraries linked after it (`-lopenblas`), before the math library.
    pub libs: Vec<String>,
}

/// How the C compiler may evaluate floating-point expressions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FloatMode {
    /// Exactly as written, as the interpreter does: no contraction of `a * b + c` into a
    /// fused multiply-add (which rounds once instead of twice). Outputs are bit-identical
    /// to the interpreter's.
    #[default]
    Exact,
    /// `a * b + c` may be contracted into fused multiply-adds (`-ffp-contract=fast`; nothing
    /// else of fast-math: no reassociation, IEEE NaNs and infinities). Outputs agree with
    /// the interpreter only within [`crate::runner::Comparison::Tolerant`]. What optimised
    /// libraries such as BLAS do; `polyc bench --fma`.
    Fma,
    /// No flag of ours: the compiler's defaults, as a user types a build line (GCC in its
    /// default GNU C mode contracts `a * b + c` where the target has fused multiply-adds).
    /// What `polyc bench` builds a user's C file with.
    AsTyped,
}

/// Flags every build needs for bit-exact results: no contraction of `a * b + c` into fused
/// multiply-adds (which round once instead of twice), and the math library.
pub const EXACT_FLAGS: &[&str] = &["-std=gnu99", "-ffp-contract=off", "-fno-fast-math"];

/// The flags of [`FloatMode::Fma`]: contraction allowed, nothing else of fast-math.
pub const FMA_FLAGS: &[&str] = &["-std=gnu99", "-ffp-contract=fast", "-fno-fast-math"];

impl FloatMode {
    /// The compiler flags of this mode.
    pub fn flags(self) -> &'static [&'static str] {
        match self {
            FloatMode::Exact => EXACT_FLAGS,
            FloatMode::Fma => FMA_FLAGS,
            FloatMode::AsTyped => &[],
        }
    }
}

impl CCompiler {
    /// `cc` at the given optimisation level (`-O2`), with OpenMP.
    pub fn system(opt: &str) -> CCompiler {
        CCompiler::new("cc", &[opt, "-fopenmp"])
    }

    /// `program` with `flags`, in [`FloatMode::Exact`].
    pub fn new(program: &str, flags: &[&str]) -> CCompiler {
        CCompiler {
            program: program.into(),
            flags: flags.iter().map(|s| s.to_string()).collect(),
            float: FloatMode::Exact,
            libs: Vec::new(),
        }
    }

    /// The same compiler linking `libs` too.
    pub fn with_libs(mut self, libs: &[&str]) -> CCompiler {
        self.libs.extend(libs.iter().map(|s| s.to_string()));
        self
    }

    /// The same compiler in floating-point mode `float`.
    pub fn with_float(mut self, float: FloatMode) -> CCompiler {
        self.float = float;
        self
    }

    /// Every flag before the source file: the caller's, then the float mode's.
    fn all_flags(&self) -> impl Iterator<Item = &str> {
        (self.flags.iter().map(String::as_str)).chain(self.float.flags().iter().copied())
    }

    /// The command line's flags as text (for reports).
    pub fn describe(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.all_flags())
            .chain(self.libs.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Whether the compiler can be started.
    pub fn is_available(&self) -> bool {
        Command::new(&self.program)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// Compiles `source` into the executable `output`.
    pub fn compile(&self, source: &Path, output: &Path) -> Result<(), ToolchainError> {
        self.compile_files(&[source], &[], output)
    }

    /// Compiles `sources` (a program of several files), with `extra` flags after the
    /// compiler's own (`-I`, `-D` of a user's build line), into the executable `output`.
    pub fn compile_files(
        &self,
        sources: &[&Path],
        extra: &[String],
        output: &Path,
    ) -> Result<(), ToolchainError> {
        let mut cmd = Command::new(&self.program);
        cmd.args(self.all_flags())
            .args(extra)
            .args(sources)
            .arg("-o")
            .arg(output)
            .args(&self.libs)
            .arg("-lm");
        let out = cmd
            .output()
            .map_err(|e| ToolchainError::Missing(self.program.clone(), e))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(ToolchainError::CompileFailed {
                command: format!("{cmd:?}"),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            })
        }
    }

    /// Writes `code` to `dir/name.c` and compiles it to `dir/name`; returns the executable.
    pub fn build(&self, code: &str, dir: &Path, name: &str) -> Result<PathBuf, ToolchainError> {
        let source = dir.join(format!("{name}.c"));
        std::fs::write(&source, code)?;
        let exe = dir.join(name);
        self.compile(&source, &exe)?;
        Ok(exe)
    }
}

/// What a finished program printed.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// Whether it exited with status 0.
    pub success: bool,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl RunOutput {
    /// The kernel times the harness reported (`polyc-time` lines), in seconds.
    pub fn times(&self) -> Vec<f64> {
        self.stderr
            .lines()
            .filter_map(|l| l.strip_prefix("polyc-time "))
            .filter_map(|t| t.trim().parse().ok())
            .collect()
    }
}

/// Runs `exe` with `args`, its stack limit raised to the hard limit (Polly's code for some
/// kernels needs stack frames of several megabytes).
pub fn run(exe: &Path, args: &[String]) -> Result<RunOutput, ToolchainError> {
    let mut cmd = Command::new(exe);
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // async-signal-safe `getrlimit`/`setrlimit` on a local value.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_STACK, &mut limit) == 0 {
                limit.rlim_cur = limit.rlim_max;
                libc::setrlimit(libc::RLIMIT_STACK, &limit);
            }
            Ok(())
        });
    }
    run_for(cmd.args(args), exe, run_timeout())
}

/// Runs `cmd` (the program `exe`) with its output captured, stopping it after `limit`.
fn run_for(
    cmd: &mut Command,
    exe: &Path,
    limit: std::time::Duration,
) -> Result<RunOutput, ToolchainError> {
    use std::io::Read;
    use wait_timeout::ChildExt;
    let mut child = (cmd.stdout(std::process::Stdio::piped()))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| ToolchainError::Spawn(exe.to_path_buf(), e))?;
    // drained on threads of their own, so that a program writing much cannot block
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let status = match child.wait_timeout(limit)? {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ToolchainError::Timeout(exe.to_path_buf(), limit));
        }
    };
    let text = |h: std::thread::JoinHandle<Vec<u8>>| {
        String::from_utf8_lossy(&h.join().unwrap_or_default()).into_owned()
    };
    Ok(RunOutput {
        success: status.success(),
        stdout: text(stdout),
        stderr: text(stderr),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_past_its_time_limit_is_stopped() {
        let limit = std::time::Duration::from_millis(300);
        let sh = Path::new("/bin/sh");
        let start = std::time::Instant::now();
        let slow = run_for(Command::new(sh).args(["-c", "sleep 30"]), sh, limit);
        assert!(matches!(slow, Err(ToolchainError::Timeout(..))), "{slow:?}");
        assert!(start.elapsed() < std::time::Duration::from_secs(20));
        let quick = run_for(
            Command::new(sh).args(["-c", "echo out; echo err >&2"]),
            sh,
            limit * 20,
        )
        .unwrap();
        assert!(quick.success);
        assert_eq!(
            (quick.stdout.as_str(), quick.stderr.as_str()),
            ("out\n", "err\n")
        );
    }

    #[test]
    fn the_float_mode_chooses_the_contraction_flag() {
        let exact = CCompiler::new("gcc", &["-O3"]).with_libs(&["-lopenblas"]);
        assert_eq!(
            exact.describe(),
            "gcc -O3 -std=gnu99 -ffp-contract=off -fno-fast-math -lopenblas"
        );
        let fma = exact.with_float(FloatMode::Fma);
        assert_eq!(
            fma.describe(),
            "gcc -O3 -std=gnu99 -ffp-contract=fast -fno-fast-math -lopenblas"
        );
    }
}
