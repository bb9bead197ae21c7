//! Sending the controller's files to a node once: a file the node already holds at its
//! place with the same digest is not sent again.

use crate::transport::{NodeCommand, Stdin, Transport, WriteSpec, Written, download};

use super::ExecError;

/// Send the file `name` of digest `sha256` to `spec.path` on the node unless it holds
/// it there already: the verified copy in the controller's cache `cache_dir`, else
/// downloaded once from the URL `url` gives (asked for only then). `None`: nothing sent.
pub async fn send_once<F, Fut>(
    transport: &Transport,
    name: &str,
    sha256: &crate::manifest::Sha256,
    cache_dir: &std::path::Path,
    spec: &WriteSpec,
    url: F,
) -> Result<Option<Written>, ExecError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<url::Url, ExecError>>,
{
    if node_has(transport, &spec.path, sha256).await? {
        return Ok(None);
    }
    let local = match download::cached(name, sha256, cache_dir).await {
        Some(local) => local,
        None => {
            let url = url().await?;
            download::fetch_as(url.as_str(), name, sha256, cache_dir).await?
        }
    };
    Ok(Some(transport.write_file(Stdin::File(&local), spec).await?))
}

/// Send the controller's file `local` of digest `sha256` to `spec.path` on the node
/// unless it holds it there already. `None`: nothing sent.
pub async fn send_local(
    transport: &Transport,
    local: &std::path::Path,
    sha256: &crate::manifest::Sha256,
    spec: &WriteSpec,
) -> Result<Option<Written>, ExecError> {
    if node_has(transport, &spec.path, sha256).await? {
        return Ok(None);
    }
    Ok(Some(transport.write_file(Stdin::File(local), spec).await?))
}

/// `true` when the node already holds a file of this digest at `path` (a copy sent by
/// an earlier run): nothing is sent again.
async fn node_has(
    transport: &Transport,
    path: &std::path::Path,
    sha256: &crate::manifest::Sha256,
) -> Result<bool, ExecError> {
    let command = NodeCommand::new("sha256sum")
        .arg("--")
        .arg(path.display().to_string());
    let output = transport.run(&command, None).await?;
    Ok(output.success() && output.stdout_text().split_whitespace().next() == Some(sha256.as_str()))
}
