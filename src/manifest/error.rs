//! Errors of loading a manifest: located diagnostics, all of a file at once.

use std::fmt;
use std::path::PathBuf;

use super::yaml::Span;

/// One located problem in a manifest, e.g.
/// `manifests/x.yaml:14:12: invalid version specifier ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file as the user named it, e.g. `manifests/x.yaml` or `origin/main:manifests/x.yaml`.
    pub file: String,
    /// Where in the file.
    pub span: Span,
    /// What is wrong and what was expected.
    pub message: String,
    /// How to fix it, when there is an obvious way.
    pub hint: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.span, self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

/// Failed to load a manifest.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file could not be read.
    #[error("Failed to read manifest `{}`", path.display())]
    Read {
        /// The path as given.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file was read but is not a valid manifest.
    #[error("{}", render_invalid(file, diagnostics))]
    Invalid {
        /// The file as the user named it.
        file: String,
        /// Every problem found, in file order.
        diagnostics: Vec<Diagnostic>,
    },
    /// The file is larger than [`super::MAX_MANIFEST_BYTES`].
    #[error(
        "Failed to load manifest `{file}`: it is {size} bytes, more than the limit of 16 MiB ({} bytes)",
        super::MAX_MANIFEST_BYTES
    )]
    TooLarge {
        /// The file as the user named it.
        file: String,
        /// Its size in bytes.
        size: u64,
    },
    /// A `REV:PATH` argument could not be read from git.
    #[error("Failed to read `{path}` at git revision `{rev}`: {message}")]
    GitShow {
        /// e.g. `origin/main`.
        rev: String,
        /// e.g. `manifests/x.yaml`.
        path: String,
        /// What git said.
        message: String,
    },
}

fn render_invalid(file: &str, diagnostics: &[Diagnostic]) -> String {
    let count = diagnostics.len();
    let mut text = format!(
        "Failed to load manifest `{file}`: {count} problem{}",
        if count == 1 { "" } else { "s" }
    );
    for diagnostic in diagnostics {
        text.push('\n');
        text.push_str(&diagnostic.to_string());
    }
    text
}
