//! One file per verb: each takes its parsed arguments and returns an [`ExitStatus`].
//!
//! Errors that stop a verb are [`CommandError`]s; each class maps to one exit code,
//! documented in the README.

mod abi_check;
mod apply;
mod completion;
mod diff;
mod fleet;
mod index;
mod init;
mod lock;
mod node;
mod plan;
mod probe;
mod rollback;
mod status;
mod validate;
mod verify;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::converge::ConvergeError;
use crate::index::SnapshotError;
use crate::index::hashes::HashesError;
use crate::manifest::ManifestError;
use crate::printer::Printer;
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
}

impl ExitStatus {
    /// The process exit code, e.g. `2`.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::InvalidInput | ExitStatus::Changes => 2,
            ExitStatus::Unresolvable => 3,
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
    Index(#[from] index::IndexCommandError),
    /// An inventory could not be read or selects nothing.
    #[error(transparent)]
    Inventory(#[from] crate::inventory::InventoryError),
    /// `--drain` and its companions name no usable drain.
    #[error(transparent)]
    Drain(#[from] crate::fleet::drain::DrainSettingsError),
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
            | Self::Inventory(_)
            | Self::Refused(_)
            | Self::NoVerify { .. }
            | Self::OutputExists { .. }
            | Self::Drain(_)
            | Self::Abi(
                crate::abi::AbiError::NotAnEnvironment { .. }
                | crate::abi::AbiError::Read { .. }
                | crate::abi::AbiError::Wheel { .. },
            ) => ExitStatus::InvalidInput,
            Self::Abi(_) | Self::OutOfService(_) => ExitStatus::Failure,
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
            | Self::Output(_) => ExitStatus::Failure,
            Self::Resolve(_) => ExitStatus::InvalidInput,
            Self::Index(error) => error.exit_status(),
            Self::Unresolvable { .. } => ExitStatus::Unresolvable,
        }
    }
}

/// The live resolution `--live` asks for, from its flags; `None` without `--live`.
fn live_options(
    args: &crate::cli::LiveArgs,
) -> Result<Option<crate::converge::LiveOptions>, CommandError> {
    if !args.live {
        return Ok(None);
    }
    let mut client = index::client_settings(&args.network)?;
    // The pip that tells the default index also prepares an sdist's metadata.
    client.build_python = args.pip_python.clone();
    Ok(Some(crate::converge::LiveOptions {
        client,
        python: args.pip_python.clone(),
        max_projects: args.max_projects,
        max_releases: args.max_releases,
    }))
}

pub use completion::long_version;

/// A runtime for the verbs that talk to nodes or indexes.
fn runtime() -> Result<tokio::runtime::Runtime, CommandError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CommandError::Runtime)
}

/// Run the verb named on the command line.
pub fn run(cli: Cli, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    match cli.command {
        Command::Validate(args) => validate::run(&args, printer),
        Command::Diff(args) => diff::run(&args, printer),
        Command::Index(command) => index::run(command, printer),
        Command::Init(args) => init::run(&args, printer),
        Command::Completion(args) => completion::completion(args.shell, printer),
        Command::Man => completion::man(printer),
        Command::Schema => completion::schema(printer),
        Command::Probe(args) => probe::run(&args, printer),
        Command::Lock(args) => lock::run(&args, printer),
        Command::Plan(args) => plan::run(&args, printer),
        Command::Apply(args) => apply::run(&args, printer),
        Command::Verify(args) => verify::run(&args, printer),
        Command::Status(args) => status::run(&args, printer),
        Command::Rollback(args) => rollback::run(&args, printer),
        Command::AbiCheck(args) => abi_check::run(&args, printer),
    }
}
