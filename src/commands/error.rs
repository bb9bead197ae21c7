//! How a verb ends: its [`ExitStatus`], or the [`CommandError`] that stopped it, each
//! class of error mapped to one exit code (documented in the README).

use std::process::ExitCode;

use crate::converge::ConvergeError;
use crate::index::SnapshotError;
use crate::index::hashes::HashesError;
use crate::manifest::ManifestError;
use crate::resolve::{ConflictReport, ResolveError};
use crate::rules::RulesError;

/// How a verb ended, as the process exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// `0`: done, nothing failed.
    Success,
    /// `1`: a node failed, a verification failed, or (with `--exit-code`) a difference.
    Failure,
    /// `2`: invalid input — arguments, manifest, inventory.
    InvalidInput,
    /// `3`: the manifest cannot be resolved.
    Unresolvable,
    /// `2` with `plan --detailed-exitcode`: the plan has changes (and none is blocked).
    Changes,
    /// `4` with `lock --check`: the lock no longer matches the manifest or the indexes.
    LockOutdated,
}

impl ExitStatus {
    /// The process exit code, e.g. `2`.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::InvalidInput | ExitStatus::Changes => 2,
            ExitStatus::Unresolvable => 3,
            ExitStatus::LockOutdated => 4,
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> Self {
        ExitCode::from(status.code())
    }
}

/// Failed to run a verb.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// A manifest could not be read or is invalid.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A shipped rule file is broken.
    #[error(transparent)]
    Rules(#[from] RulesError),
    /// A `--find-links` directory could not be read.
    #[error(transparent)]
    FindLinks(#[from] crate::index::find_links::FindLinksError),
    /// An `index` verb failed.
    #[error(transparent)]
    Index(Box<crate::converge::record::RecordError>),
    /// An inventory could not be read or selects nothing.
    #[error(transparent)]
    Inventory(#[from] crate::inventory::InventoryError),
    /// `--drain` and its companions name no usable drain.
    #[error(transparent)]
    Drain(#[from] crate::fleet::drain::DrainSettingsError),
    /// `--installer uv` found no usable uv to send.
    #[error(transparent)]
    Installer(#[from] crate::steps::installer::InstallerError),
    /// The node could not be taken out of service (nothing was changed on it).
    #[error(transparent)]
    OutOfService(ConvergeError),
    /// A first manifest could not be written from a node.
    #[error(transparent)]
    Init(#[from] crate::converge::init::InitError),
    /// The output file exists and `--force` was not given.
    #[error("Failed to write `{}`: it exists (give `--force` to replace it)", path.display())]
    OutputExists {
        /// e.g. `node0.yaml`.
        path: std::path::PathBuf,
    },
    /// A node could not be worked on.
    #[error(transparent)]
    Exec(#[from] crate::exec::ExecError),
    /// Facts could not be read or written.
    #[error(transparent)]
    Facts(#[from] crate::facts::FactsError),
    /// The async runtime could not start.
    #[error("Failed to start the async runtime")]
    Runtime(#[source] std::io::Error),
    /// Output could not be written or serialized.
    #[error("Failed to write output")]
    Output(#[source] std::io::Error),
    /// A snapshot file could not be read.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// The digests recorded beside a manifest could not be read, applied or written.
    #[error(transparent)]
    Hashes(#[from] HashesError),
    /// The environment or facts could not be read, or the solver failed.
    #[error(transparent)]
    Resolve(ResolveError),
    /// A `from_env` value is missing on the controller.
    #[error(transparent)]
    Env(crate::steps::env::EnvError),
    /// pip's default index could not be found.
    #[error(transparent)]
    PipConfig(#[from] crate::index::pip_config::PipConfigError),
    /// A node could not be planned.
    #[error(transparent)]
    Plan(#[from] crate::plan::PlanError),
    /// Live resolution could not fetch what it needed.
    #[error(transparent)]
    Live(Box<crate::resolve::LiveError>),
    /// A lock file could not be read.
    #[error("Failed to read lock `{}`: {message}", path.display())]
    LockFile {
        /// e.g. `node0.lock.json`.
        path: std::path::PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A lock could not be exported.
    #[error(transparent)]
    Export(Box<crate::resolve::export::ExportError>),
    /// A saved plan file could not be read.
    #[error("Failed to read plan `{}`: {message}", path.display())]
    PlanFile {
        /// The plan file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// An environment could not be read for the ABI check.
    #[error(transparent)]
    Abi(#[from] crate::abi::AbiError),
    /// The manifest has no `verify` section.
    #[error("Failed to verify: `{}` has no `verify` section", path.display())]
    NoVerify {
        /// The manifest.
        path: std::path::PathBuf,
    },
    /// `verify --benchmark` with a manifest that has no `benchmark` section.
    #[error("Failed to run the benchmark: `{}` has no `benchmark` section", path.display())]
    NoBenchmark {
        /// The manifest.
        path: std::path::PathBuf,
    },
    /// Another apply holds the node.
    #[error(transparent)]
    Locked(crate::exec::node_lock::NodeLockError),
    /// The pipeline refused the node: a blocked step, or a saved plan that no longer
    /// matches the node or the manifest; nothing was changed.
    #[error(transparent)]
    Refused(ConvergeError),
    /// `apply` without `--yes` where no terminal can ask.
    #[error(
        "Refusing to apply without confirmation: stdin is not a terminal to ask on; pass `--yes` to apply without asking (scripts, CI), or run it on a terminal to review the plan first"
    )]
    NotConfirmed,
    /// No set of releases satisfies the manifest on the node; the report says why.
    #[error("Failed to resolve `{manifest}` for this node, {}", if *verbose { format!("{report:#}") } else { report.to_string() })]
    Unresolvable {
        /// e.g. `manifests/sglang-0.5.9-cu130.yaml`.
        manifest: String,
        /// The explanation, facts then hints.
        report: Box<ConflictReport>,
        /// Print the whole report (`--verbose`), not the short one.
        verbose: bool,
    },
}

impl From<ResolveError> for CommandError {
    fn from(error: ResolveError) -> Self {
        match error {
            ResolveError::Unresolvable { manifest, report } => Self::Unresolvable {
                manifest,
                report,
                verbose: false,
            },
            other => Self::Resolve(other),
        }
    }
}

impl From<crate::resolve::export::ExportError> for CommandError {
    fn from(error: crate::resolve::export::ExportError) -> Self {
        Self::Export(Box::new(error))
    }
}

impl From<ConvergeError> for CommandError {
    fn from(error: ConvergeError) -> Self {
        match error {
            ConvergeError::Manifest(error) => Self::Manifest(error),
            ConvergeError::Env(error) => Self::Env(error),
            ConvergeError::Rules(error) => Self::Rules(error),
            ConvergeError::Snapshot(error) => Self::Snapshot(error),
            ConvergeError::Hashes(error) => Self::Hashes(error),
            ConvergeError::Resolve(error) => error.into(),
            ConvergeError::Live(error) => Self::Live(error),
            ConvergeError::PipConfig(error) => Self::PipConfig(error),
            ConvergeError::Plan(error) => Self::Plan(error),
            ConvergeError::Exec(error) => Self::Exec(error),
            ConvergeError::Facts(error) => Self::Facts(error),
            refused @ (ConvergeError::Blocked { .. }
            | ConvergeError::Declined { .. }
            | ConvergeError::StalePlan { .. }
            | ConvergeError::LockRefused { .. }
            | ConvergeError::Rollback { .. }) => Self::Refused(refused),
            ConvergeError::Locked(error) => Self::Locked(error),
            drain @ ConvergeError::Drain { .. } => Self::OutOfService(drain),
        }
    }
}

impl CommandError {
    /// This error with the whole conflict report when `verbose` (`--verbose`).
    pub fn verbose(self, verbose: bool) -> Self {
        match self {
            Self::Unresolvable {
                manifest, report, ..
            } => Self::Unresolvable {
                manifest,
                report,
                verbose,
            },
            other => other,
        }
    }

    /// The exit status for this error's class.
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            Self::Refused(ConvergeError::Declined { .. }) => ExitStatus::Failure,
            Self::Manifest(_)
            | Self::Rules(_)
            | Self::Snapshot(_)
            | Self::FindLinks(_)
            | Self::Hashes(
                HashesError::Parse { .. }
                | HashesError::Schema { .. }
                | HashesError::Conflict { .. },
            )
            | Self::Facts(_)
            | Self::Env(_)
            | Self::PipConfig(_)
            | Self::Plan(_)
            | Self::PlanFile { .. }
            | Self::LockFile { .. }
            | Self::Inventory(_)
            | Self::Refused(_)
            | Self::NoVerify { .. }
            | Self::NoBenchmark { .. }
            | Self::OutputExists { .. }
            | Self::Drain(_)
            | Self::Installer(_)
            | Self::Abi(
                crate::abi::AbiError::NotAnEnvironment { .. }
                | crate::abi::AbiError::Read { .. }
                | crate::abi::AbiError::Wheel { .. },
            ) => ExitStatus::InvalidInput,
            Self::Abi(_) | Self::OutOfService(_) => ExitStatus::Failure,
            Self::Export(error)
                if matches!(
                    **error,
                    crate::resolve::export::ExportError::MissingHash { .. }
                        | crate::resolve::export::ExportError::UnknownIndex { .. }
                ) =>
            {
                ExitStatus::InvalidInput
            }
            Self::NotConfirmed => ExitStatus::InvalidInput,
            Self::Live(error)
                if matches!(
                    **error,
                    crate::resolve::LiveError::Client {
                        source: crate::index::client::ClientError::IndexUrl { .. },
                        ..
                    }
                ) =>
            {
                ExitStatus::InvalidInput
            }
            Self::Resolve(ResolveError::Solver { .. })
            | Self::Live(_)
            | Self::Exec(_)
            | Self::Locked(_)
            | Self::Init(_)
            | Self::Hashes(HashesError::Io { .. })
            | Self::Runtime(_)
            | Self::Output(_)
            | Self::Export(_) => ExitStatus::Failure,
            Self::Resolve(_) => ExitStatus::InvalidInput,
            Self::Index(error) if error.is_invalid_input() => ExitStatus::InvalidInput,
            Self::Index(_) => ExitStatus::Failure,
            Self::Unresolvable { .. } => ExitStatus::Unresolvable,
        }
    }

    /// What to do about it, where the error alone does not say: a live resolution that
    /// could not reach an index points at the lock every verb reads offline.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Live(error)
                if matches!(**error, crate::resolve::LiveError::Client { .. }) =>
            {
                Some(
                    "the embedded snapshot records only the shipped stacks, so this manifest is resolved live; run `upgrade lock MANIFEST` where its indexes are reachable and keep the lock beside the manifest: every verb reads it then, with no network (`--offline` uses only the cache, `--snapshot FILE` a recorded snapshot)"
                        .to_string(),
                )
            }
            _ => None,
        }
    }
}
