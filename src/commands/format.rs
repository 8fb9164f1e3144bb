//! How a command that prints measurements prints them (`polyc compare`, `polyc bench
//! --target npu`).

/// An output format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// An aligned table (a row per kernel and scheduler, or per candidate program).
    Table,
    /// The table's columns as comma-separated values (RFC 4180), with a header line.
    Csv,
    /// JSON: every row with everything measured (every band and run's time; every
    /// candidate and the ranking figures).
    Json,
}
