//! Showing a plan: Terraform-style text (`+ ~ -`) and JSON. Secrets are already
//! masked in every operation's description.

use std::fmt::Write;

use serde_json::json as value;

use super::NodePlan;
use crate::report::text_value;
use crate::shell;
use crate::steps::Action;

/// The plan as text, e.g. `+ toolkit  no toolkit in /usr/local/cuda-13.0` with its commands.
pub fn text(plan: &NodePlan) -> String {
    let summary = plan.summary();
    let mut out = format!(
        "{}: {} to create, {} to change, {} to remove, {} unchanged\n",
        text_value(&plan.node),
        summary.create,
        summary.change,
        summary.remove,
        summary.unchanged
    );
    for step in &plan.steps {
        let label = if step.action == Action::NoOp {
            "no-op".to_string()
        } else {
            step.action.glyph().to_string()
        };
        let _ = writeln!(
            out,
            "  {label:>5} {:<11} {}",
            step.kind.to_string(),
            text_value(&step.reason)
        );
        if let Some(blocked) = &step.blocked {
            let _ = writeln!(out, "      ! blocked: {}", text_value(blocked));
        }
        for operation in &step.operations {
            let description = operation.describe();
            let mut lines = description.lines();
            if let Some(first) = lines.next() {
                let _ = writeln!(out, "          $ {}", text_value(first));
            }
            for line in lines {
                let _ = writeln!(out, "            {}", text_value(line));
            }
        }
    }
    if let Some(verify) = &plan.verify {
        let _ = writeln!(
            out,
            "  verify: {} ; log {}; ready on {:?}, fail on {:?}, within {}{}",
            text_value(&shell::join(&verify.launch)),
            text_value(&verify.log.display().to_string()),
            text_value(&verify.ready),
            verify
                .fail
                .iter()
                .map(|f| text_value(f))
                .collect::<Vec<_>>(),
            crate::manifest::format_duration(verify.timeout),
            if verify.require_idle_gpus {
                ", GPUs must be idle"
            } else {
                ""
            }
        );
    }
    out
}

/// The plan as JSON, for machines.
pub fn json(plan: &NodePlan) -> serde_json::Value {
    value!({
        "node": plan.node,
        "manifest": plan.manifest,
        "summary": plan.summary(),
        "converged": plan.is_converged(),
        "steps": plan.steps.iter().map(|step| value!({
            "kind": step.kind,
            "subject": step.subject,
            "action": step.action,
            "reason": step.reason,
            "blocked": step.blocked,
            "commands": step.operations.iter().map(|operation| operation.describe()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "verify": plan.verify.as_ref().map(|verify| value!({
            "launch": verify.launch,
            "log": verify.log,
            "ready": verify.ready,
            "timeout": crate::manifest::format_duration(verify.timeout),
        })),
    })
}
