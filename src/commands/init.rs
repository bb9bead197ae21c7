//! `upgrade init (--local | --host H | --facts F) -o FILE`: a first manifest from a node
//! as it is. The library probes, surveys and renders (`crate::converge::init`); this verb picks the
//! node, writes the file and says what to do next.

use std::path::Path;

use crate::cli::InitArgs;
use crate::commands::{CommandError, ExitStatus, node, runtime};
use crate::converge::init::{self, InitSource};
use crate::exec;
use crate::facts::{NodeFacts, ProbeRequest};
use crate::printer::Printer;

/// Write the first manifest of the node.
pub fn run(args: &InitArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let to_stdout = args.output == Path::new("-");
    if !to_stdout && !args.force && args.output.exists() {
        return Err(CommandError::OutputExists {
            path: args.output.clone(),
        });
    }
    let (source, facts, survey) = match (&args.facts, &args.node.host) {
        (Some(path), _) => (
            InitSource::Facts(path.clone()),
            NodeFacts::read(path)?,
            None,
        ),
        (None, host) => {
            let source = match host {
                Some(host) => InitSource::Host(host.clone()),
                None => InitSource::Local,
            };
            let request = ProbeRequest::new(args.python.clone(), Vec::new());
            let selection = node::selection(&args.node, &args.ssh);
            let (facts, survey) = runtime()?.block_on(async {
                let transport = exec::connect(&selection).await?;
                let facts = exec::gather_facts(&transport, &request).await?;
                let survey = init::gather(&transport, &facts).await?;
                Ok::<_, CommandError>((facts, survey))
            })?;
            (source, facts, survey)
        }
    };
    let text = init::manifest_text(&source, &facts, survey.as_ref())?;
    if to_stdout {
        printer.out(&text).map_err(CommandError::Output)?;
        return Ok(ExitStatus::Success);
    }
    crate::local_file::write_atomic(&args.output, text.as_bytes()).map_err(CommandError::Output)?;
    let decisions = text.matches("decide:").count();
    printer
        .err(&format!(
            "wrote {} from {source}: {decisions} `decide:` comment{} to review; then `upgrade validate {path}`, `upgrade lock {path}` (the lock beside it, which every verb reads) and `upgrade plan {path} …` (all no-op on this node)\n",
            args.output.display(),
            if decisions == 1 { "" } else { "s" },
            path = crate::shell::quote(&args.output.display().to_string()),
        ))
        .map_err(CommandError::Output)?;
    Ok(ExitStatus::Success)
}
