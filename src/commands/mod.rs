//! One file per verb: each takes its parsed arguments and returns an [`ExitStatus`].
//!
//! Errors that stop a verb are [`CommandError`]s; each class maps to one exit code,
//! documented in the README.

mod diff;
mod index;
mod validate;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::manifest::ManifestError;
use crate::printer::Printer;
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
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> Self {
        ExitCode::from(match status {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::InvalidInput => 2,
            ExitStatus::Unresolvable => 3,
        })
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
    /// An `index` verb failed.
    #[error(transparent)]
    Index(#[from] index::IndexCommandError),
    /// Output could not be written or serialized.
    #[error("Failed to write output")]
    Output(#[source] std::io::Error),
}

impl CommandError {
    /// The exit status for this error's class.
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            Self::Manifest(_) | Self::Rules(_) => ExitStatus::InvalidInput,
            Self::Index(error) => error.exit_status(),
            Self::Output(_) => ExitStatus::Failure,
        }
    }
}

/// Run the verb named on the command line.
pub fn run(cli: Cli, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    match cli.command {
        Command::Validate(args) => validate::run(&args, printer),
        Command::Diff(args) => diff::run(&args, printer),
        Command::Index(command) => index::run(command, printer),
    }
}
