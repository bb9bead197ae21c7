//! `upgrade apply MANIFEST|PLAN (--local | --host H)`: converge one node, then run the
//! verification launch.
//!
//! Facts are gathered once; a no-op step costs no round trip. Each step with work is
//! re-checked against fresh facts immediately before it runs (someone may have fixed
//! it meanwhile), and the first failing step stops the node with its command, exit
//! status and output tail. A saved plan is refused when the node's facts or the
//! manifest changed since it was made.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::cli::{ApplyArgs, ApplyFormat};
use crate::commands::converge::{self, Prepared, SavedPlan};
use crate::commands::index::{self, NodeChoice};
use crate::commands::{CommandError, ExitStatus, node, runtime};
use crate::exec::launch::{LaunchOutcome, LaunchSpec, launch};
use crate::exec::{self, ApplyContext, StepOutcome, apply_step};
use crate::plan::NodePlan;
use crate::printer::Printer;
use crate::report::text_value;
use crate::resolve::Lock;
use crate::steps::{Action, Step, StepKind};
use crate::transport::Transport;

/// Where the verification launch records its pid on the node.
pub(crate) const PID_FILE: &str = "/run/cuda-upgrade/launch.pid";

/// One step's result, for the report.
#[derive(Debug, Serialize)]
struct StepReport {
    kind: String,
    action: Action,
    outcome: &'static str,
    reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<String>,
}

/// The node's result.
#[derive(Debug, Serialize)]
struct NodeReport {
    node: String,
    ok: bool,
    steps: Vec<StepReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verification: Option<LaunchOutcome>,
    round_trips: u64,
    seconds: f64,
}

/// A saved plan (JSON) when the file is one; `None` for a manifest.
fn read_saved_plan(path: &Path) -> Result<Option<SavedPlan>, CommandError> {
    let Ok(text) = fs_err::read_to_string(path) else {
        // Not readable here: the manifest loader reports it with its own error.
        return Ok(None);
    };
    if !text.trim_start().starts_with('{') {
        return Ok(None);
    }
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|source| CommandError::PlanFile {
            path: path.to_path_buf(),
            message: source.to_string(),
        })
}

/// Converge the node.
pub fn run(args: &ApplyArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let saved = read_saved_plan(&args.target)?;
    let manifest_path: PathBuf = saved
        .as_ref()
        .map_or_else(|| args.target.clone(), |s| s.manifest_path.clone());
    let prepared = converge::prepare(&manifest_path)?;
    if let Some(saved) = &saved
        && saved.manifest_sha256 != prepared.sha256
    {
        return Err(CommandError::StalePlan {
            path: args.target.clone(),
            reason: format!(
                "`{}` changed since the plan was made",
                manifest_path.display()
            ),
        });
    }
    let selection = node::selection(&args.node, &args.ssh);
    let context = ApplyContext {
        cache_dir: crate::settings::default_cache_dir()
            .unwrap_or_else(|| PathBuf::from(".cache/cuda-upgrade"))
            .join("downloads"),
        before_images: Some(PathBuf::from(crate::transport::BEFORE_IMAGES_DIR)),
        secrets: prepared
            .env
            .iter()
            .filter(|var| var.secret)
            .map(|var| var.value.clone())
            .collect(),
    };
    let started = Instant::now();
    let report = runtime()?.block_on(async {
        let transport = exec::connect(&selection).await?;
        converge_node(
            &transport,
            &prepared,
            saved.as_ref(),
            args,
            &context,
            printer,
        )
        .await
        .map(|mut report| {
            report.round_trips = transport.round_trips();
            report
        })
    })?;
    let report = NodeReport {
        seconds: started.elapsed().as_secs_f64(),
        ..report
    };
    let ok = report.ok;
    match args.format {
        ApplyFormat::Json => {
            let mut text = serde_json::to_string_pretty(&report)
                .map_err(|error| CommandError::Output(error.into()))?;
            text.push('\n');
            printer.out(&text).map_err(CommandError::Output)?;
        }
        ApplyFormat::Text => printer
            .out(&render(&report))
            .map_err(CommandError::Output)?,
    }
    Ok(if ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

async fn converge_node(
    transport: &Transport,
    prepared: &Prepared,
    saved: Option<&SavedPlan>,
    args: &ApplyArgs,
    context: &ApplyContext,
    printer: &mut Printer,
) -> Result<NodeReport, CommandError> {
    let node = transport.name().to_string();
    let facts = converge::facts(transport, prepared).await?;
    let mut lock: Lock = match saved {
        Some(saved) => {
            let digest = facts.digest()?.to_string();
            if digest != saved.facts_digest {
                return Err(CommandError::StalePlan {
                    path: args.target.clone(),
                    reason: format!(
                        "the facts of `{node}` changed since the plan was made ({} → {digest})",
                        saved.facts_digest
                    ),
                });
            }
            saved.lock.clone()
        }
        None => converge::lock(prepared, &facts, args.snapshot.as_deref())?,
    };
    let urls = converge::index_urls(&prepared.manifest)?;
    let hash_command = index::hash_command(
        &prepared.path,
        NodeChoice::Probed(&args.node, &args.ssh),
        args.snapshot.as_deref(),
    );
    let plan: NodePlan = converge::plan_for(prepared, &node, &facts, &lock, &urls, &hash_command)?;
    if let Some(step) = plan.blocked().first() {
        return Err(CommandError::Blocked {
            node: node.clone(),
            step: step.kind.to_string(),
            reason: step.blocked.clone().unwrap_or_default(),
        });
    }
    let mut steps = Vec::new();
    for planned in &plan.steps {
        if planned.action == Action::NoOp {
            steps.push(step_report(planned, "no-op", None));
            continue;
        }
        printer.progress(&format!("{node}: {} — {}", planned.kind, planned.reason));
        // Re-check against fresh facts: the step may have been done meanwhile.
        let fresh = converge::facts(transport, prepared).await?;
        let replanned = converge::plan_for(prepared, &node, &fresh, &lock, &urls, &hash_command)?;
        let step = replanned
            .steps
            .into_iter()
            .find(|step| step.kind == planned.kind && step.subject == planned.subject)
            .unwrap_or_else(|| planned.clone());
        if step.action == Action::NoOp {
            steps.push(step_report(&step, "no-op", None));
            continue;
        }
        // Planned anew (e.g. against an interpreter the python-env step just created),
        // a step can turn out blocked: stop the node before it changes anything more.
        if let Some(reason) = &step.blocked {
            return Err(CommandError::Blocked {
                node: node.clone(),
                step: step.kind.to_string(),
                reason: reason.clone(),
            });
        }
        match apply_step(transport, &step, context).await? {
            StepOutcome::Unchanged => steps.push(step_report(&step, "no-op", None)),
            StepOutcome::Applied => {
                steps.push(step_report(&step, "applied", None));
                // A new interpreter: resolve again for what it really is (its version
                // and tags), unless a saved plan fixed the lock.
                if step.kind == StepKind::PythonEnv && saved.is_none() {
                    let fresh = converge::facts(transport, prepared).await?;
                    lock = converge::lock(prepared, &fresh, args.snapshot.as_deref())?;
                }
            }
            StepOutcome::Failed(failure) => {
                steps.push(step_report(&step, "failed", Some(failure)));
                return Ok(NodeReport {
                    node,
                    ok: false,
                    steps,
                    verification: None,
                    round_trips: 0,
                    seconds: 0.0,
                });
            }
        }
    }
    printer.progress_done();
    let verification = match (&plan.verify, args.no_verify) {
        (Some(verify), false) => {
            printer.progress(&format!(
                "{node}: verification launch — waiting for {:?}",
                verify.ready
            ));
            let spec = LaunchSpec {
                verify: verify.clone(),
                pid_file: PathBuf::from(PID_FILE),
                python: prepared.manifest.target.python.clone(),
                secrets: context.secrets.clone(),
            };
            let outcome = launch(transport, &spec).await?;
            printer.progress_done();
            Some(outcome)
        }
        _ => None,
    };
    let ok = !matches!(
        verification,
        Some(LaunchOutcome::Failed { .. } | LaunchOutcome::Refused { .. })
    );
    Ok(NodeReport {
        node,
        ok,
        steps,
        verification,
        round_trips: 0,
        seconds: 0.0,
    })
}

fn step_report(
    step: &Step,
    outcome: &'static str,
    failure: Option<exec::StepFailure>,
) -> StepReport {
    StepReport {
        kind: step.kind.to_string(),
        action: step.action,
        outcome,
        reason: step.reason.clone(),
        command: failure.as_ref().map(|f| f.operation.clone()),
        status: failure.as_ref().and_then(|f| f.status),
        output: failure.map(|f| f.detail),
    }
}

/// The verification outcome as text lines, e.g. `node0: verification: ready in 2.0s …`.
pub(crate) fn render_launch(node: &str, outcome: &LaunchOutcome) -> String {
    let mut out = String::new();
    match outcome {
        LaunchOutcome::Ready {
            time_to_ready,
            pid,
            stopped,
        } => out.push_str(&format!(
            "{}: verification: ready in {:.1}s (pid {pid}{})\n",
            text_value(node),
            time_to_ready.as_secs_f64(),
            if *stopped {
                ", stopped"
            } else {
                ", left running"
            }
        )),
        LaunchOutcome::Refused { reason, .. } => {
            out.push_str(&format!(
                "{}: verification refused: {}\n",
                text_value(node),
                text_value(reason)
            ));
        }
        LaunchOutcome::Failed {
            failure,
            last_lines,
            ..
        } => {
            out.push_str(&format!(
                "{}: verification failed: {}\n",
                text_value(node),
                text_value(&format!("{failure:?}"))
            ));
            for line in last_lines {
                out.push_str(&format!("      | {}\n", text_value(line)));
            }
        }
    }
    out
}

fn render(report: &NodeReport) -> String {
    let mut out = String::new();
    for step in &report.steps {
        let glyph = match step.outcome {
            "no-op" => "no-op".to_string(),
            _ => step.action.glyph().to_string(),
        };
        out.push_str(&format!(
            "{}: {glyph:>5} {:<11} {} — {}\n",
            text_value(&report.node),
            step.kind,
            step.outcome,
            text_value(&step.reason)
        ));
        if let Some(command) = &step.command {
            out.push_str(&format!("      command: {}\n", text_value(command)));
            out.push_str(&format!(
                "      exit status: {}\n",
                step.status
                    .map_or_else(|| "none".to_string(), |s| s.to_string())
            ));
        }
        if let Some(output) = &step.output {
            for line in output.lines() {
                out.push_str(&format!("      | {}\n", text_value(line)));
            }
        }
    }
    if let Some(outcome) = &report.verification {
        out.push_str(&render_launch(&report.node, outcome));
    }
    out.push_str(&format!(
        "{}: {} in {:.1}s, {} round trips\n",
        text_value(&report.node),
        if report.ok { "converged" } else { "FAILED" },
        report.seconds,
        report.round_trips
    ));
    out
}
