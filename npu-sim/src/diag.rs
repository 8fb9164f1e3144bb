//! Diagnostics: an error code, a one-line reason, the source position, rendered like a
//! compiler's with codespan-reporting.

use crate::program::Span;
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term;
use std::fmt;

macro_rules! codes {
    ($($(#[$doc:meta])* $name:ident = $num:literal),+ $(,)?) => {
        /// Every error the assembler and the simulator report (listed in docs/npu.md).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Code { $($(#[$doc])* $name),+ }
        impl Code {
            /// Every code, in order.
            pub const ALL: &'static [Code] = &[$(Code::$name),+];
            /// `E` and four digits.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$name => $num),+ }
            }
        }
    };
}

codes! {
    /// A character that starts no token.
    BadChar = "E0001",
    /// A token where another was expected.
    Syntax = "E0002",
    /// An unknown instruction mnemonic.
    UnknownOpcode = "E0003",
    /// A reference to an undeclared tensor or buffer.
    UnknownName = "E0004",
    /// A reference to an unknown loop variable.
    UnknownVar = "E0005",
    /// A name declared twice.
    Duplicate = "E0006",
    /// An unknown element type, tier or pipe.
    UnknownKeyword = "E0007",
    /// A product of two non-constant expressions.
    NonAffine = "E0008",
    /// Too many or too few operands, or an operand of the wrong kind.
    Operands = "E0009",
    /// An option the instruction does not take.
    UnknownOption = "E0010",
    /// A required option is missing.
    MissingOption = "E0011",
    /// An option or literal out of its range.
    BadValue = "E0012",
    /// An index with the wrong number of dimensions.
    Rank = "E0013",
    /// Operand element types that the instruction does not accept.
    DType = "E0014",
    /// An operand in a tier the instruction cannot use.
    WrongTier = "E0015",
    /// A data path the machine does not have.
    NoPath = "E0016",
    /// A buffer in a tier the machine does not have.
    NoTier = "E0017",
    /// Buffers that do not fit in their tier.
    Capacity = "E0018",
    /// A misaligned buffer or access.
    Misaligned = "E0019",
    /// A flag whose pipes or id are invalid.
    BadFlag = "E0020",
    /// An access outside its buffer.
    BufferBounds = "E0021",
    /// An access outside its GM tensor.
    GmBounds = "E0022",
    /// A read of bytes never written.
    Uninitialised = "E0023",
    /// Two pipes (or cores) touch the same bytes without ordering.
    Race = "E0024",
    /// Waits that can never be satisfied.
    Deadlock = "E0025",
    /// A flag set that is never waited for.
    UnwaitedFlag = "E0026",
    /// A program that runs too many instructions.
    TooLong = "E0027",
    /// Input or output files that do not fit the program.
    Io = "E0028",
    /// A flag set again before the wait of its previous set (flags hold one event).
    FlagSetTwice = "E0029",
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One error, with the instruction's position and any related positions.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    /// What kind of error.
    pub code: Code,
    /// The one-line reason.
    pub message: String,
    /// Where (None when no source position applies).
    pub span: Option<Span>,
    /// Secondary positions with their labels (e.g. the other side of a race).
    pub related: Vec<(Span, String)>,
    /// Extra lines of explanation.
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// An error at `span`.
    pub fn new(code: Code, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            message: message.into(),
            span: Some(span),
            related: vec![],
            notes: vec![],
        }
    }
    /// An error with no source position.
    pub fn global(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            message: message.into(),
            span: None,
            related: vec![],
            notes: vec![],
        }
    }
    /// Adds a labelled secondary position.
    pub fn with_related(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.related.push((span, label.into()));
        self
    }
    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// Renders as text (no colour): `error[E0002]: reason`, `--> file:line:col`, the line and a
    /// caret.
    pub fn render(&self, file_name: &str, source: &str) -> String {
        let file = SimpleFile::new(file_name, source);
        let clamp = |s: Span| {
            let len = source.len();
            let start = (s.start as usize).min(len);
            start..(s.end as usize).clamp(start, len)
        };
        let mut labels = vec![];
        if let Some(span) = self.span.filter(|_| !source.is_empty()) {
            labels.push(Label::primary((), clamp(span)));
            for (s, l) in &self.related {
                labels.push(Label::secondary((), clamp(*s)).with_message(l));
            }
        }
        let diag = CsDiagnostic::error()
            .with_code(self.code.as_str())
            .with_message(&self.message)
            .with_labels(labels)
            .with_notes(self.notes.clone());
        term::emit_into_string(&term::Config::default(), &file, &diag)
            .unwrap_or_else(|_| format!("error[{}]: {}\n", self.code, self.message))
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error[{}]: {}", self.code, self.message)
    }
}

impl std::error::Error for Diagnostic {}

/// 1-based line of a byte offset.
pub fn line_of(source: &str, offset: u32) -> usize {
    let end = (offset as usize).min(source.len());
    source.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}
