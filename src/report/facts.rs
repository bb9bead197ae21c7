//! Output of `upgrade probe`: a summary for people, the full facts as JSON.

use std::fmt::Write;

use super::text_value;
use crate::facts::{FactsError, Finding, NodeFacts, Severity};

/// The facts as JSON with their findings; `--facts FILE` reads it back.
pub fn json(facts: &NodeFacts) -> Result<String, FactsError> {
    json_with(facts, &[])
}

/// [`json`] with findings made beyond the facts (the ABI check's) after the facts' own.
pub fn json_with(facts: &NodeFacts, extra: &[Finding]) -> Result<String, FactsError> {
    let text = facts.to_json()?;
    let mut value: serde_json::Value =
        serde_json::from_str(&text).map_err(FactsError::SerializeFacts)?;
    if let serde_json::Value::Object(map) = &mut value {
        map.insert(
            "findings".to_string(),
            serde_json::to_value(all_findings(facts, extra)).map_err(FactsError::SerializeFacts)?,
        );
    }
    serde_json::to_string_pretty(&value).map_err(FactsError::SerializeFacts)
}

/// The facts' findings and `extra`, most severe first.
fn all_findings(facts: &NodeFacts, extra: &[Finding]) -> Vec<Finding> {
    let mut found = facts.findings();
    found.extend(extra.iter().cloned());
    found.sort_by_key(|finding| std::cmp::Reverse(finding.severity));
    found
}

/// A summary: GPUs, driver, toolkits, interpreter, torch, expected libraries, findings.
pub fn text(facts: &NodeFacts) -> String {
    text_with(facts, &[])
}

/// [`text`] with findings made beyond the facts (the ABI check's).
pub fn text_with(facts: &NodeFacts, extra: &[Finding]) -> String {
    let mut out = String::new();
    let driver = facts
        .driver
        .as_ref()
        .map_or_else(|| "none".to_string(), |driver| driver.version.to_string());
    let _ = writeln!(out, "driver: {}", text_value(&driver));
    if facts.gpus.is_empty() {
        let _ = writeln!(out, "gpus: none");
    }
    for gpu in &facts.gpus {
        let capability = gpu
            .compute_capability
            .map_or_else(|| "unknown".to_string(), |capability| capability.sm_name());
        let _ = writeln!(
            out,
            "gpu {}: {} ({capability}, {} MiB){}",
            gpu.index,
            text_value(&gpu.name),
            gpu.memory_total_mib,
            if gpu.processes.is_empty() {
                String::new()
            } else {
                format!(", busy: {} process(es)", gpu.processes.len())
            }
        );
    }
    if facts.toolkits.installed.is_empty() {
        let _ = writeln!(out, "toolkits: none");
    }
    for toolkit in &facts.toolkits.installed {
        let version = toolkit
            .version
            .as_ref()
            .map_or_else(|| "unknown version".to_string(), ToString::to_string);
        let default = if facts.toolkits.default_prefix.as_deref() == Some(toolkit.prefix.as_path())
        {
            ", default"
        } else {
            ""
        };
        let source = toolkit.version_source.map_or_else(
            || "unidentified".to_string(),
            |source| format!("from {}", source.describe()),
        );
        let _ = writeln!(
            out,
            "toolkit: {} {version} ({source}{default})",
            text_value(&toolkit.prefix.display().to_string())
        );
    }
    match &facts.python {
        Some(python) => {
            let _ = writeln!(
                out,
                "python: {} {} ({} packages)",
                text_value(&python.executable.display().to_string()),
                python.version,
                facts.packages.len()
            );
        }
        None => {
            let _ = writeln!(out, "python: missing");
        }
    }
    if let Some(torch) = &facts.torch {
        let cuda = torch
            .build
            .cuda
            .as_ref()
            .map_or_else(|| "unknown CUDA".to_string(), |cuda| format!("CUDA {cuda}"));
        let version = torch
            .version
            .as_ref()
            .map_or_else(|| "unknown version".to_string(), ToString::to_string);
        let _ = writeln!(out, "torch: {version} ({cuda} build)");
    }
    for library in &facts.probe.libraries {
        let resolved = facts.ldconfig.resolve(library).map_or_else(
            || "not found".to_string(),
            |path| path.display().to_string(),
        );
        let _ = writeln!(
            out,
            "library {}: {}",
            text_value(library),
            text_value(&resolved)
        );
    }
    if let Some(site) = &facts.sitecustomize {
        let origin = site
            .origin
            .as_ref()
            .map_or_else(|| "none".to_string(), |origin| origin.display().to_string());
        let managed = if site.managed_block.is_some() {
            ", managed block present"
        } else {
            ""
        };
        let _ = writeln!(out, "sitecustomize: {}{managed}", text_value(&origin));
    }
    for finding in all_findings(facts, extra) {
        let label = match finding.severity {
            Severity::Warning => "warning",
            Severity::Info => "note",
        };
        let _ = writeln!(out, "{label}: {}", text_value(&finding.message));
        if let Some(hint) = &finding.hint {
            let _ = writeln!(out, "  hint: {}", text_value(hint));
        }
    }
    out
}
