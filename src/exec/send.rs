//! Sending the controller's files to a node once: a file the node already holds at its
//! place with the same digest is not sent again. What the node holds is asked in one
//! round trip for all the files of a step.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::manifest::Sha256;
use crate::transport::{NodeCommand, Stdin, Transport, WriteSpec, Written, download};

use super::ExecError;

/// Which of `files` (path on the node, digest) the node holds at that path with that
/// digest: one `sha256sum` for all of them (a missing file is simply not held).
pub async fn held(
    transport: &Transport,
    files: &[(&Path, &Sha256)],
) -> Result<HashSet<PathBuf>, ExecError> {
    if files.is_empty() {
        return Ok(HashSet::new());
    }
    let command = NodeCommand::new("sha256sum")
        .arg("--")
        .args(files.iter().map(|(path, _)| path.display().to_string()));
    let output = transport.run(&command, None).await?;
    let sums: HashSet<(String, String)> = output
        .stdout_text()
        .lines()
        .filter_map(|line| {
            let (digest, path) = line.split_once("  ")?;
            Some((path.to_string(), digest.to_string()))
        })
        .collect();
    Ok(files
        .iter()
        .filter(|(path, sha256)| {
            sums.contains(&(path.display().to_string(), sha256.as_str().to_string()))
        })
        .map(|(path, _)| path.to_path_buf())
        .collect())
}

/// Send the file `name` of digest `sha256` to `spec.path` on the node: the verified copy
/// in the controller's cache `cache_dir`, else downloaded once from the URL `url` gives
/// (asked for only then). Whether the node holds it already is [`held`]'s question.
pub async fn deliver<F, Fut>(
    transport: &Transport,
    name: &str,
    sha256: &Sha256,
    cache_dir: &Path,
    spec: &WriteSpec,
    url: F,
) -> Result<Written, ExecError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<url::Url, ExecError>>,
{
    let local = match download::cached(name, sha256, cache_dir).await {
        Some(local) => local,
        None => {
            let url = url().await?;
            download::fetch_as(url.as_str(), name, sha256, cache_dir).await?
        }
    };
    Ok(transport.write_file(Stdin::File(&local), spec).await?)
}
