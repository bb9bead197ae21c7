//! Which node a verb works on, and opening its transport.

use crate::transport::{LocalTransport, SshOptions, SshTransport, Transport};

use super::ExecError;

/// The node named on the command line.
#[derive(Debug, Clone)]
pub enum NodeSelection {
    /// `--local`: this machine, each command run at most `command_timeout` when set.
    Local {
        /// `--command-timeout`.
        command_timeout: Option<std::time::Duration>,
    },
    /// `--host H`: a host over SSH, e.g. `node0`.
    Host {
        /// e.g. `node0` or `root@10.0.0.5`.
        host: String,
        /// SSH settings.
        options: SshOptions,
    },
}

/// Open the transport for a node (for SSH: start the multiplexed master).
pub async fn connect(selection: &NodeSelection) -> Result<Transport, ExecError> {
    Ok(match selection {
        NodeSelection::Local { command_timeout } => {
            Transport::Local(LocalTransport::with_command_timeout(*command_timeout))
        }
        NodeSelection::Host { host, options } => {
            Transport::Ssh(SshTransport::connect(host, options).await?)
        }
    })
}
