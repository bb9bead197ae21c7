//! Text output of a fleet run: the summary table (node, result, steps changed, time to
//! ready, time, cause) and its closing line, every value escaped for the terminal.

use std::fmt::Write as _;
use std::path::Path;

use crate::fleet::{FleetNode, FleetOutcome, NodeResult};

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
    let _ = writeln!(
        out,
        "{:<width$}  {:<11}  {:>7}  {:>7}  {:>7}  CAUSE",
        "NODE", "RESULT", "CHANGED", "READY", "TIME"
    );
    for node in &outcome.nodes {
        let ready = node.time_to_ready_ms.map_or_else(
            || "-".to_string(),
            |ms| format!("{:.1}s", ms as f64 / 1000.0),
        );
        let _ = writeln!(
            out,
            "{:<width$}  {:<11}  {:>7}  {:>7}  {:>7}  {}",
            text_value(&node.host),
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
    let _ = writeln!(
        out,
        "{} nodes in {:.1}s: {}; run {}, logs in {}",
        outcome.nodes.len(),
        outcome.seconds,
        parts.join(", "),
        outcome.run,
        text_value(&run_dir.display().to_string())
    );
    out
}
