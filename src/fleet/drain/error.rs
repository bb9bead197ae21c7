//! What a drain integration's step fails with: a program that could not run or failed,
//! a bound passed (a job still running, a pod not evicted), a name it refuses.

use crate::transport::TransportError;

/// A drain integration's failure, e.g. a job still running on the node past the bound.
#[derive(Debug, thiserror::Error)]
pub enum DrainError {
    /// The program could not be started on the controller.
    #[error("Failed to run `{command}` on the controller")]
    Spawn {
        /// e.g. `scontrol update nodename=node2 state=drain 'reason=cuda-upgrade 17-42'`.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The program ran and failed.
    #[error("Failed to {what}: `{command}` exited with {status}: {output}")]
    Failed {
        /// e.g. `drain the slurm node \`node2\``.
        what: String,
        /// e.g. `kubectl cordon -- node2`.
        command: String,
        /// e.g. `exit status 1`.
        status: String,
        /// The end of its output.
        output: String,
    },
    /// The program ran past its bound.
    #[error("Failed to {what}: `{command}` did not end within {seconds} s")]
    Timeout {
        /// e.g. `drain the kubernetes node \`node2\``.
        what: String,
        /// e.g. `kubectl drain … -- node2`.
        command: String,
        /// The bound.
        seconds: u64,
    },
    /// Jobs still ran on the node when the drain's bound ended.
    #[error(
        "Failed to drain the slurm node `{node}`: job {jobs} still running after {seconds} s (--drain-timeout)"
    )]
    JobsRunning {
        /// e.g. `node2`.
        node: String,
        /// e.g. `7, 9`.
        jobs: String,
        /// The bound.
        seconds: u64,
    },
    /// A command on the node could not be run.
    #[error("Failed to run the {phase} command on `{node}`")]
    Node {
        /// e.g. `pre`.
        phase: &'static str,
        /// e.g. `node2`.
        node: String,
        /// Why.
        #[source]
        source: TransportError,
    },
}

/// A host's drain variables (or the command line) name no usable drain.
#[derive(Debug, thiserror::Error)]
#[error("Failed to read the drain settings of `{}`: {reason}", crate::text::text_value(.host))]
pub struct DrainSettingsError {
    /// e.g. `node3`.
    pub host: String,
    /// e.g. `` `cuda_upgrade_drain`: `lsf` is not a drain (slurm, kubernetes, command, none) ``.
    pub reason: String,
}
