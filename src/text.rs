//! Text utilities every layer may use: an error with its chain of causes, and a value
//! escaped so it stays on its line. A leaf: it imports nothing of the crate.

use std::error::Error;
use std::fmt::Write;

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
            c if c.is_control() || is_bidi_control(c) || matches!(c, '\u{2028}' | '\u{2029}') => {
                let _ = write!(escaped, "\\u{{{:x}}}", u32::from(c));
            }
            c => escaped.push(c),
        }
    }
    escaped
}

/// The Unicode bidirectional controls (embeddings, overrides, isolates and marks),
/// which reorder how text is shown, e.g. U+202E RIGHT-TO-LEFT OVERRIDE.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}
