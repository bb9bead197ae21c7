//! Sending the controller's files to a node once: a file the node already holds at its
//! place with the same digest is not sent again. What the node holds is asked in one
//! round trip for all the files of a step. A file of an index is found on its project
//! page ([`index_file_url`]) and copied into the controller's cache ([`local_copy`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::manifest::Sha256;
use crate::transport::{Stdin, Transport, WriteSpec, Written, download};

use super::ExecError;

/// Which of `files` (path on the node, digest) the node holds at that path with that
/// digest: one command for all of them (a missing file is simply not held).
pub async fn held(
    transport: &Transport,
    files: &[(&Path, &Sha256)],
) -> Result<HashSet<PathBuf>, ExecError> {
    let paths: Vec<&Path> = files.iter().map(|(path, _)| *path).collect();
    let sums = transport.sha256_of_files(&paths).await?;
    Ok(files
        .iter()
        .filter(|(path, sha256)| {
            sums.get(*path)
                .is_some_and(|digest| digest == sha256.as_str())
        })
        .map(|(path, _)| path.to_path_buf())
        .collect())
}

/// The verified copy of the file `name` of digest `sha256` in the controller's cache
/// `cache_dir`, downloaded once from the URL `url` gives (asked for only then, and by
/// one node at a time: the others find the file in the cache).
pub async fn local_copy<F, Fut>(
    name: &str,
    sha256: &Sha256,
    cache_dir: &Path,
    url: F,
) -> Result<PathBuf, ExecError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<url::Url, ExecError>>,
{
    let flight = download::lookup_flight(name, sha256, cache_dir);
    let _flight = flight.lock().await;
    match download::cached(name, sha256, cache_dir).await {
        Some(local) => Ok(local),
        None => {
            let url = url().await?;
            Ok(download::fetch_as(url.as_str(), name, sha256, cache_dir).await?)
        }
    }
}

/// Send each local file to its place on the node, all in one command; what was
/// written, in order, and the error of the first file that was not.
pub async fn send_all(
    transport: &Transport,
    files: &[(PathBuf, WriteSpec)],
) -> (Vec<Written>, Result<(), ExecError>) {
    let batch: Vec<(Stdin<'_>, &WriteSpec)> = files
        .iter()
        .map(|(local, spec)| (Stdin::File(local), spec))
        .collect();
    let (written, result) = transport.write_files(&batch).await;
    (written, result.map_err(ExecError::from))
}

/// The URL of `file` on the index's project page of `project`.
pub(super) async fn index_file_url(
    index: &str,
    index_url: &str,
    project: &str,
    file: &str,
) -> Result<url::Url, ExecError> {
    use crate::index::client::{ClientSettings, IndexClient, IndexLocation};
    let missing = |reason: String| ExecError::IndexFile {
        file: file.to_string(),
        index: index.to_string(),
        reason,
    };
    let location =
        IndexLocation::new(index, index_url).map_err(|error| missing(error.to_string()))?;
    let name = pep508_rs::PackageName::new(project.to_string())
        .map_err(|error| missing(error.to_string()))?;
    let client =
        IndexClient::new(ClientSettings::default()).map_err(|error| missing(error.to_string()))?;
    let files = client
        .fetch_project(&location, &name)
        .await
        .map_err(|error| missing(error.to_string()))?
        .ok_or_else(|| missing(format!("the index has no project `{project}`")))?;
    files
        .into_iter()
        .find(|candidate| candidate.filename == file)
        .map(|found| found.url)
        .ok_or_else(|| missing(format!("the project page of `{project}` does not list it")))
}
