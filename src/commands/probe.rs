//! `upgrade probe (--local | --host H)`: a node's facts and findings, with the ABI
//! check's findings for the interpreter's environment (one more round trip).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::abi;

use crate::cli::{FactsFormat, ProbeArgs};
use crate::commands::{CommandError, ExitStatus, node, runtime};
use crate::exec;
use crate::facts::{Finding, FindingCode, ProbeRequest, Severity};
use crate::manifest;
use crate::printer::Printer;
use crate::report;
use crate::transport::Transport;

/// The ABI check's findings for the interpreter's environment and where its time went;
/// an environment that cannot be read is a note, not a failed probe.
async fn abi_findings(transport: &Transport, python: &Path) -> (Vec<Finding>, Option<String>) {
    match abi::node::report(transport, python).await {
        Ok((report, phases)) => {
            let timings = if phases.cached {
                format!(
                    "ABI check {} ms (interpreter {} ms, the report kept for these {} shared objects {} ms)",
                    milliseconds(phases.interpreter + phases.read),
                    milliseconds(phases.interpreter),
                    report.objects,
                    milliseconds(phases.read),
                )
            } else {
                format!(
                    "ABI check {} ms (interpreter {} ms, tables of {} shared objects {} ms, matching {} ms)",
                    milliseconds(phases.interpreter + phases.read + phases.check),
                    milliseconds(phases.interpreter),
                    report.objects,
                    milliseconds(phases.read),
                    milliseconds(phases.check),
                )
            };
            (report.findings(), Some(timings))
        }
        Err(error) => (
            vec![Finding {
                severity: Severity::Info,
                code: FindingCode::ProbeSectionFailed,
                message: format!("the ABI check could not read the environment: {error}"),
                hint: None,
            }],
            None,
        ),
    }
}

fn milliseconds(duration: Duration) -> u128 {
    duration.as_millis()
}

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
    let started = Instant::now();
    let (facts, abi_findings, timings) = runtime()?.block_on(async {
        let transport = exec::connect(&selection).await?;
        let connected = started.elapsed();
        // The ABI check reads the environment's shared objects: a second round trip, run
        // beside the probe, its findings kept only when the interpreter answered.
        let interpreter = request.python.clone().unwrap_or_default();
        let timed_facts = async {
            let started = Instant::now();
            let facts = exec::gather_facts(&transport, &request).await;
            (facts, started.elapsed())
        };
        let ((facts, facts_time), (abi_findings, abi_time)) =
            tokio::join!(timed_facts, abi_findings(&transport, &interpreter));
        let facts = facts?;
        let abi_findings = match &facts.python {
            Some(_) => abi_findings,
            None => Vec::new(),
        };
        let mut timings = vec![
            format!("connect {} ms", milliseconds(connected)),
            format!("facts {} ms", milliseconds(facts_time)),
        ];
        timings.extend(abi_time);
        Ok::<_, CommandError>((facts, abi_findings, timings))
    })?;
    let text = match args.format {
        FactsFormat::Json => {
            let mut json = report::facts::json_with(&facts, &abi_findings)?;
            json.push('\n');
            json
        }
        FactsFormat::Text => report::facts::text_with(&facts, &abi_findings),
    };
    printer.out(&text).map_err(CommandError::Output)?;
    if printer.verbose() {
        // Where the probe's time went: the facts and the ABI check run side by side.
        let line = format!(
            "timings: {}; total {} ms\n",
            timings.join(", "),
            milliseconds(started.elapsed())
        );
        printer.err(&line).map_err(CommandError::Output)?;
    }
    Ok(ExitStatus::Success)
}
