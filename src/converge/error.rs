//! Errors of the pipeline: what stopped a node before or while it was converged.
//! Which exit code each class means is decided by `commands`, not here.

use std::path::PathBuf;

use crate::exec::ExecError;
use crate::facts::FactsError;
use crate::index::SnapshotError;
use crate::index::hashes::HashesError;
use crate::index::pip_config::PipConfigError;
use crate::manifest::ManifestError;
use crate::plan::PlanError;
use crate::resolve::ResolveError;
use crate::rules::RulesError;
use crate::steps::env::EnvError;

/// Failed to converge a node (or to get as far as its plan).
#[derive(Debug, thiserror::Error)]
pub enum ConvergeError {
    /// The manifest could not be read or is invalid.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A `from_env` value is missing on the controller.
    #[error(transparent)]
    Env(EnvError),
    /// A shipped rule file is broken.
    #[error(transparent)]
    Rules(#[from] RulesError),
    /// The snapshot could not be read.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// The digests recorded beside the manifest could not be read or applied.
    #[error(transparent)]
    Hashes(#[from] HashesError),
    /// The manifest could not be resolved for the node.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// Live resolution could not fetch what it needed.
    #[error(transparent)]
    Live(Box<crate::resolve::LiveError>),
    /// pip's default index could not be found.
    #[error(transparent)]
    PipConfig(#[from] PipConfigError),
    /// The node could not be planned.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The node could not be worked on.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// The node's facts could not be read.
    #[error(transparent)]
    Facts(#[from] FactsError),
    /// Another apply holds the node (or its lock could not be taken).
    #[error(transparent)]
    Locked(#[from] crate::exec::node_lock::NodeLockError),
    /// A step of the plan cannot be applied; nothing more was changed.
    #[error("Refusing to apply on `{node}`: the `{step}` step is blocked: {reason}")]
    Blocked {
        /// e.g. `node0`.
        node: String,
        /// e.g. `pip`.
        step: String,
        /// Why.
        reason: String,
    },
    /// The person asked said no; nothing was changed.
    #[error("Not applied on `{node}`: the plan was not confirmed; nothing was changed")]
    Declined {
        /// e.g. `node0`.
        node: String,
    },
    /// A rollback cannot start, e.g. the journal holds no run to undo.
    #[error("Refusing to roll back `{node}`: {reason}")]
    Rollback {
        /// e.g. `node0`.
        node: String,
        /// Why.
        reason: String,
    },
    /// A lock (`--lock FILE`) cannot be read, was made from another manifest (or an
    /// edited one), or does not hold on the node; nothing was changed.
    #[error("Refusing lock `{}`: {reason}", path.display())]
    LockRefused {
        /// The lock file.
        path: PathBuf,
        /// Why, naming the digests or the node's facts and how to refresh it.
        reason: String,
    },
    /// The node could not be taken out of service; it is left out (drained) when the
    /// integration got that far, and nothing was changed on it.
    #[error("Failed to take `{node}` out of service ({how})")]
    Drain {
        /// e.g. `node2`.
        node: String,
        /// e.g. `slurm node \`node2\``.
        how: String,
        /// Why, e.g. a job still running past the bound.
        #[source]
        source: super::DrainFailure,
    },
    /// A saved plan no longer matches the node or the manifest.
    #[error("Refusing plan `{}`: {reason}; make a new plan", path.display())]
    StalePlan {
        /// The plan file.
        path: PathBuf,
        /// What changed.
        reason: String,
    },
}

impl From<crate::transport::TransportError> for ConvergeError {
    fn from(error: crate::transport::TransportError) -> Self {
        Self::Exec(error.into())
    }
}

impl From<crate::resolve::LiveError> for ConvergeError {
    fn from(error: crate::resolve::LiveError) -> Self {
        match error {
            crate::resolve::LiveError::Resolve(error) => Self::Resolve(error),
            other => Self::Live(Box::new(other)),
        }
    }
}
