//! The env step: a marked block in the `sitecustomize.py` the target interpreter
//! really imports, so every start of it sees the manifest's variables.
//!
//! On Debian and Ubuntu the system `/usr/lib/python3.X/sitecustomize.py` comes first
//! on `sys.path` and shadows any file in a virtual environment, so the block goes
//! where the interpreter looks (the probe asks it), not where one would guess. The
//! write follows that file's symlinks (Debian links it into `/etc/python3.X/`) and keeps
//! owner and mode; the rest of the file is kept byte for byte. Secret values never enter
//! that world-readable file: they go to a root-only 0600 file in a root-only directory
//! (`/etc/cuda-upgrade/secrets/`), which the block reads at start-up.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::facts::NodeFacts;
use crate::manifest::{EnvValue, EnvVar};
use crate::transport::NodeCommand;

use super::{Action, Operation, Placement, SECRETS_DIR, Step, StepKind, Verification};

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

/// The block's lines: every variable that is not secret as a literal, and, when there
/// are secrets, the lines that read them from `secrets_file` (root-only: an interpreter
/// started by another user cannot read it and starts without them).
pub fn block(vars: &[ResolvedVar], manifest_name: &str, secrets_file: Option<&Path>) -> String {
    let mut block = format!(
        "# Managed by `upgrade apply` for manifest {}; edits inside this block are overwritten.\nimport os as _cuda_upgrade_os\n",
        python_literal(manifest_name)
    );
    for var in vars.iter().filter(|var| !var.secret) {
        block.push_str(&format!(
            "_cuda_upgrade_os.environ[{}] = {}\n",
            python_literal(&var.name),
            python_literal(&var.value)
        ));
    }
    if let Some(file) = secrets_file {
        let names: Vec<String> = vars
            .iter()
            .filter(|var| var.secret)
            .map(|var| python_literal(&var.name))
            .collect();
        block.push_str(&format!(
            "# Secret values ({}) live in a root-only file, never in this one.\n\
             try:\n\
             \x20   with open({}, encoding=\"utf-8\") as _cuda_upgrade_file:\n\
             \x20       _cuda_upgrade_os.environ.update(__import__(\"json\").load(_cuda_upgrade_file))\n\
             \x20   del _cuda_upgrade_file\n\
             except (OSError, ValueError):\n\
             \x20   pass\n",
            names.join(", "),
            python_literal(&file.display().to_string())
        ));
    }
    block.push_str("del _cuda_upgrade_os\n");
    block
}

/// The secret values as the secrets file holds them: a JSON object, names sorted.
pub fn secrets_content(vars: &[ResolvedVar]) -> Option<String> {
    let secrets: BTreeMap<&str, &str> = vars
        .iter()
        .filter(|var| var.secret)
        .map(|var| (var.name.as_str(), var.value.as_str()))
        .collect();
    if secrets.is_empty() {
        return None;
    }
    serde_json::to_string_pretty(&secrets)
        .ok()
        .map(|text| text + "\n")
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Where the block goes: the `sitecustomize.py` the interpreter imports; when it
/// imports none, a new one in the environment's first site-packages directory. `None`
/// while the interpreter does not exist.
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

/// The secrets file for the block in `target` (one per file that holds a block), e.g.
/// `/etc/cuda-upgrade/secrets/env-3f1c….json`.
pub fn secrets_file(facts: &NodeFacts, target: &Path) -> PathBuf {
    let real = facts
        .sitecustomize
        .as_ref()
        .filter(|site| site.origin.as_deref() == Some(target))
        .and_then(|site| site.real_path.clone())
        .unwrap_or_else(|| target.to_path_buf());
    let digest = sha256_hex(real.as_os_str().as_encoded_bytes());
    facts
        .probe
        .secrets_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(SECRETS_DIR))
        .join(format!("env-{}.json", &digest[..16]))
}

/// Plan the step from the node's facts. `python` is the target interpreter.
pub fn plan(vars: &[ResolvedVar], manifest_name: &str, python: &Path, facts: &NodeFacts) -> Step {
    let subject = python.display().to_string();
    let verification = Some(Verification::EnvironmentVisible {
        python: python.to_path_buf(),
        variables: vars
            .iter()
            .map(|var| (var.name.clone(), var.value.clone()))
            .collect(),
    });
    let step = |action, reason: String, operations, blocked| Step {
        kind: StepKind::EnvInjection,
        subject: subject.clone(),
        action,
        reason,
        operations,
        blocked,
        verification: verification.clone(),
    };
    let Some(path) = target_file(facts) else {
        return step(
            Action::Create,
            format!(
                "`{subject}` does not exist yet: the block goes into the `sitecustomize.py` it imports, found once it exists"
            ),
            Vec::new(),
            None,
        );
    };
    let site = facts.sitecustomize.as_ref();
    let imported = site.and_then(|site| site.origin.as_ref()).is_some();
    let shown = match site.and_then(|site| site.real_path.as_ref()) {
        Some(real) if imported && *real != path => {
            format!("`{}` (→ `{}`)", path.display(), real.display())
        }
        _ => format!("`{}`", path.display()),
    };
    if path.extension().is_none_or(|extension| extension != "py") {
        return step(
            Action::Change,
            format!("{shown} is not a Python source file"),
            Vec::new(),
            Some(format!(
                "{shown} is what the interpreter imports as `sitecustomize`, and it is not a `.py` source file: a block cannot be added to it; replace it with a `sitecustomize.py`"
            )),
        );
    }
    if let Some(problem) = site.and_then(|site| site.malformed_block.as_ref()) {
        return step(
            Action::Change,
            format!("{shown} has a malformed managed block"),
            Vec::new(),
            Some(format!(
                "{shown}, {problem}: fix or remove its `{MARKER}` markers by hand; nothing is rewritten around them"
            )),
        );
    }
    let secrets = secrets_content(vars);
    let secrets_path = secrets_file(facts, &path);
    let wanted = block(
        vars,
        manifest_name,
        secrets.as_ref().map(|_| secrets_path.as_path()),
    );
    let current_file = facts
        .secret_files
        .iter()
        .find(|file| file.path == secrets_path);

    let mut reasons = Vec::new();
    let mut operations = Vec::new();
    let mut action = Action::NoOp;
    match (&secrets, current_file) {
        (Some(content), current) => {
            let stale = match current {
                None => Some("does not exist"),
                Some(file) if !file.is_private() => Some("is readable by other users"),
                Some(file) if file.sha256 != sha256_hex(content.as_bytes()) => {
                    Some("holds other values")
                }
                Some(_) => None,
            };
            if let Some(stale) = stale {
                reasons.push(format!(
                    "the secrets file `{}` {stale}",
                    secrets_path.display()
                ));
                action = Action::Change;
                operations.push(Operation::Upload {
                    path: secrets_path.clone(),
                    placement: Placement::Secret,
                    content: content.clone().into_bytes(),
                });
            }
        }
        (None, Some(file)) => {
            reasons.push(format!(
                "the secrets file `{}` is no longer needed",
                file.path.display()
            ));
            action = Action::Change;
            operations.push(Operation::Run(
                NodeCommand::new("rm")
                    .arg("-f")
                    .arg("--")
                    .arg(file.path.display().to_string()),
            ));
        }
        (None, None) => {}
    }
    let block_reason = match site.and_then(|site| site.managed_block.as_ref()) {
        None if imported => Some(format!(
            "{shown}, the sitecustomize the interpreter imports, has no managed block"
        )),
        None => Some(format!(
            "the interpreter imports no sitecustomize; {shown} will hold the block"
        )),
        Some(current) if current.sha256 != sha256_hex(wanted.as_bytes()) => Some(format!(
            "the managed block of {shown} differs from the manifest's variables"
        )),
        Some(_) => None,
    };
    if let Some(reason) = block_reason {
        if action == Action::NoOp {
            action = if imported {
                Action::Change
            } else {
                Action::Create
            };
        }
        reasons.insert(0, reason);
        // The secret values land before the block that reads them.
        operations.push(Operation::ReplaceBlock {
            path: path.clone(),
            marker: MARKER.to_string(),
            block: wanted,
        });
    }
    let reason = if reasons.is_empty() {
        format!(
            "the managed block of {shown} sets every variable{}",
            if secrets.is_some() {
                format!("; secrets in `{}` (root only)", secrets_path.display())
            } else {
                String::new()
            }
        )
    } else {
        let mut reason = reasons.join("; ");
        if secrets.is_some() {
            reason.push_str(&format!(
                "; secret values go to `{}` (root only, mode 600), not into the block",
                secrets_path.display()
            ));
        }
        reason
    };
    step(action, reason, operations, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{SecretFile, SitecustomizeFacts, managed_block};

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

    fn h200() -> NodeFacts {
        NodeFacts::read(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/facts/h200.facts.json"),
        )
        .unwrap()
    }

    /// The H200's layout: the stdlib `sitecustomize.py` links into `/etc/python3.12/`.
    fn ubuntu(block: Option<&str>, secret: Option<SecretFile>) -> NodeFacts {
        let mut facts = h200();
        facts.sitecustomize = Some(SitecustomizeFacts {
            origin: Some("/usr/lib/python3.12/sitecustomize.py".into()),
            real_path: Some("/etc/python3.12/sitecustomize.py".into()),
            mode: Some(0o644),
            uid: Some(0),
            imported: true,
            file_sha256: None,
            managed_block: block.map(|text| {
                managed_block(
                    &crate::managed_block::splice(b"", MARKER, text)
                        .map(String::from_utf8)
                        .unwrap()
                        .unwrap(),
                    MARKER,
                )
                .unwrap()
                .unwrap()
            }),
            malformed_block: None,
            shadowed: Vec::new(),
        });
        facts.secret_files = secret.into_iter().collect();
        facts
    }

    #[test]
    fn secret_values_go_to_a_root_only_file_never_into_the_block() {
        let facts = ubuntu(None, None);
        let python = Path::new("/opt/torch/.venv/bin/python3");
        let step = plan(&vars(), "m", python, &facts);
        let secrets = secrets_file(&facts, Path::new("/usr/lib/python3.12/sitecustomize.py"));
        assert!(secrets.starts_with("/etc/cuda-upgrade/secrets"));
        assert_eq!(
            secrets,
            secrets_file(&facts, Path::new("/usr/lib/python3.12/sitecustomize.py")),
            "named after the real file, stable"
        );
        assert_eq!(step.action, Action::Change, "{}", step.reason);
        assert!(
            step.reason
                .contains("(→ `/etc/python3.12/sitecustomize.py`)"),
            "{}",
            step.reason
        );
        let [
            Operation::Upload {
                path,
                placement: Placement::Secret,
                content,
            },
            Operation::ReplaceBlock {
                block,
                path: block_path,
                ..
            },
        ] = step.operations.as_slice()
        else {
            panic!("{:?}", step.operations);
        };
        assert_eq!(path, &secrets);
        assert_eq!(
            block_path,
            Path::new("/usr/lib/python3.12/sitecustomize.py")
        );
        assert!(String::from_utf8_lossy(content).contains("hf_secret"));
        assert!(!block.contains("hf_secret"), "{block}");
        assert!(block.contains(&secrets.display().to_string()));
        let shown: String = step.operations.iter().map(Operation::describe).collect();
        assert!(!shown.contains("hf_secret"), "{shown}");
    }

    #[test]
    fn converged_only_when_the_block_and_a_private_secrets_file_match() {
        let python = Path::new("/opt/torch/.venv/bin/python3");
        let target = Path::new("/usr/lib/python3.12/sitecustomize.py");
        let facts = ubuntu(None, None);
        let path = secrets_file(&facts, target);
        let wanted = block(&vars(), "m", Some(&path));
        let content = secrets_content(&vars()).unwrap();
        let file = |mode, content: &str| SecretFile {
            path: path.clone(),
            uid: 0,
            gid: 0,
            mode,
            sha256: sha256_hex(content.as_bytes()),
        };
        let done = plan(
            &vars(),
            "m",
            python,
            &ubuntu(Some(&wanted), Some(file(0o600, &content))),
        );
        assert_eq!(done.action, Action::NoOp, "{}", done.reason);
        let open = plan(
            &vars(),
            "m",
            python,
            &ubuntu(Some(&wanted), Some(file(0o644, &content))),
        );
        assert_eq!(open.action, Action::Change);
        assert!(
            open.reason.contains("readable by other users"),
            "{}",
            open.reason
        );
        assert_eq!(open.operations.len(), 1);
        let other = plan(
            &vars(),
            "m",
            python,
            &ubuntu(Some(&wanted), Some(file(0o600, "{}"))),
        );
        assert!(
            other.reason.contains("holds other values"),
            "{}",
            other.reason
        );
        // Without secrets, a left-over secrets file is removed.
        let plain = &vars()[..1];
        let plain_block = block(plain, "m", None);
        let stale = plan(
            plain,
            "m",
            python,
            &ubuntu(Some(&plain_block), Some(file(0o600, &content))),
        );
        assert_eq!(stale.action, Action::Change);
        assert_eq!(
            stale.operations[0].describe(),
            format!("rm -f -- {}", path.display())
        );
    }

    #[test]
    fn a_malformed_block_blocks_the_step_naming_the_line() {
        let mut facts = ubuntu(None, None);
        if let Some(site) = facts.sitecustomize.as_mut() {
            site.malformed_block =
                Some("line 7: the managed block's begin marker has no end marker".into());
        }
        let step = plan(
            &vars(),
            "m",
            Path::new("/opt/torch/.venv/bin/python3"),
            &facts,
        );
        let blocked = step.blocked.unwrap();
        assert!(
            blocked.contains("/etc/python3.12/sitecustomize.py"),
            "{blocked}"
        );
        assert!(blocked.contains("line 7"), "{blocked}");
    }

    #[test]
    fn a_compiled_sitecustomize_is_not_rewritten() {
        let mut facts = ubuntu(None, None);
        if let Some(site) = facts.sitecustomize.as_mut() {
            site.origin = Some("/usr/lib/python3.12/sitecustomize.pyc".into());
            site.real_path = None;
        }
        let step = plan(
            &vars(),
            "m",
            Path::new("/opt/torch/.venv/bin/python3"),
            &facts,
        );
        assert!(step.blocked.unwrap().contains("not a `.py` source file"));
        assert!(step.operations.is_empty());
    }

    #[test]
    fn a_missing_interpreter_is_planned_once_it_exists() {
        let mut facts = h200();
        facts.python = None;
        facts.sitecustomize = None;
        let step = plan(&vars(), "m", Path::new("/opt/ml-env/bin/python3"), &facts);
        assert_eq!(step.action, Action::Create);
        assert_eq!(step.subject, "/opt/ml-env/bin/python3");
        assert!(step.operations.is_empty());
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
