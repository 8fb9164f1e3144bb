//! Every scheduler, by name: the built-in ones, then the plug-ins other crates registered
//! ([`register`]), each handed out wrapped in [`Checked`] (its schedules checked, its
//! panics caught).

use crate::baseline::{Identity, Isl};
use crate::feautrier::Feautrier;
use crate::plugin::Checked;
use crate::pluto::Pluto;
use crate::Scheduler;
use std::sync::{PoisonError, RwLock};

/// Makes a plug-in scheduler (a fresh one each time the registry lists the schedulers).
pub type Factory = fn() -> Box<dyn Scheduler>;

/// The plug-ins registered in this process, in registration order.
static PLUGINS: RwLock<Vec<Factory>> = RwLock::new(Vec::new());

/// Why a plug-in was not registered.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// Another scheduler has its name.
    #[error("a scheduler named `{0}` is already registered")]
    NameTaken(&'static str),
    /// Its name could not be given to `--scheduler` or in `--schedulers` lists.
    #[error("a scheduler cannot be named `{0}`: use letters, digits, `-` and `_`")]
    BadName(&'static str),
}

fn built_in() -> Vec<Box<dyn Scheduler>> {
    vec![
        Box::new(Pluto::default()),
        Box::new(Feautrier),
        Box::new(Isl),
        Box::new(Identity),
    ]
}

/// Registers a plug-in scheduler for this process: from then on [`all_schedulers`],
/// [`scheduler_named`] and every command that takes a scheduler see it (the plug-in's own
/// `main` calls this, or `polyc::main_with_schedulers`, before anything else).
pub fn register(factory: Factory) -> Result<(), RegisterError> {
    let name = factory().name();
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() || !name.chars().all(valid) {
        return Err(RegisterError::BadName(name));
    }
    let mut plugins = PLUGINS.write().unwrap_or_else(PoisonError::into_inner);
    let taken = (built_in().into_iter())
        .chain(plugins.iter().map(|f| f()))
        .any(|s| s.name() == name);
    if taken {
        return Err(RegisterError::NameTaken(name));
    }
    plugins.push(factory);
    Ok(())
}

/// The registered plug-ins, in registration order, each wrapped in [`Checked`].
pub fn plugins() -> Vec<Box<dyn Scheduler>> {
    let plugins = PLUGINS.read().unwrap_or_else(PoisonError::into_inner);
    (plugins.iter())
        .map(|f| Box::new(Checked(f())) as Box<dyn Scheduler>)
        .collect()
}

/// All schedulers, in the order tables list them: the built-in ones, then the plug-ins.
pub fn all_schedulers() -> Vec<Box<dyn Scheduler>> {
    built_in().into_iter().chain(plugins()).collect()
}

/// The scheduler users select as `name`.
pub fn scheduler_named(name: &str) -> Option<Box<dyn Scheduler>> {
    all_schedulers().into_iter().find(|s| s.name() == name)
}

/// The names of all schedulers, comma-separated (for error messages).
pub fn scheduler_names() -> String {
    let names: Vec<&str> = all_schedulers().iter().map(|s| s.name()).collect();
    names.join(", ")
}
