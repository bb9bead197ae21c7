//! Text output of `apply` and `verify`: each step's outcome, the failing command's
//! output tail, the verification launch and the benchmark's figures, every value
//! escaped for the terminal.

use crate::converge::NodeOutcome;
use crate::exec::benchmark::{BenchmarkResult, Reading, figure};
use crate::exec::launch::LaunchOutcome;

use super::text_value;

/// The verification outcome as text lines, e.g. `node0: verification: ready in 2.0s …`.
pub fn launch(node: &str, outcome: &LaunchOutcome) -> String {
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
                text_value(&failure.to_string())
            ));
            for line in last_lines {
                out.push_str(&format!("      | {}\n", text_value(line)));
            }
        }
    }
    out
}

/// A node's outcome as text: one line a step, the failing command's output, the
/// verification, and a closing line, e.g. `node0: converged in 8.2s, 15 round trips`.
pub fn node(report: &NodeOutcome) -> String {
    let mut out = String::new();
    if let Some(lock) = &report.lock {
        out.push_str(&format!(
            "{}: {}\n",
            text_value(&report.node),
            text_value(lock)
        ));
    }
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
        out.push_str(&launch(&report.node, outcome));
    }
    if let Some(result) = &report.benchmark {
        out.push_str(&benchmark(&report.node, result));
    }
    out.push_str(&rollout(&report.node, &report.rollout));
    out.push_str(&format!(
        "{}: {} in {:.1}s, {} round trips\n",
        text_value(&report.node),
        if report.ok { "converged" } else { "FAILED" },
        report.seconds,
        report.round_trips
    ));
    out
}

/// A figure with its unit, or why there is none, e.g. `89.5 tok/s`.
pub fn reading(reading: &Reading, unit: &str) -> String {
    match reading {
        Reading::Figure { value } => format!("{} {}", figure(*value), text_value(unit)),
        Reading::Failed { reason, .. } => format!("none ({})", text_value(reason)),
    }
}

/// The benchmark's baseline, figure after and verdict, then the cause and the failed
/// run's output, e.g. `node0: benchmark output throughput: 89.5 tok/s baseline, 89.7
/// tok/s after — passed (higher is better, tolerance 5 %)`.
pub fn benchmark(node: &str, result: &BenchmarkResult) -> String {
    let node = text_value(node);
    let after = result.after.as_ref().map_or_else(
        || "not run after".to_string(),
        |after| format!("{} after", reading(after, &result.unit)),
    );
    let mut out = format!(
        "{node}: benchmark {}: {} baseline, {after} — {} ({} is better, tolerance {} %)
",
        text_value(&result.name),
        reading(&result.baseline, &result.unit),
        result.verdict,
        result.better,
        crate::manifest::tolerance_text(result.tolerance_percent),
    );
    if let Some(cause) = &result.cause {
        out.push_str(&format!(
            "{node}: benchmark {}: {}
",
            result.verdict,
            text_value(cause.lines().next().unwrap_or_default())
        ));
    }
    let failed = [Some(&result.baseline), result.after.as_ref()];
    for run in failed.into_iter().flatten() {
        if let Reading::Failed { status, tail, .. } = run {
            out.push_str(&format!(
                "      exit status: {}
",
                status.map_or_else(|| "none".to_string(), |s| s.to_string())
            ));
            for line in tail.lines() {
                out.push_str(&format!(
                    "      | {}
",
                    text_value(line)
                ));
            }
        }
    }
    out
}

/// What was done around the node's change: its production service, the rollback of a
/// failure, its drain; one line each.
fn rollout(node: &str, rollout: &crate::converge::Rollout) -> String {
    let node = text_value(node);
    let mut out = String::new();
    if let Some(service) = &rollout.service {
        out.push_str(&format!(
            "{node}: service {} {}{}\n",
            text_value(&service.how),
            if service.up { "up" } else { "NOT up" },
            service
                .detail
                .as_deref()
                .map(|detail| format!(": {}", text_value(detail)))
                .unwrap_or_default()
        ));
    }
    if let Some(rollback) = &rollout.rollback {
        let what = match (&rollback.outcome, &rollback.error) {
            (Some(undone), _) => format!(
                "{} files restored, {} removed, {} packages reinstalled{}",
                undone.restored.len(),
                undone.removed.len(),
                undone.installed.len(),
                if undone.kept.is_empty() {
                    String::new()
                } else {
                    format!("; kept: {}", text_value(&undone.kept.join("; ")))
                }
            ),
            (None, Some(error)) => text_value(error.lines().next().unwrap_or_default()),
            (None, None) => String::new(),
        };
        out.push_str(&format!(
            "{node}: rollback of run {} {}: {what}\n",
            text_value(&rollback.run),
            if rollback.ok { "done" } else { "INCOMPLETE" },
        ));
    }
    if let Some(drain) = &rollout.drain {
        out.push_str(&format!(
            "{node}: {} {}: {}\n",
            text_value(&drain.how),
            drain.state,
            text_value(&drain.detail.join("; "))
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::launch::LaunchFailure;

    #[test]
    fn failures_read_as_words() {
        let outcome = LaunchOutcome::Failed {
            failure: LaunchFailure::FailPattern {
                pattern: "Traceback".into(),
                line: "Traceback (most recent call last):".into(),
            },
            last_lines: vec!["the token is ***".into()],
            pid: Some(7),
        };
        assert_eq!(
            launch("node0", &outcome),
            "node0: verification failed: a log line matched `Traceback`: Traceback (most recent call last):\n      | the token is ***\n"
        );
    }
}
