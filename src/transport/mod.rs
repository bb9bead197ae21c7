//! Running commands on a node: this machine (`local`) or a host over SSH.
//!
//! A command is data ([`NodeCommand`]) rendered by one quoting function; the
//! transport only carries the rendered line and its standard input, and reports the
//! exit status and output. Files are read and written by one primitive (`file`):
//! symlinks followed, owner and mode kept, temporary file then rename. Every remote call is one round trip; [`Transport::round_trips`] counts
//! them so tests and benchmarks can hold the tool to "one for facts".

mod command;
pub mod download;
mod error;
mod file;
mod local;
mod ssh;

use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::AsyncRead;

pub use command::{Arg, DEFAULT_BOUND, INSTALL_BOUND, NodeCommand, mask};
pub use error::TransportError;
pub use file::{BEFORE_IMAGES_DIR, Expected, FileContent, WriteSpec, Written};
pub use local::LocalTransport;
pub use ssh::{HostKeyPolicy, SshOptions, SshTransport};

/// What a command reads on its standard input.
#[derive(Debug, Clone, Copy)]
pub enum Stdin<'a> {
    /// Nothing (`/dev/null`).
    Null,
    /// These bytes.
    Bytes(&'a [u8]),
    /// A file on this machine, streamed (e.g. a 4 GiB runfile).
    File(&'a Path),
    /// These inputs one after another (a batch of file writes); not nested.
    Chain(&'a [Stdin<'a>]),
}

impl<'a> From<Option<&'a [u8]>> for Stdin<'a> {
    fn from(bytes: Option<&'a [u8]>) -> Self {
        bytes.map_or(Stdin::Null, Stdin::Bytes)
    }
}

/// What a finished command returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// The exit status; `None` when killed by a signal.
    pub status: Option<i32>,
    /// Everything it wrote to stdout.
    pub stdout: Vec<u8>,
    /// Everything it wrote to stderr.
    pub stderr: Vec<u8>,
}

impl From<std::process::Output> for CommandOutput {
    fn from(output: std::process::Output) -> Self {
        Self {
            status: output.status.code(),
            stdout: output.stdout,
            stderr: output.stderr,
        }
    }
}

impl CommandOutput {
    /// `true` for exit status 0.
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }

    /// Stdout as text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Stderr as text (invalid UTF-8 replaced).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// The last `lines` lines of stdout and stderr together, for an error report.
    pub fn tail(&self, lines: usize) -> String {
        let text = format!("{}{}", self.stdout_text(), self.stderr_text());
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// A running command whose stdout is read as it comes, e.g. `tail -F` of a server log.
pub struct OutputStream {
    /// The command's stdout.
    pub stdout: Pin<Box<dyn AsyncRead + Send>>,
    /// Keeps the process (or the SSH channel) alive; dropping it ends the command.
    pub handle: StreamHandle,
}

/// What keeps a streaming command alive.
pub enum StreamHandle {
    /// A local child process (killed on drop).
    Local(tokio::process::Child),
    /// A remote command over the SSH master.
    Ssh(openssh::Child<std::sync::Arc<openssh::Session>>),
}

/// Where commands run.
pub enum Transport {
    /// This machine.
    Local(LocalTransport),
    /// A host over SSH.
    Ssh(SshTransport),
}

/// Write a command's standard input (bytes, or a local file streamed in chunks), then
/// close it.
async fn feed<W: tokio::io::AsyncWrite + Unpin>(
    mut pipe: W,
    stdin: Stdin<'_>,
) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let parts = match stdin {
        Stdin::Chain(parts) => parts,
        single => &[single][..],
    };
    for part in parts {
        match part {
            Stdin::Null => {}
            Stdin::Bytes(bytes) => pipe.write_all(bytes).await?,
            Stdin::File(path) => {
                let mut file = tokio::fs::File::open(path).await.map_err(|error| {
                    std::io::Error::new(error.kind(), format!("{}: {error}", path.display()))
                })?;
                tokio::io::copy(&mut file, &mut pipe).await?;
            }
            Stdin::Chain(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "a chain of inputs inside a chain",
                ));
            }
        }
    }
    pipe.shutdown().await
}

impl Transport {
    /// A name for messages, e.g. `node0` or `local`.
    pub fn name(&self) -> &str {
        match self {
            Self::Local(_) => "local",
            Self::Ssh(ssh) => ssh.host(),
        }
    }

    /// Run a command to completion, with `stdin` fed to it when given.
    pub async fn run(
        &self,
        command: &NodeCommand,
        stdin: Option<&[u8]>,
    ) -> Result<CommandOutput, TransportError> {
        self.run_with(command, Stdin::from(stdin)).await
    }

    /// Run a command to completion with any kind of standard input.
    pub async fn run_with(
        &self,
        command: &NodeCommand,
        stdin: Stdin<'_>,
    ) -> Result<CommandOutput, TransportError> {
        self.counter().fetch_add(1, Ordering::Relaxed);
        // `--command-timeout` shortens every bound longer than it.
        let capped;
        let command = match self.command_timeout() {
            Some(cap) if cap < command.bound() => {
                capped = command.clone().bounded(cap);
                &capped
            }
            _ => command,
        };
        // The node enforces the bound (`timeout`, exit 124); this is the backstop for a
        // node without `timeout` or a connection that hangs.
        let backstop = command.bound() + Duration::from_secs(30);
        let run = async {
            match self {
                Self::Local(local) => local.run(command, stdin).await,
                Self::Ssh(ssh) => ssh.run(command, stdin).await,
            }
        };
        tokio::time::timeout(backstop, run)
            .await
            .unwrap_or_else(|_| {
                Err(TransportError::Timeout {
                    host: self.name().to_string(),
                    command: command.display(),
                    seconds: backstop.as_secs(),
                })
            })
    }

    /// Start a command and read its stdout as it comes.
    pub async fn stream(&self, command: &NodeCommand) -> Result<OutputStream, TransportError> {
        self.counter().fetch_add(1, Ordering::Relaxed);
        match self {
            Self::Local(local) => local.stream(command).await,
            Self::Ssh(ssh) => ssh.stream(command).await,
        }
    }

    /// The longest any one command may run here, when shorter than its own bound.
    pub fn command_timeout(&self) -> Option<Duration> {
        match self {
            Self::Local(local) => local.command_timeout,
            Self::Ssh(ssh) => ssh.command_timeout(),
        }
    }

    /// How long `command` may run here: its own bound, or `--command-timeout` when shorter.
    pub fn bound_of(&self, command: &NodeCommand) -> Duration {
        self.command_timeout()
            .map_or(command.bound(), |cap| cap.min(command.bound()))
    }

    /// How many commands this transport has run (one round trip each).
    pub fn round_trips(&self) -> u64 {
        self.counter().load(Ordering::Relaxed)
    }

    fn counter(&self) -> &AtomicU64 {
        match self {
            Self::Local(local) => &local.round_trips,
            Self::Ssh(ssh) => &ssh.round_trips,
        }
    }
}
