//! Gathering a node's facts: the probe script in one round trip, then the pure parser.

use std::time::Duration;

use crate::facts::{NodeFacts, PROBE_SCRIPT, ProbeRequest};
use crate::transport::{NodeCommand, Transport};

use super::ExecError;

/// Run the probe on the node (exactly one command) and parse its output.
pub async fn gather_facts(
    transport: &Transport,
    request: &ProbeRequest,
) -> Result<NodeFacts, ExecError> {
    let (program, arguments) = request.command();
    // nvidia-smi is bounded at 120 s inside the probe; the rest takes seconds.
    let command = NodeCommand::new(program)
        .args(arguments)
        .bounded(Duration::from_secs(300));
    let output = transport
        .run(&command, Some(PROBE_SCRIPT.as_bytes()))
        .await?;
    // coreutils' `timeout` exits 124 when the bound ran out.
    if output.status == Some(124) {
        return Err(ExecError::ProbeTimedOut {
            host: transport.name().to_string(),
            seconds: transport.bound_of(&command).as_secs(),
            tail: output.tail(10),
        });
    }
    if !output.success() {
        return Err(ExecError::ProbeFailed {
            host: transport.name().to_string(),
            status: output.status,
            tail: output.tail(10),
        });
    }
    NodeFacts::parse(&output.stdout_text()).map_err(|source| ExecError::Facts {
        host: transport.name().to_string(),
        source,
    })
}
