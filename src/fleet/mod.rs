//! A fleet: many nodes converged by one invocation. Each node goes its own way from
//! probe to converge to verification: it is connected and probed (one round trip, at most
//! [`PROBE_PARALLEL`] at a time) and then converged at once through the one pipeline
//! ([`crate::converge::converge_probed`]), with at most `parallel` converging at a time;
//! no node waits for another's probe, so a slow or hung node costs only its own bound.
//! With `--batch` (a list of sizes, Ansible's `serial`: `1,10%,100%`), the nodes are taken
//! in inventory order, a batch at a time: the run's leader opens a batch once every node
//! of the batches before it has ended, and may pause after the first (the canary) to ask
//! whether to go on. A node that is unreachable or fails never stops the others; once
//! more than `--max-fail` nodes have failed while being changed (unreachable nodes and
//! nodes refused before any change do not count unless asked), no further node starts
//! and the rest are reported as skipped, with why. The result is one typed outcome a
//! node, in inventory order, each naming its batch.

mod batches;
mod cause;
pub mod drain;
pub mod plan;
mod probe;
mod select;
mod threshold;

pub use select::{ListedHost, SelectError, Selected, each_host, hosts, list, run_dir, select};
pub use threshold::{BatchList, Threshold};

use batches::Batches;
use probe::{Probed, probe};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use futures_util::future::join_all;
use serde::Serialize;
use tokio::sync::Semaphore;

use crate::converge::{
    self, ApplyOptions, ConvergeError, NodeOutcome, Prepared, Rollout, StepRecord,
};
use crate::exec::Reporter;
use crate::exec::launch::LaunchOutcome;
use crate::steps::FetchMode;
use crate::transport::SshOptions;

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
    /// Nodes failed while being changed tolerated before no further node starts
    /// (exceeded, not equalled); `None`: no limit.
    pub max_fail: Option<Threshold>,
    /// Unreachable nodes count against `max_fail` too, each as its batch ends
    /// (`--unreachable-fails`).
    pub unreachable_fails: bool,
    /// The batches' sizes; a batch ends before the next starts. `None`: one batch.
    pub batch: Option<BatchList>,
    /// What happens once the first batch (the canary) has ended.
    pub after_canary: AfterCanary<'a>,
    /// How to reach the nodes.
    pub ssh: SshOptions,
    /// What each node's apply is given (the lock holder is shared: one run id).
    pub apply: ApplyOptions<'a>,
    /// How each node is taken out of service (a host's variables override it).
    pub drain: drain::DrainSettings,
}

/// What a run does once its first batch (the canary) has ended and before the next
/// starts (`--pause-after-canary`).
#[derive(Clone, Copy)]
pub enum AfterCanary<'a> {
    /// Go on with the next batch.
    Continue,
    /// Ask (e.g. on a terminal): `true` goes on; `false` starts no further node.
    Ask(&'a (dyn Fn(&CanaryEnd) -> bool + Sync)),
    /// Stop: nothing was there to ask (no terminal); the rest are not started.
    Stop,
}

/// How the canary batch ended, for the question after it.
#[derive(Debug, Clone)]
pub struct CanaryEnd {
    /// Its nodes, e.g. `["node0"]`.
    pub hosts: Vec<String>,
    /// How many of them converged or were unchanged.
    pub ok: usize,
    /// Nodes failed while being changed so far.
    pub failed: usize,
    /// Nodes of the later batches, e.g. `7`.
    pub rest: usize,
    /// How many batches are left, e.g. `2`.
    pub batches_left: usize,
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
    /// Not started: more than `--max-fail` nodes had failed, or the run stopped after the
    /// canary batch (its cause says which).
    Skipped,
}

/// One node's outcome in a fleet run.
#[derive(Debug, Clone, Serialize)]
pub struct FleetNode {
    /// e.g. `node3`.
    pub host: String,
    /// Its batch, from 1 (the run's only batch without `--batch`).
    pub batch: usize,
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
    /// The manifest's benchmark, when the node was changed: baseline, after, verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<crate::exec::benchmark::BenchmarkResult>,
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
    /// How many batches the nodes were taken in, e.g. `3`.
    pub batches: usize,
    /// Why nodes were left unstarted, when they were, e.g. `2 nodes failed while being
    /// changed, more than --max-fail 1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The nodes.
    pub nodes: Vec<FleetNode>,
    /// The whole run.
    pub seconds: f64,
}

/// Receives a fleet's progress: what each node is doing, and each node's end.
pub trait FleetProgress: Send + Sync {
    /// `host` is doing `what`, e.g. `node3`, `pip — …`.
    fn step(&self, host: &str, what: &str);
    /// Batch `batch` of `of` (from 1) starts with `hosts`, e.g. `2`, `3`, `["node1"]`.
    fn batch(&self, batch: usize, of: usize, hosts: &[&str]);
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

fn ended(
    host: &str,
    result: NodeResult,
    error: &(dyn std::error::Error + 'static),
    started: Instant,
) -> FleetNode {
    let (cause, detail) = cause::of_error(error);
    FleetNode {
        host: host.to_string(),
        batch: 1,
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
        benchmark: None,
        rollout: Rollout::default(),
    }
}

/// What an error that stopped a node says about the node.
fn result_of(error: &ConvergeError) -> NodeResult {
    match error {
        ConvergeError::Blocked { .. }
        | ConvergeError::StalePlan { .. }
        | ConvergeError::LockRefused { .. }
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
    // A benchmark that failed the node after a good verification is its cause.
    let (cause, detail) = match (cause, &outcome.benchmark) {
        (None, Some(benchmark)) if benchmark.cause.is_some() => {
            (benchmark.cause.clone(), benchmark.cause.clone())
        }
        other => (other.0, detail),
    };
    let time_to_ready_ms = match &outcome.verification {
        Some(LaunchOutcome::Ready { time_to_ready, .. }) => Some(time_to_ready.as_millis()),
        _ => None,
    };
    FleetNode {
        batch: 1,
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
        benchmark: outcome.benchmark,
        rollout: outcome.rollout,
    }
}

/// The manifest as `target` sees it and its fetch mode (`default`, the run's `--fetch`,
/// unless its variable says otherwise), or the node refused before it is reached (its
/// variables do not fill the manifest, or name no fetch mode).
fn prepare(
    target: &FleetTarget,
    base: &Prepared,
    default: FetchMode,
    started: Instant,
) -> Result<(Prepared, FetchMode), Box<FleetNode>> {
    let host = target.name.as_str();
    let prepared = base
        .for_host(target.python.as_deref(), &target.vars)
        .map_err(|error| Box::new(ended(host, NodeResult::Refused, &error, started)))?;
    let fetch = fetch_mode(target, default)
        .map_err(|error| Box::new(ended(host, NodeResult::Refused, &error, started)))?;
    Ok((prepared, fetch))
}

/// Where a node's run meets the others: the batches, the failure count and the slots.
struct Shared<'a> {
    batches: Batches,
    /// Nodes failed while being changed so far, and with `--unreachable-fails` the
    /// unreachable nodes of the batches ended so far (counted as each batch ends, so
    /// that a node found down at the start weighs at its batch's end, not at random).
    failed: AtomicUsize,
    /// Failed nodes tolerated; `None`: no limit.
    tolerated: Option<usize>,
    /// Nodes connected and probed at once.
    probes: Semaphore,
    /// Nodes converged at once.
    slots: Semaphore,
    /// Why no further node starts, once that is so.
    stopped: Mutex<Option<String>>,
    /// How the nodes ended so far, by index.
    ended: Mutex<Vec<Option<NodeResult>>>,
    options: &'a FleetOptions<'a>,
    progress: &'a dyn FleetProgress,
}

impl Shared<'_> {
    /// `node` (the `index`th target) ended: count it, show it, and end its batch when it
    /// was the last.
    fn ended(&self, index: usize, node: &FleetNode, changing: bool) {
        if changing && node.result == NodeResult::Failed {
            self.failed.fetch_add(1, Ordering::SeqCst);
        }
        if let Ok(mut ended) = self.ended.lock()
            && let Some(slot) = ended.get_mut(index)
        {
            *slot = Some(node.result);
        }
        self.progress.finished(node);
        self.batches.ended(index);
    }

    /// Why no node may start any more: too many failures, or the leader stopped the run.
    fn stop_reason(&self) -> Option<String> {
        if let Some(reason) = self.stopped.lock().ok().and_then(|stopped| stopped.clone()) {
            return Some(reason);
        }
        let failures = self.failed.load(Ordering::SeqCst);
        let tolerated = self.tolerated?;
        (failures > tolerated).then(|| {
            format!(
                "{failures} node{} failed while being changed{}, more than --max-fail {}",
                if failures == 1 { "" } else { "s" },
                if self.options.unreachable_fails {
                    " or unreachable"
                } else {
                    ""
                },
                self.options
                    .max_fail
                    .map(|threshold| threshold.to_string())
                    .unwrap_or_default()
            )
        })
    }

    /// No further node starts, because of `reason`.
    fn stop(&self, reason: String) {
        if let Ok(mut stopped) = self.stopped.lock() {
            stopped.get_or_insert(reason);
        }
        self.batches.close();
    }

    /// How many nodes of `batch` ended in one of `results`.
    fn count(&self, batch: usize, results: &[NodeResult]) -> usize {
        let nodes = self.batches.nodes(batch);
        self.ended
            .lock()
            .map(|ended| {
                ended
                    .iter()
                    .skip(nodes.start)
                    .take(nodes.len())
                    .filter(|result| result.is_some_and(|result| results.contains(&result)))
                    .count()
            })
            .unwrap_or(0)
    }

    /// How the canary batch ended.
    fn canary_end(&self, hosts: &[&str]) -> CanaryEnd {
        let canary = self.batches.nodes(0);
        let ok = self.count(0, &[NodeResult::Converged, NodeResult::Unchanged]);
        CanaryEnd {
            hosts: hosts
                .get(canary.clone())
                .unwrap_or_default()
                .iter()
                .map(|host| host.to_string())
                .collect(),
            ok,
            failed: self.failed.load(Ordering::SeqCst),
            rest: hosts.len().saturating_sub(canary.len()),
            batches_left: self.batches.count().saturating_sub(1),
        }
    }
}

/// The run's leader: opens each batch once the ones before it have ended, unless too
/// many nodes have failed or the run stops after the canary.
async fn lead(shared: &Shared<'_>, hosts: &[&str]) {
    let count = shared.batches.count();
    for batch in 0..count {
        shared.batches.ended_before(batch).await;
        if batch > 0 && shared.options.unreachable_fails {
            let unreachable = shared.count(batch - 1, &[NodeResult::Unreachable]);
            shared.failed.fetch_add(unreachable, Ordering::SeqCst);
        }
        if let Some(reason) = shared.stop_reason() {
            shared.stop(reason);
            return;
        }
        if batch == 1 {
            let go_on = match shared.options.after_canary {
                AfterCanary::Continue => Ok(()),
                AfterCanary::Stop => Err(
                    "the run paused after the canary batch and no terminal was there to ask whether to go on; run the same command again without --pause-after-canary to go on (the canary's nodes are then unchanged)",
                ),
                AfterCanary::Ask(ask) => {
                    if ask(&shared.canary_end(hosts)) {
                        Ok(())
                    } else {
                        Err("going on after the canary batch was declined")
                    }
                }
            };
            if let Err(reason) = go_on {
                shared.stop(reason.to_string());
                return;
            }
        }
        if count > 1 {
            let nodes = hosts.get(shared.batches.nodes(batch)).unwrap_or_default();
            shared.progress.batch(batch + 1, count, nodes);
        }
        shared.batches.open(batch);
    }
}

/// A node that was not started because of `reason`.
fn not_started(host: &str, reason: &str) -> FleetNode {
    FleetNode {
        host: host.to_string(),
        batch: 1,
        ok: false,
        result: NodeResult::Skipped,
        cause: Some(format!("not started: {reason}")),
        detail: None,
        steps_changed: 0,
        seconds: 0.0,
        time_to_ready_ms: None,
        round_trips: 0,
        steps: Vec::new(),
        verification: None,
        benchmark: None,
        rollout: Rollout::default(),
    }
}

/// One node from its first connection attempt to its end: probe, wait for its batch's
/// turn and a slot, converge and verify. No node waits for another's probe. The second
/// value: whether it was being changed (it counts against `--max-fail` if it failed).
async fn run_node(
    index: usize,
    target: &FleetTarget,
    base: &Prepared,
    shared: &Shared<'_>,
) -> (FleetNode, bool) {
    let (options, progress) = (shared.options, shared.progress);
    let started = Instant::now();
    let (prepared, fetch) = match prepare(target, base, options.apply.delivery.fetch, started) {
        Ok(prepared) => prepared,
        Err(node) => return (*node, false),
    };
    let host = target.name.as_str();
    let probed = {
        let _permit = shared.probes.acquire().await.ok();
        probe(host, &prepared, &options.ssh, progress, started).await
    };
    let (transport, facts) = match probed {
        Probed::Ended(node) => return (*node, false),
        Probed::Ready { transport, facts } => (transport, facts),
    };
    let read = Instant::now();
    let opened = shared.batches.turn(index).await;
    let _slot = shared.slots.acquire().await.ok();
    // A closed gate always has its reason; an open one may have passed `--max-fail`
    // while this node waited for a slot.
    if let Some(reason) = shared.stop_reason().or_else(|| (!opened).then(String::new)) {
        shared.stop(reason.clone());
        let mut node = not_started(host, &reason);
        node.round_trips = transport.round_trips();
        return (node, false);
    }
    let reporter = NodeReporter { host, progress };
    let holder = &options.apply.holder;
    let run = format!("{}-{}", holder.started, holder.pid);
    let drain = match drain::for_host(host, &target.vars, &options.drain, &run) {
        Ok(drain) => drain,
        Err(error) => return (ended(host, NodeResult::Refused, &error, started), false),
    };
    let apply = ApplyOptions {
        delivery: crate::steps::Delivery {
            fetch,
            installer: options.apply.delivery.installer.clone(),
        },
        drain: drain.as_deref(),
        ..options.apply.clone()
    };
    let probed = converge::FirstProbe {
        facts: *facts,
        started,
        read,
    };
    let result = converge::converge_probed(&transport, &prepared, probed, &apply, &reporter).await;
    let node = match result {
        Ok(outcome) => from_outcome(outcome),
        Err(error) => {
            let mut node = ended(host, result_of(&error), &error, started);
            node.round_trips = transport.round_trips();
            node
        }
    };
    (node, true)
}

/// The host variable that chooses who downloads a node's locked files.
pub const FETCH_VARIABLE: &str = "cuda_upgrade_fetch";

/// A host's [`FETCH_VARIABLE`] names no fetch mode.
#[derive(Debug, thiserror::Error)]
#[error(
    "Failed to read the variable `{FETCH_VARIABLE}` of `{}`: {reason}",
    crate::text::text_value(.host)
)]
pub struct FetchVariableError {
    /// e.g. `node3`.
    host: String,
    /// e.g. `` `nightly` is not a fetch mode ``.
    reason: String,
}

/// The host's fetch mode: its [`FETCH_VARIABLE`], else the run's `--fetch`. A value
/// that names no mode refuses the host before it is reached, in `apply -i` (see
/// [`prepare`]) and `plan -i` alike.
fn fetch_mode(target: &FleetTarget, default: FetchMode) -> Result<FetchMode, FetchVariableError> {
    match target.vars.get(FETCH_VARIABLE) {
        None => Ok(default),
        Some(value) => value.parse().map_err(|reason| FetchVariableError {
            host: target.name.clone(),
            reason,
        }),
    }
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
    let sizes = options
        .batch
        .as_ref()
        .map_or_else(|| vec![total], |batch| batch.sizes(total));
    let shared = Shared {
        batches: Batches::new(&sizes),
        failed: AtomicUsize::new(0),
        tolerated: options.max_fail.map(|threshold| threshold.of(total)),
        probes: Semaphore::new(PROBE_PARALLEL),
        slots: Semaphore::new(options.parallel.max(1)),
        stopped: Mutex::new(None),
        ended: Mutex::new(vec![None; total]),
        options,
        progress,
    };
    let hosts: Vec<&str> = targets.iter().map(|target| target.name.as_str()).collect();
    let nodes = join_all(targets.iter().enumerate().map(|(index, target)| {
        let shared = &shared;
        async move {
            let (mut node, changing) = run_node(index, target, base, shared).await;
            node.batch = shared.batches.of(index) + 1;
            shared.ended(index, &node, changing);
            node
        }
    }));
    let (nodes, ()) = futures_util::future::join(nodes, lead(&shared, &hosts)).await;
    FleetOutcome {
        run,
        ok: nodes.iter().all(|node| node.ok),
        batches: shared.batches.count(),
        stopped: shared
            .stopped
            .lock()
            .ok()
            .and_then(|stopped| stopped.clone()),
        nodes,
        seconds: started.elapsed().as_secs_f64(),
    }
}
