//! `upgrade verify MANIFEST (--local | --host H)`: the verification launch alone, e.g.
//! after a reboot or a driver update, without touching the stack.

use std::path::PathBuf;

use crate::cli::{ApplyFormat, VerifyArgs};
use crate::commands::{CommandError, ExitStatus, node, runtime};
use crate::exec::{self, launch::LaunchOutcome, launch::LaunchSpec, launch::PID_FILE};
use crate::manifest;
use crate::printer::Printer;
use crate::report;

/// Launch, watch, judge, stop.
pub fn run(args: &VerifyArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let manifest = manifest::load_file(&args.manifest)?;
    let verify = manifest
        .verify
        .clone()
        .ok_or_else(|| CommandError::NoVerify {
            path: args.manifest.clone(),
        })?;
    let spec = LaunchSpec {
        verify,
        pid_file: PathBuf::from(PID_FILE),
        python: manifest.target.python.clone(),
        // Values the server may print: whatever of them the controller knows.
        secrets: manifest
            .env
            .iter()
            .filter(|var| var.secret)
            .filter_map(|var| match &var.value {
                crate::manifest::EnvValue::Literal(value) => Some(value.clone()),
                crate::manifest::EnvValue::FromEnv(name) => crate::settings::env::var(name),
            })
            .collect(),
        // No node lock is held here: a recorded server may be another run's.
        stop_earlier: false,
    };
    let selection = node::selection(&args.node, &args.ssh);
    printer.progress(&format!(
        "verification launch — waiting for {:?}",
        spec.verify.ready
    ));
    let (node, outcome) = runtime()?.block_on(async {
        let transport = exec::connect(&selection).await?;
        let outcome = exec::launch::launch(&transport, &spec).await?;
        Ok::<_, CommandError>((transport.name().to_string(), outcome))
    })?;
    printer.progress_done();
    let text = match args.format {
        ApplyFormat::Json => {
            let mut text = serde_json::to_string_pretty(
                &serde_json::json!({ "node": node, "verification": outcome }),
            )
            .map_err(|error| CommandError::Output(error.into()))?;
            text.push('\n');
            text
        }
        ApplyFormat::Text => report::apply::launch(&node, &outcome),
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(if matches!(outcome, LaunchOutcome::Ready { .. }) {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
