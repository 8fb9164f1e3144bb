//! Intrinsic mapping, proved: software statements matched against hardware intrinsics,
//! every compute mapping enumerated, and each one decided condition by condition by Z3
//! (with isl as a second opinion), a refuted one with a counterexample.
//!
//! The pieces, in data-flow order: [`intrinsic`] (intrinsics as data, and matching a
//! statement to one), [`software`] (the statement side: loops, domain, accesses),
//! [`enumerate`] (which software loops each intrinsic loop receives), [`physical`] (the
//! div/mod tiling onto calls and each operand's memory mapping), [`conditions`] (the seven
//! conditions as linear integer queries over [`formula`]), [`verify`] (deciding them with
//! [`smt`], and [`presburger`] for the second opinion). See `docs/mapping.md`.
//!
//! Deliberately absent: the choice among proved mappings (the NPU back end ranks them with
//! its cost model) and dependences with other statements (the scheduler orders statements;
//! a mapping only reorders the instances of the statement it maps).

pub mod conditions;
pub mod enumerate;
pub mod formula;
pub mod intrinsic;
pub mod library;
pub mod physical;
pub mod presburger;
pub mod qexpr;
pub mod smt;
pub mod software;
pub mod text;
pub mod verify;

use frontend::ir::Access;

/// Decides every condition of `mapping` of the statement `sw` onto `intr` (whose operands
/// stand for `binding`), with operands in the tiers of `target`.
pub fn check(
    sw: &software::Software,
    intr: &intrinsic::Intrinsic,
    binding: &[Access],
    mapping: &physical::Mapping,
    target: &crate::target::Target,
    allow_reorder: bool,
    options: &verify::Options,
) -> Result<verify::Report, physical::LayoutError> {
    let layout = physical::Layout::new(sw, &mapping.groups)?;
    if let Some(&l) =
        (layout.outer.iter()).find(|&&l| intr.loops.iter().any(|x| x.name == sw.loops[l].var))
    {
        return Err(physical::LayoutError::NameClash(sw.loops[l].var.clone()));
    }
    let setup = conditions::Setup {
        sw,
        intr,
        binding,
        mapping,
        layout: &layout,
        target,
        allow_reorder,
    };
    Ok(verify::verify(&setup, options))
}
