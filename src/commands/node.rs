//! Turning the node flags into a [`NodeSelection`].

use crate::cli::{NodeArgs, SshArgs};
use crate::exec::NodeSelection;
use crate::transport::{HostKeyPolicy, SshOptions};

/// `--local` or `--host H` with its SSH settings (clap guarantees exactly one).
pub fn selection(node: &NodeArgs, ssh: &SshArgs) -> NodeSelection {
    let NodeArgs { local, host } = node;
    let SshArgs {
        ssh_config,
        known_hosts,
        accept_new_host_keys,
    } = ssh;
    match (local, host) {
        (_, Some(host)) => NodeSelection::Host {
            host: host.clone(),
            options: SshOptions {
                config_file: ssh_config.clone(),
                known_hosts_file: known_hosts.clone(),
                host_keys: if *accept_new_host_keys {
                    HostKeyPolicy::AcceptNew
                } else {
                    HostKeyPolicy::Strict
                },
                connect_timeout: None,
            },
        },
        (_, None) => NodeSelection::Local,
    }
}
