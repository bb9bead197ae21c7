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

/// The script under `-S`: no `.pth` file of the environment runs (a torch environment's
/// cost 60 ms of a 75 ms start on an H200 node); the script sets up what it reads itself.
fn command(python: &Path, mode: &str) -> NodeCommand {
    NodeCommand::new(python.display().to_string())
        .arg("-S")
        .arg("-c")
        .script("abi-tables", remote::SCRIPT)
        .arg(mode)
}

/// Where reading a node's environment spent its time (what `probe -v` prints).
#[derive(Debug, Clone, Copy, Default)]
pub struct Phases {
    /// Running the interpreter: listing the site directories (on this machine) or
    /// streaming the tables (over SSH).
    pub interpreter: std::time::Duration,
    /// Reading the shared objects' tables.
    pub read: std::time::Duration,
}

/// The environment of `python` on the node.
pub async fn environment(transport: &Transport, python: &Path) -> Result<Environment, AbiError> {
    environment_timed(transport, python)
        .await
        .map(|(environment, _)| environment)
}

/// [`environment`], with where its time went.
pub async fn environment_timed(
    transport: &Transport,
    python: &Path,
) -> Result<(Environment, Phases), AbiError> {
    match transport {
        Transport::Local(_) => {
            let started = std::time::Instant::now();
            let output = transport.run(&command(python, "sites"), None).await?;
            if !output.success() {
                return Err(failed(transport, python, output.tail(5)));
            }
            let interpreter = started.elapsed();
            let sites: Vec<std::path::PathBuf> = output
                .stdout_text()
                .lines()
                .filter(|line| !line.is_empty())
                .map(std::path::PathBuf::from)
                .collect();
            let environment = tokio::task::spawn_blocking(move || {
                let directories: Vec<&Path> =
                    sites.iter().map(std::path::PathBuf::as_path).collect();
                tree::site_packages(&directories)
            })
            .await
            .map_err(|error| failed(transport, python, error.to_string()))??;
            let read = started.elapsed() - interpreter;
            Ok((environment, Phases { interpreter, read }))
        }
        Transport::Ssh(_) => streamed_timed(transport, python).await,
    }
}

/// The environment of `python` on the node from its streamed tables (what `--host`
/// uses; on this machine for tests).
pub async fn streamed(transport: &Transport, python: &Path) -> Result<Environment, AbiError> {
    streamed_timed(transport, python)
        .await
        .map(|(environment, _)| environment)
}

async fn streamed_timed(
    transport: &Transport,
    python: &Path,
) -> Result<(Environment, Phases), AbiError> {
    let started = std::time::Instant::now();
    let output = transport.run(&command(python, "tables"), None).await?;
    if !output.success() {
        return Err(failed(transport, python, output.stderr_text()));
    }
    let interpreter = started.elapsed();
    let tables =
        remote::parse(&output.stdout).map_err(|message| failed(transport, python, message))?;
    let environment = tokio::task::spawn_blocking(move || {
        tree::build(tables.roots, tables.dists, tables.pending)
    })
    .await
    .map_err(|error| failed(transport, python, error.to_string()))?;
    let read = started.elapsed() - interpreter;
    Ok((environment, Phases { interpreter, read }))
}
