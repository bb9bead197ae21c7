//! A node's environment through a transport: on this machine the libraries are read in
//! place (site-packages directories from the target interpreter); over SSH the
//! interpreter sends only their dynamic tables ([`super::remote`]), in one round trip.

use std::path::Path;

use super::tree;
use super::{AbiError, Environment, remote};
use crate::transport::{NodeCommand, Transport};

fn failed(transport: &Transport, python: &Path, message: String) -> AbiError {
    AbiError::Node {
        node: transport.name().to_string(),
        python: python.display().to_string(),
        message,
    }
}

fn command(python: &Path, mode: &str) -> NodeCommand {
    NodeCommand::new(python.display().to_string())
        .arg("-c")
        .script("abi-tables", remote::SCRIPT)
        .arg(mode)
}

/// The environment of `python` on the node.
pub async fn environment(transport: &Transport, python: &Path) -> Result<Environment, AbiError> {
    match transport {
        Transport::Local(_) => {
            let output = transport.run(&command(python, "sites"), None).await?;
            if !output.success() {
                return Err(failed(transport, python, output.tail(5)));
            }
            let sites: Vec<std::path::PathBuf> = output
                .stdout_text()
                .lines()
                .filter(|line| !line.is_empty())
                .map(std::path::PathBuf::from)
                .collect();
            tokio::task::spawn_blocking(move || {
                let directories: Vec<&Path> =
                    sites.iter().map(std::path::PathBuf::as_path).collect();
                tree::site_packages(&directories)
            })
            .await
            .map_err(|error| failed(transport, python, error.to_string()))?
        }
        Transport::Ssh(_) => streamed(transport, python).await,
    }
}

/// The environment of `python` on the node from its streamed tables (what `--host`
/// uses; on this machine for tests).
pub async fn streamed(transport: &Transport, python: &Path) -> Result<Environment, AbiError> {
    let output = transport.run(&command(python, "tables"), None).await?;
    if !output.success() {
        return Err(failed(transport, python, output.stderr_text()));
    }
    let tables =
        remote::parse(&output.stdout).map_err(|message| failed(transport, python, message))?;
    tokio::task::spawn_blocking(move || tree::build(tables.roots, tables.dists, tables.pending))
        .await
        .map_err(|error| failed(transport, python, error.to_string()))
}
