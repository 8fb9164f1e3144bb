//! Source files and reading them (from a path or standard input).

use crate::diagnostics::Code;
use std::io::Read;

/// A source file: its name (for diagnostics) and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// The name shown in diagnostics (the path, or `<stdin>`).
    pub name: String,
    /// The whole text.
    pub text: String,
}

impl SourceFile {
    /// A source file with the given name and text.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        SourceFile {
            name: name.into(),
            text: text.into(),
        }
    }

    /// Decodes raw bytes; invalid UTF-8 is reported like a diagnostic (code `E0005`), with the
    /// line, column and byte offset of the first bad byte.
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<SourceFile, String> {
        match String::from_utf8(bytes) {
            Ok(text) => Ok(SourceFile::new(name, text)),
            Err(err) => {
                let offset = err.utf8_error().valid_up_to();
                let valid = &err.as_bytes()[..offset];
                let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
                let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
                // Valid prefix, so this is whole characters.
                let column = String::from_utf8_lossy(&valid[line_start..])
                    .chars()
                    .count()
                    + 1;
                Err(format!(
                    "error[{}]: source is not valid UTF-8\n  --> {name}:{line}:{column}\n   = note: the first invalid byte is at byte offset {offset}\n",
                    Code::InvalidUtf8.as_string()
                ))
            }
        }
    }
}

/// Reads a source file; `-` reads standard input.
pub fn read_source(path: &str) -> Result<SourceFile, String> {
    let (name, bytes) = if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| format!("error: cannot read standard input: {e}"))?;
        ("<stdin>", bytes)
    } else {
        let bytes = std::fs::read(path).map_err(|e| format!("error: cannot read `{path}`: {e}"))?;
        (path, bytes)
    };
    SourceFile::from_bytes(name, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_reports_position() {
        let err = SourceFile::from_bytes("x.pk", b"ab\ncd\xffe".to_vec()).unwrap_err();
        assert!(err.contains("E0005"), "{err}");
        assert!(err.contains("x.pk:2:3"), "{err}");
        assert!(err.contains("byte offset 5"), "{err}");
    }

    #[test]
    fn valid_utf8_is_kept() {
        let f = SourceFile::from_bytes("x.pk", "é".as_bytes().to_vec()).unwrap();
        assert_eq!(f.text, "é");
    }
}
