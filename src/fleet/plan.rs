//! `plan -i`: what `apply -i` would do on each node, without changing any. Every node is
//! connected and probed at once (at most `--parallel` at a time, through the same probe
//! as `apply -i`), then resolved and planned; each ends as one line's worth of
//! data: converged, N changes, blocked (with why), unreachable, or an error.

use std::time::Instant;

use futures_util::future::join_all;
use serde::Serialize;
use tokio::sync::Semaphore;

use crate::converge::{self, ConvergeError, Prepared};
use crate::plan::NodePlan;
use crate::steps::Action;
use crate::transport::SshOptions;

use super::probe::{Probed, probe};
use super::{FleetNode, FleetProgress, FleetTarget, NodeResult, cause, fetch_mode};

/// How a fleet is planned.
pub struct PlanOptions<'a> {
    /// How to reach the nodes.
    pub ssh: SshOptions,
    /// Nodes probed and planned at once (at least 1).
    pub parallel: usize,
    /// The command line that records the digests a lock lacks, e.g. `upgrade index hash
    /// m.yaml --host NODE`.
    pub hash_command: &'a str,
    /// Who downloads the locked files (`--fetch`); a host's variable overrides it.
    pub delivery: crate::steps::Delivery,
}

/// Where a node stands against the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanState {
    /// Nothing to do.
    Converged,
    /// `apply` would change something.
    Changes,
    /// `apply` would refuse the node: a step is blocked, or the manifest cannot be
    /// resolved for it.
    Blocked,
    /// The node could not be connected to or probed.
    Unreachable,
    /// The node could not be planned (e.g. its facts could not be read).
    Error,
}

/// One node of a fleet plan.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedNode {
    /// e.g. `node3`.
    pub host: String,
    /// Where it stands.
    pub state: PlanState,
    /// Steps with something to do, e.g. `3`.
    pub changes: usize,
    /// Those steps' kinds, in plan order, e.g. `["toolkit", "pip", "ldconfig"]`.
    pub steps: Vec<String>,
    /// Why it is blocked, unreachable or failed, in one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// The whole plan (as `plan --format json` shows one node), when it was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<serde_json::Value>,
}

/// A fleet plan: one planned node a target, in inventory order.
#[derive(Debug, Clone, Serialize)]
pub struct FleetPlan {
    /// The nodes.
    pub nodes: Vec<PlannedNode>,
    /// How long planning took.
    pub seconds: f64,
}

impl FleetPlan {
    /// The worst state of any node (`Converged` for no node).
    pub fn worst(&self) -> PlanState {
        self.nodes
            .iter()
            .map(|node| node.state)
            .max()
            .unwrap_or(PlanState::Converged)
    }
}

/// Plan progress is not shown: the answer comes at once.
struct Silent;

impl FleetProgress for Silent {
    fn step(&self, _host: &str, _what: &str) {}
    fn batch(&self, _batch: usize, _of: usize, _hosts: &[&str]) {}
    fn finished(&self, _node: &FleetNode) {}
}

/// A node that ended before its plan, from how the probe ended.
fn from_ended(node: &FleetNode) -> PlannedNode {
    PlannedNode {
        host: node.host.clone(),
        state: match node.result {
            NodeResult::Unreachable => PlanState::Unreachable,
            NodeResult::Refused => PlanState::Blocked,
            _ => PlanState::Error,
        },
        changes: 0,
        steps: Vec::new(),
        cause: node.cause.clone(),
        plan: None,
    }
}

/// A node `apply -i` would refuse before reaching it, for `error` (e.g. a host variable
/// that names no fetch mode).
fn refused(host: &str, error: &(dyn std::error::Error + 'static)) -> PlannedNode {
    PlannedNode {
        host: host.to_string(),
        state: PlanState::Blocked,
        changes: 0,
        steps: Vec::new(),
        cause: Some(cause::of_error(error).0),
        plan: None,
    }
}

/// A node whose planning failed with `error`.
fn from_error(host: &str, error: &ConvergeError) -> PlannedNode {
    PlannedNode {
        host: host.to_string(),
        state: match error {
            ConvergeError::Resolve(_) | ConvergeError::Blocked { .. } | ConvergeError::Env(_) => {
                PlanState::Blocked
            }
            _ => PlanState::Error,
        },
        changes: 0,
        steps: Vec::new(),
        cause: Some(cause::of_error(error).0),
        plan: None,
    }
}

/// A node's plan as a fleet plan's node.
fn from_plan(host: &str, plan: &NodePlan) -> PlannedNode {
    let changing: Vec<String> = plan
        .steps
        .iter()
        .filter(|step| step.action != Action::NoOp)
        .map(|step| step.kind.to_string())
        .collect();
    let blocked = plan.blocked().first().map(|step| {
        format!(
            "step `{}` is blocked: {}",
            step.kind,
            step.blocked.as_deref().unwrap_or_default()
        )
    });
    PlannedNode {
        host: host.to_string(),
        state: match (&blocked, changing.is_empty()) {
            (Some(_), _) => PlanState::Blocked,
            (None, true) => PlanState::Converged,
            (None, false) => PlanState::Changes,
        },
        changes: changing.len(),
        steps: changing,
        cause: blocked,
        plan: Some(crate::plan::json(plan)),
    }
}

/// Plan one node: probe, resolve, plan.
async fn plan_node(
    target: &FleetTarget,
    base: &Prepared,
    options: &PlanOptions<'_>,
    probes: &Semaphore,
) -> PlannedNode {
    let host = target.name.as_str();
    let (prepared, unset) = match base.for_host_plan(target.python.as_deref(), &target.vars) {
        Ok(prepared) => prepared,
        Err(error) => return from_error(host, &error),
    };
    // As `apply -i` refuses the host before it is reached: blocked, with the same cause.
    let fetch = match fetch_mode(target, options.delivery.fetch) {
        Ok(fetch) => fetch,
        Err(error) => return refused(host, &error),
    };
    let _permit = probes.acquire().await.ok();
    let probed = probe(host, &prepared, &options.ssh, &Silent, Instant::now()).await;
    let facts = match probed {
        Probed::Ended(node) => return from_ended(&node),
        Probed::Ready { facts, .. } => facts,
    };
    let planned = converge::lock_and_plan(
        &prepared,
        host,
        &facts,
        options.hash_command,
        &crate::steps::Delivery {
            fetch,
            installer: options.delivery.installer.clone(),
        },
    )
    .map(|planned| planned.plan);
    match planned {
        Ok(mut plan) => {
            for variable in &unset {
                plan.warnings.push(format!(
                    "`{variable}` is set neither for this host nor on this controller: the plan cannot compare the secret it supplies with the node's; `apply` needs it"
                ));
            }
            from_plan(host, &plan)
        }
        Err(error) => from_error(host, &error),
    }
}

/// Plan every target (see the module's documentation). Fails only when the manifest's
/// index URLs cannot be worked out (pip's configuration), which every node needs.
pub async fn plan_fleet(
    targets: &[FleetTarget],
    base: &Prepared,
    options: &PlanOptions<'_>,
) -> Result<FleetPlan, ConvergeError> {
    let started = Instant::now();
    // The index URLs once for every node (pip's default asked here, before any probe).
    converge::index_urls(base)?;
    let probes = Semaphore::new(options.parallel.max(1));
    let nodes = join_all(
        targets
            .iter()
            .map(|target| plan_node(target, base, options, &probes)),
    )
    .await;
    Ok(FleetPlan {
        nodes,
        seconds: started.elapsed().as_secs_f64(),
    })
}
