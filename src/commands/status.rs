//! `upgrade status MANIFEST (--local | --host H | -i INVENTORY)`: whether each node matches the manifest
//! now (its plan is all no-op), and what the last apply that changed it did, read from
//! the node's journal. Changes nothing. Exit 0 when it matches, 1 when it differs.

use serde::Serialize;

use crate::cli::{ApplyFormat, StatusArgs};
use crate::commands::node::{self, NodeChoice, hash_command};
use crate::commands::{CommandError, ExitStatus, runtime};
use crate::converge::{self, Prepared};
use crate::exec::journal::{self, BenchmarkPhase, JournalBenchmark, JournalEntry, JournalEvent};
use crate::exec::{self};
use crate::printer::Printer;
use crate::report::{self, text_value};
use crate::steps::Action;
use crate::transport::Transport;

/// The last run the journal holds.
#[derive(Debug, Serialize)]
struct LastRun {
    run: String,
    at: u64,
    holder: String,
    manifest: String,
    manifest_sha256: String,
    /// `true` converged, `false` failed, `None` interrupted (no end entry).
    ok: Option<bool>,
    steps: Vec<JournalEntry>,
}

#[derive(Debug, Serialize)]
struct Status {
    node: String,
    manifest: String,
    matches: bool,
    /// The steps that would change something, e.g. `["ldconfig", "env"]`.
    pending: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_run: Option<LastRun>,
    /// The manifest's benchmark as the journal last recorded it; `None` when the
    /// manifest has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    benchmark: Option<BenchmarkStatus>,
}

/// The journal's last baseline and last result after a change.
#[derive(Debug, Serialize)]
struct BenchmarkStatus {
    name: String,
    /// `None`: no apply has measured one on this node.
    baseline: Option<JournalBenchmark>,
    last: Option<JournalBenchmark>,
}

impl BenchmarkStatus {
    fn from_journal(name: &str, entries: &[JournalEntry]) -> Self {
        let last = |phase| {
            journal::last_benchmark(entries, phase).and_then(|entry| entry.benchmark.clone())
        };
        Self {
            name: name.to_string(),
            baseline: last(BenchmarkPhase::Baseline),
            last: last(BenchmarkPhase::After),
        }
    }
}

/// The journal's last run: its entries from the last start on.
fn last_run(entries: Vec<JournalEntry>) -> Option<LastRun> {
    let start = entries
        .iter()
        .rposition(|entry| entry.event == JournalEvent::Start)?;
    let mut run = entries.into_iter().skip(start);
    let first = run.next()?;
    let rest: Vec<JournalEntry> = run.filter(|entry| entry.run == first.run).collect();
    let ok = rest
        .iter()
        .find(|entry| entry.event == JournalEvent::End)
        .and_then(|entry| entry.ok);
    Some(LastRun {
        run: first.run,
        at: first.at,
        holder: first.holder,
        manifest: first.manifest,
        manifest_sha256: first.manifest_sha256,
        ok,
        steps: rest
            .into_iter()
            .filter(|entry| entry.event == JournalEvent::Step)
            .collect(),
    })
}

/// One node's status: probe, plan, read the journal.
/// Where the lock came from, when it tells something (e.g. `lock: x.lock.json (fresh)`),
/// goes to `note`.
async fn node_status(
    transport: &Transport,
    prepared: &Prepared,
    hash_command: &str,
    note: &(dyn Fn(String) + Sync),
) -> Result<Status, CommandError> {
    let facts = converge::facts(transport, prepared).await?;
    let entries = journal::read_last(transport)
        .await
        .map_err(exec::ExecError::from)?;
    let node = transport.name().to_string();
    // Where the lock came from is told even when the plan then fails.
    let (lock, origin) = converge::lock_with_origin(prepared, &facts, &node)?;
    if let Some(text) = origin.note() {
        note(text);
    }
    let urls = converge::index_urls(prepared)?;
    let plan = converge::plan_for(
        prepared,
        &node,
        &facts,
        &lock,
        &urls,
        hash_command,
        &crate::steps::Delivery::default(),
    )?;
    Ok(Status {
        node,
        manifest: prepared.manifest.name.clone(),
        matches: plan.is_converged(),
        pending: plan
            .steps
            .iter()
            .filter(|step| step.action != Action::NoOp)
            .map(|step| step.kind.to_string())
            .collect(),
        benchmark: prepared
            .manifest
            .benchmark
            .as_ref()
            .map(|benchmark| BenchmarkStatus::from_journal(&benchmark.name, &entries)),
        last_run: last_run(entries),
    })
}

/// Probe, plan, read the journal, print: one node, or every selected node of an
/// inventory (a node that cannot be reached or read is named with why).
pub fn run(args: &StatusArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let snapshot = args.resolution.snapshot.as_deref();
    if args.fleet.inventory.is_some() {
        return run_fleet(args, printer);
    }
    let prepared = converge::prepare(&args.manifest, super::resolution(&args.resolution)?)?;
    let selection = node::selection(&args.node, &args.ssh);
    let hash_command = hash_command(
        &args.manifest,
        NodeChoice::Probed(&args.node, &args.ssh),
        snapshot,
    );
    let notes = std::sync::Mutex::new(Vec::new());
    let note = |text: String| {
        if let Ok(mut notes) = notes.lock() {
            notes.push(text);
        }
    };
    let status = runtime()?.block_on(async {
        let transport = exec::connect(&selection).await?;
        node_status(&transport, &prepared, &hash_command, &note).await
    });
    for text in notes.into_inner().unwrap_or_default() {
        printer
            .err(&format!("{}\n", text_value(&text)))
            .map_err(CommandError::Output)?;
    }
    let status = status?;
    let text = match args.format {
        ApplyFormat::Json => json(&status)?,
        ApplyFormat::Text => render(&status),
    };
    printer.out(&text).map_err(CommandError::Output)?;
    Ok(exit_status(status.matches, args.detailed_exitcode))
}

/// 0 when every node matches; else 1, or 2 with `--detailed-exitcode` (as `plan`'s).
fn exit_status(matches: bool, detailed: bool) -> ExitStatus {
    match (matches, detailed) {
        (true, _) => ExitStatus::Success,
        (false, true) => ExitStatus::Changes,
        (false, false) => ExitStatus::Failure,
    }
}

/// `status -i INVENTORY`: every selected node at once (`--parallel` at a time); exit 0
/// only when every node matches.
fn run_fleet(args: &StatusArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    if args.fleet.list_hosts {
        let json = args.format == ApplyFormat::Json;
        return super::fleet::list_hosts(&args.fleet, None, json, printer);
    }
    let base = converge::load(&args.manifest, super::resolution(&args.resolution)?)?;
    let run_dir = crate::fleet::run_dir(None, &format!("status-{}", std::process::id()));
    let selected = super::fleet::select(&args.fleet, &args.ssh, &run_dir)?;
    let hash_command = format!(
        "upgrade index hash {} --host NODE",
        crate::shell::quote(&args.manifest.display().to_string())
    );
    let (base, hash_command) = (&base, &hash_command);
    let results: Vec<Result<Status, (String, String)>> =
        runtime()?.block_on(crate::fleet::each_host(
            &selected,
            args.fleet.parallel,
            |host, transport| async move {
                let failed =
                    |error: &dyn std::error::Error| (host.name.clone(), report::error_chain(error));
                let transport = transport.map_err(|error| failed(&error))?;
                let prepared = base
                    .for_host(host.python.as_deref(), &host.vars)
                    .map_err(|error| failed(&error))?;
                // One line a node: where each node's lock came from is not told.
                node_status(&transport, &prepared, hash_command, &|_| {})
                    .await
                    .map_err(|error| failed(&error))
            },
        ));
    let ok = results
        .iter()
        .all(|result| matches!(result, Ok(status) if status.matches));
    let text = match args.format {
        ApplyFormat::Json => {
            let nodes: Vec<serde_json::Value> = results
                .iter()
                .map(|result| match result {
                    Ok(status) => serde_json::to_value(status).unwrap_or_default(),
                    Err((node, error)) => {
                        serde_json::json!({"node": node, "matches": false, "error": error})
                    }
                })
                .collect();
            json(&serde_json::json!({"ok": ok, "nodes": nodes}))?
        }
        ApplyFormat::Text => results
            .iter()
            .map(|result| match result {
                Ok(status) => render(status),
                Err((node, error)) => format!(
                    "{}: status unknown: {}\n",
                    text_value(node),
                    text_value(error)
                ),
            })
            .collect(),
    };
    printer.out(&text).map_err(CommandError::Output)?;
    // Nodes that could not be read are errors, never "changes".
    let unknown = results.iter().any(Result::is_err);
    Ok(exit_status(ok, args.detailed_exitcode && !unknown))
}

/// Pretty JSON with a final newline.
fn json(value: &impl Serialize) -> Result<String, CommandError> {
    let mut text =
        serde_json::to_string_pretty(value).map_err(|error| CommandError::Output(error.into()))?;
    text.push('\n');
    Ok(text)
}

fn render(status: &Status) -> String {
    let node = text_value(&status.node);
    let mut out = if status.matches {
        format!(
            "{node}: matches `{}` (every step a no-op)\n",
            text_value(&status.manifest)
        )
    } else {
        format!(
            "{node}: differs from `{}`: {} to change ({})\n",
            text_value(&status.manifest),
            status.pending.len(),
            text_value(&status.pending.join(", "))
        )
    };
    match &status.last_run {
        None => out.push_str(&format!("{node}: no apply has changed this node\n")),
        Some(run) => {
            let ended = match run.ok {
                Some(true) => "converged",
                Some(false) => "FAILED",
                None => "interrupted (no end recorded)",
            };
            out.push_str(&format!(
                "{node}: last apply {} by {} for `{}`: {ended}\n",
                text_value(&run.run),
                text_value(&run.holder),
                text_value(&run.manifest),
            ));
            for step in &run.steps {
                if let Some(detail) = &step.step {
                    out.push_str(&format!(
                        "      {} {} — {}\n",
                        text_value(&detail.kind),
                        text_value(&detail.outcome),
                        text_value(&detail.detail)
                    ));
                }
            }
        }
    }
    if let Some(benchmark) = &status.benchmark {
        out.push_str(&render_benchmark(&node, benchmark));
    }
    out
}

/// The benchmark's last baseline and last result, e.g. `node0: benchmark output
/// throughput: baseline 89.5 tok/s; last after a change 84.0 tok/s, regressed: …`.
fn render_benchmark(node: &str, benchmark: &BenchmarkStatus) -> String {
    let name = text_value(&benchmark.name);
    let Some(baseline) = &benchmark.baseline else {
        return format!(
            "{node}: benchmark {name}: no baseline yet (an apply that changes the node measures one)\n"
        );
    };
    let mut out = format!(
        "{node}: benchmark {name}: baseline {}",
        report::apply::reading(&baseline.reading, &baseline.unit)
    );
    match &benchmark.last {
        Some(last) => {
            out.push_str(&format!(
                "; last after a change {}",
                report::apply::reading(&last.reading, &last.unit)
            ));
            if let Some(verdict) = last.verdict {
                out.push_str(&format!(", {verdict}"));
            }
            if let Some(cause) = &last.cause {
                out.push_str(&format!(
                    ": {}",
                    text_value(cause.lines().next().unwrap_or_default())
                ));
            }
        }
        None => out.push_str("; no result after a change yet"),
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(run: &str, event: JournalEvent) -> JournalEntry {
        JournalEntry {
            run: run.into(),
            at: 1,
            event,
            manifest: "m".into(),
            manifest_sha256: "00".into(),
            holder: "root on c".into(),
            step: None,
            written: Vec::new(),
            ok: (event == JournalEvent::End).then_some(true),
            environment: None,
            undoes: None,
            benchmark: None,
        }
    }

    #[test]
    fn the_last_run_is_read_from_its_start_and_an_interrupted_one_says_so() {
        let done = vec![
            entry("1", JournalEvent::Start),
            entry("1", JournalEvent::Step),
            entry("1", JournalEvent::End),
        ];
        let run = last_run(done.clone()).unwrap();
        assert_eq!((run.ok, run.steps.len()), (Some(true), 1));
        let mut interrupted = done;
        interrupted.push(entry("2", JournalEvent::Start));
        interrupted.push(entry("2", JournalEvent::Step));
        let run = last_run(interrupted).unwrap();
        assert_eq!(run.run, "2");
        assert_eq!(run.ok, None);
        assert!(last_run(Vec::new()).is_none());
    }
}
