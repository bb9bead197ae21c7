//! One node's first contact: connect over SSH and probe it (one round trip), or say why
//! not. `apply -i` and `plan -i` both start each node here. A node that cannot be
//! connected to, or whose connection or probe command breaks or runs past its bound, is
//! unreachable: it was never worked on (and does not count against `--max-fail`).

use std::time::Instant;

use crate::converge::{self, ConvergeError, Prepared};
use crate::exec::ExecError;
use crate::facts::NodeFacts;
use crate::transport::{SshOptions, SshTransport, Transport};

use super::{FleetNode, FleetProgress, NodeResult, cause, ended, result_of};

/// A node connected and probed, or why not.
pub(super) enum Probed {
    /// Ready to be planned.
    Ready {
        transport: Box<Transport>,
        facts: Box<NodeFacts>,
    },
    /// It ended here.
    Ended(Box<FleetNode>),
}

/// Connect to `host` and probe it for `prepared`'s manifest; `started` is when its run
/// began.
pub(super) async fn probe(
    host: &str,
    prepared: &Prepared,
    ssh: &SshOptions,
    progress: &dyn FleetProgress,
    started: Instant,
) -> Probed {
    progress.step(host, "connecting");
    let transport = match SshTransport::connect(host, ssh).await {
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
    match converge::facts(&transport, prepared).await {
        Ok(facts) => Probed::Ready {
            transport: Box::new(transport),
            facts: Box::new(facts),
        },
        Err(error) => {
            let result = match &error {
                ConvergeError::Exec(ExecError::Transport(_) | ExecError::ProbeTimedOut { .. }) => {
                    NodeResult::Unreachable
                }
                other => result_of(other),
            };
            let mut node = ended(host, result, &error, started);
            (node.cause, node.detail) = {
                let (cause, detail) = cause::of_probe_error(&error);
                (Some(cause), Some(detail))
            };
            node.round_trips = transport.round_trips();
            Probed::Ended(Box::new(node))
        }
    }
}
