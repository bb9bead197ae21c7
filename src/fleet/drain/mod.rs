//! Taking a fleet's node out of service while it is changed and putting it back
//! ([`crate::converge::Drain`] is the hook the pipeline calls): one integration a node,
//! chosen on the command line (`--drain slurm|kubernetes|command|none`) or per host in
//! the inventory ([`DRAIN_VARIABLE`] and its companions), which wins. Each integration
//! is its own file: [`slurm`], [`kubernetes`], [`command`].

mod command;
mod controller;
mod error;
mod kubernetes;
mod name;
mod slurm;

pub use command::{NODE_ENV, PHASE_ENV, RUN_ENV};
pub use error::{DrainError, DrainSettingsError};
pub use kubernetes::FAILURE_ANNOTATION;
pub use name::{DrainNameError, DrainNodeName, NameRules};
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
                "`{}` is not a drain (slurm, kubernetes, command, none)",
                crate::text::text_value(other)
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
            other => Err(format!(
                "`{}` is not controller or node",
                crate::text::text_value(other)
            )),
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
    /// The node's name in Slurm or Kubernetes (`--drain-name`, single node; default: its
    /// host name), checked again under the host's drain.
    pub name: Option<DrainNodeName>,
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

/// The node's name under `rules`: the host's [`DRAIN_NAME_VARIABLE`], else
/// `--drain-name`, else the host's own name, each refused naming where it came from.
fn drain_name(
    host: &str,
    vars: &BTreeMap<String, String>,
    settings: &DrainSettings,
    rules: NameRules,
) -> Result<DrainNodeName, String> {
    if let Some(value) = vars.get(DRAIN_NAME_VARIABLE) {
        return DrainNodeName::parse(value, rules)
            .map_err(|error| format!("`{DRAIN_NAME_VARIABLE}`: {error}"));
    }
    if let Some(flag) = &settings.name {
        return DrainNodeName::parse(flag.as_str(), rules)
            .map_err(|error| format!("`--drain-name`: {error}"));
    }
    DrainNodeName::parse(host, rules).map_err(|error| {
        format!(
            "`{DRAIN_NAME_VARIABLE}` is not set and the host's name is no node name to drain: {error}; set `{DRAIN_NAME_VARIABLE}` (`--drain-name` with `--host`)"
        )
    })
}

/// The drain of the host `host` (its inventory name) with variables `vars`, for the run
/// `run`: its variables over `settings`. `None`: it stays in service.
pub fn for_host(
    host: &str,
    vars: &BTreeMap<String, String>,
    settings: &DrainSettings,
    run: &str,
) -> Result<Option<Box<dyn Drain>>, DrainSettingsError> {
    // A reason may quote the variable's value: escaped, it stays on its line.
    let refuse = |variable: &str, reason: String| DrainSettingsError {
        host: host.to_string(),
        reason: format!("`{variable}`: {}", crate::text::text_value(&reason)),
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
    let name = |rules| {
        drain_name(host, vars, settings, rules).map_err(|reason| DrainSettingsError {
            host: host.to_string(),
            reason,
        })
    };
    let run = run.to_string();
    Ok(match kind {
        DrainKind::None => None,
        DrainKind::Slurm => Some(Box::new(slurm::Slurm::new(
            name(NameRules::Slurm)?,
            run,
            timeout,
        ))),
        DrainKind::Kubernetes => Some(Box::new(kubernetes::Kubernetes::new(
            "kubectl".to_string(),
            name(NameRules::Kubernetes)?,
            timeout,
        ))),
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

    /// See: issue 33 — `ALL`, a hostlist or a nodeset as the drain name would drain the
    /// whole cluster (or several nodes) and leave it drained: refused before any command
    /// runs, naming the host and where the name came from (the variable, `--drain-name`,
    /// or the host's own name it defaults to), for Slurm and Kubernetes alike.
    #[test]
    fn a_drain_name_for_many_nodes_refuses_the_host_naming_where_it_came_from() {
        for kind in ["slurm", "kubernetes"] {
            for name in ["ALL", "all", "node[1-4]", "a,b", "@gpu", "gpu1\u{2028}ALL"] {
                let error = for_host(
                    "node0",
                    &vars(&[(DRAIN_VARIABLE, kind), (DRAIN_NAME_VARIABLE, name)]),
                    &DrainSettings::default(),
                    "1-2",
                )
                .err()
                .unwrap()
                .to_string();
                assert!(
                    error.contains("`node0`: `cuda_upgrade_drain_name`: `"),
                    "{kind} {name:?}: {error}"
                );
            }
            let kind: DrainKind = kind.parse().unwrap();
            let flag = DrainSettings {
                kind,
                name: Some("GPU_7".parse().unwrap()),
                ..DrainSettings::default()
            };
            let named = for_host("node0", &vars(&[]), &flag, "1-2");
            let settings = DrainSettings {
                kind,
                ..DrainSettings::default()
            };
            let error = for_host("ALL", &vars(&[]), &settings, "1-2")
                .err()
                .unwrap()
                .to_string();
            assert!(
                error.contains("`ALL`: `cuda_upgrade_drain_name` is not set")
                    && error.contains("`ALL` names every node"),
                "{error}"
            );
            match kind {
                // Slurm takes `GPU_7`; Kubernetes refuses it, naming the flag.
                DrainKind::Slurm => {
                    assert_eq!(named.unwrap().unwrap().describe(), "slurm node `GPU_7`");
                }
                _ => {
                    let error = named.err().unwrap().to_string();
                    assert!(
                        error.contains("`--drain-name`: `GPU_7` is not a kubernetes node name"),
                        "{error}"
                    );
                }
            }
        }
        assert!("ALL".parse::<DrainNodeName>().is_err());
        assert!("node[1-4]".parse::<DrainNodeName>().is_err());
    }
}
