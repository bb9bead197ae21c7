//! Errors of loading rule files.

/// Failed to load a rule file from `manifests/rules/`.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    /// The YAML did not match the rule file's schema.
    #[error("Failed to parse rule file `{file}`")]
    Parse {
        /// e.g. `manifests/rules/cuda-driver.yaml`.
        file: String,
        /// The located parse error.
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// The file was read but an entry is not usable.
    #[error("Failed to load rule file `{file}`: {message}")]
    Invalid {
        /// e.g. `manifests/rules/cuda-driver.yaml`.
        file: String,
        /// What is wrong, e.g. ``toolkit `13.0.1` is listed twice``.
        message: String,
    },
}
