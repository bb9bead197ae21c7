//! `upgrade rollback (--local | --host H | -i INVENTORY) [--to RUN]`: undo applies from
//! each node's journal ([`crate::converge::rollback_node`]), then probe the node and show
//! what it is now.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::cli::{ApplyFormat, RollbackArgs};
use crate::commands::node;
use crate::commands::{CommandError, ExitStatus, runtime};
use crate::converge::{self, RollbackOptions, RollbackOutcome};
use crate::exec::node_lock::LockHolder;
use crate::exec::{self, NodeSelection};
use crate::facts::ProbeRequest;
use crate::printer::Printer;
use crate::report::{self, text_value};
use crate::transport::Transport;

/// One node's rollback and what a probe found afterwards, or why it stopped.
struct NodeResult {
    node: String,
    outcome: Result<RollbackOutcome, String>,
    after: Option<String>,
}

async fn one(transport: Transport, options: &RollbackOptions<'_>) -> NodeResult {
    let node = transport.name().to_string();
    match converge::rollback_node(&transport, options).await {
        Ok(outcome) => {
            let request = ProbeRequest::new(PathBuf::from("python3"), Vec::new());
            let after = exec::gather_facts(&transport, &request)
                .await
                .ok()
                .map(|facts| report::facts::text(&facts));
            NodeResult {
                node,
                outcome: Ok(outcome),
                after,
            }
        }
        Err(error) => NodeResult {
            node,
            outcome: Err(report::error_chain(&error)),
            after: None,
        },
    }
}

/// Roll the nodes back.
pub fn run(args: &RollbackArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    if args.fleet.list_hosts {
        let json = args.format == ApplyFormat::Json;
        return super::fleet::list_hosts(&args.fleet, None, json, printer);
    }
    let holder = LockHolder::this_process(
        crate::settings::controller_host().unwrap_or_else(|| "unknown".to_string()),
        crate::settings::controller_user(),
    );
    let options = RollbackOptions {
        to: args.to.as_deref(),
        holder: holder.clone(),
        break_lock: args.break_lock,
    };
    let results = runtime()?.block_on(async {
        if args.fleet.inventory.is_some() {
            let run = format!("{}-{}", holder.started, holder.pid);
            let run_dir = crate::fleet::run_dir(None, &format!("rollback-{run}"));
            let selected = super::fleet::select(&args.fleet, &args.ssh, &run_dir)?;
            let options = &options;
            let results = crate::fleet::each_host(
                &selected,
                args.fleet.parallel,
                |host, transport| async move {
                    match transport {
                        Ok(transport) => one(transport, options).await,
                        Err(error) => NodeResult {
                            node: host.name.clone(),
                            outcome: Err(report::error_chain(&error)),
                            after: None,
                        },
                    }
                },
            )
            .await;
            Ok::<_, CommandError>(results)
        } else {
            let selection: NodeSelection = node::selection(&args.node, &args.ssh);
            let transport = exec::connect(&selection).await?;
            Ok(vec![one(transport, &options).await])
        }
    })?;
    let ok = results
        .iter()
        .all(|result| matches!(&result.outcome, Ok(outcome) if outcome.ok));
    match args.format {
        ApplyFormat::Json => {
            let nodes: Vec<serde_json::Value> = results
                .iter()
                .map(|result| match &result.outcome {
                    Ok(outcome) => serde_json::json!({"host": result.node, "rollback": outcome, "after": result.after}),
                    Err(error) => serde_json::json!({"host": result.node, "ok": false, "error": error}),
                })
                .collect();
            let mut text =
                serde_json::to_string_pretty(&serde_json::json!({"ok": ok, "nodes": nodes}))
                    .map_err(|error| CommandError::Output(error.into()))?;
            text.push('\n');
            printer.out(&text).map_err(CommandError::Output)?;
        }
        ApplyFormat::Text => {
            let mut out = String::new();
            for result in &results {
                let node = text_value(&result.node);
                match &result.outcome {
                    Err(error) => {
                        let _ = writeln!(out, "{node}: rollback failed: {}", text_value(error));
                    }
                    Ok(outcome) => {
                        let _ = writeln!(
                            out,
                            "{node}: undid {} ({} files restored, {} removed, {} packages reinstalled, {} removed){}",
                            outcome.runs.join(", "),
                            outcome.restored.len(),
                            outcome.removed.len(),
                            outcome.installed.len(),
                            outcome.uninstalled.len(),
                            if outcome.ok { "" } else { "; incomplete" }
                        );
                        for path in outcome.restored.iter().chain(&outcome.removed) {
                            let _ = writeln!(out, "  {}", text_value(&path.display().to_string()));
                        }
                        for kept in &outcome.kept {
                            let _ = writeln!(out, "  kept: {}", text_value(kept));
                        }
                        if let Some(after) = &result.after {
                            let _ = writeln!(out, "  probed afterwards:");
                            for line in after.lines() {
                                let _ = writeln!(out, "    {line}");
                            }
                        }
                    }
                }
            }
            printer.out(&out).map_err(CommandError::Output)?;
        }
    }
    Ok(if ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
