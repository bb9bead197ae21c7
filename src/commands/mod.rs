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
mod settings;
mod status;
mod validate;
mod verify;

use crate::cli::{Cli, Command};
use crate::printer::Printer;

pub use completion::long_version;
pub use error::{CommandError, ExitStatus};
use settings::{apply_options, resolution, runtime};

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
