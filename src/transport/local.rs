//! The `local` transport: commands run on this machine through `sh -c`, exactly as a
//! remote shell would run them, so a plan behaves the same locally and over SSH.

use std::process::Stdio;
use std::sync::atomic::AtomicU64;

use tokio::process::Command;

use super::{CommandOutput, NodeCommand, OutputStream, Stdin, StreamHandle, TransportError};

/// Runs commands on this machine.
#[derive(Debug, Default)]
pub struct LocalTransport {
    pub(super) round_trips: AtomicU64,
    /// `--command-timeout`: the longest any one command may run.
    pub(super) command_timeout: Option<std::time::Duration>,
}

impl LocalTransport {
    /// A transport for this machine.
    pub fn new() -> Self {
        Self::default()
    }

    /// A transport for this machine whose commands run at most `limit` each.
    pub fn with_command_timeout(limit: Option<std::time::Duration>) -> Self {
        Self {
            command_timeout: limit,
            ..Self::default()
        }
    }

    pub(super) async fn run(
        &self,
        command: &NodeCommand,
        stdin: Stdin<'_>,
    ) -> Result<CommandOutput, TransportError> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command.render_bounded())
            .stdin(if matches!(stdin, Stdin::Null) {
                Stdio::null()
            } else {
                Stdio::piped()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| TransportError::run("local", command, source))?;
        if let Some(pipe) = child.stdin.take() {
            super::feed(pipe, stdin)
                .await
                .map_err(|source| TransportError::run("local", command, source))?;
        }
        let output = child
            .wait_with_output()
            .await
            .map_err(|source| TransportError::run("local", command, source))?;
        Ok(output.into())
    }

    pub(super) async fn stream(
        &self,
        command: &NodeCommand,
    ) -> Result<OutputStream, TransportError> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command.render())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| TransportError::run("local", command, source))?;
        let stdout = child.stdout.take().ok_or_else(|| {
            TransportError::run(
                "local",
                command,
                std::io::Error::other("the child has no stdout pipe"),
            )
        })?;
        Ok(OutputStream {
            stdout: Box::pin(stdout),
            handle: StreamHandle::Local(child),
        })
    }
}
