//! polyc with the `carry-first` scheduler beside the built-in ones:
//! `polyc-carry-first compare FILE.pk`, `polyc-carry-first schedule FILE.pk --scheduler
//! carry-first`, and every other command.

fn main() -> std::process::ExitCode {
    polyc::main_with_schedulers(&[example_heuristic::scheduler])
}
