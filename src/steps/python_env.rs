//! The python environment step: create the target virtual environment from the
//! manifest's base interpreter when it is missing, so a fresh node converges too.

use std::path::Path;

use crate::facts::NodeFacts;
use crate::manifest::Target;
use crate::transport::NodeCommand;

use super::{Action, Operation, Step, StepKind, Verification};

/// Plan the step; `None` when the target interpreter is missing and no base
/// interpreter is named (the plan reports that as an error).
pub fn plan(target: &Target, facts: &NodeFacts) -> Option<Step> {
    let python = target.python.display().to_string();
    let present = facts.python.as_ref().is_some_and(|found| {
        found.executable == target.python || Path::new(&found.executable) == target.python
    });
    if present {
        return Some(Step {
            kind: StepKind::PythonEnv,
            subject: python.clone(),
            action: Action::NoOp,
            reason: format!("`{python}` exists"),
            operations: Vec::new(),
            blocked: None,
            verification: None,
        });
    }
    let base = target.base_python.as_ref()?;
    // `/opt/ml-env/bin/python3` → `/opt/ml-env`.
    let prefix = target.python.parent().and_then(Path::parent)?;
    Some(Step {
        kind: StepKind::PythonEnv,
        subject: python.clone(),
        action: Action::Create,
        reason: format!("`{python}` does not exist"),
        operations: vec![Operation::Run(
            NodeCommand::new(base.display().to_string())
                .arg("-m")
                .arg("venv")
                .arg(prefix.display().to_string()),
        )],
        blocked: None,
        verification: Some(Verification::PythonRuns {
            python: target.python.clone(),
        }),
    })
}
