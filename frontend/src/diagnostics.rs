//! Diagnostics: error codes, messages with spans, and their rustc-style rendering.

use crate::source::SourceFile;
use crate::span::Span;
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor::Buffer, Config};

/// Where an affine expression is required; part of the affinity error codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AffineContext {
    /// An array index.
    Index,
    /// A loop bound.
    Bound,
    /// An `if` condition.
    Guard,
    /// An array extent.
    Extent,
    /// A `where` constraint on the parameters.
    Constraint,
}

impl AffineContext {
    /// All contexts, in code order.
    pub const ALL: [AffineContext; 5] = [
        AffineContext::Index,
        AffineContext::Bound,
        AffineContext::Guard,
        AffineContext::Extent,
        AffineContext::Constraint,
    ];
    fn offset(self) -> u16 {
        self as u16
    }
}

/// A construct of C outside the subset of static control parts that the C front end
/// (`crate::c`) accepts; part of the codes E07xx.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Construct {
    /// `while` and `do ... while` loops.
    While,
    /// `break`.
    Break,
    /// `continue`.
    Continue,
    /// `goto` and labels.
    Goto,
    /// `return`.
    Return,
    /// `switch`, `case`, `default`.
    Switch,
    /// Pointers: pointer variables, `*p`, `&x`, pointer arithmetic, an array used as a value.
    Pointer,
    /// A call of a function that may have side effects (any but the math functions).
    Call,
    /// An assignment, `++` or `--` inside an expression.
    SideEffect,
    /// Arrays that may share memory (parameters the caller may pass overlapping).
    Aliasing,
    /// A type outside the subset (`unsigned`, `short`, `long double`, `long` values).
    Type,
    /// Bitwise operators, shifts, the comma operator, `sizeof`, members, strings.
    Operator,
    /// A `for` loop not of the form `for (i = lo; i < hi; i += c)` (or its variants).
    LoopForm,
    /// A loop iterator written in its loop or read outside it.
    IteratorUse,
    /// A declaration the subset cannot take (`static`, initialiser lists, a name declared
    /// twice).
    Declaration,
    /// An array whose extent is not known (`double A[]`).
    Extent,
    /// A region that is not a sequence of whole statements of one function (unbalanced
    /// `#pragma scop`/`#pragma endscop`, a region outside a function).
    Region,
}

impl Construct {
    /// All constructs, in code order.
    pub const ALL: [Construct; 17] = [
        Construct::While,
        Construct::Break,
        Construct::Continue,
        Construct::Goto,
        Construct::Return,
        Construct::Switch,
        Construct::Pointer,
        Construct::Call,
        Construct::SideEffect,
        Construct::Aliasing,
        Construct::Type,
        Construct::Operator,
        Construct::LoopForm,
        Construct::IteratorUse,
        Construct::Declaration,
        Construct::Extent,
        Construct::Region,
    ];
    fn number(self) -> u16 {
        700 + self as u16
    }
}

/// How serious a rendered diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The input is rejected.
    Error,
    /// The input is accepted with a part left as it was (a C region left unchanged).
    Warning,
}

/// The kind of an error; each has a stable code listed in `docs/language.md` (E07xx, the C
/// front end's, in `docs/c-frontend.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// E0001: a character that starts no token.
    UnexpectedChar,
    /// E0002: `/*` without `*/`.
    UnterminatedComment,
    /// E0003: a literal too large for its kind.
    LiteralOutOfRange,
    /// E0004: a malformed number such as `1e`.
    MalformedNumber,
    /// E0005: the source is not UTF-8 (reported by [`crate::read_source`]).
    InvalidUtf8,
    /// E0010: the parser expected something else.
    Syntax,
    /// E0011: more than [`crate::parser::MAX_DEPTH`] levels of nesting.
    TooDeep,
    /// E0012: no kernel in the file.
    NoKernel,
    /// E0013: `a < b < c`.
    ChainedComparison,
    /// E0100: a name that is declared nowhere.
    UnknownName,
    /// E0101: a name declared twice.
    Duplicate,
    /// E0102: a loop variable hiding another name.
    Shadowing,
    /// E0103: two statements with the same label.
    DuplicateLabel,
    /// E0104: a call to a function that does not exist.
    UnknownFunction,
    /// E0105: indexing or assigning something that is not an array.
    NotAnArray,
    /// E0106: `let` below the kernel's top level.
    NestedLet,
    /// E0200: operand types disagree.
    TypeMismatch,
    /// E0201: a literal that does not fit its type.
    LiteralType,
    /// E0202: a call with the wrong number of arguments.
    Arity,
    /// E0203: a function applied to a type it is not defined for.
    FunctionType,
    /// E0204: a bool where a number is needed or the reverse.
    BoolNumber,
    /// E0205: `%`, `floor`, `ceil` in a value expression.
    AffineOnlyOperator,
    /// E0300: index count differs from the array's rank.
    Rank,
    /// E0400-E0404: an expression that must be affine is not.
    NonAffine(AffineContext),
    /// E0410-E0414: an expression that must be affine reads an array.
    DataDependent(AffineContext),
    /// E0420: `min`/`max` outside a loop bound.
    MinMaxOutsideBound,
    /// E0421: a divisor that is not a positive constant.
    BadDivisor,
    /// E0422: a loop step that is not positive.
    BadStep,
    /// E0423: a constant expression overflows.
    ConstantOverflow,
    /// E0500: a statement writes an `in` array.
    WriteToInput,
    /// E0501: a reduction nested inside an expression.
    ReductionNotWhole,
    /// E0502: two dimensions give a free variable different ranges.
    RangeConflict,
    /// E0503: a free variable outside the target and not reduced over.
    UnboundFreeVariable,
    /// E0504: a reduction variable that indexes no operand dimension.
    UnrangedReduction,
    /// E0505: a reduction with an assignment operator other than `=` or its own.
    ReductionOperator,
    /// E0506: a reduction variable that is repeated, bound, or in the target.
    ReductionVariable,
    /// E0507: a free variable used in the target but not as a whole index.
    FreeNotBare,
    /// E0600: an `intrinsic` in a kernel file, or a `kernel` in an intrinsic file.
    WrongDeclKind,
    /// E0601: a tier annotation (`@ TIER`) on a kernel's array.
    TierOutsideIntrinsic,
    /// E0602: an intrinsic operand without a tier annotation.
    MissingTier,
    /// E0603: `params`, `let` or a non-constant extent in an intrinsic.
    IntrinsicShape,
    /// E0700-E0716: a C construct outside the subset.
    Outside(Construct),
}

/// The codes with a fixed number (all but the affinity codes, which are numbered by context).
const NUMBERED: [(Code, u16); 39] = {
    use Code::*;
    [
        (UnexpectedChar, 1),
        (UnterminatedComment, 2),
        (LiteralOutOfRange, 3),
        (MalformedNumber, 4),
        (InvalidUtf8, 5),
        (Syntax, 10),
        (TooDeep, 11),
        (NoKernel, 12),
        (ChainedComparison, 13),
        (UnknownName, 100),
        (Duplicate, 101),
        (Shadowing, 102),
        (DuplicateLabel, 103),
        (UnknownFunction, 104),
        (NotAnArray, 105),
        (NestedLet, 106),
        (TypeMismatch, 200),
        (LiteralType, 201),
        (Arity, 202),
        (FunctionType, 203),
        (BoolNumber, 204),
        (AffineOnlyOperator, 205),
        (Rank, 300),
        (MinMaxOutsideBound, 420),
        (BadDivisor, 421),
        (BadStep, 422),
        (ConstantOverflow, 423),
        (WriteToInput, 500),
        (ReductionNotWhole, 501),
        (RangeConflict, 502),
        (UnboundFreeVariable, 503),
        (UnrangedReduction, 504),
        (ReductionOperator, 505),
        (ReductionVariable, 506),
        (FreeNotBare, 507),
        (WrongDeclKind, 600),
        (TierOutsideIntrinsic, 601),
        (MissingTier, 602),
        (IntrinsicShape, 603),
    ]
};

impl Code {
    /// Every code.
    pub fn all() -> Vec<Code> {
        let mut all: Vec<Code> = NUMBERED.iter().map(|(c, _)| *c).collect();
        all.extend(AffineContext::ALL.map(Code::NonAffine));
        all.extend(AffineContext::ALL.map(Code::DataDependent));
        all.extend(Construct::ALL.map(Code::Outside));
        all
    }

    /// The code's number.
    pub fn number(self) -> u16 {
        match self {
            Code::NonAffine(c) => 400 + c.offset(),
            Code::DataDependent(c) => 410 + c.offset(),
            Code::Outside(c) => c.number(),
            code => NUMBERED
                .iter()
                .find(|(c, _)| *c == code)
                .map_or(0, |(_, n)| *n),
        }
    }

    /// The code as written in diagnostics, `E0400`.
    pub fn as_string(self) -> String {
        format!("E{:04}", self.number())
    }
}

/// One error: a code, a one-line reason, the exact span, and optional context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The error kind.
    pub code: Code,
    /// The one-line reason.
    pub message: String,
    /// The span the caret points at.
    pub span: Span,
    /// Text under the caret.
    pub label: String,
    /// Other relevant spans, each with its label.
    pub secondary: Vec<(Span, String)>,
    /// Notes and hints printed after the source excerpt.
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// An error with a message, a span and a label under the caret.
    pub fn new(
        code: Code,
        message: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic {
            code,
            message: message.into(),
            span,
            label: label.into(),
            secondary: Vec::new(),
            notes: Vec::new(),
        }
    }
    /// Adds a secondary span with its label.
    pub fn with_secondary(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.secondary.push((span, label.into()));
        self
    }
    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
}

/// At most this many diagnostics are kept; the rest are summarised in one line.
pub const MAX_DIAGNOSTICS: usize = 50;

/// The errors of one run, in source order of discovery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostics {
    /// The errors kept (at most [`MAX_DIAGNOSTICS`]).
    pub list: Vec<Diagnostic>,
    /// How many more were found but dropped.
    pub dropped: usize,
}

impl Diagnostics {
    /// Wraps a list of errors, keeping the first [`MAX_DIAGNOSTICS`].
    pub fn new(mut list: Vec<Diagnostic>) -> Diagnostics {
        let dropped = list.len().saturating_sub(MAX_DIAGNOSTICS);
        list.truncate(MAX_DIAGNOSTICS);
        Diagnostics { list, dropped }
    }

    /// The number of errors found.
    pub fn count(&self) -> usize {
        self.list.len() + self.dropped
    }

    /// Renders all errors the way rustc does (code, reason, `file:line:col`, the source line
    /// with a caret under the span, labels, notes), with ANSI colours if `color`.
    pub fn render(&self, file: &SourceFile, color: bool) -> String {
        self.render_as(file, color, Severity::Error)
    }

    /// Renders all diagnostics as [`render`](Diagnostics::render) does, as errors or as
    /// warnings.
    pub fn render_as(&self, file: &SourceFile, color: bool, severity: Severity) -> String {
        let files = SimpleFile::new(file.name.as_str(), file.text.as_str());
        let config = Config::default();
        let mut buffer = if color {
            Buffer::ansi()
        } else {
            Buffer::no_color()
        };
        for d in &self.list {
            let clamp = |s: Span| {
                let end = s.end.min(file.text.len());
                clamp_to_char(&file.text, s.start.min(end))..clamp_to_char(&file.text, end)
            };
            let mut labels = vec![Label::primary((), clamp(d.span)).with_message(&d.label)];
            labels.extend(
                d.secondary
                    .iter()
                    .map(|(s, m)| Label::secondary((), clamp(*s)).with_message(m)),
            );
            let diag = match severity {
                Severity::Error => CsDiagnostic::error(),
                Severity::Warning => CsDiagnostic::warning(),
            };
            let diag = diag
                .with_code(d.code.as_string())
                .with_message(&d.message)
                .with_labels(labels)
                .with_notes(d.notes.clone());
            // Rendering into memory cannot fail for in-range spans.
            if term::emit_to_write_style(&mut buffer, &config, &files, &diag).is_err() {
                let word = match severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                };
                return format!("{word}[{}]: {}\n", d.code.as_string(), d.message);
            }
        }
        let mut out = String::from_utf8_lossy(buffer.as_slice()).into_owned();
        if self.dropped > 0 {
            out.push_str(&format!("error: {} more errors not shown\n", self.dropped));
        }
        out
    }

    /// The closing line: ``error: could not compile `FILE` due to N previous errors``.
    pub fn summary(&self, file: &SourceFile) -> String {
        let n = self.count();
        format!(
            "error: could not compile `{}` due to {n} previous error{}",
            file.name,
            if n == 1 { "" } else { "s" }
        )
    }
}

/// The largest char boundary at or before `at`.
fn clamp_to_char(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique() {
        let all = Code::all();
        let mut numbers: Vec<u16> = all.iter().map(|c| c.number()).collect();
        numbers.sort();
        numbers.dedup();
        assert_eq!(numbers.len(), all.len());
    }

    #[test]
    fn every_code_is_documented() {
        let language = include_str!("../../docs/language.md");
        let c = include_str!("../../docs/c-frontend.md");
        for code in Code::all() {
            let s = format!("| {} |", code.as_string());
            let doc = if matches!(code, Code::Outside(_)) {
                c
            } else {
                language
            };
            assert!(doc.contains(&s), "{s} missing from its documentation");
        }
    }

    #[test]
    fn renders_rustc_style() {
        let file = SourceFile::new("a.pk", "kernel k() {\n  x = 1;\n}\n");
        let d = Diagnostic::new(
            Code::UnknownName,
            "unknown name `x`",
            Span::new(15, 16),
            "not declared",
        );
        let out = Diagnostics::new(vec![d]).render(&file, false);
        assert!(out.starts_with("error[E0100]: unknown name `x`"), "{out}");
        assert!(out.contains("a.pk:2:3"), "{out}");
        assert!(out.contains("^ not declared"), "{out}");
    }
}
