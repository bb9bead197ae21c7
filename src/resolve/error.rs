//! Errors of resolving a manifest.

use super::conflict::ConflictReport;

/// Failed to resolve a manifest.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// No set of releases satisfies the manifest on this node; the report says why.
    #[error("Failed to resolve `{manifest}`: no set of releases satisfies it on this node")]
    Unresolvable {
        /// e.g. `manifests/sglang-0.5.9-cu130.yaml`.
        manifest: String,
        /// The explanation in domain words, with hints.
        report: Box<ConflictReport>,
    },
    /// A value of the node or the manifest that no rule row covers (toolkit 13.0.3, `sm_91`).
    #[error("Failed to resolve `{manifest}`: {}", gaps.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Rules {
        /// e.g. `manifests/sglang-0.5.9-cu130.yaml`.
        manifest: String,
        /// Every uncovered value, each naming its table.
        gaps: Vec<crate::rules::RuleGap>,
    },
    /// The environment's values do not parse.
    #[error("Failed to describe the target environment: {message}")]
    Environment {
        /// e.g. ``\`3.x\` is not a Python version``.
        message: String,
    },
    /// A facts file is not the documented JSON.
    #[error("Failed to parse facts file `{file}`")]
    Facts {
        /// e.g. `node-facts.json`.
        file: String,
        /// The located JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// The solver itself failed (a bug, not a conflict).
    #[error("Failed to resolve: {message}")]
    Solver {
        /// pubgrub's message.
        message: String,
    },
}
