//! Errors of `upgrade init`: the survey of the target interpreter failed, or the
//! rendered manifest does not load (a bug this module reports instead of writing it).

/// Failed to write a first manifest from a node.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The target interpreter did not answer the survey.
    #[error("Failed to survey `{python}` on `{node}`: {message}")]
    Survey {
        /// The node, e.g. `node0`.
        node: String,
        /// The interpreter, e.g. `/opt/ml-env/bin/python3`.
        python: String,
        /// What went wrong, e.g. the interpreter's last lines of standard error.
        message: String,
    },
    /// The rendered manifest does not validate.
    #[error("Failed to validate the manifest written from `{node}`")]
    Invalid {
        /// The node, e.g. `node0`.
        node: String,
        /// The loader's diagnostics.
        #[source]
        source: crate::manifest::ManifestError,
    },
}
