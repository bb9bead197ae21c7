//! The hook that takes a node out of service around its change and puts it back: the
//! pipeline calls [`Drain::take_out`] once the plan is known to change something (after
//! the confirmation, before the first step), [`Drain::put_back`] once the node is
//! verified and its production service is up again, and [`Drain::keep_out`] when the node
//! failed (it stays out, with a reason naming the failure). The integrations themselves
//! (Slurm, Kubernetes, a command) live in `fleet::drain`; this layer only knows the hook,
//! and what it did for the node's outcome ([`Rollout`]).

use std::future::Future;
use std::pin::Pin;

use serde::Serialize;

use crate::transport::Transport;

pub use crate::exec::service::ServiceRecord;

use super::RollbackOutcome;

/// What a drain integration's step failed with, e.g. a job still running past the bound.
pub type DrainFailure = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What a drain integration's step did, e.g. in service again, `resumed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainStep {
    /// The node is in service after it (`false`: out of service, e.g. drained).
    pub in_service: bool,
    /// What it did in one line, e.g. `drained; no job running after 12.0 s`.
    pub detail: String,
}

/// A drain integration's step, or why it failed.
pub type DrainFuture<'a> =
    Pin<Box<dyn Future<Output = Result<DrainStep, DrainFailure>> + Send + 'a>>;

/// One node's drain integration (see the module's documentation).
pub trait Drain: Send + Sync {
    /// What it is, e.g. `slurm node \`gpu3\``.
    fn describe(&self) -> String;
    /// Take the node out of service and wait (bounded) until nothing runs on it.
    fn take_out<'a>(&'a self, transport: &'a Transport) -> DrainFuture<'a>;
    /// Put the verified node back in service (unless it was out before this run).
    fn put_back<'a>(&'a self, transport: &'a Transport) -> DrainFuture<'a>;
    /// Leave the failed node out of service, `reason` naming the failure.
    fn keep_out<'a>(&'a self, transport: &'a Transport, reason: &'a str) -> DrainFuture<'a>;
}

/// How the node was kept out of service, e.g. `slurm node \`node2\``, `resumed`.
#[derive(Debug, Clone, Serialize)]
pub struct DrainRecord {
    /// The integration, e.g. `slurm node \`node2\``.
    pub how: String,
    /// `resumed` (back in service), `drained` (left out of service) or `not drained`
    /// (taking it out failed before anything changed on it).
    pub state: &'static str,
    /// What the integration said, e.g. `drained after 12.0 s waiting for job 7`.
    pub detail: Vec<String>,
}

/// The rollback `--rollback-on-failure` ran for a failed node.
#[derive(Debug, Clone, Serialize)]
pub struct RollbackRecord {
    /// The run undone, e.g. `1796241671-4242`.
    pub run: String,
    /// Everything was undone as recorded.
    pub ok: bool,
    /// What it did, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<RollbackOutcome>,
    /// Why it could not run, e.g. the run changed nothing yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What was done around a node's change: its drain, the rollback of a failure, its
/// production service. Empty for a node none of them applied to.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Rollout {
    /// Out of service while changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain: Option<DrainRecord>,
    /// The failed run undone (`--rollback-on-failure`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackRecord>,
    /// The production service started again (the manifest's `service`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceRecord>,
}

impl Rollout {
    /// One line for a summary, e.g. `rolled back, left drained`; empty when nothing applied.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(rollback) = &self.rollback {
            parts.push(if rollback.ok {
                "rolled back".to_string()
            } else {
                "rollback incomplete".to_string()
            });
        }
        if let Some(service) = &self.service
            && !service.up
        {
            parts.push("service not up".to_string());
        }
        if let Some(drain) = &self.drain {
            parts.push(match drain.state {
                "resumed" => "resumed".to_string(),
                "drained" => "left drained".to_string(),
                other => other.to_string(),
            });
        }
        parts.join(", ")
    }
}
