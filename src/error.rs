//! The driver's error type and its exit codes (documented in the README).

use std::fmt;

/// Why a command failed.
#[derive(Debug)]
pub enum CliError {
    /// The input is wrong (a diagnostic was already rendered, or the message says why).
    /// Exit code 1.
    User(String),
    /// polyc itself failed (a bug, or a resource limit such as isl's operation budget).
    /// Exit code 2.
    Internal(String),
}

impl CliError {
    /// The process exit code for this error: 1 for user errors, 2 for internal ones.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::User(_) => 1,
            CliError::Internal(_) => 2,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::User(m) => f.write_str(m),
            CliError::Internal(m) => write!(f, "internal error: {m}"),
        }
    }
}
