//! Rendering results for people and machines: text, markdown and JSON.
//!
//! Every manifest value passes through one of the escapers here before it reaches
//! output, so a value can never forge a line, a terminal escape sequence or markdown.

pub mod apply;
pub mod diff;
pub mod facts;
pub mod fleet;
pub mod validate;

pub use crate::text::{error_chain, text_value};

/// A markdown code span that shows `value` literally, whatever backticks it holds.
pub fn markdown_code(value: &str) -> String {
    let value = text_value(value);
    let longest_run = value.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest_run + 1);
    let pad = if value.starts_with('`') || value.ends_with('`') || value.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{value}{pad}{fence}")
}

/// Markdown prose that shows `value` literally: the characters that start inline
/// markup (`` \ ` * _ [ ] | ~ ``) are backslash-escaped (CommonMark allows it for
/// every ASCII punctuation character), `<`, `>` and `&` become entities, and a
/// character that would start a block (`#`, `-`, `+`, `=`, `1.`) is escaped at the start.
pub fn markdown_text(value: &str) -> String {
    let value = text_value(value);
    let mut escaped = String::with_capacity(value.len());
    for (position, ch) in value.chars().enumerate() {
        match ch {
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '&' => escaped.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' => {
                escaped.push('\\');
                escaped.push(ch);
            }
            '#' | '-' | '+' | '=' | '.' | ')' if position == 0 => {
                escaped.push('\\');
                escaped.push(ch);
            }
            c => escaped.push(c),
        }
    }
    // `1. text` at the start would open an ordered list.
    if let Some(dot) = escaped.find(['.', ')'])
        && dot > 0
        && escaped[..dot].bytes().all(|b| b.is_ascii_digit())
    {
        escaped.insert(dot, '\\');
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_survive_backticks() {
        assert_eq!(markdown_code("==2.9.1"), "`==2.9.1`");
        assert_eq!(markdown_code("a`b"), "``a`b``");
        assert_eq!(markdown_code("`x`"), "`` `x` ``");
        assert_eq!(markdown_code("a\nb"), "`a\\nb`");
    }

    #[test]
    fn prose_is_inert() {
        assert_eq!(markdown_text("<img src=x>"), "&lt;img src=x&gt;");
        assert_eq!(
            markdown_text("**bold** [link](u)"),
            "\\*\\*bold\\*\\* \\[link\\](u)"
        );
        assert_eq!(markdown_text("# title"), "\\# title");
        assert_eq!(markdown_text("12. item"), "12\\. item");
        assert_eq!(markdown_text("a 1. b"), "a 1. b");
        assert_eq!(text_value("a\u{1b}[31mred"), "a\\u{1b}[31mred");
    }

    /// See: issue 9 — bidirectional overrides are escaped like control characters.
    #[test]
    fn bidi_controls_are_escaped() {
        assert_eq!(text_value("abc\u{202e}fdp.exe"), "abc\\u{202e}fdp.exe");
        assert_eq!(markdown_code("x\u{2066}y"), "`x\\u{2066}y`");
        assert_eq!(markdown_text("a\u{200f}b"), "a\\\\u{200f}b");
        assert_eq!(text_value("a\u{2028}b"), "a\\u{2028}b");
    }
}
