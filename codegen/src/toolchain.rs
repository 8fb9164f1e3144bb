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
}

/// A C compiler with its flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CCompiler {
    /// The program (`cc`, `gcc`, `clang-16`).
    pub program: String,
    /// Flags before the source file.
    pub flags: Vec<String>,
    /// Libraries linked after it (`-lopenblas`), before the math library.
    pub libs: Vec<String>,
}

/// Flags every build needs for bit-exact results: no contraction of `a * b + c` into fused
/// multiply-adds (which round once instead of twice), and the math library.
pub const EXACT_FLAGS: &[&str] = &["-std=gnu99", "-ffp-contract=off", "-fno-fast-math"];

impl CCompiler {
    /// `cc` at the given optimisation level (`-O2`), with OpenMP.
    pub fn system(opt: &str) -> CCompiler {
        CCompiler::new("cc", &[opt, "-fopenmp"])
    }

    /// `program` with `flags` plus [`EXACT_FLAGS`].
    pub fn new(program: &str, flags: &[&str]) -> CCompiler {
        let mut all: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
        all.extend(EXACT_FLAGS.iter().map(|s| s.to_string()));
        CCompiler {
            program: program.into(),
            flags: all,
            libs: Vec::new(),
        }
    }

    /// The same compiler linking `libs` too.
    pub fn with_libs(mut self, libs: &[&str]) -> CCompiler {
        self.libs.extend(libs.iter().map(|s| s.to_string()));
        self
    }

    /// The command line's flags as text (for reports).
    pub fn describe(&self) -> String {
        let mut parts = vec![self.program.clone()];
        parts.extend(self.flags.iter().cloned());
        parts.extend(self.libs.iter().cloned());
        parts.join(" ")
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
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.flags)
            .arg(source)
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
    let out = cmd
        .args(args)
        .output()
        .map_err(|e| ToolchainError::Spawn(exe.to_path_buf(), e))?;
    Ok(RunOutput {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}
