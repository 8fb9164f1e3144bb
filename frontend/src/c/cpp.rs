//! Running the system preprocessor on a C file: the only code of the front end that starts
//! a process.
//!
//! The preprocessor is `cpp` (or the command in the environment variable `POLYC_CPP`, words
//! separated by blanks, such as `gcc -E`), given the user's `-I` and `-D` flags and the file's
//! path, so that the line markers of its output name the file as the user did and
//! `#include "..."` is found beside it.

use std::path::Path;
use std::process::Command;

/// The preprocessor's flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cpp {
    /// Include directories (`-I DIR`).
    pub include: Vec<String>,
    /// Macro definitions (`-D NAME` or `-D NAME=VALUE`).
    pub define: Vec<String>,
}

/// The environment variable naming the preprocessor command.
pub const COMMAND_VARIABLE: &str = "POLYC_CPP";

impl Cpp {
    /// The command run: the program and its fixed arguments.
    pub fn command() -> Vec<String> {
        std::env::var(COMMAND_VARIABLE)
            .ok()
            .map(|c| c.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| vec!["cpp".to_owned()])
    }

    /// Preprocesses the file at `path`; the error says what failed, with the
    /// preprocessor's own messages.
    pub fn run(&self, path: &Path) -> Result<String, String> {
        let command = Cpp::command();
        let mut cmd = Command::new(&command[0]);
        cmd.args(&command[1..]);
        for dir in &self.include {
            cmd.arg(format!("-I{dir}"));
        }
        for def in &self.define {
            cmd.arg(format!("-D{def}"));
        }
        cmd.arg(path);
        let out = cmd.output().map_err(|e| {
            format!(
                "cannot run the C preprocessor `{}`: {e} (set {COMMAND_VARIABLE} to choose another)",
                command.join(" ")
            )
        })?;
        if !out.status.success() {
            return Err(format!(
                "the C preprocessor failed on `{}`:\n{}",
                path.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        String::from_utf8(out.stdout)
            .map_err(|_| format!("the preprocessed `{}` is not UTF-8", path.display()))
    }
}
