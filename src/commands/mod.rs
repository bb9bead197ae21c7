//! One file per verb: each takes its parsed arguments and returns an [`ExitStatus`].
//!
//! Errors that stop a verb are [`CommandError`]s; each class maps to one exit code,
//! documented in the README.

mod abi_check;
mod apply;
mod completion;
mod diff;
mod error;
mod export;
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

use crate::cli::{Cli, Command};
use crate::printer::Printer;

pub use error::{CommandError, ExitStatus};

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
        Command::Export(args) => export::run(&args, printer),
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
