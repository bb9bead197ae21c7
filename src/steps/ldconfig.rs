//! The ldconfig step: own one `/etc/ld.so.conf.d/*.conf` file, run `ldconfig`, and
//! prove that each expected soname resolves into the registered directories.

use std::path::{Path, PathBuf};

use crate::facts::NodeFacts;
use crate::manifest::Ldconfig;
use crate::transport::NodeCommand;

use super::{Action, Operation, Step, StepKind, Verification};

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

/// Where `soname` resolves, if inside one of `directories`.
pub fn resolves_into<'a>(
    facts: &'a NodeFacts,
    soname: &str,
    directories: &[PathBuf],
) -> Option<&'a Path> {
    let path = facts.ldconfig.resolve(soname)?;
    let inside = directories.iter().any(|directory| {
        path.parent().is_some_and(|parent| parent == directory)
            || facts
                .ldconfig
                .real_path(path)
                .and_then(Path::parent)
                .is_some_and(|parent| parent == directory)
    });
    inside.then_some(path)
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
    let unresolved: Vec<&str> = ldconfig
        .expect
        .iter()
        .filter(|soname| resolves_into(facts, soname, &ldconfig.paths).is_none())
        .map(String::as_str)
        .collect();
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
                mode: 0o644,
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
