//! The env step: a marked block in the `sitecustomize.py` the target interpreter
//! really imports, so every start of it sees the manifest's variables.
//!
//! On Debian and Ubuntu the system `/usr/lib/python3.X/sitecustomize.py` comes first
//! on `sys.path` and shadows any file in a virtual environment, so the block goes
//! where the interpreter looks (the probe asks it), not where one would guess. The
//! rest of the file is kept byte for byte. Secret values are written to the node but
//! never shown: the plan and logs show `***`.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use crate::facts::NodeFacts;
use crate::manifest::{EnvValue, EnvVar};

use super::{Action, Operation, Step, StepKind, Verification};

/// The marker name of the block (the probe reads blocks by it).
pub const MARKER: &str = crate::facts::DEFAULT_MARKER;

/// Failed to plan the env step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// `from_env` names a variable the controller does not have.
    #[error("Failed to read `{variable}` from the controller's environment for `env.{name}`")]
    MissingFromEnv {
        /// The manifest's variable, e.g. `HF_TOKEN`.
        name: String,
        /// The controller variable, e.g. `HF_TOKEN`.
        variable: String,
    },
}

/// A variable with its resolved value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedVar {
    /// e.g. `CUDA_HOME`.
    pub name: String,
    /// e.g. `/usr/local/cuda-13.0`.
    pub value: String,
    /// Shown as `***` when true.
    pub secret: bool,
}

/// Resolve values: literals as written, `from_env` through `lookup` (the controller's
/// environment, read by the caller).
pub fn resolve(
    vars: &[EnvVar],
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Vec<ResolvedVar>, EnvError> {
    vars.iter()
        .map(|var| {
            let value = match &var.value {
                EnvValue::Literal(value) => value.clone(),
                EnvValue::FromEnv(variable) => {
                    lookup(variable).ok_or_else(|| EnvError::MissingFromEnv {
                        name: var.name.clone(),
                        variable: variable.clone(),
                    })?
                }
            };
            Ok(ResolvedVar {
                name: var.name.clone(),
                value,
                secret: var.secret,
            })
        })
        .collect()
}

/// A Python string literal for `value` (a JSON string is a valid Python literal).
fn python_literal(value: &str) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "\"\"".to_string())
}

/// The block's lines: `(real, for display)`.
pub fn block(vars: &[ResolvedVar], manifest_name: &str) -> (String, String) {
    let header = format!(
        "# Managed by `upgrade apply` for manifest {}; edits inside this block are overwritten.\nimport os as _cuda_upgrade_os\n",
        python_literal(manifest_name)
    );
    let (mut real, mut display) = (header.clone(), header);
    for var in vars {
        let name = python_literal(&var.name);
        real.push_str(&format!(
            "_cuda_upgrade_os.environ[{name}] = {}\n",
            python_literal(&var.value)
        ));
        let shown = if var.secret {
            "\"***\"".to_string()
        } else {
            python_literal(&var.value)
        };
        display.push_str(&format!("_cuda_upgrade_os.environ[{name}] = {shown}\n"));
    }
    let footer = "del _cuda_upgrade_os\n";
    real.push_str(footer);
    display.push_str(footer);
    (real, display)
}

/// Replace the block named `marker` in `text` (or append one), keeping every byte
/// outside it; the result ends the block with a newline.
pub fn splice(text: &str, marker: &str, block: &str) -> String {
    let begin = format!("# >>> {marker} >>>");
    let end = format!("# <<< {marker} <<<");
    let new_block = format!("{begin}\n{block}{end}\n");
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines.iter().position(|line| line.trim() == begin);
    match start {
        Some(start) => {
            let stop = lines[start..]
                .iter()
                .position(|line| line.trim() == end)
                .map_or(lines.len(), |offset| start + offset + 1);
            let mut out: String = lines[..start].concat();
            out.push_str(&new_block);
            out.push_str(&lines[stop..].concat());
            out
        }
        None => {
            let mut out = text.to_string();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&new_block);
            out
        }
    }
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Where the block goes: the `sitecustomize.py` the interpreter imports; when it
/// imports none, a new one in the environment's first site-packages directory.
pub fn target_file(facts: &NodeFacts) -> Option<PathBuf> {
    if let Some(origin) = facts
        .sitecustomize
        .as_ref()
        .and_then(|site| site.origin.clone())
    {
        return Some(origin);
    }
    facts
        .python
        .as_ref()
        .and_then(|python| python.site_packages.first())
        .map(|site| site.join("sitecustomize.py"))
}

/// Plan the step from the node's facts. `python` is the target interpreter.
pub fn plan(
    vars: &[ResolvedVar],
    manifest_name: &str,
    python: &std::path::Path,
    facts: &NodeFacts,
    fallback: PathBuf,
) -> Step {
    let (real, display) = block(vars, manifest_name);
    let path = target_file(facts).unwrap_or(fallback);
    let current = facts
        .sitecustomize
        .as_ref()
        .and_then(|site| site.managed_block.as_ref());
    let shown = path.display().to_string();
    let (action, reason) = match current {
        None if facts
            .sitecustomize
            .as_ref()
            .and_then(|s| s.origin.as_ref())
            .is_some() =>
        {
            (
                Action::Change,
                format!(
                    "`{shown}` (the sitecustomize the interpreter imports) has no managed block"
                ),
            )
        }
        None => (
            Action::Create,
            format!("the interpreter imports no sitecustomize; `{shown}` will hold the block"),
        ),
        Some(block) if block.sha256 != sha256_hex(&real) => (
            Action::Change,
            format!("the managed block of `{shown}` differs from the manifest's variables"),
        ),
        Some(_) => (
            Action::NoOp,
            format!("the managed block of `{shown}` sets every variable"),
        ),
    };
    let operations = if action == Action::NoOp {
        Vec::new()
    } else {
        vec![Operation::ReplaceBlock {
            path,
            marker: MARKER.to_string(),
            block: real,
            display_block: display,
        }]
    };
    Step {
        kind: StepKind::EnvInjection,
        subject: shown.clone(),
        action,
        reason,
        operations,
        blocked: None,
        verification: Some(Verification::EnvironmentVisible {
            python: python.to_path_buf(),
            variables: vars
                .iter()
                .map(|var| (var.name.clone(), var.value.clone()))
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::managed_block;

    fn vars() -> Vec<ResolvedVar> {
        vec![
            ResolvedVar {
                name: "CUDA_HOME".into(),
                value: "/usr/local/cuda-13.0".into(),
                secret: false,
            },
            ResolvedVar {
                name: "HF_TOKEN".into(),
                value: "hf_secret\"'\n$(x)".into(),
                secret: true,
            },
        ]
    }

    #[test]
    fn splice_keeps_other_content_byte_for_byte() {
        let original =
            "# apport hook\ntry:\n    import apport_python_hook\nexcept ImportError:\n    pass\n";
        let (real, _) = block(&vars(), "m");
        let once = splice(original, MARKER, &real);
        assert!(once.starts_with(original));
        let twice = splice(&once, MARKER, &real);
        assert_eq!(once, twice, "re-splicing is idempotent");
        let (other, _) = block(&vars()[..1], "m");
        let changed = splice(&once, MARKER, &other);
        assert!(changed.starts_with(original));
        assert!(!changed.contains("HF_TOKEN"));
        let no_newline = splice("x = 1", MARKER, &real);
        assert!(no_newline.starts_with("x = 1\n# >>> "));
    }

    #[test]
    fn block_reads_back_with_the_probe_parser_and_hides_secrets() {
        let (real, display) = block(&vars(), "m");
        let text = splice("", MARKER, &real);
        let parsed = managed_block(&text, MARKER).unwrap();
        assert_eq!(parsed.sha256, sha256_hex(&real));
        assert!(!display.contains("hf_secret"));
        assert!(display.contains("\"***\""));
        // The secret is a valid, inert Python literal.
        assert!(real.contains(r#"_cuda_upgrade_os.environ["HF_TOKEN"] = "hf_secret\"'\n$(x)""#));
    }

    #[test]
    fn from_env_values_come_from_the_lookup() {
        let vars = vec![EnvVar {
            name: "HF_TOKEN".into(),
            value: EnvValue::FromEnv("CONTROLLER_TOKEN".into()),
            secret: true,
        }];
        let resolved = resolve(&vars, |name| {
            (name == "CONTROLLER_TOKEN").then(|| "v".to_string())
        })
        .unwrap();
        assert_eq!(resolved[0].value, "v");
        assert!(resolve(&vars, |_| None).is_err());
    }
}
