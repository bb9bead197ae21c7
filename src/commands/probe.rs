//! `upgrade probe (--local | --host H)`: a node's facts and findings.

use std::path::PathBuf;

use crate::cli::{FactsFormat, ProbeArgs};
use crate::commands::{CommandError, ExitStatus, node, runtime};
use crate::exec;
use crate::facts::ProbeRequest;
use crate::manifest;
use crate::printer::Printer;
use crate::report;

/// Probe the node and print its facts.
pub fn run(args: &ProbeArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let loaded = args
        .manifest
        .as_deref()
        .map(manifest::load_file)
        .transpose()?;
    let python = args
        .python
        .clone()
        .or_else(|| loaded.as_ref().map(|m| m.target.python.clone()))
        .unwrap_or_else(|| PathBuf::from("python3"));
    let mut libraries = args.libraries.clone();
    if let Some(ldconfig) = loaded.as_ref().and_then(|m| m.ldconfig.as_ref()) {
        libraries.extend(ldconfig.expect.iter().cloned());
    }
    let request = ProbeRequest::new(python, libraries);
    let selection = node::selection(&args.node, &args.ssh);
    let facts = runtime()?.block_on(async {
        let transport = exec::connect(&selection).await?;
        exec::gather_facts(&transport, &request).await
    })?;
    let text = match args.format {
        FactsFormat::Json => {
            let mut json = report::facts::json(&facts)?;
            json.push('\n');
            json
        }
        FactsFormat::Text => report::facts::text(&facts),
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(ExitStatus::Success)
}
