//! The driver's error type, its exit codes (documented in the README), and the one place
//! where every library error is sorted into them.

use codegen::CodegenError;
use poly::isl::IslError;
use poly::model::ModelError;
use poly::order::OrderError;
use scheduler::legality::CheckError;
use scheduler::optimizer::OptimizeError;
use scheduler::ScheduleError;
use std::fmt;

/// Why a command failed.
#[derive(Debug)]
pub enum CliError {
    /// The input is wrong (a diagnostic was already rendered, or the message says why), or
    /// too hard for isl's operation budget. Exit code 1.
    User(String),
    /// polyc itself failed (a bug). Exit code 2.
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

/// An exhausted operation budget is the input's fault (a problem too hard), any other isl
/// failure ours.
impl From<IslError> for CliError {
    fn from(e: IslError) -> Self {
        match e {
            IslError::OperationLimit(_) | IslError::TooLarge(_) => CliError::User(e.to_string()),
            IslError::Isl(_) => CliError::Internal(e.to_string()),
        }
    }
}

/// A kernel that cannot be lifted is the input's fault, unless isl failed.
impl From<ModelError> for CliError {
    fn from(e: ModelError) -> Self {
        match e {
            ModelError::Isl(e) => e.into(),
            other => CliError::User(other.to_string()),
        }
    }
}

/// A scheduler that finds no schedule has a bug (the original order always is one); a
/// plug-in's fault is its author's, not polyc's.
impl From<ScheduleError> for CliError {
    fn from(e: ScheduleError) -> Self {
        match e {
            ScheduleError::Isl(e) => e.into(),
            ScheduleError::Model(e) => e.into(),
            plugin @ ScheduleError::Plugin { .. } => CliError::User(plugin.to_string()),
            declined @ ScheduleError::IslDeclined(_) => CliError::User(declined.to_string()),
            other @ ScheduleError::NoSchedule { .. } => CliError::Internal(other.to_string()),
        }
    }
}

/// An illegal optimized schedule is refused like an illegal schedule given to `verify`
/// (exit 1, with the checker's counterexample).
impl From<OptimizeError> for CliError {
    fn from(e: OptimizeError) -> Self {
        match e {
            OptimizeError::Schedule(e) => e.into(),
            OptimizeError::Isl(e) => e.into(),
            illegal @ OptimizeError::Illegal(_) => CliError::User(illegal.to_string()),
            // The tree was built from the kernel's own domains: a mismatch is our bug.
            OptimizeError::Check(CheckError::Schedule(e)) if !matches!(e, OrderError::Isl(_)) => {
                CliError::Internal(e.to_string())
            }
            OptimizeError::Check(e) => e.into(),
        }
    }
}

/// A kernel the back end cannot express is the input's fault.
impl From<CodegenError> for CliError {
    fn from(e: CodegenError) -> Self {
        match e {
            CodegenError::Isl(e) => e.into(),
            e @ CodegenError::Unsupported(_) => CliError::User(e.to_string()),
            e @ CodegenError::Internal(_) => CliError::Internal(e.to_string()),
        }
    }
}

/// A schedule that does not fit the kernel is the input's fault.
impl From<CheckError> for CliError {
    fn from(e: CheckError) -> Self {
        match e {
            CheckError::Isl(e) | CheckError::Schedule(OrderError::Isl(e)) => e.into(),
            CheckError::Schedule(e) => CliError::User(e.to_string()),
        }
    }
}
