//! `upgrade verify MANIFEST (--local | --host H)`: the verification launch alone, e.g.
//! after a reboot or a driver update, without touching the stack. With `--benchmark`,
//! the manifest's benchmark alone instead, its figure compared with the last baseline
//! an apply recorded in the node's journal (or said to have none).
//!
//! Where the run has a lock without resolving (the lock file beside the manifest, or
//! `--lock`, `--locked`, `--frozen`), the node's packages are compared with it first: a
//! node that differs is named on stderr, and with `--locked` or `--frozen` it fails
//! before the launch. Nothing is resolved for it and no index is reached.

use std::path::PathBuf;

use crate::cli::{ApplyFormat, VerifyArgs};
use crate::commands::{CommandError, ExitStatus, node, runtime};
use crate::exec::{self, launch::LaunchOutcome, launch::LaunchSpec, launch::PID_FILE};
use crate::manifest;
use crate::printer::Printer;
use crate::report;

/// How the node's packages differ from the run's lock, when the run has one without
/// resolving (`None`: no lock file in the default mode, or the node matches it).
async fn lock_differs(
    selection: &exec::NodeSelection,
    prepared: &crate::converge::Prepared,
) -> Result<Option<String>, CommandError> {
    use crate::converge::{self, LockMode};
    if prepared.settings.mode == LockMode::Auto && prepared.lock_file.lock.is_none() {
        return Ok(None);
    }
    let transport = exec::connect(selection).await?;
    let facts = converge::facts(&transport, prepared).await?;
    let name = transport.name().to_string();
    let environment = crate::resolve::TargetEnvironment::from_node(&prepared.manifest, &facts)?;
    let lock = match (&prepared.lock_file.lock, prepared.settings.mode) {
        // Never resolved here: a lock file that does not serve is only named.
        (Some(lock), LockMode::Auto) => {
            let mut why = converge::stale(&prepared.manifest, lock);
            why.extend(lock.mismatches(&environment));
            if !why.is_empty() {
                return Ok(Some(format!("the lock does not serve: {}", why.join("; "))));
            }
            lock.clone()
        }
        _ => converge::lock_for(prepared, &environment, &name)?.0,
    };
    let urls = converge::index_urls(prepared)?;
    let plan = converge::plan_for(
        prepared,
        &name,
        &facts,
        &lock,
        &urls,
        "upgrade index hash",
        &crate::steps::Delivery::default(),
    )?;
    Ok(plan
        .steps
        .iter()
        .find(|step| {
            step.kind == crate::steps::StepKind::PipPins
                && step.action != crate::steps::Action::NoOp
        })
        .map(|step| step.reason.clone()))
}

/// `verify --benchmark`: what it read, and how it compares with the journal's last
/// baseline.
#[derive(Debug, serde::Serialize)]
struct BenchmarkCheck {
    node: String,
    /// The last baseline with a figure, and the run that measured it.
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_run: Option<String>,
    result: Option<exec::benchmark::BenchmarkResult>,
    reading: exec::benchmark::Reading,
}

/// Run the benchmark alone and compare it with the last baseline.
fn run_benchmark(
    args: &VerifyArgs,
    manifest: &manifest::Manifest,
    secrets: &[String],
    printer: &mut Printer,
) -> Result<ExitStatus, CommandError> {
    use exec::benchmark::{self, Reading, Verdict};
    use exec::journal::{self, BenchmarkPhase};
    let bench = manifest
        .benchmark
        .as_ref()
        .ok_or_else(|| CommandError::NoBenchmark {
            path: args.manifest.clone(),
        })?;
    let selection = node::selection(&args.node, &args.ssh);
    printer.progress(&format!(
        "benchmark — {} (`{}`)",
        bench.name,
        crate::shell::join(&bench.command)
    ));
    let (node, entries, reading) = runtime()?.block_on(async {
        let transport = exec::connect(&selection).await?;
        let entries = journal::read_last(&transport)
            .await
            .map_err(exec::ExecError::from)?;
        let reading = benchmark::run(&transport, bench, secrets).await?;
        Ok::<_, CommandError>((transport.name().to_string(), entries, reading))
    })?;
    printer.progress_done();
    let last = journal::last_benchmark(&entries, BenchmarkPhase::Baseline).and_then(|entry| {
        let value = entry.benchmark.as_ref()?.reading.value()?;
        Some((entry.run.clone(), value))
    });
    let result = last.as_ref().map(|(_, value)| {
        benchmark::result(
            bench,
            Reading::Figure { value: *value },
            Some(reading.clone()),
        )
    });
    let ok = match &result {
        Some(result) => result.verdict == Verdict::Passed,
        None => reading.value().is_some(),
    };
    let check = BenchmarkCheck {
        node,
        baseline: last.as_ref().map(|(_, value)| *value),
        baseline_run: last.map(|(run, _)| run),
        result,
        reading,
    };
    let text = match args.format {
        ApplyFormat::Json => {
            let mut text = serde_json::to_string_pretty(&check)
                .map_err(|error| CommandError::Output(error.into()))?;
            text.push('\n');
            text
        }
        ApplyFormat::Text => match &check.result {
            Some(result) => report::apply::benchmark(&check.node, result),
            None => {
                let mut text = format!(
                    "{}: benchmark {}: {} — the journal holds no baseline to compare with (an apply that changes the node measures one)\n",
                    report::text_value(&check.node),
                    report::text_value(&bench.name),
                    report::apply::reading(&check.reading, &bench.unit),
                );
                if let Some(cause) = benchmark::failure_cause(bench, "", &check.reading) {
                    text.push_str(&format!(
                        "{}: benchmark failed: {}\n",
                        report::text_value(&check.node),
                        report::text_value(cause.lines().next().unwrap_or_default())
                    ));
                }
                text
            }
        },
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(if ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// The secret values of the manifest's env block the controller knows: the launch's
/// and the benchmark's output show them as `***`.
fn secrets(manifest: &manifest::Manifest) -> Vec<String> {
    manifest
        .env
        .iter()
        .filter(|var| var.secret)
        .filter_map(|var| match &var.value {
            crate::manifest::EnvValue::Literal(value) => Some(value.clone()),
            crate::manifest::EnvValue::FromEnv(name) => crate::settings::env::var(name),
        })
        .collect()
}

/// Launch, watch, judge, stop.
pub fn run(args: &VerifyArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let manifest = manifest::load_file(&args.manifest)?;
    if args.benchmark {
        return run_benchmark(args, &manifest, &secrets(&manifest), printer);
    }
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
        secrets: secrets(&manifest),
        // No node lock is held here: a recorded server may be another run's.
        stop_earlier: false,
    };
    let selection = node::selection(&args.node, &args.ssh);
    let prepared = crate::converge::prepare(&args.manifest, super::resolution(&args.resolution)?)?;
    if let Some(differs) = runtime()?.block_on(lock_differs(&selection, &prepared))? {
        let strict = prepared.settings.mode != crate::converge::LockMode::Auto;
        let text = format!(
            "{}: the node's packages differ from the lock `{}`: {differs}\n",
            manifest.name,
            prepared.lock_file.path.display()
        );
        if strict {
            printer.problems(&text).map_err(CommandError::Output)?;
            return Ok(ExitStatus::Failure);
        }
        printer.err(&text).map_err(CommandError::Output)?;
    }
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
