//! Why recording digests or a snapshot failed, naming the flag, index, file or package.

use std::path::PathBuf;

use crate::converge::ConvergeError;
use crate::index::SnapshotError;
use crate::index::client::ClientError;
use crate::index::hashes::HashesError;
use crate::index::pip_config::PipConfigError;

/// Failed to record digests or a snapshot.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Talking to an index failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// pip's default index could not be found.
    #[error(transparent)]
    PipConfig(#[from] PipConfigError),
    /// The manifest could not be read, resolved or its node probed.
    #[error(transparent)]
    Converge(#[from] ConvergeError),
    /// The digests beside the manifest could not be read or written.
    #[error(transparent)]
    Hashes(#[from] HashesError),
    /// The snapshot file could not be written.
    #[error("Failed to write snapshot `{}`", path.display())]
    Snapshot {
        /// e.g. `snapshot.json`.
        path: PathBuf,
        /// Why.
        #[source]
        source: SnapshotError,
    },
    /// The async runtime could not start.
    #[error("Failed to start the network runtime")]
    Runtime(#[source] std::io::Error),
    /// No target Python version is known.
    #[error(
        "Failed to choose the target Python version: the manifest has no `target.python_version` and `--python-version` is not given"
    )]
    NoPythonVersion,
    /// The target Python version does not parse.
    #[error(
        "Failed to parse the target Python version `{value}`: expected `MAJOR.MINOR[.PATCH]`, e.g. `3.12`"
    )]
    PythonVersion {
        /// e.g. `three`.
        value: String,
    },
    /// The platform tag does not parse.
    #[error(
        "Failed to parse the platform `{value}`: expected `manylinux_X_Y_ARCH`, e.g. `manylinux_2_35_x86_64`"
    )]
    Platform {
        /// e.g. `win_amd64`.
        value: String,
    },
    /// `--only-index` names an index the manifest does not have.
    #[error(
        "Failed to select index `{name}`: the manifest has no index of that name (it has {known})"
    )]
    UnknownIndex {
        /// e.g. `pypi`.
        name: String,
        /// e.g. `` `pytorch-cu130`, `default` ``.
        known: String,
    },
    /// A timeout flag is not a usable number of seconds.
    #[error("Failed to use `{value}` seconds as `{flag}`: expected a positive number")]
    Duration {
        /// e.g. `--timeout`.
        flag: &'static str,
        /// e.g. `-1`.
        value: f64,
    },
    /// `--package` names a package the lock does not install from an index.
    #[error(
        "Failed to record the sha256 of `{package}`: the lock of `{manifest}` for this node has no index package of that name"
    )]
    NotLocked {
        /// e.g. `torchaudo`.
        package: String,
        /// e.g. `manifests/sglang-0.5.9-cu130.yaml`.
        manifest: String,
    },
    /// The index does not list the locked file (any more).
    #[error(
        "Failed to record the sha256 of `{filename}`: index `{index}` does not list it at `{url}`"
    )]
    NotListed {
        /// e.g. `torchaudio-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
        filename: String,
        /// e.g. `pytorch-cu130`.
        index: String,
        /// The project page, credentials removed.
        url: String,
    },
    /// A manifest package or a `--with` value could not be read as a requirement.
    #[error("Failed to read `{name}` as a requirement")]
    Requirement {
        /// e.g. `torch` or `nvidia-nccl-cu13==2.28.9`.
        name: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl RecordError {
    /// Whether the input was at fault (a flag, the manifest's names, pip's
    /// configuration) rather than the network or a file.
    pub fn is_invalid_input(&self) -> bool {
        match self {
            Self::NoPythonVersion
            | Self::PythonVersion { .. }
            | Self::Platform { .. }
            | Self::UnknownIndex { .. }
            | Self::Duration { .. }
            | Self::Requirement { .. }
            | Self::NotLocked { .. }
            | Self::PipConfig(_)
            | Self::Client(ClientError::IndexUrl { .. }) => true,
            Self::NotListed { .. }
            | Self::Client(_)
            | Self::Snapshot { .. }
            | Self::Runtime(_)
            | Self::Hashes(_)
            | Self::Converge(_) => false,
        }
    }
}
