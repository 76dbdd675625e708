//! Plain-language versions of serde's and the standard library's messages about bad input.
//!
//! Deserializers speak of Rust types ("data did not match any variant of untagged enum
//! Blocks", "expected u32", "as i128"); a scenario author thinks in TOML values. The rewriting
//! lives here, apart from the loaders, so every loader gets the same words.

use std::path::Path;

/// `message` with Rust type names replaced by what the file should contain.
pub fn plain(message: &str) -> String {
    let mut m = message.trim_end().to_string();
    if m.contains("untagged enum Blocks") {
        return "expected a block or a list of blocks: a string, a table such as { tokens = 1200 }, { text = \"...\" } or { file = \"prompt.md\" }, or a list of those".to_string();
    }
    if m.contains("untagged enum TextOrContent") {
        return "expected a string, or a table such as { tokens = 120 } or { text = \"...\" }"
            .to_string();
    }
    if let Some(rest) = m.strip_prefix("data did not match any variant of untagged enum ") {
        return format!(
            "this value has none of the shapes a {rest} takes; see docs/scenario-format.md"
        );
    }
    // serde shows integers beyond i64 with their Rust type.
    for suffix in [" as i128", " as u128"] {
        m = m.replace(suffix, "");
    }
    for (rust, plain) in [
        ("expected u8", "expected a whole number from 0 to 255"),
        ("expected u16", "expected a whole number from 0 to 65,535"),
        (
            "expected u32",
            "expected a whole number from 0 to 4,294,967,295",
        ),
        (
            "expected u64",
            "expected a whole number from 0 to 18,446,744,073,709,551,615",
        ),
        ("expected usize", "expected a whole number of at least 0"),
        ("expected i64", "expected a whole number"),
        ("expected i32", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("floating point `", "fraction `"),
        ("invalid type: ", "wrong kind of value: "),
        ("invalid value: integer", "out of range: integer"),
    ] {
        m = m.replace(rust, plain);
    }
    // "…\nin `tokens`" (toml's key path) reads better on the same line.
    if let Some((head, key)) = m.split_once("\nin `") {
        m = format!("{head} (in `{}", key.trim_end());
        m.push(')');
    }
    m
}

/// Reads a text file; bytes that are not UTF-8 are reported with their byte offset, line and
/// column instead of the standard library's "stream did not contain valid UTF-8".
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    let bytes = std::fs::read(path).map_err(ReadError::Io)?;
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let offset = e.utf8_error().valid_up_to();
        let before = &bytes[..offset];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count()
            + 1;
        ReadError::NotUtf8 {
            offset,
            line,
            column,
            byte: bytes[offset],
        }
    })
}

/// Why a text file could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The file could not be read (missing, unreadable).
    Io(std::io::Error),
    /// The bytes are not UTF-8 text; the place of the first bad byte.
    NotUtf8 {
        /// Byte offset of the first byte that is not UTF-8.
        offset: usize,
        /// Its 1-based line.
        line: usize,
        /// Its 1-based column, in characters.
        column: usize,
        /// The byte's value.
        byte: u8,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::NotUtf8 {
                offset,
                line,
                column,
                byte,
            } => write!(
                f,
                "byte {offset} (line {line}, column {column}) is 0x{byte:02x}, which is not UTF-8 text\n  hint: save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`); scenario files are TOML, which is always UTF-8"
            ),
        }
    }
}

impl std::error::Error for ReadError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_types_become_values() {
        assert_eq!(
            plain("invalid value: integer `-5`, expected u32\nin `tokens`\n"),
            "out of range: integer `-5`, expected a whole number from 0 to 4,294,967,295 (in `tokens`)"
        );
        assert!(
            !plain("invalid value: integer `99999999999999999999` as i128, expected u64")
                .contains("i128")
        );
        assert!(
            plain("data did not match any variant of untagged enum Blocks")
                .starts_with("expected a block or a list of blocks")
        );
    }

    #[test]
    fn utf8_errors_name_the_byte() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.toml");
        // "a\nbé" then 0xff: the bad byte is at offset 5 (a, \n, b, é = 2 bytes), line 2,
        // column 3 (b and é are two characters).
        std::fs::write(&p, b"a\nb\xc3\xa9\xff").unwrap();
        let e = read_text(&p).unwrap_err().to_string();
        assert!(e.starts_with("byte 5 (line 2, column 3) is 0xff"), "{e}");
    }
}
