//! A node's environment through a transport: on this machine the libraries are read in
//! place (site-packages directories from the target interpreter); over SSH the
//! interpreter sends only their dynamic tables ([`super::remote`]), in one round trip.

use std::path::{Path, PathBuf};

use super::tree;
use super::{AbiError, Environment, Report, cache, remote};
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
    /// Reading the shared objects' tables (on this machine, the RECORDs too).
    pub read: std::time::Duration,
    /// Matching imports to exports.
    pub check: std::time::Duration,
    /// Whether the report was the one kept for this environment as it is on disk
    /// ([`cache`]): nothing was read but the RECORDs and the files' metadata.
    pub cached: bool,
}

/// What reading the environment on this machine found: the report kept for it as it
/// is on disk now, or its tables (with where to keep the new report, and the stamps to
/// keep it under, when there is a cache directory).
enum Read {
    Kept(Report),
    Tables(Environment, Option<(PathBuf, cache::Stamps)>),
}

/// The ABI check's report of the environment of `python` on the node, with where its
/// time went. On this machine the report kept for the environment as it is on disk
/// now is used when there is one ([`cache`]).
pub async fn report(transport: &Transport, python: &Path) -> Result<(Report, Phases), AbiError> {
    let started = std::time::Instant::now();
    let (environment, mut phases, keep) = match transport {
        Transport::Local(_) => {
            let sites = sites(transport, python).await?;
            let interpreter = started.elapsed();
            let directory = cache::directory();
            let read = tokio::task::spawn_blocking(move || read_local(&sites, directory))
                .await
                .map_err(|error| failed(transport, python, error.to_string()))??;
            let phases = Phases {
                interpreter,
                read: started.elapsed() - interpreter,
                ..Phases::default()
            };
            match read {
                Read::Kept(mut report) => {
                    report.seconds = started.elapsed().as_secs_f64();
                    let cached = Phases {
                        cached: true,
                        ..phases
                    };
                    return Ok((report, cached));
                }
                Read::Tables(environment, keep) => (environment, phases, keep),
            }
        }
        Transport::Ssh(_) => {
            let (environment, phases) = streamed_timed(transport, python).await?;
            (environment, phases, None)
        }
    };
    let checked = std::time::Instant::now();
    let outcome = super::check(&environment);
    phases.check = checked.elapsed();
    let report = Report::new(&environment, &outcome, started.elapsed().as_secs_f64());
    if let Some((directory, stamps)) = keep {
        cache::store(&directory, &report.roots, stamps, &report);
    }
    Ok((report, phases))
}

/// The kept report of the site directories `sites` (with a cache `directory`), else
/// their tables, stamped before they are read.
fn read_local(sites: &[PathBuf], directory: Option<PathBuf>) -> Result<Read, AbiError> {
    let directories: Vec<&Path> = sites.iter().map(PathBuf::as_path).collect();
    let Some(directory) = directory else {
        return Ok(Read::Tables(tree::site_packages(&directories)?, None));
    };
    let roots: Vec<String> = tree::roots(&directories)?
        .into_iter()
        .map(|(root, _)| root)
        .collect();
    let stamps = cache::Stamps::before(&roots);
    if let Some(report) = cache::load(&directory, &roots, &stamps) {
        return Ok(Read::Kept(report));
    }
    let listing = tree::listing(&directories)?;
    let stamps = stamps.with_objects(&listing.pending);
    Ok(Read::Tables(listing.read(), Some((directory, stamps))))
}

/// The site-packages directories of `python` on this machine.
async fn sites(transport: &Transport, python: &Path) -> Result<Vec<std::path::PathBuf>, AbiError> {
    let output = transport.run(&command(python, "sites"), None).await?;
    if !output.success() {
        return Err(failed(transport, python, output.tail(5)));
    }
    Ok(output
        .stdout_text()
        .lines()
        .filter(|line| !line.is_empty())
        .map(std::path::PathBuf::from)
        .collect())
}

/// The environment of `python` on the node, read whole (the tests' view; the verbs use
/// [`report`]).
pub async fn environment(transport: &Transport, python: &Path) -> Result<Environment, AbiError> {
    match transport {
        Transport::Local(_) => {
            let sites = sites(transport, python).await?;
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
    Ok((
        environment,
        Phases {
            interpreter,
            read,
            ..Phases::default()
        },
    ))
}
