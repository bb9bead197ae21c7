//! `upgrade completion SHELL`, `upgrade man`, `upgrade schema` and the text of
//! `upgrade --version`: what a shell, `man`, an editor and a bug report need.

use clap::CommandFactory;

use crate::cli::{Cli, CompletionShell};
use crate::commands::{CommandError, ExitStatus};
use crate::printer::Printer;

/// `upgrade --version`'s text: the crate version, the embedded snapshot's date and
/// digest, and the digest of the embedded rules, e.g.
/// `0.1.0 (snapshot 2026-12-02 sha256:9c1e…, rules sha256:3f1c…)`.
pub fn long_version() -> String {
    let (recorded, snapshot) = crate::index::snapshot::embedded_identity();
    format!(
        "{}\nsnapshot: {} ({recorded}) sha256:{snapshot}\nrules: sha256:{}",
        env!("CARGO_PKG_VERSION"),
        crate::index::EMBEDDED_SNAPSHOT_FILE,
        crate::rules::embedded_digest()
    )
}

/// Print the completion script for `shell`.
pub fn completion(
    shell: CompletionShell,
    printer: &mut Printer,
) -> Result<ExitStatus, CommandError> {
    let mut command = Cli::command();
    let mut bytes = Vec::new();
    let generator = match shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(generator, &mut command, "upgrade", &mut bytes);
    printer
        .out(&String::from_utf8_lossy(&bytes))
        .map_err(CommandError::Output)?;
    Ok(ExitStatus::Success)
}

/// Print the man page, `upgrade(1)`, in roff.
pub fn man(printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let mut bytes = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut bytes)
        .map_err(CommandError::Output)?;
    printer
        .out(&String::from_utf8_lossy(&bytes))
        .map_err(CommandError::Output)?;
    Ok(ExitStatus::Success)
}

/// Print the manifest's JSON Schema (`manifests/schema.json`, embedded).
pub fn schema(printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    printer
        .out(crate::manifest::JSON_SCHEMA)
        .map_err(CommandError::Output)?;
    Ok(ExitStatus::Success)
}
