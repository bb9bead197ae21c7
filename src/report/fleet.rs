//! Text output of the inventory verbs: a fleet run's summary table (node, batch, result,
//! steps changed, time to ready, time, cause) and its closing line, the line as a batch
//! starts, the question after the canary, a fleet plan's line a node, and
//! `--list-hosts`; every value escaped for the terminal.

use std::fmt::Write as _;
use std::path::Path;

use crate::fleet::plan::{FleetPlan, PlanState};
use crate::fleet::{CanaryEnd, FleetNode, FleetOutcome, ListedHost, NodeResult};

use super::text_value;

/// A result as the table says it, e.g. `converged`.
pub fn result_word(result: NodeResult) -> &'static str {
    match result {
        NodeResult::Converged => "converged",
        NodeResult::Unchanged => "unchanged",
        NodeResult::Failed => "failed",
        NodeResult::Unreachable => "unreachable",
        NodeResult::Refused => "refused",
        NodeResult::Skipped => "skipped",
    }
}

/// One node's end in one line, e.g. `converged: 6 steps changed, ready in 2.1s, 41.0s`.
pub fn node_line(node: &FleetNode) -> String {
    let mut line = result_word(node.result).to_string();
    if node.steps_changed > 0 {
        let _ = write!(line, ": {} steps changed", node.steps_changed);
    }
    if let Some(ready) = node.time_to_ready_ms {
        let _ = write!(line, ", ready in {:.1}s", ready as f64 / 1000.0);
    }
    let _ = write!(line, " ({:.1}s)", node.seconds);
    if let Some(cause) = &node.cause {
        let _ = write!(line, ": {}", text_value(cause));
    }
    let rollout = node.rollout.summary();
    if !rollout.is_empty() {
        let _ = write!(line, " [{rollout}]");
    }
    line
}

/// A node's cause for the table, with what was done around its change, e.g.
/// `step \`pip\` failed: exit status 1 [rolled back, left drained]`.
fn cause_cell(node: &FleetNode) -> String {
    let cause = node.cause.as_deref().map(text_value).unwrap_or_default();
    let rollout = node.rollout.summary();
    match (cause.is_empty(), rollout.is_empty()) {
        (_, true) => cause,
        (true, false) => format!("[{rollout}]"),
        (false, false) => format!("{cause} [{rollout}]"),
    }
}

/// The summary table and a closing line naming the run and its log directory.
pub fn summary(outcome: &FleetOutcome, run_dir: &Path) -> String {
    let width = outcome
        .nodes
        .iter()
        .map(|node| text_value(&node.host).chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = String::new();
    // The batch column only when there are batches, e.g. `2/3`.
    let batched = outcome.batches > 1;
    let batch_width = if batched {
        format!("{0}/{0}", outcome.batches).len().max(5)
    } else {
        0
    };
    let batch = |text: &str| {
        if batched {
            format!("{text:<batch_width$}  ")
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        out,
        "{:<width$}  {}{:<11}  {:>7}  {:>7}  {:>7}  CAUSE",
        "NODE",
        batch("BATCH"),
        "RESULT",
        "CHANGED",
        "READY",
        "TIME"
    );
    for node in &outcome.nodes {
        let ready = node.time_to_ready_ms.map_or_else(
            || "-".to_string(),
            |ms| format!("{:.1}s", ms as f64 / 1000.0),
        );
        let _ = writeln!(
            out,
            "{:<width$}  {}{:<11}  {:>7}  {:>7}  {:>7}  {}",
            text_value(&node.host),
            batch(&format!("{}/{}", node.batch, outcome.batches)),
            result_word(node.result),
            node.steps_changed,
            ready,
            format!("{:.1}s", node.seconds),
            cause_cell(node)
        );
    }
    let count = |result: NodeResult| {
        outcome
            .nodes
            .iter()
            .filter(|node| node.result == result)
            .count()
    };
    let mut parts = Vec::new();
    for result in [
        NodeResult::Converged,
        NodeResult::Unchanged,
        NodeResult::Failed,
        NodeResult::Unreachable,
        NodeResult::Refused,
        NodeResult::Skipped,
    ] {
        let n = count(result);
        if n > 0 || matches!(result, NodeResult::Converged | NodeResult::Failed) {
            parts.push(format!("{n} {}", result_word(result)));
        }
    }
    if let Some(stopped) = &outcome.stopped {
        let _ = writeln!(out, "stopped: {}", text_value(stopped));
    }
    let _ = writeln!(
        out,
        "{} nodes in {}{:.1}s: {}; run {}, logs in {}",
        outcome.nodes.len(),
        if batched {
            format!("{} batches, ", outcome.batches)
        } else {
            String::new()
        },
        outcome.seconds,
        parts.join(", "),
        outcome.run,
        text_value(&run_dir.display().to_string())
    );
    out
}

/// The line as a batch starts, e.g. `batch 2/3: node1, node2`.
pub fn batch_line(batch: usize, of: usize, hosts: &[&str]) -> String {
    format!("batch {batch}/{of}: {}", text_value(&hosts.join(", ")))
}

/// The question once the canary batch has ended.
pub fn canary_question(end: &CanaryEnd) -> String {
    format!(
        "The canary batch ended ({}): {} of {} converged or unchanged, {} failed while being changed. Go on with the {} other node(s) in {} more batch(es)?",
        text_value(&end.hosts.join(", ")),
        end.ok,
        end.hosts.len(),
        end.failed,
        end.rest,
        end.batches_left
    )
}

/// `--list-hosts`: one host a line, in order, with its batch when there are batches,
/// e.g. `node1  batch 2`.
pub fn host_list(hosts: &[ListedHost]) -> String {
    let width = hosts
        .iter()
        .map(|listed| text_value(&listed.host).chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for listed in hosts {
        let host = text_value(&listed.host);
        let _ = match listed.batch {
            Some(batch) => writeln!(out, "{host:<width$}  batch {batch}"),
            None => writeln!(out, "{host}"),
        };
    }
    out
}

/// A state as a fleet plan says it, e.g. `blocked`.
fn state_word(state: PlanState) -> &'static str {
    match state {
        PlanState::Converged => "converged",
        PlanState::Changes => "changes",
        PlanState::Blocked => "blocked",
        PlanState::Unreachable => "unreachable",
        PlanState::Error => "error",
    }
}

/// A fleet plan: one line a node (e.g. `node1  3 changes (toolkit, pip, ldconfig)`,
/// `node2  blocked: …`) and a closing count.
pub fn plan_summary(plan: &FleetPlan) -> String {
    let width = plan
        .nodes
        .iter()
        .map(|node| text_value(&node.host).chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for node in &plan.nodes {
        let what = match node.state {
            PlanState::Converged => "converged".to_string(),
            PlanState::Changes => format!(
                "{} change{} ({})",
                node.changes,
                if node.changes == 1 { "" } else { "s" },
                text_value(&node.steps.join(", "))
            ),
            state => format!(
                "{}: {}",
                state_word(state),
                text_value(node.cause.as_deref().unwrap_or_default())
            ),
        };
        let _ = writeln!(out, "{:<width$}  {what}", text_value(&node.host));
    }
    let mut parts = Vec::new();
    for state in [
        PlanState::Converged,
        PlanState::Changes,
        PlanState::Blocked,
        PlanState::Unreachable,
        PlanState::Error,
    ] {
        let count = plan.nodes.iter().filter(|node| node.state == state).count();
        if count > 0 {
            parts.push(format!(
                "{count} {}",
                match state {
                    PlanState::Changes => "with changes",
                    other => state_word(other),
                }
            ));
        }
    }
    let _ = writeln!(
        out,
        "{} nodes planned in {:.1}s: {}",
        plan.nodes.len(),
        plan.seconds,
        parts.join(", ")
    );
    out
}
