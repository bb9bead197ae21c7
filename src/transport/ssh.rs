//! The `ssh` transport: one multiplexed OpenSSH master per host (the `openssh`
//! crate), strict host-key checking by default, bounded sessions per host.
//!
//! The rendered command line is passed as is (`raw_command`): quoting already
//! happened, once, in [`NodeCommand::render`].

use openssh::Stdio;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use openssh::{KnownHosts, Session, SessionBuilder};
use tokio::sync::Semaphore;

use super::{CommandOutput, NodeCommand, OutputStream, Stdin, StreamHandle, TransportError};

/// sshd's default `MaxSessions` is 10; stay below it so the master never refuses.
/// See: https://man.openbsd.org/sshd_config#MaxSessions
const SESSIONS_PER_HOST: usize = 8;

/// How unknown host keys are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostKeyPolicy {
    /// The host key must already be in known_hosts (`StrictHostKeyChecking=yes`).
    #[default]
    Strict,
    /// Accept and record a key never seen before; a changed key is still refused
    /// (`StrictHostKeyChecking=accept-new`).
    AcceptNew,
}

/// How to reach hosts.
#[derive(Debug, Clone, Default)]
pub struct SshOptions {
    /// An `ssh_config` file, e.g. a testbed's `ssh_config`.
    pub config_file: Option<PathBuf>,
    /// A known_hosts file to use instead of the user's.
    pub known_hosts_file: Option<PathBuf>,
    /// Host-key policy.
    pub host_keys: HostKeyPolicy,
    /// Connection timeout (default 10 s).
    pub connect_timeout: Option<Duration>,
    /// The longest any one remote command may run (`--command-timeout`), when shorter
    /// than the command's own bound.
    pub command_timeout: Option<Duration>,
}

/// How often the master asks a silent server whether it is alive; after
/// `ServerAliveCountMax` (3) unanswered asks, about 9 s, the connection is dead and every
/// command on it fails instead of waiting out its bound.
const KEEPALIVE: Duration = Duration::from_secs(3);

/// Runs commands on one host over SSH.
pub struct SshTransport {
    host: String,
    session: Arc<Session>,
    sessions: Semaphore,
    pub(super) round_trips: AtomicU64,
    command_timeout: Option<Duration>,
}

impl SshTransport {
    /// Open the master connection to `host` (a name `ssh` understands, e.g. `node0`).
    pub async fn connect(host: &str, options: &SshOptions) -> Result<Self, TransportError> {
        let mut builder = SessionBuilder::default();
        builder.known_hosts_check(match options.host_keys {
            HostKeyPolicy::Strict => KnownHosts::Strict,
            HostKeyPolicy::AcceptNew => KnownHosts::Add,
        });
        builder.connect_timeout(options.connect_timeout.unwrap_or(Duration::from_secs(10)));
        builder.server_alive_interval(KEEPALIVE);
        if let Some(config) = &options.config_file {
            builder.config_file(config);
        }
        if let Some(known_hosts) = &options.known_hosts_file {
            builder.user_known_hosts_file(known_hosts);
        }
        let session =
            builder
                .connect_mux(host)
                .await
                .map_err(|source| TransportError::Connect {
                    host: host.to_string(),
                    source,
                })?;
        Ok(Self {
            host: host.to_string(),
            session: Arc::new(session),
            sessions: Semaphore::new(SESSIONS_PER_HOST),
            round_trips: AtomicU64::new(0),
            command_timeout: options.command_timeout,
        })
    }

    /// The longest any one command may run, when set.
    pub fn command_timeout(&self) -> Option<Duration> {
        self.command_timeout
    }

    /// The host name, e.g. `node0`.
    pub fn host(&self) -> &str {
        &self.host
    }

    fn session_error(&self, command: &NodeCommand, source: openssh::Error) -> TransportError {
        TransportError::Session {
            host: self.host.clone(),
            command: command.display(),
            source,
        }
    }

    pub(super) async fn run(
        &self,
        command: &NodeCommand,
        stdin: Stdin<'_>,
    ) -> Result<CommandOutput, TransportError> {
        let _permit = self.sessions.acquire().await.map_err(|_| {
            TransportError::run(
                &self.host,
                command,
                std::io::Error::other("the session pool is closed"),
            )
        })?;
        let mut remote =
            Session::to_raw_command(Arc::clone(&self.session), command.render_bounded());
        remote
            .stdin(if matches!(stdin, Stdin::Null) {
                Stdio::null()
            } else {
                Stdio::piped()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = remote
            .spawn()
            .await
            .map_err(|source| self.session_error(command, source))?;
        if let Some(pipe) = child.stdin().take() {
            super::feed(pipe, stdin)
                .await
                .map_err(|source| TransportError::run(&self.host, command, source))?;
        }
        let output = child
            .wait_with_output()
            .await
            .map_err(|source| self.session_error(command, source))?;
        Ok(output.into())
    }

    pub(super) async fn stream(
        &self,
        command: &NodeCommand,
    ) -> Result<OutputStream, TransportError> {
        let mut remote = Session::to_raw_command(Arc::clone(&self.session), command.render());
        remote
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = remote
            .spawn()
            .await
            .map_err(|source| self.session_error(command, source))?;
        let stdout = child.stdout().take().ok_or_else(|| {
            TransportError::run(
                &self.host,
                command,
                std::io::Error::other("the remote command has no stdout pipe"),
            )
        })?;
        Ok(OutputStream {
            stdout: Box::pin(stdout),
            handle: StreamHandle::Ssh(child),
        })
    }
}
