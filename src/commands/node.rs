//! Turning the node flags into a [`NodeSelection`], and back into words for a command
//! line that must choose the same node (`upgrade index hash …`).

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use crate::cli::{NodeArgs, SshArgs};
use crate::commands::CommandError;
use crate::exec::NodeSelection;
use crate::manifest::Manifest;
use crate::resolve::TargetEnvironment;
use crate::shell;
use crate::transport::{HostKeyPolicy, SshOptions};

/// `--local` or `--host H` with its SSH settings (clap guarantees exactly one).
pub fn selection(node: &NodeArgs, ssh: &SshArgs) -> NodeSelection {
    match &node.host {
        Some(host) => NodeSelection::Host {
            host: host.clone(),
            options: ssh_options(ssh),
        },
        None => NodeSelection::Local {
            command_timeout: ssh.command_timeout,
        },
    }
}

/// The SSH settings as the transport takes them.
pub fn ssh_options(ssh: &SshArgs) -> SshOptions {
    let SshArgs {
        ssh_config,
        known_hosts,
        accept_new_host_keys,
        command_timeout,
    } = ssh;
    SshOptions {
        config_file: ssh_config.clone(),
        known_hosts_file: known_hosts.clone(),
        host_keys: if *accept_new_host_keys {
            HostKeyPolicy::AcceptNew
        } else {
            HostKeyPolicy::Strict
        },
        connect_timeout: None,
        command_timeout: *command_timeout,
    }
}

/// How a plan chose its node, so the command that records missing digests chooses the
/// same one.
#[derive(Debug, Clone, Copy)]
pub enum NodeChoice<'a> {
    /// `--facts FILE`.
    Facts(&'a Path),
    /// `--local` or `--host H` with its SSH settings.
    Probed(&'a NodeArgs, &'a SshArgs),
}

/// The `upgrade index hash` command line that records the missing digests of the lock
/// `plan` made for this manifest, node and snapshot, e.g. `upgrade index hash
/// manifests/x.yaml --facts h200.facts.json`; the pip step adds `--package NAME`.
pub fn hash_command(manifest: &Path, node: NodeChoice<'_>, snapshot: Option<&Path>) -> String {
    let path = |path: &Path| path.display().to_string();
    let mut words = vec![
        "upgrade".to_string(),
        "index".to_string(),
        "hash".to_string(),
        path(manifest),
    ];
    match node {
        NodeChoice::Facts(facts) => words.extend(["--facts".to_string(), path(facts)]),
        NodeChoice::Probed(node, ssh) => {
            match &node.host {
                Some(host) => words.extend(["--host".to_string(), host.clone()]),
                None => words.push("--local".to_string()),
            }
            if let Some(config) = &ssh.ssh_config {
                words.extend(["--ssh-config".to_string(), path(config)]);
            }
            if let Some(known_hosts) = &ssh.known_hosts {
                words.extend(["--known-hosts".to_string(), path(known_hosts)]);
            }
            if ssh.accept_new_host_keys {
                words.push("--accept-new-host-keys".to_string());
            }
        }
    }
    if let Some(snapshot) = snapshot {
        words.extend(["--snapshot".to_string(), path(snapshot)]);
    }
    words
        .iter()
        .map(|word| shell::quote(word))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The environment a lock is made for: the node facts of `--facts FILE`, else the
/// manifest's `target`.
pub fn environment(
    manifest: &Manifest,
    facts: Option<&Path>,
) -> Result<TargetEnvironment, CommandError> {
    Ok(match facts {
        Some(path) => {
            let text = fs_err::read_to_string(path).map_err(CommandError::Output)?;
            TargetEnvironment::read_facts(manifest, &text, &path.display().to_string())?
        }
        None => TargetEnvironment::from_manifest(manifest)?,
    })
}

/// Whether `apply` asks before it changes anything: not with `--yes`; on a terminal,
/// yes; with no terminal to ask on and no `--yes`, it refuses.
pub fn asks(yes: bool) -> Result<bool, CommandError> {
    if yes {
        Ok(false)
    } else if std::io::stdin().is_terminal() {
        Ok(true)
    } else {
        Err(CommandError::NotConfirmed)
    }
}

/// Show `shown` on stderr, ask `question` and read the answer from stdin: only `y` or
/// `yes` goes ahead.
pub fn confirm(shown: &str, question: &str) -> bool {
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "{shown}{question} [y/N] ");
    let _ = stderr.flush();
    drop(stderr);
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// The one question before a fleet apply (each node's plan is made only after its
/// probe): `Err` when declined or when no terminal can ask and `--yes` is missing.
pub fn confirm_fleet<'a>(
    yes: bool,
    manifest: &Path,
    nodes: impl Iterator<Item = &'a str>,
) -> Result<(), CommandError> {
    if !asks(yes)? {
        return Ok(());
    }
    let nodes: Vec<&str> = nodes.collect();
    let question = format!(
        "Apply `{}` to {} node(s) ({})? Each is planned after its probe (`upgrade plan` shows one node's plan).",
        crate::text::text_value(&manifest.display().to_string()),
        nodes.len(),
        crate::text::text_value(&nodes.join(", "))
    );
    if confirm("", &question) {
        Ok(())
    } else {
        Err(CommandError::Refused(
            crate::converge::ConvergeError::Declined {
                node: "the fleet".to_string(),
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn hash_command_repeats_how_the_plan_chose_its_node() {
        let manifest = Path::new("manifests/sglang-0.5.9-cu130.yaml");
        assert_eq!(
            hash_command(
                manifest,
                NodeChoice::Facts(Path::new("my facts.json")),
                Some(Path::new("snap.json"))
            ),
            "upgrade index hash manifests/sglang-0.5.9-cu130.yaml --facts 'my facts.json' --snapshot snap.json"
        );
        let node = NodeArgs {
            local: false,
            host: Some("node0".to_string()),
        };
        let ssh = SshArgs {
            ssh_config: Some(PathBuf::from("/tmp/tb/ssh_config")),
            known_hosts: None,
            accept_new_host_keys: true,
            command_timeout: None,
        };
        assert_eq!(
            hash_command(manifest, NodeChoice::Probed(&node, &ssh), None),
            "upgrade index hash manifests/sglang-0.5.9-cu130.yaml --host node0 --ssh-config /tmp/tb/ssh_config --accept-new-host-keys"
        );
        let local = NodeArgs {
            local: true,
            host: None,
        };
        let none = SshArgs {
            ssh_config: None,
            known_hosts: None,
            accept_new_host_keys: false,
            command_timeout: None,
        };
        assert_eq!(
            hash_command(manifest, NodeChoice::Probed(&local, &none), None),
            "upgrade index hash manifests/sglang-0.5.9-cu130.yaml --local"
        );
    }
}
