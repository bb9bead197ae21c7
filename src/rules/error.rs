//! Errors of loading rule files: the embedded ones and a user's rules directory.

use std::path::PathBuf;

/// Failed to load a rule file (embedded from `manifests/rules/`, or a user's rules
/// directory). Every problem of a file's content names `file:line`.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    /// The YAML did not match the rule file's schema.
    #[error("{file}:{line}:{column}: invalid rule file: {message}")]
    Parse {
        /// e.g. `manifests/rules/cuda-driver.yaml` or `site-rules/cuda-driver.yaml`.
        file: String,
        /// The line of the problem, from 1.
        line: usize,
        /// The column of the problem, from 1.
        column: usize,
        /// What the parser said, e.g. ``driver_minimums[0]: missing field `driver` ``.
        message: String,
    },
    /// The file was read but an entry is not usable.
    #[error("{file}:{line}: invalid rule file: {message}")]
    Invalid {
        /// e.g. `manifests/rules/cuda-driver.yaml` or `site-rules/cuda-driver.yaml`.
        file: String,
        /// The line of the entry, from 1.
        line: usize,
        /// What is wrong, e.g. ``toolkit `13.0.1` is listed twice``.
        message: String,
    },
    /// A user's rules directory could not be read (missing, not a directory).
    #[error("Failed to read rules directory `{}`", dir.display())]
    ReadDir {
        /// The directory as given, e.g. `site-rules`.
        dir: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A rule file of a user's rules directory could not be read.
    #[error("Failed to read rule file `{}`", path.display())]
    Read {
        /// e.g. `site-rules/cuda-driver.yaml`.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A rule file larger than [`super::MAX_RULE_FILE_BYTES`].
    #[error(
        "{}: a rule file is at most {} bytes; this one is larger",
        path.display(),
        super::MAX_RULE_FILE_BYTES
    )]
    TooLarge {
        /// e.g. `site-rules/cuda-driver.yaml`.
        path: PathBuf,
    },
    /// An entry of a user's rules directory that is no rule file of this build.
    #[error(
        "{}: not a rule file this build reads; a rules directory holds only {}",
        path.display(),
        super::RULE_FILES.join(", ")
    )]
    UnknownFile {
        /// e.g. `site-rules/cuda-drivers.yaml`.
        path: PathBuf,
    },
}
