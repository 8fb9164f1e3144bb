//! Every scheduler, by name.

use crate::baseline::{Identity, Isl};
use crate::feautrier::Feautrier;
use crate::pluto::Pluto;
use crate::Scheduler;

/// All schedulers, in the order tables list them.
pub fn all_schedulers() -> Vec<Box<dyn Scheduler>> {
    vec![
        Box::new(Pluto::default()),
        Box::new(Feautrier),
        Box::new(Isl),
        Box::new(Identity),
    ]
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
