//! Showing a plan: Terraform-style text (`+ ~ -`) and JSON. Secrets are already
//! masked in every operation's description.

use std::fmt::Write;

use serde_json::json as value;

use super::NodePlan;
use crate::shell;
use crate::steps::Action;
use crate::steps::pip::{PackageChange, PackageDiff};
use crate::text::text_value;

/// How many downgrades and removals the text lists without `-v`.
const SHOWN_WITHOUT_VERBOSE: usize = 20;

/// The plan as text, e.g. `+ toolkit  no toolkit in /usr/local/cuda-13.0` with its
/// commands. Downgrades and removals are always listed (the first
/// [`SHOWN_WITHOUT_VERBOSE`] of each unless `verbose`); installs and upgrades with
/// `verbose`.
pub fn text(plan: &NodePlan, verbose: bool) -> String {
    let summary = plan.summary();
    let mut out = format!(
        "{}: {} to create, {} to change, {} to remove, {} unchanged{}\n",
        text_value(&plan.node),
        summary.create,
        summary.change,
        summary.remove,
        summary.unchanged,
        if summary.blocked > 0 {
            format!(", {} blocked", summary.blocked)
        } else {
            String::new()
        }
    );
    for warning in &plan.warnings {
        let _ = writeln!(out, "  warning: {}", text_value(warning));
    }
    if let Some(packages) = &plan.packages {
        packages_text(&mut out, packages, verbose);
    }
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
    if let Some(benchmark) = &plan.benchmark {
        let _ = writeln!(
            out,
            "  benchmark: {} ; {} in {} read by {:?}, {} is better, tolerance {} %, within {}; before the first change and after the verification",
            text_value(&shell::join(&benchmark.command)),
            text_value(&benchmark.name),
            text_value(&benchmark.unit),
            text_value(benchmark.pattern.as_str()),
            benchmark.better,
            crate::manifest::tolerance_text(benchmark.tolerance_percent),
            crate::manifest::format_duration(benchmark.timeout),
        );
    }
    let blocked = plan.blocked();
    if !blocked.is_empty() {
        let _ = writeln!(
            out,
            "blocked: {} step{} ({}): `apply` refuses this node until each is resolved as its `! blocked:` line says",
            blocked.len(),
            if blocked.len() == 1 { "" } else { "s" },
            blocked
                .iter()
                .map(|step| step.kind.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out
}

/// The package lists under the header: downgrades and removals always, installs and
/// upgrades with `verbose`.
fn packages_text(out: &mut String, packages: &PackageDiff, verbose: bool) {
    let _ = writeln!(out, "  packages: {}", packages.counts());
    let lists: [(&str, &[PackageChange], bool); 4] = [
        ("downgrade", &packages.downgrade, true),
        ("remove", &packages.remove, true),
        ("upgrade", &packages.upgrade, verbose),
        ("install", &packages.install, verbose),
    ];
    let mut hidden = false;
    for (label, list, shown) in lists {
        if !shown {
            hidden |= !list.is_empty();
            continue;
        }
        let limit = if verbose {
            list.len()
        } else {
            SHOWN_WITHOUT_VERBOSE
        };
        for change in list.iter().take(limit) {
            let versions = match (&change.from, &change.to) {
                (Some(from), Some(to)) => format!("{from} → {to}"),
                (None, Some(to)) => to.clone(),
                (Some(from), None) => from.clone(),
                (None, None) => String::new(),
            };
            let _ = writeln!(
                out,
                "    {label:<9} {} {}",
                text_value(&change.name),
                text_value(&versions)
            );
        }
        if list.len() > limit {
            let _ = writeln!(
                out,
                "    … and {} more to {label} (`-v` lists every package)",
                list.len() - limit
            );
        }
    }
    if hidden {
        let _ = writeln!(out, "    (`-v` lists the packages to install and upgrade)");
    }
}

/// The plan as JSON, for machines.
pub fn json(plan: &NodePlan) -> serde_json::Value {
    value!({
        "node": plan.node,
        "manifest": plan.manifest,
        "summary": plan.summary(),
        "converged": plan.is_converged(),
        "packages": plan.packages,
        "warnings": plan.warnings,
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
        "benchmark": plan.benchmark.as_ref().map(|benchmark| value!({
            "command": benchmark.command,
            "pattern": benchmark.pattern.as_str(),
            "name": benchmark.name,
            "unit": benchmark.unit,
            "better": benchmark.better,
            "tolerance_percent": benchmark.tolerance_percent,
            "timeout": crate::manifest::format_duration(benchmark.timeout),
        })),
    })
}
