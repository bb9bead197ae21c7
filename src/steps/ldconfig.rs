//! The ldconfig step: own one `/etc/ld.so.conf.d/*.conf` file, run `ldconfig`, and
//! prove that each expected soname resolves into the registered directories, judged by
//! real paths ([`crate::facts::LdconfigFacts::unresolved`]) the same way when planning
//! and after applying: `/usr/local/cuda/…` (a link to `cuda-13.0`) is the same
//! directory as `/usr/local/cuda-13.0/…`.

use crate::facts::NodeFacts;
use crate::manifest::Ldconfig;
use crate::transport::NodeCommand;

use super::{Action, Operation, Placement, Step, StepKind, Verification};

/// The conf file's content: a header naming its owner, then one directory a line.
pub fn conf_content(ldconfig: &Ldconfig, manifest_name: &str) -> String {
    let mut content = format!(
        "# Managed by `upgrade apply` for manifest `{}`; rewritten on every apply.\n",
        manifest_name.replace('\n', " ")
    );
    for path in &ldconfig.paths {
        content.push_str(&path.display().to_string());
        content.push('\n');
    }
    content
}

/// Plan the step from the node's facts.
pub fn plan(ldconfig: &Ldconfig, manifest_name: &str, facts: &NodeFacts) -> Step {
    let wanted = conf_content(ldconfig, manifest_name);
    let current = facts
        .ldconfig
        .conf_files
        .iter()
        .find(|file| file.path == ldconfig.file);
    let current_paths: Option<Vec<&str>> = current.map(|file| {
        file.lines
            .iter()
            .map(|line| line.trim())
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .collect()
    });
    let wanted_paths: Vec<String> = ldconfig
        .paths
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let unresolved = facts.ldconfig.unresolved(&ldconfig.expect, &ldconfig.paths);
    let file = ldconfig.file.display().to_string();
    let (action, reason) = match current_paths {
        None => (Action::Create, format!("`{file}` does not exist")),
        Some(paths) if paths != wanted_paths.iter().map(String::as_str).collect::<Vec<_>>() => (
            Action::Change,
            format!(
                "`{file}` lists [{}], the manifest wants [{}]",
                paths.join(", "),
                wanted_paths.join(", ")
            ),
        ),
        Some(_) if !unresolved.is_empty() => (
            Action::Change,
            format!(
                "`{}` does not resolve into the registered directories: the loader cache is stale",
                unresolved.join("`, `")
            ),
        ),
        Some(_) => (
            Action::NoOp,
            format!("`{file}` is registered and every expected library resolves"),
        ),
    };
    let operations = if action == Action::NoOp {
        Vec::new()
    } else {
        vec![
            Operation::Upload {
                path: ldconfig.file.clone(),
                placement: Placement::Public { mode: 0o644 },
                content: wanted.into_bytes(),
            },
            Operation::Run(NodeCommand::new("ldconfig")),
        ]
    };
    Step {
        kind: StepKind::Ldconfig,
        subject: file.clone(),
        action,
        reason,
        operations,
        blocked: None,
        verification: Some(Verification::LibrariesResolve {
            sonames: ldconfig.expect.clone(),
            directories: ldconfig.paths.clone(),
        }),
    }
}
