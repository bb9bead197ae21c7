//! Fetching a file for nodes once, on the controller: download (or copy a `file:`
//! URL) into a cache keyed by its sha256, verify the digest while writing, and reuse
//! a verified copy on the next run.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use crate::manifest::RedactedUrl;
use crate::manifest::Sha256 as Digest256;

/// Failed to fetch a file for nodes.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// The URL could not be fetched.
    #[error("Failed to download `{url}`")]
    Http {
        /// The URL, credentials masked.
        url: RedactedUrl,
        /// What the client reported.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with an error status.
    #[error("Failed to download `{url}`: HTTP {status}")]
    Status {
        /// The URL, credentials masked.
        url: RedactedUrl,
        /// e.g. `404 Not Found`.
        status: reqwest::StatusCode,
    },
    /// The content does not have the manifest's digest.
    #[error(
        "Failed to verify `{url}`: its sha256 is `{actual}`, the lock or manifest says `{expected}`"
    )]
    Digest {
        /// The URL, credentials masked.
        url: RedactedUrl,
        /// From the manifest.
        expected: String,
        /// Of what arrived.
        actual: String,
    },
    /// The repository could not be cloned or bundled on the controller.
    #[error("Failed to bundle `{url}` at `{rev}` on the controller: {reason}")]
    Git {
        /// The repository, credentials masked.
        url: RedactedUrl,
        /// The revision.
        rev: String,
        /// What git reported.
        reason: String,
    },
    /// The cache could not be written.
    #[error("Failed to write `{}`", path.display())]
    Io {
        /// The cache file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// How long a download may take to connect, and to wait between two reads: a stalled
/// server ends the download instead of holding a node's step forever.
const CONNECT_BOUND: std::time::Duration = std::time::Duration::from_secs(30);
const READ_BOUND: std::time::Duration = std::time::Duration::from_secs(120);

/// The one HTTP client of the controller's downloads, with its bounds.
fn client() -> Result<reqwest::Client, reqwest::Error> {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    if let Some(client) = CLIENT.get() {
        return Ok(client.clone());
    }
    let client = reqwest::Client::builder()
        .connect_timeout(CONNECT_BOUND)
        .read_timeout(READ_BOUND)
        .build()?;
    Ok(CLIENT.get_or_init(|| client).clone())
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> DownloadError + '_ {
    move |source| DownloadError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The lock of one cache file's download in this process.
pub fn in_flight(path: &Path) -> std::sync::Arc<tokio::sync::Mutex<()>> {
    static FLIGHTS: std::sync::OnceLock<
        std::sync::Mutex<
            std::collections::HashMap<PathBuf, std::sync::Arc<tokio::sync::Mutex<()>>>,
        >,
    > = std::sync::OnceLock::new();
    let flights = FLIGHTS.get_or_init(Default::default);
    let mut flights = match flights.lock() {
        Ok(flights) => flights,
        Err(poisoned) => poisoned.into_inner(),
    };
    std::sync::Arc::clone(flights.entry(path.to_path_buf()).or_default())
}

/// The lock of one file's whole lookup in this process (where to download it from, then
/// the download): the nodes of a fleet that lack the same file wait for one lookup and
/// find the file in the cache, instead of each reading the index page again.
pub fn lookup_flight(
    name: &str,
    sha256: &Digest256,
    cache_dir: &Path,
) -> std::sync::Arc<tokio::sync::Mutex<()>> {
    let mut key = cache_path(name, sha256, cache_dir).into_os_string();
    key.push(".lookup");
    in_flight(Path::new(&key))
}

/// Hash a file, e.g. to check a cached copy.
pub async fn sha256_of(path: &Path) -> std::io::Result<String> {
    use tokio::io::AsyncReadExt;
    let mut file = tokio::fs::File::open(path).await?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer).await?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Where the cache keeps the file `name` of this digest.
fn cache_path(name: &str, sha256: &Digest256, cache_dir: &Path) -> PathBuf {
    cache_dir.join(format!("{}-{name}", &sha256.as_str()[..16]))
}

/// The verified copy of `name` in the cache, when there is one (no network).
pub async fn cached(name: &str, sha256: &Digest256, cache_dir: &Path) -> Option<PathBuf> {
    let path = cache_path(name, sha256, cache_dir);
    let flight = in_flight(&path);
    let _flight = flight.lock().await;
    (path.is_file() && sha256_of(&path).await.ok().as_deref() == Some(sha256.as_str()))
        .then_some(path)
}

/// Fetch `url` into `cache_dir` unless a verified copy is there; returns its path.
pub async fn fetch(
    url: &str,
    sha256: &Digest256,
    cache_dir: &Path,
) -> Result<PathBuf, DownloadError> {
    let name = url
        .rsplit('/')
        .next()
        .filter(|name| !name.is_empty())
        .unwrap_or("download");
    fetch_as(url, name, sha256, cache_dir).await
}

/// [`fetch`], kept in the cache under `name` (e.g. a wheel's file name, which its
/// URL may spell percent-encoded).
pub async fn fetch_as(
    url: &str,
    name: &str,
    sha256: &Digest256,
    cache_dir: &Path,
) -> Result<PathBuf, DownloadError> {
    let final_path = cache_path(name, sha256, cache_dir);
    // Nodes of a fleet fetch the same file at once: one download, the others wait for it
    // and find it verified in the cache.
    let flight = in_flight(&final_path);
    let _flight = flight.lock().await;
    if final_path.is_file() && sha256_of(&final_path).await.ok().as_deref() == Some(sha256.as_str())
    {
        return Ok(final_path);
    }
    tokio::fs::create_dir_all(cache_dir)
        .await
        .map_err(io(cache_dir))?;
    // A name of this process's own: another process may be fetching the same file.
    let partial = final_path.with_extension(format!("partial.{}", std::process::id()));
    let mut hasher = Sha256::new();
    let mut out = tokio::fs::File::create(&partial)
        .await
        .map_err(io(&partial))?;
    if let Some(local) = url.strip_prefix("file://") {
        use tokio::io::AsyncReadExt;
        let mut file = tokio::fs::File::open(local)
            .await
            .map_err(io(Path::new(local)))?;
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            let read = file.read(&mut buffer).await.map_err(io(Path::new(local)))?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
            out.write_all(&buffer[..read]).await.map_err(io(&partial))?;
        }
    } else {
        // A reqwest error names the URL it failed on, credentials and all: the error
        // keeps only the masked one.
        let http = |source: reqwest::Error| DownloadError::Http {
            url: RedactedUrl::new(url),
            source: source.without_url(),
        };
        let mut response = client()
            .map_err(http)?
            .get(url)
            .send()
            .await
            .map_err(http)?;
        if !response.status().is_success() {
            return Err(DownloadError::Status {
                url: RedactedUrl::new(url),
                status: response.status(),
            });
        }
        while let Some(chunk) = response.chunk().await.map_err(http)? {
            hasher.update(&chunk);
            out.write_all(&chunk).await.map_err(io(&partial))?;
        }
    }
    out.flush().await.map_err(io(&partial))?;
    drop(out);
    let actual = hex::encode(hasher.finalize());
    if actual != sha256.as_str() {
        let _ = tokio::fs::remove_file(&partial).await;
        return Err(DownloadError::Digest {
            url: RedactedUrl::new(url),
            expected: sha256.to_string(),
            actual,
        });
    }
    tokio::fs::rename(&partial, &final_path)
        .await
        .map_err(io(&final_path))?;
    Ok(final_path)
}

/// The longest one git command on the controller may run (a first clone of a large
/// repository included).
const GIT_BOUND: std::time::Duration = std::time::Duration::from_secs(1800);

/// Run `git ARGS` on the controller; its stdout, or `failed` with its stderr (credentials
/// in URLs masked).
async fn run_git(
    args: &[&std::ffi::OsStr],
    failed: &dyn Fn(String) -> DownloadError,
) -> Result<String, DownloadError> {
    let stdout = git_output(args, failed).await?;
    Ok(String::from_utf8_lossy(&stdout).trim().to_string())
}

/// [`run_git`], its stdout as the bytes git wrote.
async fn git_output(
    args: &[&std::ffi::OsStr],
    failed: &dyn Fn(String) -> DownloadError,
) -> Result<Vec<u8>, DownloadError> {
    let mut command = tokio::process::Command::new("git");
    command
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(GIT_BOUND, command.output())
        .await
        .map_err(|_| failed(format!("git ran past {} s", GIT_BOUND.as_secs())))?
        .map_err(|error| failed(format!("git could not run: {error}")))?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(failed(crate::manifest::redact_text(
            String::from_utf8_lossy(&output.stderr).trim(),
        )))
    }
}

/// A bundle made by [`git_bundle`].
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The bundle file in the cache.
    pub path: PathBuf,
    /// The bare clone it was made from.
    pub repo: PathBuf,
    /// The commit `rev` names.
    pub commit: String,
}

impl Bundle {
    /// The bytes of the regular file at `path` (relative to the repository's root) in
    /// the bundled commit ([`file_at`]).
    pub async fn file(&self, path: &str, limit: u64) -> Result<Option<Vec<u8>>, DownloadError> {
        file_at(&self.repo, &self.commit, path, limit).await
    }
}

/// The bytes of the regular file at `path` (relative to the repository's root) in
/// `commit` of the clone `repo`, refused above `limit` bytes; `None` when the commit
/// has no such file. A link or a directory there is an error: it is not read through.
pub async fn file_at(
    repo: &Path,
    commit: &str,
    path: &str,
    limit: u64,
) -> Result<Option<Vec<u8>>, DownloadError> {
    let failed = |reason: String| DownloadError::Git {
        url: RedactedUrl::new(&repo.display().to_string()),
        rev: commit.to_string(),
        reason,
    };
    let in_repo = |rest: &[&str]| -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = vec!["-C".into(), repo.as_os_str().to_os_string()];
        args.extend(rest.iter().map(|arg| std::ffi::OsString::from(*arg)));
        args
    };
    let run = |args: Vec<std::ffi::OsString>| {
        let failed = &failed;
        async move {
            let args: Vec<&std::ffi::OsStr> =
                args.iter().map(std::ffi::OsString::as_os_str).collect();
            git_output(&args, failed).await
        }
    };
    // `MODE TYPE OBJECT SIZE<TAB>PATH`, nothing when the commit has no such path.
    let listed = run(in_repo(&["ls-tree", "-l", "-z", commit, "--", path])).await?;
    let listed = String::from_utf8_lossy(&listed);
    let Some(entry) = listed.split('\0').find(|entry| !entry.is_empty()) else {
        return Ok(None);
    };
    let fields: Vec<&str> = entry
        .split('\t')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let (mode, object, size) = match fields.as_slice() {
        [mode, "blob", object, size] => (*mode, *object, size.parse::<u64>().ok()),
        _ => {
            return Err(failed(format!("`{path}` is not a file in the commit")));
        }
    };
    if !matches!(mode, "100644" | "100755") {
        return Err(failed(format!(
            "`{path}` is not a regular file in the commit (mode {mode})"
        )));
    }
    if size.is_none_or(|size| size > limit) {
        return Err(failed(format!("`{path}` is larger than {limit} bytes")));
    }
    run(in_repo(&["cat-file", "blob", object])).await.map(Some)
}

/// The clone of `url` that the cache holds and the commit `rev` names in it, without
/// fetching anything; `None` when the cache has no clone or the clone lacks `rev`.
pub async fn cached_commit(url: &str, rev: &str, cache_dir: &Path) -> Option<(PathBuf, String)> {
    if rev.is_empty() || rev.starts_with('-') {
        return None;
    }
    let key = hex::encode(Sha256::digest(url.as_bytes()));
    let repo = cache_dir.join("git").join(&key[..16]);
    if !repo.join("HEAD").is_file() {
        return None;
    }
    let flight = in_flight(&repo);
    let _flight = flight.lock().await;
    let failed = |reason: String| DownloadError::Git {
        url: RedactedUrl::new(url),
        rev: rev.to_string(),
        reason,
    };
    let commit_of = format!("{rev}^{{commit}}");
    let args: [&std::ffi::OsStr; 7] = [
        "-C".as_ref(),
        repo.as_os_str(),
        "rev-parse".as_ref(),
        "--verify".as_ref(),
        "--quiet".as_ref(),
        "--end-of-options".as_ref(),
        commit_of.as_ref(),
    ];
    let commit = run_git(&args, &failed).await.ok()?;
    Some((repo, commit))
}

/// A `git bundle` of `rev` of the repository at `url`, made from a bare clone kept in
/// `cache_dir/git` (fetched again only when it lacks `rev`).
/// A revision that is a commit rather than a ref is bundled as `refs/heads/pinned`.
pub async fn git_bundle(url: &str, rev: &str, cache_dir: &Path) -> Result<Bundle, DownloadError> {
    use std::ffi::OsStr;
    let shown = RedactedUrl::new(url);
    let failed = |reason: String| DownloadError::Git {
        url: shown.clone(),
        rev: rev.to_string(),
        reason,
    };
    if rev.is_empty() || rev.starts_with('-') {
        return Err(failed(
            "a revision may not be empty or start with `-`".to_string(),
        ));
    }
    let key = hex::encode(Sha256::digest(url.as_bytes()));
    let repo = cache_dir.join("git").join(&key[..16]);
    let flight = in_flight(&repo);
    let _flight = flight.lock().await;
    let in_repo = |rest: &[&str]| -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = vec!["-C".into(), repo.clone().into_os_string()];
        args.extend(rest.iter().map(|arg| std::ffi::OsString::from(*arg)));
        args
    };
    let git = |args: Vec<std::ffi::OsString>| {
        let failed = &failed;
        async move {
            let args: Vec<&OsStr> = args.iter().map(std::ffi::OsString::as_os_str).collect();
            run_git(&args, failed).await
        }
    };
    let commit_of = format!("{rev}^{{commit}}");
    if !repo.join("HEAD").is_file() {
        tokio::fs::create_dir_all(cache_dir.join("git"))
            .await
            .map_err(io(cache_dir))?;
        let clone: Vec<std::ffi::OsString> = vec![
            "clone".into(),
            "--bare".into(),
            "--quiet".into(),
            "--".into(),
            url.into(),
            repo.clone().into_os_string(),
        ];
        git(clone).await?;
    } else if git(in_repo(&[
        "rev-parse",
        "--verify",
        "--quiet",
        "--end-of-options",
        &commit_of,
    ]))
    .await
    .is_err()
    {
        git(in_repo(&[
            "fetch",
            "--quiet",
            "--force",
            "--tags",
            "--",
            url,
            "+refs/heads/*:refs/heads/*",
        ]))
        .await?;
    }
    let commit = git(in_repo(&[
        "rev-parse",
        "--verify",
        "--end-of-options",
        &commit_of,
    ]))
    .await?;
    let bundles = cache_dir.join("bundles");
    tokio::fs::create_dir_all(&bundles)
        .await
        .map_err(io(&bundles))?;
    // By repository, commit and the revision as named (a bundle of a tag carries that
    // tag): made once, then every node of a fleet gets the same file.
    let named = hex::encode(Sha256::digest(rev.as_bytes()));
    let bundle = bundles.join(format!(
        "{}-{}-{}.bundle",
        &key[..16],
        commit.get(..16).unwrap_or(&commit),
        &named[..8]
    ));
    if tokio::fs::metadata(&bundle)
        .await
        .is_ok_and(|metadata| metadata.is_file() && metadata.len() > 0)
    {
        return Ok(Bundle {
            path: bundle,
            repo,
            commit,
        });
    }
    let is_ref = git(in_repo(&["show-ref", "--", rev]))
        .await
        .is_ok_and(|refs| !refs.is_empty());
    let partial = bundle.with_extension(format!("partial.{}", std::process::id()));
    let partial_arg = partial.display().to_string();
    if is_ref {
        git(in_repo(&["bundle", "create", "--quiet", &partial_arg, rev])).await?;
    } else {
        git(in_repo(&["update-ref", "refs/heads/pinned", &commit])).await?;
        git(in_repo(&[
            "bundle",
            "create",
            "--quiet",
            &partial_arg,
            "refs/heads/pinned",
        ]))
        .await?;
    }
    tokio::fs::rename(&partial, &bundle)
        .await
        .map_err(io(&bundle))?;
    Ok(Bundle {
        path: bundle,
        repo,
        commit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn file_urls_are_verified_and_cached() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("cuda_13.0.1_580.82.07_linux.run");
        std::fs::write(&source, b"#!/bin/sh\necho installer\n").unwrap();
        let digest: Digest256 = sha256_of(&source).await.unwrap().parse().unwrap();
        let url = format!("file://{}", source.display());
        let cache = dir.path().join("cache");
        let fetched = fetch(&url, &digest, &cache).await.unwrap();
        assert_eq!(
            std::fs::read(&fetched).unwrap(),
            std::fs::read(&source).unwrap()
        );
        let wrong: Digest256 = "0".repeat(64).parse().unwrap();
        let error = fetch(&url, &wrong, &cache).await.unwrap_err();
        assert!(error.to_string().contains("its sha256 is"), "{error}");
    }

    /// A loopback HTTP server answering each connection with `status` and `body`, for
    /// `connections` connections; its address.
    async fn serve(status: &'static str, body: &'static [u8], connections: usize) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            for _ in 0..connections {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request).await;
                let head = format!(
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(body).await;
            }
        });
        address.to_string()
    }

    /// See: issue 33, case 4. A download that fails (an HTTP error, a digest mismatch,
    /// a refused connection) names its URL with the credentials masked, in its own text
    /// and in every cause below it, so no output it reaches (text, JSON, node logs, a
    /// drain reason) can show them.
    #[tokio::test]
    async fn failed_downloads_never_show_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let digest: Digest256 = "0".repeat(64).parse().unwrap();
        let not_found = serve("404 Not Found", b"", 1).await;
        let wrong = serve("200 OK", b"not the file", 1).await;
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().to_string()
        };
        for address in [not_found, wrong, closed] {
            let url = format!(
                "http://operator:s3cret-pw@{address}/simple/a/a-1.0-py3-none-any.whl?token=t0ken"
            );
            let error = fetch(&url, &digest, dir.path()).await.unwrap_err();
            let text = crate::text::error_chain(&error);
            assert!(
                !text.contains("s3cret-pw") && !text.contains("t0ken"),
                "{text}"
            );
            assert!(
                text.contains(&format!("http://operator:***@{address}/")),
                "{text}"
            );
        }
    }
}
