//! Why a node ended, in one line of domain words (the fleet's `cause`), and the whole
//! story (its `detail`, for the node's log): the same first cause the single-node report
//! gives, e.g. the node's driver and the minimum the toolkit needs, not the resolver's
//! generic sentence.

use crate::converge::ConvergeError;
use crate::exec::ExecError;
use crate::exec::launch::LaunchOutcome;
use crate::resolve::{ConflictReport, ResolveError};
use crate::text::error_chain;
use crate::transport::TransportError;

/// How many of a conflict's facts the one-line cause keeps.
const CAUSE_FACTS: usize = 4;

/// The one-line cause and the whole chain of an error that stopped a node.
pub fn of_error(error: &(dyn std::error::Error + 'static)) -> (String, String) {
    let chain = error_chain(error);
    if let Some(report) = conflict(error) {
        return (
            format!(
                "cannot be resolved for this node: {}",
                conflict_line(report)
            ),
            format!("{chain}\n{report}"),
        );
    }
    let mut cause = chain.lines().next().unwrap_or_default().to_string();
    if chain.contains("Host key verification failed") {
        cause = "host key verification failed: the key the node shows is not the one known_hosts records for it".to_string();
    } else if let Some(last) = chain.lines().last().filter(|last| *last != cause) {
        cause = format!(
            "{cause} ({})",
            last.trim().trim_start_matches("caused by: ")
        );
    }
    (cause, chain)
}

/// As [`of_error`] for an error of the node's probe: a probe that ran past its bound
/// reads as such, e.g. `the probe got no answer within 230 s: …`.
pub fn of_probe_error(error: &ConvergeError) -> (String, String) {
    let (cause, chain) = of_error(error);
    match error {
        ConvergeError::Exec(
            ExecError::Transport(TransportError::Timeout { seconds, .. })
            | ExecError::ProbeTimedOut { seconds, .. },
        ) => (
            format!(
                "the probe got no answer within {seconds} s: a command on the node never returned (the log names it)"
            ),
            chain,
        ),
        _ => (cause, chain),
    }
}

/// The conflict report behind an error, when the manifest could not be resolved.
fn conflict<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a ConflictReport> {
    let resolve = match error.downcast_ref::<ConvergeError>() {
        Some(ConvergeError::Resolve(resolve)) => resolve,
        _ => error.downcast_ref::<ResolveError>()?,
    };
    match resolve {
        ResolveError::Unresolvable { report, .. } => Some(report),
        _ => None,
    }
}

/// A conflict's facts in one line, each without its trailing reference (the manifest
/// line, the rule and its source: the log has them), e.g. `the node's driver is
/// 570.172.08; CUDA toolkit 13.0.1 needs driver 580.82.07 or newer; …`.
pub fn conflict_line(report: &ConflictReport) -> String {
    let mut facts: Vec<&str> = report
        .facts
        .iter()
        .take(CAUSE_FACTS)
        .map(|fact| without_reference(&fact.short))
        .collect();
    if report.facts.len() > CAUSE_FACTS {
        facts.push("…");
    }
    facts.join("; ")
}

/// `text` without a parenthesised part at its end, e.g. `needs driver 580.82.07 or
/// newer (rule …; source: … (Table 3))` → `needs driver 580.82.07 or newer`.
fn without_reference(text: &str) -> &str {
    let trimmed = text.trim_end();
    if !trimmed.ends_with(')') {
        return trimmed;
    }
    let mut depth = 0usize;
    for (position, ch) in trimmed.char_indices().rev() {
        match ch {
            ')' => depth += 1,
            '(' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    let head = trimmed[..position].trim_end();
                    return if head.is_empty() { trimmed } else { head };
                }
            }
            _ => {}
        }
    }
    trimmed
}

/// The one-line cause and the detail of a verification that did not become ready;
/// `(None, None)` for a ready one.
pub fn of_verification(outcome: &LaunchOutcome) -> (Option<String>, Option<String>) {
    let (cause, last_lines) = match outcome {
        LaunchOutcome::Ready { .. } => return (None, None),
        LaunchOutcome::Refused { reason, .. } => {
            (format!("verification refused: {reason}"), &[][..])
        }
        LaunchOutcome::Failed {
            failure,
            last_lines,
            ..
        } => (
            format!("verification failed: {failure}"),
            last_lines.as_slice(),
        ),
    };
    let mut detail = cause.clone();
    for line in last_lines {
        detail.push_str("\n  | ");
        detail.push_str(line);
    }
    (Some(cause), Some(detail))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(facts: &[&str]) -> ConflictReport {
        ConflictReport {
            manifest: "m".into(),
            facts: facts
                .iter()
                .map(|fact| crate::resolve::Fact::plain((*fact).to_string()))
                .collect(),
            hints: vec!["upgrade the node's driver".into()],
            more: Vec::new(),
        }
    }

    #[test]
    fn an_old_driver_reads_as_the_driver_and_its_minimum() {
        let error = ConvergeError::Resolve(ResolveError::Unresolvable {
            manifest: "overlay.yaml".into(),
            report: Box::new(report(&[
                "the node's driver is 570.172.08 (`target.driver` or the node's facts)",
                "CUDA toolkit 13.0.1 needs driver 580.82.07 or newer (rule `cuda-driver.yaml`; source: notes (Table 3; also cuda_13.0.1_580.82.07_linux.run))",
                "the manifest installs CUDA toolkit 13.0.1",
            ])),
        });
        let (cause, detail) = of_error(&error);
        assert_eq!(
            cause,
            "cannot be resolved for this node: the node's driver is 570.172.08; CUDA toolkit 13.0.1 needs driver 580.82.07 or newer; the manifest installs CUDA toolkit 13.0.1"
        );
        assert!(
            detail.contains("hint: upgrade the node's driver"),
            "{detail}"
        );
        assert!(detail.contains("source: notes"), "{detail}");
    }

    #[test]
    fn references_go_but_middle_parentheses_stay() {
        assert_eq!(
            without_reference(
                "the node has GPU architecture sm_90 (compute capability 9.0), outside `x`"
            ),
            "the node has GPU architecture sm_90 (compute capability 9.0), outside `x`"
        );
        assert_eq!(
            without_reference("(only a reference)"),
            "(only a reference)"
        );
        assert_eq!(without_reference("a (b (c)) "), "a");
        assert_eq!(
            conflict_line(&report(&["a (1)", "b", "c", "d", "e"])),
            "a; b; c; d; …"
        );
    }

    #[test]
    fn a_probe_past_its_bound_reads_as_such() {
        let error = ConvergeError::Exec(ExecError::Transport(TransportError::Timeout {
            host: "node5".into(),
            command: "sh -s -- --python /opt/ml-env/bin/python3".into(),
            seconds: 230,
        }));
        let (cause, detail) = of_probe_error(&error);
        assert!(
            cause.starts_with("the probe got no answer within 230 s"),
            "{cause}"
        );
        assert!(detail.contains("sh -s -- --python"), "{detail}");
        // Stopped on the node by its bound (`timeout`, exit 124): the same cause, and the
        // detail shows where the probe stopped.
        let error = ConvergeError::Exec(ExecError::ProbeTimedOut {
            host: "node5".into(),
            seconds: 60,
            tail: "@@begin journal-tail@@\n@@end status=0@@".into(),
        });
        let (cause, detail) = of_probe_error(&error);
        assert!(
            cause.starts_with("the probe got no answer within 60 s"),
            "{cause}"
        );
        assert!(detail.contains("journal-tail"), "{detail}");
    }

    #[test]
    fn other_errors_keep_their_first_line() {
        let error = ConvergeError::Blocked {
            node: "node0".into(),
            step: "pip".into(),
            reason: "`torch` has no sha256 in the lock".into(),
        };
        let (cause, _) = of_error(&error);
        assert_eq!(
            cause,
            "Refusing to apply on `node0`: the `pip` step is blocked: `torch` has no sha256 in the lock"
        );
    }
}
