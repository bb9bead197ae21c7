//! Text utilities every layer may use: an error with its chain of causes, a value
//! escaped so it stays on its line, and [`Line`], one line of text checked where it
//! enters. A leaf: it imports nothing of the crate.
//!
//! A "line break" here is every character some reader of the tool's output ends a line
//! at: Python's `str.splitlines` (CPython 3.13+ reads `.pth` files with it, pip reads
//! requirements files with it) splits on `\n \r \v \f \x1c \x1d \x1e \x85 U+2028 U+2029`.
//!
//! See: <https://docs.python.org/3/library/stdtypes.html#str.splitlines>

use std::error::Error;
use std::fmt::{self, Write};
use std::ops::Deref;

use serde::{Deserialize, Serialize};

/// Render an error and its `#[source]` chain, one cause per line, e.g.
/// `Failed to parse rule file ...\n  caused by: ...`.
pub fn error_chain(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let _ = write!(text, "\n  caused by: {cause}");
        source = cause.source();
    }
    text
}

/// Escape control characters so a value stays on its line, e.g. `a\nb` → `a\\nb`;
/// bidirectional controls (e.g. U+202E, which shows `cod.exe` as `exe.doc`) and the
/// Unicode line and paragraph separators are escaped the same way, e.g. `\u{202e}`.
pub fn text_value(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for ch in value.chars() {
        match ch {
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            '\t' => escaped.push_str("\\t"),
            c if is_unsafe_in_line(c) => {
                let _ = write!(escaped, "\\u{{{:x}}}", u32::from(c));
            }
            c => escaped.push(c),
        }
    }
    escaped
}

/// `text` as a terminal may show it: line feeds and tabs kept, every other character
/// that could move the cursor, recolour, retitle or reorder the screen (escape
/// sequences, carriage returns, C1 controls, U+2028, bidirectional controls) escaped as
/// [`text_value`] escapes it, e.g. `\u{1b}[2J` for a clear-screen a package name carried.
pub fn terminal_text(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_here = |c: char| c != '\n' && c != '\t' && is_unsafe_in_line(c);
    if !text.chars().any(unsafe_here) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_here(c) {
            shown.push_str(&text_value(c.encode_utf8(&mut [0; 4])));
        } else {
            shown.push(c);
        }
    }
    std::borrow::Cow::Owned(shown)
}

/// The Unicode bidirectional controls (embeddings, overrides, isolates and marks),
/// which reorder how text is shown, e.g. U+202E RIGHT-TO-LEFT OVERRIDE.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Whether some reader of lines ends a line at `c`, e.g. `\n` or U+2028 LINE SEPARATOR
/// (see the module documentation for the readers).
pub fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{1c}'
            ..='\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Whether `c` may not stand in one line of text: a C0 or C1 control character, a line
/// break of any reader, or a bidirectional control, e.g. `\u{1b}` (escape) or U+2029.
pub fn is_unsafe_in_line(c: char) -> bool {
    c.is_control() || is_line_break(c) || is_bidi_control(c)
}

/// One line of text from an input, checked where it enters: no control character, no
/// line break of any reader and no bidirectional control, e.g. `sglang-0.5.9-cuda13`.
/// Every writer may put it on one line of its syntax and it stays one line.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Line(String);

/// Failed to take text as one line: the first character that cannot stand in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Failed to read `{value}` as one line of text: {kind} U+{code:04X} at character {position}"
)]
pub struct LineError {
    /// The text, escaped, e.g. `a\\u{2028}b`.
    pub value: String,
    /// e.g. `line break`.
    pub kind: &'static str,
    /// The character's code point, e.g. `0x2028`.
    pub code: u32,
    /// Where it is, counted from 1.
    pub position: usize,
}

/// The first character of `text` that cannot stand in one line, with its position
/// (from 1) and what it is, e.g. `(3, '\u{2028}', "line break")`.
pub fn first_unsafe_in_line(text: &str) -> Option<(usize, char, &'static str)> {
    text.chars()
        .enumerate()
        .find_map(|(index, c)| unsafe_kind(c).map(|kind| (index + 1, c, kind)))
}

/// What `c` is when it cannot stand in one line, e.g. `line break` for U+2028; `None`
/// for any other character.
pub fn unsafe_kind(c: char) -> Option<&'static str> {
    if is_bidi_control(c) {
        Some("bidirectional control character")
    } else if is_line_break(c) {
        Some("line break")
    } else if c.is_control() {
        Some("control character")
    } else {
        None
    }
}

impl Line {
    /// Check `text`, e.g. `Line::new("sglang")` is one line, `Line::new("a\u{2028}b")`
    /// is not.
    pub fn new(text: impl Into<String>) -> Result<Self, LineError> {
        let text = text.into();
        match first_unsafe_in_line(&text) {
            None => Ok(Self(text)),
            Some((position, c, kind)) => Err(LineError {
                value: text_value(&text),
                kind,
                code: u32::from(c),
                position,
            }),
        }
    }

    /// `text` with every character that cannot stand in a line escaped as
    /// [`text_value`] does, e.g. `a\\u{2028}b` for `a` U+2028 `b`: for text the tool
    /// composes from values it read, which must still stay on one line.
    pub fn escaping(text: &str) -> Self {
        Self(text_value(text))
    }

    /// The text, e.g. `sglang-0.5.9-cuda13`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Line {
    type Error = LineError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<Line> for String {
    fn from(value: Line) -> Self {
        value.0
    }
}

impl Deref for Line {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Line {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for Line {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<String> for Line {
    fn eq(&self, other: &String) -> bool {
        self.0 == *other
    }
}

impl PartialEq<&str> for Line {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// See: issue 33. Every separator Python's `str.splitlines` knows is a line break.
    #[test]
    fn every_line_break_of_python_is_refused_in_a_line() {
        for separator in [
            '\n', '\r', '\u{0b}', '\u{0c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}', '\u{2028}',
            '\u{2029}',
        ] {
            let text = format!("name{separator}import os");
            assert!(is_line_break(separator), "{separator:?}");
            let error = Line::new(text.as_str()).unwrap_err();
            assert_eq!(error.position, 5, "{separator:?}");
            assert!(!text_value(&text).contains(separator), "{separator:?}");
        }
        assert!(Line::new("sglang-0.5.9 cuda13 ✓").is_ok());
        assert!(Line::new("a\u{202e}b").is_err());
        assert!(serde_json::from_str::<Line>("\"a\\u2028b\"").is_err());
    }

    /// See: issue 33. What reaches a terminal keeps its lines and loses its escapes.
    #[test]
    fn terminal_text_keeps_lines_and_escapes_the_rest() {
        assert_eq!(terminal_text("plan\n\tok\n"), "plan\n\tok\n");
        assert_eq!(
            terminal_text("torch\u{1b}]0;owned\u{7}\r\u{2028}\u{202e}x"),
            "torch\\u{1b}]0;owned\\u{7}\\r\\u{2028}\\u{202e}x"
        );
    }
}
