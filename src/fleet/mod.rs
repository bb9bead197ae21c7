//! A fleet: many nodes converged by one invocation. Each node goes its own way from
//! probe to converge to verification: it is connected and probed (one round trip, at most
//! [`PROBE_PARALLEL`] at a time) and then converged at once through the one pipeline
//! ([`crate::converge::converge_probed`]), with at most `parallel` converging at a time;
//! no node waits for another's probe, so a slow or hung node costs only its own bound.
//! With `--batch`, the nodes are taken in inventory order, a batch at a time: a node
//! converges once every node of the batches before its own has ended. A node that is
//! unreachable or fails never stops the others; once more than `--max-fail` nodes have
//! failed, no further node starts and the rest are reported as skipped. The result is
//! one typed outcome a node, in inventory order.

mod batches;
mod cause;
pub mod drain;
mod threshold;

pub use threshold::Threshold;

use batches::Batches;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use futures_util::future::join_all;
use serde::Serialize;
use tokio::sync::Semaphore;

use crate::converge::{
    self, ApplyOptions, ConvergeError, NodeOutcome, Prepared, Rollout, StepRecord,
};
use crate::exec::launch::LaunchOutcome;
use crate::exec::{ExecError, Reporter};
use crate::facts::NodeFacts;
use crate::steps::FetchMode;
use crate::transport::{SshOptions, SshTransport, Transport};

/// How many nodes are connected and probed at once.
pub const PROBE_PARALLEL: usize = 64;

/// How many nodes are converged at once unless `--parallel` says otherwise.
pub const DEFAULT_PARALLEL: usize = 16;

/// One node of the fleet as the inventory names it.
#[derive(Debug, Clone)]
pub struct FleetTarget {
    /// e.g. `node3` (an `ssh_config` alias, or a `Host` block of the run's own config).
    pub name: String,
    /// The target interpreter here, overriding the manifest's.
    pub python: Option<PathBuf>,
    /// The host's variables (for the manifest's `from_env` values).
    pub vars: BTreeMap<String, String>,
}

/// How a fleet run goes.
pub struct FleetOptions<'a> {
    /// Nodes converged at once (at least 1).
    pub parallel: usize,
    /// Failed nodes tolerated before no further node starts; `None`: no limit.
    pub max_fail: Option<Threshold>,
    /// Nodes per batch; a batch ends before the next starts. `None`: one batch.
    pub batch: Option<Threshold>,
    /// How to reach the nodes.
    pub ssh: SshOptions,
    /// What each node's apply is given (the lock holder is shared: one run id).
    pub apply: ApplyOptions<'a>,
    /// How each node is taken out of service (a host's variables override it).
    pub drain: drain::DrainSettings,
}

/// How a node ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeResult {
    /// Something was applied and every step (and the verification, when run) is good.
    Converged,
    /// Nothing needed changing (the verification, when run, was ready).
    Unchanged,
    /// A step or the verification failed, or the connection broke while working.
    Failed,
    /// The node could not be connected to (down, refused, a wrong host key).
    Unreachable,
    /// Nothing was changed: the node is locked by another apply, a step is blocked, or
    /// the manifest cannot be resolved for it.
    Refused,
    /// Not started: more than `--max-fail` nodes had failed.
    Skipped,
}

/// One node's outcome in a fleet run.
#[derive(Debug, Clone, Serialize)]
pub struct FleetNode {
    /// e.g. `node3`.
    pub host: String,
    /// Converged or unchanged.
    pub ok: bool,
    /// How it ended.
    pub result: NodeResult,
    /// Why it failed, in one line, e.g. `step \`pip\` failed: exit 1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// The whole error or failure, for the node's log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Steps that changed something.
    pub steps_changed: usize,
    /// From the first connection attempt to the end.
    pub seconds: f64,
    /// The verification's time to its ready line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_to_ready_ms: Option<u128>,
    /// Commands run on the node.
    pub round_trips: u64,
    /// The steps in plan order, up to the first failure.
    pub steps: Vec<StepRecord>,
    /// The verification launch, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<LaunchOutcome>,
    /// Its drain, the rollback of a failure, its production service.
    #[serde(flatten)]
    pub rollout: Rollout,
}

/// A whole fleet run: one outcome a node, in inventory order.
#[derive(Debug, Clone, Serialize)]
pub struct FleetOutcome {
    /// The run's id on every node's journal, e.g. `1796241671-4242`.
    pub run: String,
    /// Every node converged or was unchanged.
    pub ok: bool,
    /// The nodes.
    pub nodes: Vec<FleetNode>,
    /// The whole run.
    pub seconds: f64,
}

/// Receives a fleet's progress: what each node is doing, and each node's end.
pub trait FleetProgress: Send + Sync {
    /// `host` is doing `what`, e.g. `node3`, `pip — …`.
    fn step(&self, host: &str, what: &str);
    /// `node` ended.
    fn finished(&self, node: &FleetNode);
}

/// One node's [`Reporter`] over the fleet's progress.
struct NodeReporter<'a> {
    host: &'a str,
    progress: &'a dyn FleetProgress,
}

impl Reporter for NodeReporter<'_> {
    fn step(&self, message: &str) {
        // The pipeline prefixes its messages with the node's name; the fleet shows it once.
        let message = message
            .strip_prefix(self.host)
            .and_then(|rest| rest.strip_prefix(": "))
            .unwrap_or(message);
        self.progress.step(self.host, message);
    }

    fn done(&self) {}
}

/// A node connected and probed, or why not.
enum Probed {
    Ready {
        transport: Box<Transport>,
        prepared: Box<Prepared>,
        facts: Box<NodeFacts>,
        started: Instant,
    },
    Ended(Box<FleetNode>),
}

fn ended(
    host: &str,
    result: NodeResult,
    error: &(dyn std::error::Error + 'static),
    started: Instant,
) -> FleetNode {
    let (cause, detail) = cause::of_error(error);
    FleetNode {
        host: host.to_string(),
        ok: false,
        result,
        cause: Some(cause),
        detail: Some(detail),
        steps_changed: 0,
        seconds: started.elapsed().as_secs_f64(),
        time_to_ready_ms: None,
        round_trips: 0,
        steps: Vec::new(),
        verification: None,
        rollout: Rollout::default(),
    }
}

/// What an error that stopped a node says about the node.
fn result_of(error: &ConvergeError) -> NodeResult {
    match error {
        ConvergeError::Blocked { .. }
        | ConvergeError::StalePlan { .. }
        | ConvergeError::Locked(_)
        | ConvergeError::Resolve(_)
        | ConvergeError::Env(_)
        | ConvergeError::Plan(_) => NodeResult::Refused,
        _ => NodeResult::Failed,
    }
}

/// A node's pipeline outcome as a fleet node.
fn from_outcome(outcome: NodeOutcome) -> FleetNode {
    let steps_changed = outcome
        .steps
        .iter()
        .filter(|step| step.outcome == "applied")
        .count();
    let failed_step = outcome.steps.iter().find(|step| step.outcome == "failed");
    let (cause, detail) = match (failed_step, &outcome.verification) {
        (Some(step), _) => (
            Some(format!(
                "step `{}` failed{}{}",
                step.kind,
                step.status
                    .map(|status| format!(": exit status {status}"))
                    .unwrap_or_default(),
                step.output
                    .as_deref()
                    .and_then(|output| output.lines().find(|line| !line.trim().is_empty()))
                    .map(|line| format!(": {}", line.trim()))
                    .unwrap_or_default()
            )),
            step.output.clone(),
        ),
        (None, Some(verification)) => cause::of_verification(verification),
        _ => (None, None),
    };
    let time_to_ready_ms = match &outcome.verification {
        Some(LaunchOutcome::Ready { time_to_ready, .. }) => Some(time_to_ready.as_millis()),
        _ => None,
    };
    FleetNode {
        result: match (outcome.ok, steps_changed) {
            (false, _) => NodeResult::Failed,
            (true, 0) => NodeResult::Unchanged,
            (true, _) => NodeResult::Converged,
        },
        host: outcome.node,
        ok: outcome.ok,
        cause,
        detail,
        steps_changed,
        seconds: outcome.seconds,
        time_to_ready_ms,
        round_trips: outcome.round_trips,
        steps: outcome.steps,
        verification: outcome.verification,
        rollout: outcome.rollout,
    }
}

/// Connect to one node and probe it.
async fn probe(
    target: &FleetTarget,
    base: &Prepared,
    options: &FleetOptions<'_>,
    progress: &dyn FleetProgress,
) -> Probed {
    let started = Instant::now();
    let host = target.name.as_str();
    let prepared = match base.for_host(target.python.as_deref(), &target.vars) {
        Ok(prepared) => prepared,
        Err(error) => {
            return Probed::Ended(Box::new(ended(host, NodeResult::Refused, &error, started)));
        }
    };
    if let Some(Err(reason)) = target
        .vars
        .get(FETCH_VARIABLE)
        .map(|value| value.parse::<FetchMode>())
    {
        let error = FetchVariableError {
            host: host.to_string(),
            reason,
        };
        return Probed::Ended(Box::new(ended(host, NodeResult::Refused, &error, started)));
    }
    progress.step(host, "connecting");
    let transport = match SshTransport::connect(host, &options.ssh).await {
        Ok(ssh) => Transport::Ssh(ssh),
        Err(error) => {
            let error = ExecError::from(error);
            return Probed::Ended(Box::new(ended(
                host,
                NodeResult::Unreachable,
                &error,
                started,
            )));
        }
    };
    progress.step(host, "probing");
    match converge::facts(&transport, &prepared).await {
        Ok(facts) => Probed::Ready {
            transport: Box::new(transport),
            prepared: Box::new(prepared),
            facts: Box::new(facts),
            started,
        },
        Err(error) => {
            let mut node = ended(host, result_of(&error), &error, started);
            (node.cause, node.detail) = {
                let (cause, detail) = cause::of_probe_error(&error);
                (Some(cause), Some(detail))
            };
            node.round_trips = transport.round_trips();
            Probed::Ended(Box::new(node))
        }
    }
}

/// Where a node's run meets the others: the batches, the failure count and the slots.
struct Shared<'a> {
    batches: Batches,
    /// Failed nodes so far.
    failed: AtomicUsize,
    /// Failed nodes tolerated; `None`: no limit.
    tolerated: Option<usize>,
    /// Nodes connected and probed at once.
    probes: Semaphore,
    /// Nodes converged at once.
    slots: Semaphore,
    options: &'a FleetOptions<'a>,
    progress: &'a dyn FleetProgress,
}

impl Shared<'_> {
    /// `node` (the `index`th target) ended: count it, show it, and end its batch when it
    /// was the last.
    fn ended(&self, index: usize, node: &FleetNode) {
        if !node.ok && node.result != NodeResult::Skipped {
            self.failed.fetch_add(1, Ordering::SeqCst);
        }
        self.progress.finished(node);
        self.batches.ended(index);
    }
}

/// One node from its first connection attempt to its end: probe, wait for its batch's
/// turn and a slot, converge and verify. No node waits for another's probe.
async fn run_node(
    index: usize,
    target: &FleetTarget,
    base: &Prepared,
    shared: &Shared<'_>,
) -> FleetNode {
    let (options, progress) = (shared.options, shared.progress);
    let probed = {
        let _permit = shared.probes.acquire().await.ok();
        probe(target, base, options, progress).await
    };
    let (transport, prepared, facts, started) = match probed {
        Probed::Ended(node) => return *node,
        Probed::Ready {
            transport,
            prepared,
            facts,
            started,
        } => (transport, prepared, facts, started),
    };
    shared.batches.turn(index).await;
    let host = transport.name();
    let _slot = shared.slots.acquire().await.ok();
    let failures = shared.failed.load(Ordering::SeqCst);
    if shared
        .tolerated
        .is_some_and(|tolerated| failures > tolerated)
    {
        return FleetNode {
            host: host.to_string(),
            ok: false,
            result: NodeResult::Skipped,
            cause: Some(format!(
                "not started: {failures} nodes had failed (--max-fail {})",
                options.max_fail.map(|t| t.to_string()).unwrap_or_default()
            )),
            detail: None,
            steps_changed: 0,
            seconds: 0.0,
            time_to_ready_ms: None,
            round_trips: transport.round_trips(),
            steps: Vec::new(),
            verification: None,
            rollout: Rollout::default(),
        };
    }
    let reporter = NodeReporter { host, progress };
    let holder = &options.apply.holder;
    let run = format!("{}-{}", holder.started, holder.pid);
    let drain = match drain::for_host(host, &target.vars, &options.drain, &run) {
        Ok(drain) => drain,
        Err(error) => return ended(host, NodeResult::Refused, &error, started),
    };
    let apply = ApplyOptions {
        fetch: fetch_mode(target, options.apply.fetch),
        drain: drain.as_deref(),
        ..options.apply.clone()
    };
    let result =
        converge::converge_probed(&transport, &prepared, *facts, started, &apply, &reporter).await;
    match result {
        Ok(outcome) => from_outcome(outcome),
        Err(error) => {
            let mut node = ended(host, result_of(&error), &error, started);
            node.round_trips = transport.round_trips();
            node
        }
    }
}

/// The host variable that chooses who downloads a node's locked files.
pub const FETCH_VARIABLE: &str = "cuda_upgrade_fetch";

/// A host's [`FETCH_VARIABLE`] names no fetch mode.
#[derive(Debug, thiserror::Error)]
#[error("Failed to read the variable `{FETCH_VARIABLE}` of `{host}`: {reason}")]
pub struct FetchVariableError {
    /// e.g. `node3`.
    host: String,
    /// e.g. `` `nightly` is not a fetch mode ``.
    reason: String,
}

/// The host's fetch mode: its [`FETCH_VARIABLE`], else the run's `--fetch`. A value
/// that names no mode refuses the host before it is reached (see [`probe`]).
fn fetch_mode(target: &FleetTarget, default: FetchMode) -> FetchMode {
    target
        .vars
        .get(FETCH_VARIABLE)
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Converge every target (see the module's documentation).
pub async fn converge_fleet(
    targets: &[FleetTarget],
    base: &Prepared,
    options: &FleetOptions<'_>,
    progress: &dyn FleetProgress,
) -> FleetOutcome {
    let started = Instant::now();
    let holder = &options.apply.holder;
    let run = format!("{}-{}", holder.started, holder.pid);
    let total = targets.len();
    let batch_size = options.batch.map_or(total, |threshold| threshold.of(total));
    let shared = Shared {
        batches: Batches::new(total, batch_size),
        failed: AtomicUsize::new(0),
        tolerated: options.max_fail.map(|threshold| threshold.of(total)),
        probes: Semaphore::new(PROBE_PARALLEL),
        slots: Semaphore::new(options.parallel.max(1)),
        options,
        progress,
    };
    let nodes: Vec<FleetNode> = join_all(targets.iter().enumerate().map(|(index, target)| {
        let shared = &shared;
        async move {
            let node = run_node(index, target, base, shared).await;
            shared.ended(index, &node);
            node
        }
    }))
    .await;
    FleetOutcome {
        run,
        ok: nodes.iter().all(|node| node.ok),
        nodes,
        seconds: started.elapsed().as_secs_f64(),
    }
}
