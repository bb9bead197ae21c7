//! The env step: the manifest's variables set at every start of the target
//! environment's interpreters, and of no other.
//!
//! By default (`target.env_scope: environment`) the variables go into a managed block of
//! a `.pth` start-up file in the environment's first site-packages directory
//! (`cuda_upgrade_env.pth`): `site` runs its `import` lines for the interpreters of that
//! environment only, so the system interpreter and every other environment see none of
//! them. `env_scope: interpreter` writes the block into the `sitecustomize.py` the target
//! interpreter really imports instead (on Debian and Ubuntu the system
//! `/usr/lib/python3.X/sitecustomize.py`, which every environment of that interpreter
//! imports). Either way a variable the process already has wins (`setdefault`) unless the
//! manifest marks it `override: true`. Moving to one scope removes the block of the other
//! (a node applied before scopes existed has its block in the system `sitecustomize.py`).
//!
//! Writes follow symlinks and keep owner and mode; the rest of a file is kept byte for
//! byte. Secret values never enter a world-readable file: they go to a root-only 0600
//! file in a root-only directory (`/etc/cuda-upgrade/secrets/`), which the block reads
//! at start-up.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::facts::{ENV_HOOK_FILE, ManagedBlock, NodeFacts};
use crate::manifest::{EnvScope, EnvValue, EnvVar};
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
    /// Set even when the process already has the variable.
    pub override_existing: bool,
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
                override_existing: var.override_existing,
            })
        })
        .collect()
}

/// A Python string literal for `value` in printable ASCII only, e.g. `"a\u2028b"`:
/// every other character is a `\x`, `\u` or `\U` escape, so no line break any reader
/// knows (CPython 3.13+ splits `.pth` files on U+2028, U+2029, U+0085 and more) can
/// end the line the literal stands on.
fn python_literal(value: &str) -> String {
    let mut literal = String::with_capacity(value.len() + 2);
    literal.push('"');
    for c in value.chars() {
        let code = u32::from(c);
        match c {
            '"' => literal.push_str("\\\""),
            '\\' => literal.push_str("\\\\"),
            '\n' => literal.push_str("\\n"),
            '\t' => literal.push_str("\\t"),
            ' '..='~' => literal.push(c),
            _ if code <= 0xff => literal.push_str(&format!("\\x{code:02x}")),
            _ if code <= 0xffff => literal.push_str(&format!("\\u{code:04x}")),
            _ => literal.push_str(&format!("\\U{code:08x}")),
        }
    }
    literal.push('"');
    literal
}

/// The Python statement that sets one variable in `os.environ` (bound to `os`):
/// `setdefault`, so a value the process was started with wins, unless `override`.
fn assignment(name: &str, value: &str, override_existing: bool) -> String {
    if override_existing {
        format!(
            "os.environ[{}] = {}",
            python_literal(name),
            python_literal(value)
        )
    } else {
        format!(
            "os.environ.setdefault({}, {})",
            python_literal(name),
            python_literal(value)
        )
    }
}

/// The Python program that reads the secret values from `file` (root-only: an
/// interpreter started by another user cannot read it and starts without them).
fn secrets_program(vars: &[ResolvedVar], file: &Path) -> String {
    let overrides: Vec<String> = vars
        .iter()
        .filter(|var| var.secret && var.override_existing)
        .map(|var| python_literal(&var.name))
        .collect();
    format!(
        "try:\n    with open({}, encoding=\"utf-8\") as f:\n        values = __import__(\"json\").load(f)\nexcept (OSError, ValueError):\n    values = {{}}\nfor name, value in values.items():\n    if name in ({}):\n        os.environ[name] = value\n    else:\n        os.environ.setdefault(name, value)\n",
        python_literal(&file.display().to_string()),
        if overrides.is_empty() {
            String::new()
        } else {
            format!("{},", overrides.join(", "))
        }
    )
}

/// The block's lines for `scope`: every variable that is not secret as a literal, and,
/// when there are secrets, the lines that read them from `secrets_file`. In a `.pth`
/// file (environment scope) every line is one `import …` statement, the only lines
/// `site` runs; in `sitecustomize.py` (interpreter scope) it is ordinary Python.
pub fn block(
    vars: &[ResolvedVar],
    manifest_name: &str,
    secrets_file: Option<&Path>,
    scope: EnvScope,
) -> String {
    let mut lines = vec![format!(
        "# Managed by `upgrade apply` for manifest {}; edits inside this block are overwritten.",
        python_literal(manifest_name)
    )];
    let statements: Vec<String> = vars
        .iter()
        .filter(|var| !var.secret)
        .map(|var| assignment(&var.name, &var.value, var.override_existing))
        .collect();
    let secrets = secrets_file.map(|file| secrets_program(vars, file));
    let secret_names: Vec<String> = vars
        .iter()
        .filter(|var| var.secret)
        .map(|var| python_literal(&var.name))
        .collect();
    // The scope's first line, each statement's prefix, how the secrets' program runs
    // (its prefix and the name `os` is bound to there) and the scope's last line.
    let (first, statement_prefix, exec_prefix, os, last) = match scope {
        EnvScope::Environment => (
            "# Run by `site` for this environment's interpreters only; a variable the process already has wins unless marked `override`.",
            "import os; ",
            "import os; ",
            "os",
            None,
        ),
        EnvScope::Interpreter => (
            "import os as _cuda_upgrade_os",
            "_cuda_upgrade_",
            "",
            "_cuda_upgrade_os",
            Some("del _cuda_upgrade_os"),
        ),
    };
    lines.push(first.to_string());
    lines.extend(
        statements
            .iter()
            .map(|statement| format!("{statement_prefix}{statement}")),
    );
    if let Some(program) = &secrets {
        lines.push(format!(
            "# Secret values ({}) live in a root-only file, never in this one.",
            secret_names.join(", ")
        ));
        lines.push(format!(
            "{exec_prefix}exec({}, {{\"os\": {os}}})",
            python_literal(program)
        ));
    }
    lines.extend(last.map(str::to_string));
    let mut block = lines.join("\n");
    block.push('\n');
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

/// Where the interpreter-scope block goes: the `sitecustomize.py` the interpreter
/// imports; when it imports none, a new one in the environment's first site-packages
/// directory. `None` while the interpreter does not exist.
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

/// Where the environment-scope block goes: the `.pth` start-up file in the
/// environment's first site-packages directory. `None` while the interpreter does not
/// exist.
pub fn hook_file(facts: &NodeFacts) -> Option<PathBuf> {
    if let Some(hook) = &facts.env_hook {
        return Some(hook.path.clone());
    }
    facts
        .python
        .as_ref()
        .and_then(|python| python.site_packages.first())
        .map(|site| site.join(ENV_HOOK_FILE))
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

/// The file that holds (or will hold) the block, as the facts see it.
struct BlockFile {
    path: PathBuf,
    /// How the plan names it, e.g. `` `/usr/lib/python3.12/sitecustomize.py` (→ `/etc/…`) ``.
    shown: String,
    /// Its current block.
    current: Option<ManagedBlock>,
    /// Why its markers cannot be read.
    malformed: Option<String>,
    /// The reason when it has no block.
    missing: String,
    /// Whether the file exists (a new one is created, `+`).
    exists: bool,
}

/// The block file of the interpreter scope: the `sitecustomize.py` it imports.
fn sitecustomize_file(facts: &NodeFacts, path: PathBuf) -> BlockFile {
    let site = facts.sitecustomize.as_ref();
    let imported = site.and_then(|site| site.origin.as_ref()).is_some();
    let shown = match site.and_then(|site| site.real_path.as_ref()) {
        Some(real) if imported && *real != path => {
            format!("`{}` (→ `{}`)", path.display(), real.display())
        }
        _ => format!("`{}`", path.display()),
    };
    let missing = if imported {
        format!("{shown}, the sitecustomize the interpreter imports, has no managed block")
    } else {
        format!("the interpreter imports no sitecustomize; {shown} will hold the block")
    };
    BlockFile {
        path,
        current: site.and_then(|site| site.managed_block.clone()),
        malformed: site.and_then(|site| site.malformed_block.clone()),
        missing,
        exists: imported,
        shown,
    }
}

/// The block file of the environment scope: the `.pth` hook.
fn hook(facts: &NodeFacts, path: PathBuf) -> BlockFile {
    let hook = facts.env_hook.as_ref().filter(|hook| hook.path == path);
    let shown = format!("`{}`", path.display());
    let exists = hook.is_some_and(|hook| hook.exists);
    BlockFile {
        missing: if exists {
            format!("the start-up file {shown} has no managed block")
        } else {
            format!(
                "the start-up file {shown}, read by this environment's interpreters only, does not exist"
            )
        },
        current: hook.and_then(|hook| hook.managed_block.clone()),
        malformed: hook.and_then(|hook| hook.malformed_block.clone()),
        exists,
        shown,
        path,
    }
}

/// Plan the step from the node's facts. `python` is the target interpreter.
pub fn plan(
    vars: &[ResolvedVar],
    manifest_name: &str,
    python: &Path,
    facts: &NodeFacts,
    scope: EnvScope,
) -> Step {
    let subject = python.display().to_string();
    let verification = Some(Verification::EnvironmentVisible {
        python: python.to_path_buf(),
        variables: vars
            .iter()
            .map(|var| (var.name.clone(), var.value.clone()))
            .collect(),
        overrides: vars
            .iter()
            .filter(|var| var.override_existing)
            .map(|var| var.name.clone())
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
    let file = match scope {
        EnvScope::Environment => hook_file(facts).map(|path| hook(facts, path)),
        EnvScope::Interpreter => target_file(facts).map(|path| sitecustomize_file(facts, path)),
    };
    let Some(file) = file else {
        let place = match scope {
            EnvScope::Environment => format!("its site-packages' `{ENV_HOOK_FILE}`"),
            EnvScope::Interpreter => "the `sitecustomize.py` it imports".to_string(),
        };
        return step(
            Action::Create,
            format!(
                "`{subject}` does not exist yet: the block goes into {place}, found once it exists"
            ),
            Vec::new(),
            None,
        );
    };
    let shown = &file.shown;
    let extension = match scope {
        EnvScope::Environment => "pth",
        EnvScope::Interpreter => "py",
    };
    if file.path.extension().is_none_or(|found| found != extension) {
        return step(
            Action::Change,
            format!("{shown} is not a Python source file"),
            Vec::new(),
            Some(format!(
                "{shown} is what the interpreter imports as `sitecustomize`, and it is not a `.py` source file: a block cannot be added to it; replace it with a `sitecustomize.py`"
            )),
        );
    }
    if let Some(problem) = &file.malformed {
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
    let secrets_path = secrets_file(facts, &file.path);
    let wanted = block(
        vars,
        manifest_name,
        secrets.as_ref().map(|_| secrets_path.as_path()),
        scope,
    );

    let mut reasons = Vec::new();
    let mut operations = Vec::new();
    let mut action = Action::NoOp;
    secrets_operations(
        facts,
        secrets.as_deref(),
        &secrets_path,
        &mut reasons,
        &mut operations,
    );
    if !operations.is_empty() {
        action = Action::Change;
    }
    let block_reason = match &file.current {
        None => Some(file.missing.clone()),
        Some(current) if current.sha256 != sha256_hex(wanted.as_bytes()) => Some(format!(
            "the managed block of {shown} differs from the manifest's variables"
        )),
        Some(_) => None,
    };
    if let Some(reason) = block_reason {
        if action == Action::NoOp {
            action = if file.exists {
                Action::Change
            } else {
                Action::Create
            };
        }
        reasons.insert(0, reason);
        // The secret values land before the block that reads them.
        operations.push(Operation::ReplaceBlock {
            path: file.path.clone(),
            marker: MARKER.to_string(),
            block: wanted,
        });
    }
    // The other scope's block goes: a node applied before scopes existed has its block
    // in the system `sitecustomize.py`, where every environment of the interpreter saw it.
    let other = match scope {
        EnvScope::Environment => target_file(facts)
            .map(|path| sitecustomize_file(facts, path))
            .filter(|other| other.malformed.is_none()),
        EnvScope::Interpreter => hook_file(facts).map(|path| hook(facts, path)),
    };
    if let Some(other) = other.filter(|other| other.current.is_some()) {
        action = Action::Change;
        reasons.push(format!(
            "the managed block of {} {}: removed",
            other.shown,
            match scope {
                EnvScope::Environment =>
                    "reaches every environment of the interpreter (`target.env_scope: environment` keeps the variables to this one)",
                EnvScope::Interpreter => "belongs to `target.env_scope: environment`",
            }
        ));
        operations.push(Operation::RemoveBlock {
            path: other.path.clone(),
            marker: MARKER.to_string(),
        });
        let other_secrets = secrets_file(facts, &other.path);
        if facts
            .secret_files
            .iter()
            .any(|file| file.path == other_secrets)
        {
            operations.push(remove_file(&other_secrets));
        }
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

/// `rm -f -- PATH`.
fn remove_file(path: &Path) -> Operation {
    Operation::Run(
        NodeCommand::new("rm")
            .arg("-f")
            .arg("--")
            .arg(path.display().to_string()),
    )
}

/// The operations that make the secrets file at `path` hold `content` (root only), or
/// remove it when no secret is left.
fn secrets_operations(
    facts: &NodeFacts,
    content: Option<&str>,
    path: &Path,
    reasons: &mut Vec<String>,
    operations: &mut Vec<Operation>,
) {
    let current = facts.secret_files.iter().find(|file| file.path == path);
    match (content, current) {
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
                reasons.push(format!("the secrets file `{}` {stale}", path.display()));
                operations.push(Operation::Upload {
                    path: path.to_path_buf(),
                    placement: Placement::Secret,
                    content: content.as_bytes().to_vec(),
                });
            }
        }
        (None, Some(file)) => {
            reasons.push(format!(
                "the secrets file `{}` is no longer needed",
                file.path.display()
            ));
            operations.push(remove_file(&file.path));
        }
        (None, None) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{SecretFile, SitecustomizeFacts, managed_block};
    use crate::manifest::EnvScope;

    /// [`plan`] of [`vars`] for the H200 venv's interpreter, interpreter-wide.
    fn plan_interpreter_wide(facts: &NodeFacts) -> Step {
        plan(
            &vars(),
            "m",
            Path::new("/opt/torch/.venv/bin/python3"),
            facts,
            EnvScope::Interpreter,
        )
    }

    fn vars() -> Vec<ResolvedVar> {
        vec![
            ResolvedVar {
                name: "CUDA_HOME".into(),
                value: "/usr/local/cuda-13.0".into(),
                secret: false,
                override_existing: false,
            },
            ResolvedVar {
                name: "HF_TOKEN".into(),
                value: "hf_secret\"'\n$(x)".into(),
                secret: true,
                override_existing: false,
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
        let step = plan(&vars(), "m", python, &facts, EnvScope::Interpreter);
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
        let wanted = block(&vars(), "m", Some(&path), EnvScope::Interpreter);
        let content = secrets_content(&vars()).unwrap();
        let file = |mode, content: &str| SecretFile {
            path: path.clone(),
            uid: 0,
            gid: 0,
            mode,
            sha256: sha256_hex(content.as_bytes()),
        };
        let done = plan_interpreter_wide(&ubuntu(Some(&wanted), Some(file(0o600, &content))));
        assert_eq!(done.action, Action::NoOp, "{}", done.reason);
        let open = plan_interpreter_wide(&ubuntu(Some(&wanted), Some(file(0o644, &content))));
        assert_eq!(open.action, Action::Change);
        assert!(
            open.reason.contains("readable by other users"),
            "{}",
            open.reason
        );
        assert_eq!(open.operations.len(), 1);
        let other = plan_interpreter_wide(&ubuntu(Some(&wanted), Some(file(0o600, "{}"))));
        assert!(
            other.reason.contains("holds other values"),
            "{}",
            other.reason
        );
        // Without secrets, a left-over secrets file is removed.
        let plain = &vars()[..1];
        let plain_block = block(plain, "m", None, EnvScope::Interpreter);
        let stale = plan(
            plain,
            "m",
            python,
            &ubuntu(Some(&plain_block), Some(file(0o600, &content))),
            EnvScope::Interpreter,
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
        let step = plan_interpreter_wide(&facts);
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
        let step = plan_interpreter_wide(&facts);
        assert!(step.blocked.unwrap().contains("not a `.py` source file"));
        assert!(step.operations.is_empty());
    }

    #[test]
    fn a_missing_interpreter_is_planned_once_it_exists() {
        let mut facts = h200();
        facts.python = None;
        facts.sitecustomize = None;
        let step = plan(
            &vars(),
            "m",
            Path::new("/opt/ml-env/bin/python3"),
            &facts,
            EnvScope::Environment,
        );
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
            override_existing: false,
        }];
        let resolved = resolve(&vars, |name| {
            (name == "CONTROLLER_TOKEN").then(|| "v".to_string())
        })
        .unwrap();
        assert_eq!(resolved[0].value, "v");
        assert!(resolve(&vars, |_| None).is_err());
    }
}

#[cfg(test)]
mod scope_tests {
    use super::*;
    use crate::facts::{EnvHookFacts, SitecustomizeFacts};

    fn h200() -> NodeFacts {
        NodeFacts::read(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/facts/h200.facts.json"),
        )
        .unwrap()
    }

    fn var(name: &str, value: &str, override_existing: bool) -> ResolvedVar {
        ResolvedVar {
            name: name.into(),
            value: value.into(),
            secret: false,
            override_existing,
        }
    }

    const VENV_HOOK: &str = "/opt/torch/.venv/lib/python3.12/site-packages/cuda_upgrade_env.pth";

    /// See: issue 19 — by default the block goes into a `.pth` file of the venv, never
    /// into the system `sitecustomize.py`, and assigns with `setdefault`.
    #[test]
    fn the_default_scope_is_the_environment_and_a_process_value_wins() {
        let vars = vec![
            var("CUDA_HOME", "/usr/local/cuda-13.0", false),
            var("NCCL_DEBUG", "WARN", true),
        ];
        let python = Path::new("/opt/torch/.venv/bin/python3");
        let step = plan(&vars, "m", python, &h200(), EnvScope::Environment);
        assert_eq!(step.action, Action::Create, "{}", step.reason);
        let [Operation::ReplaceBlock { path, block, .. }] = step.operations.as_slice() else {
            panic!("{:?}", step.operations);
        };
        assert_eq!(path, Path::new(VENV_HOOK));
        assert!(
            block.contains(
                r#"import os; os.environ.setdefault("CUDA_HOME", "/usr/local/cuda-13.0")"#
            ),
            "{block}"
        );
        assert!(
            block.contains(r#"import os; os.environ["NCCL_DEBUG"] = "WARN""#),
            "{block}"
        );
        // Every line of a .pth that `site` runs starts with `import`; the rest are comments.
        assert!(
            block
                .lines()
                .all(|line| line.starts_with("import ") || line.starts_with('#')),
            "{block}"
        );
        let Some(Verification::EnvironmentVisible { overrides, .. }) = &step.verification else {
            panic!("{:?}", step.verification);
        };
        assert_eq!(overrides, &vec!["NCCL_DEBUG".to_string()]);
    }

    /// A node applied before scopes existed: its block in the system
    /// `sitecustomize.py` is removed, and the converged hook is otherwise a no-op.
    #[test]
    fn migrating_removes_the_interpreter_wide_block() {
        let vars = vec![var("CUDA_HOME", "/usr/local/cuda-13.0", false)];
        let python = Path::new("/opt/torch/.venv/bin/python3");
        let wanted = block(&vars, "m", None, EnvScope::Environment);
        let mut facts = h200();
        facts.env_hook = Some(EnvHookFacts {
            path: VENV_HOOK.into(),
            exists: true,
            managed_block: Some(ManagedBlock {
                content: wanted.clone(),
                sha256: sha256_hex(wanted.as_bytes()),
            }),
            malformed_block: None,
        });
        let converged = plan(&vars, "m", python, &facts, EnvScope::Environment);
        assert_eq!(converged.action, Action::NoOp, "{}", converged.reason);
        let old = "_cuda_upgrade_os.environ[\"CUDA_HOME\"] = \"/usr/local/cuda-13.0\"\n";
        facts.sitecustomize = Some(SitecustomizeFacts {
            origin: Some("/usr/lib/python3.12/sitecustomize.py".into()),
            real_path: Some("/etc/python3.12/sitecustomize.py".into()),
            mode: Some(0o644),
            uid: Some(0),
            imported: true,
            file_sha256: None,
            managed_block: Some(ManagedBlock {
                content: old.into(),
                sha256: sha256_hex(old.as_bytes()),
            }),
            malformed_block: None,
            shadowed: Vec::new(),
        });
        let step = plan(&vars, "m", python, &facts, EnvScope::Environment);
        assert_eq!(step.action, Action::Change);
        let [Operation::RemoveBlock { path, .. }] = step.operations.as_slice() else {
            panic!("{:?}", step.operations);
        };
        assert_eq!(path, Path::new("/usr/lib/python3.12/sitecustomize.py"));
        assert!(
            step.reason.contains("reaches every environment"),
            "{}",
            step.reason
        );
        // The interpreter scope, asked for, writes there and leaves the hook's block... removed.
        let step = plan(&vars, "m", python, &facts, EnvScope::Interpreter);
        assert!(
            step.operations.iter().any(|operation| matches!(
                operation,
                Operation::RemoveBlock { path, .. } if path == Path::new(VENV_HOOK)
            )),
            "{:?}",
            step.operations
        );
    }

    /// See: issue 33. A manifest name or value holding any line break a reader knows
    /// stays on its line of the `.pth` block (CPython 3.13+ splits `.pth` files with
    /// `str.splitlines`): the block is printable ASCII and line feeds, and a real
    /// interpreter reads each literal back as the exact value.
    #[test]
    fn no_line_break_of_any_reader_leaves_its_line_of_the_block() {
        let hostile = "m\u{2028}import os; os.system('id')\u{2029}\u{85}\u{0b}\u{0c}\u{1c}\r\n\u{1b}[2J\u{1F600}\"\\";
        let vars = [
            var("CUDA_HOME", hostile, false),
            var("NCCL_DEBUG", "WARN", true),
        ];
        for scope in [EnvScope::Environment, EnvScope::Interpreter] {
            let text = block(&vars, hostile, None, scope);
            assert!(
                text.bytes()
                    .all(|byte| byte == b'\n' || (b' '..=b'~').contains(&byte)),
                "{text}"
            );
            let python_lines = text.split(crate::text::is_line_break).count();
            assert_eq!(python_lines, text.split('\n').count(), "{text}");
            assert_eq!(
                text.lines().count(),
                4 + usize::from(scope == EnvScope::Interpreter)
            );
        }
        let literal = python_literal(hostile);
        let output = std::process::Command::new("python3")
            .args(["-I", "-S", "-c"])
            .arg("import ast, sys; sys.stdout.buffer.write(ast.literal_eval(sys.argv[1]).encode('utf-8', 'surrogatepass'))")
            .arg(&literal)
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        assert_eq!(String::from_utf8(output.stdout).unwrap(), hostile);
    }
}
