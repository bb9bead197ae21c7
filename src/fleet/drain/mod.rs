//! Taking a fleet's node out of service while it is changed and putting it back
//! ([`crate::converge::Drain`] is the hook the pipeline calls): one integration a node,
//! chosen on the command line (`--drain slurm|kubernetes|command|none`) or per host in
//! the inventory ([`DRAIN_VARIABLE`] and its companions), which wins. Each integration
//! is its own file: [`slurm`], [`kubernetes`], [`command`].

mod command;
mod controller;
mod error;
mod kubernetes;
mod slurm;

pub use command::{NODE_ENV, PHASE_ENV, RUN_ENV};
pub use error::{DrainError, DrainSettingsError};
pub use kubernetes::FAILURE_ANNOTATION;
pub use slurm::REASON_PREFIX;

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::converge::Drain;

/// How long a node may take to drain (its jobs to end, its pods to leave), and its pre
/// and post commands to run, unless `--drain-timeout` says otherwise.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(600);

/// The host variable that chooses a node's drain: `slurm`, `kubernetes`, `command`, `none`.
pub const DRAIN_VARIABLE: &str = "cuda_upgrade_drain";
/// The host variable naming the node in Slurm or Kubernetes (default: its inventory name).
pub const DRAIN_NAME_VARIABLE: &str = "cuda_upgrade_drain_name";
/// The host variable bounding its drain, e.g. `15m`.
pub const DRAIN_TIMEOUT_VARIABLE: &str = "cuda_upgrade_drain_timeout";
/// The host variable holding its pre command.
pub const DRAIN_PRE_VARIABLE: &str = "cuda_upgrade_drain_pre";
/// The host variable holding its post command.
pub const DRAIN_POST_VARIABLE: &str = "cuda_upgrade_drain_post";
/// The host variable saying where its commands run: `controller` or `node`.
pub const DRAIN_ON_VARIABLE: &str = "cuda_upgrade_drain_on";

/// A drain integration, e.g. `slurm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DrainKind {
    /// The node stays in service.
    #[default]
    None,
    /// `scontrol` drain, wait for jobs, resume.
    Slurm,
    /// `kubectl` cordon, drain, uncordon.
    Kubernetes,
    /// The operator's pre and post commands.
    Command,
}

impl std::str::FromStr for DrainKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "none" => Ok(Self::None),
            "slurm" => Ok(Self::Slurm),
            "kubernetes" => Ok(Self::Kubernetes),
            "command" => Ok(Self::Command),
            other => Err(format!(
                "`{other}` is not a drain (slurm, kubernetes, command, none)"
            )),
        }
    }
}

impl fmt::Display for DrainKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::None => "none",
            Self::Slurm => "slurm",
            Self::Kubernetes => "kubernetes",
            Self::Command => "command",
        })
    }
}

/// Where pre and post commands run, e.g. `controller`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommandSide {
    /// Where `upgrade` runs.
    #[default]
    Controller,
    /// On the node, over its transport.
    Node,
}

impl std::str::FromStr for CommandSide {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "controller" => Ok(Self::Controller),
            "node" => Ok(Self::Node),
            other => Err(format!("`{other}` is not controller or node")),
        }
    }
}

impl fmt::Display for CommandSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Controller => "controller",
            Self::Node => "node",
        })
    }
}

/// The run's drain settings (`--drain` and its companions); a host's variables override
/// each.
#[derive(Debug, Clone)]
pub struct DrainSettings {
    /// The integration.
    pub kind: DrainKind,
    /// The node's name in Slurm or Kubernetes (single node; default: its host name).
    pub name: Option<String>,
    /// The bound on draining, and on each pre or post command.
    pub timeout: Duration,
    /// The pre command (`command`).
    pub pre: Option<String>,
    /// The post command (`command`).
    pub post: Option<String>,
    /// Where pre and post run.
    pub on: CommandSide,
}

impl Default for DrainSettings {
    fn default() -> Self {
        Self {
            kind: DrainKind::None,
            name: None,
            timeout: DEFAULT_DRAIN_TIMEOUT,
            pre: None,
            post: None,
            on: CommandSide::Controller,
        }
    }
}

/// A Slurm or Kubernetes node name: letters, digits, `.`, `_`, `-`, not starting with `-`.
fn node_name(text: &str) -> Result<String, String> {
    let fits = !text.is_empty()
        && !text.starts_with('-')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if fits {
        Ok(text.to_string())
    } else {
        Err(format!(
            "`{text}` is not a node name (letters, digits, `.`, `_`, `-`)"
        ))
    }
}

/// The drain of the host `host` (its inventory name) with variables `vars`, for the run
/// `run`: its variables over `settings`. `None`: it stays in service.
pub fn for_host(
    host: &str,
    vars: &BTreeMap<String, String>,
    settings: &DrainSettings,
    run: &str,
) -> Result<Option<Box<dyn Drain>>, DrainSettingsError> {
    let refuse = |variable: &str, reason: String| DrainSettingsError {
        host: host.to_string(),
        reason: format!("`{variable}`: {reason}"),
    };
    let var = |name: &str| vars.get(name).map(String::as_str);
    let kind = match var(DRAIN_VARIABLE) {
        Some(value) => value
            .parse::<DrainKind>()
            .map_err(|reason| refuse(DRAIN_VARIABLE, reason))?,
        None => settings.kind,
    };
    let timeout = match var(DRAIN_TIMEOUT_VARIABLE) {
        Some(value) => crate::manifest::parse_duration(value)
            .map_err(|reason| refuse(DRAIN_TIMEOUT_VARIABLE, reason))?,
        None => settings.timeout,
    };
    let name = var(DRAIN_NAME_VARIABLE)
        .map(str::to_string)
        .or_else(|| settings.name.clone())
        .unwrap_or_else(|| host.to_string());
    let run = run.to_string();
    Ok(match kind {
        DrainKind::None => None,
        DrainKind::Slurm => {
            let name = node_name(&name).map_err(|reason| refuse(DRAIN_NAME_VARIABLE, reason))?;
            Some(Box::new(slurm::Slurm::new(name, run, timeout)))
        }
        DrainKind::Kubernetes => {
            let name = node_name(&name).map_err(|reason| refuse(DRAIN_NAME_VARIABLE, reason))?;
            Some(Box::new(kubernetes::Kubernetes::new(
                "kubectl".to_string(),
                name,
                timeout,
            )))
        }
        DrainKind::Command => {
            let pre = var(DRAIN_PRE_VARIABLE)
                .map(str::to_string)
                .or_else(|| settings.pre.clone());
            let post = var(DRAIN_POST_VARIABLE)
                .map(str::to_string)
                .or_else(|| settings.post.clone());
            if pre.is_none() && post.is_none() {
                return Err(refuse(
                    DRAIN_VARIABLE,
                    "`command` needs a pre or a post command (--drain-pre, --drain-post)"
                        .to_string(),
                ));
            }
            let on = match var(DRAIN_ON_VARIABLE) {
                Some(value) => value
                    .parse()
                    .map_err(|reason| refuse(DRAIN_ON_VARIABLE, reason))?,
                None => settings.on,
            };
            Some(Box::new(command::Command {
                pre,
                post,
                on,
                node: host.to_string(),
                run,
                timeout,
            }))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn host_variables_choose_and_name_the_drain() {
        let settings = DrainSettings::default();
        assert!(
            for_host("node0", &vars(&[]), &settings, "1-2")
                .unwrap()
                .is_none()
        );
        let drain = for_host(
            "node0",
            &vars(&[(DRAIN_VARIABLE, "slurm"), (DRAIN_NAME_VARIABLE, "gpu7")]),
            &settings,
            "1-2",
        )
        .unwrap()
        .unwrap();
        assert_eq!(drain.describe(), "slurm node `gpu7`");
        let slurm = DrainSettings {
            kind: DrainKind::Slurm,
            ..DrainSettings::default()
        };
        let drain = for_host("node3", &vars(&[]), &slurm, "1-2")
            .unwrap()
            .unwrap();
        assert_eq!(drain.describe(), "slurm node `node3`");
        // A host can opt out of the run's drain.
        assert!(
            for_host("node3", &vars(&[(DRAIN_VARIABLE, "none")]), &slurm, "1-2")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn bad_drain_settings_refuse_the_host_naming_the_variable() {
        let settings = DrainSettings::default();
        for (pairs, wanted) in [
            (vec![(DRAIN_VARIABLE, "lsf")], "`lsf` is not a drain"),
            (
                vec![(DRAIN_VARIABLE, "slurm"), (DRAIN_NAME_VARIABLE, "-x")],
                "`cuda_upgrade_drain_name`",
            ),
            (vec![(DRAIN_VARIABLE, "command")], "needs a pre or a post"),
            (
                vec![(DRAIN_VARIABLE, "slurm"), (DRAIN_TIMEOUT_VARIABLE, "soon")],
                "`cuda_upgrade_drain_timeout`",
            ),
        ] {
            let error = for_host("node0", &vars(&pairs), &settings, "1-2")
                .err()
                .unwrap()
                .to_string();
            assert!(
                error.contains(wanted) && error.contains("`node0`"),
                "{error}"
            );
        }
    }
}
