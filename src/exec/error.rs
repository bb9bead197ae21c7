//! Errors of the executor.

use crate::facts::FactsError;
use crate::transport::TransportError;

/// Failed to work on a node.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The node could not be reached or a command could not run.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// A file for the node could not be fetched or verified.
    #[error(transparent)]
    Download(#[from] crate::transport::download::DownloadError),
    /// The build requirements of a source install could not be read from the
    /// `pyproject.toml` of its commit (`--fetch controller`).
    #[error("Failed to read the build requirements of `{package}` at commit `{commit}`")]
    BuildSystem {
        /// e.g. `sglang`.
        package: String,
        /// The bundled commit, e.g. `4f1c…`.
        commit: String,
        /// Which file, and what is wrong in it.
        #[source]
        source: Box<crate::index::pyproject::BuildSystemError>,
    },
    /// The build requirements of a source install could not be resolved or fetched on
    /// the controller (`--fetch controller`).
    #[error(
        "Failed to fetch the build requirements of `{package}` ({requires}) on the controller for this node: {reason}"
    )]
    BuildRequirements {
        /// e.g. `sglang`.
        package: String,
        /// e.g. `setuptools>=61, wheel`.
        requires: String,
        /// Why: the resolver's report, or the download that failed (credentials masked).
        reason: String,
    },
    /// A locked file could not be found on its index (`--fetch controller`).
    #[error("Failed to find `{file}` on index `{index}`: {reason}")]
    IndexFile {
        /// e.g. `torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
        file: String,
        /// e.g. `pytorch-cu130`.
        index: String,
        /// What went wrong (credentials never shown).
        reason: String,
    },
    /// The probe ran but its output could not be read.
    #[error("Failed to read the facts of `{host}`")]
    Facts {
        /// e.g. `node0`.
        host: String,
        /// The parse error.
        #[source]
        source: FactsError,
    },
    /// A file's managed block cannot be replaced: its markers do not pair up.
    #[error("Failed to rewrite the managed block of `{}` on `{host}`", path.display())]
    MalformedBlock {
        /// e.g. `node0`.
        host: String,
        /// e.g. `/usr/lib/python3.12/sitecustomize.py`.
        path: std::path::PathBuf,
        /// Which line and what is wrong.
        source: crate::managed_block::MalformedBlock,
    },
    /// The probe ran past its bound and the node stopped it (`timeout`, exit 124): a
    /// command it starts never returned (a GPU fallen off the bus, a hung mount).
    #[error("Failed to probe `{host}`: no answer within {seconds} s; it stopped after: {tail}")]
    ProbeTimedOut {
        /// e.g. `node0`.
        host: String,
        /// The bound it ran past.
        seconds: u64,
        /// The end of what it printed: the sections it finished.
        tail: String,
    },
    /// The probe script itself failed (it is written never to fail).
    #[error("Failed to probe `{host}`: the probe exited with status {status:?}: {tail}")]
    ProbeFailed {
        /// e.g. `node0`.
        host: String,
        /// Its exit status.
        status: Option<i32>,
        /// The end of its output.
        tail: String,
    },
}
