//! How a command that prints measurements prints them (`--emit` of `polyc compare` and
//! `polyc bench`; `--format` is its older name).

/// An output format.
#[derive(clap::ValueEnum, serde::Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// An aligned table (a row per kernel and scheduler, or per candidate program).
    Table,
    /// The table's columns as comma-separated values (RFC 4180), with a header line.
    Csv,
    /// A JSON report (`docs/studies.md`): the polyc version and commit, the host and
    /// machine, every option, and every row with everything measured (every band and run's
    /// time; every candidate and the ranking figures).
    Json,
}

/// The output of a command that reports a verdict (`polyc verify`).
#[derive(clap::ValueEnum, serde::Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Output {
    /// Sentences for a reader.
    Text,
    /// A JSON report (`docs/studies.md`).
    Json,
}
