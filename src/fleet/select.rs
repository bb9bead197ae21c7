//! Which nodes a fleet verb works on and how they are reached: an inventory read, its
//! `--limit` applied, the run's own `ssh_config` written for hosts that carry connection
//! settings, and each host's batch for `--list-hosts`. Also the run directory and a
//! fan-out that gives every selected host its own SSH connection (`status -i`,
//! `rollback -i`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::inventory::{self, InventoryError, InventoryHost, SshConfigError};
use crate::transport::{SshOptions, SshTransport, Transport, TransportError};

use super::BatchList;
use super::batches::Batches;

/// The inventory's selected hosts and the SSH options that reach them.
pub struct Selected {
    /// The hosts, in inventory order.
    pub hosts: Vec<InventoryHost>,
    /// How to reach them (the run's own `ssh_config` when hosts carry connection
    /// settings, which includes the user's).
    pub ssh: SshOptions,
}

/// Failed to select a fleet's hosts.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// The inventory could not be read, or `--limit` selects nothing.
    #[error(transparent)]
    Inventory(#[from] InventoryError),
    /// The run's `ssh_config` could not be written.
    #[error(transparent)]
    SshConfig(#[from] SshConfigError),
}

/// The hosts of the inventory at `path` that `limit` selects, in inventory order.
pub fn hosts(path: &Path, limit: Option<&str>) -> Result<Vec<InventoryHost>, InventoryError> {
    let inventory = inventory::load(path)?;
    Ok(inventory::select(&inventory, limit)?
        .into_iter()
        .cloned()
        .collect())
}

/// Read the inventory, apply `limit`, and write the run's `ssh_config` into `run_dir`
/// (over `ssh.config_file`, the user's, which it includes).
pub fn select(
    path: &Path,
    limit: Option<&str>,
    ssh: SshOptions,
    run_dir: &Path,
) -> Result<Selected, SelectError> {
    let hosts = hosts(path, limit)?;
    let borrowed: Vec<&InventoryHost> = hosts.iter().collect();
    let config = inventory::write_ssh_config(run_dir, &borrowed, ssh.config_file.as_deref())?;
    Ok(Selected {
        ssh: SshOptions {
            config_file: config.or(ssh.config_file),
            ..ssh
        },
        hosts,
    })
}

/// One host as `--list-hosts` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListedHost {
    /// e.g. `node3`.
    pub host: String,
    /// Its batch, from 1, when `--batch` is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<usize>,
}

/// The hosts in the order a run takes them, each with its batch when `batch` is given.
pub fn list(hosts: &[InventoryHost], batch: Option<&BatchList>) -> Vec<ListedHost> {
    let batches = batch.map(|batch| Batches::new(&batch.sizes(hosts.len())));
    hosts
        .iter()
        .enumerate()
        .map(|(index, host)| ListedHost {
            host: host.name.clone(),
            batch: batches.as_ref().map(|batches| batches.of(index) + 1),
        })
        .collect()
}

/// The run directory: `explicit`, else the default runs directory's `run`.
pub fn run_dir(explicit: Option<&Path>, run: &str) -> PathBuf {
    explicit.map(Path::to_path_buf).unwrap_or_else(|| {
        crate::settings::default_runs_dir()
            .unwrap_or_else(|| PathBuf::from(".cuda-upgrade/runs"))
            .join(run)
    })
}

/// Run `work` on every selected host, at most `parallel` at once, each with its own SSH
/// connection (or the reason it could not be made); results in inventory order.
pub async fn each_host<'a, T, F, Fut>(selected: &'a Selected, parallel: usize, work: F) -> Vec<T>
where
    F: Fn(&'a InventoryHost, Result<Transport, TransportError>) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let slots = tokio::sync::Semaphore::new(parallel.max(1));
    futures_util::future::join_all(selected.hosts.iter().map(|host| {
        let (slots, work) = (&slots, &work);
        async move {
            let _slot = slots.acquire().await.ok();
            let transport = SshTransport::connect(&host.name, &selected.ssh)
                .await
                .map(Transport::Ssh);
            work(host, transport).await
        }
    }))
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_hosts_carry_their_batch() {
        let hosts: Vec<InventoryHost> =
            inventory::parse("all:\n  hosts:\n    node[0:4]:\n", "inventory.yml")
                .unwrap()
                .hosts;
        let batch: BatchList = "1,50%,100%".parse().unwrap();
        let listed = list(&hosts, Some(&batch));
        assert_eq!(
            listed
                .iter()
                .map(|listed| (listed.host.as_str(), listed.batch))
                .collect::<Vec<_>>(),
            vec![
                ("node0", Some(1)),
                ("node1", Some(2)),
                ("node2", Some(2)),
                ("node3", Some(2)),
                ("node4", Some(3)),
            ]
        );
        assert!(
            list(&hosts, None)
                .iter()
                .all(|listed| listed.batch.is_none())
        );
    }
}
