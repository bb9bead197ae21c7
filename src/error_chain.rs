//! An error and its `#[source]` chain as text: the one renderer every layer uses (a leaf
//! module: it imports nothing of the crate).

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
