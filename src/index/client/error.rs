//! Errors of the index client. Every URL in a message has its credentials removed.

use std::path::PathBuf;
use std::time::Duration;

use crate::index::metadata::MetadataError;
use crate::manifest::RedactedUrl;

/// Failed to talk to an index, or to make sense of what it sent.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The HTTP client could not be created (TLS roots, proxy settings).
    #[error("Failed to create the HTTP client")]
    Build(#[source] reqwest::Error),
    /// The request failed before a response came (DNS, connect, TLS, reset).
    #[error("Failed to fetch `{url}` from index `{index}`")]
    Request {
        /// e.g. `https://mirror.example/simple/torch/`.
        url: RedactedUrl,
        /// e.g. `default`.
        index: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// No complete response within the per-request timeout.
    #[error("Failed to fetch `{url}` from index `{index}`: no response within {}s", timeout.as_secs_f64())]
    Timeout {
        /// e.g. `https://mirror.example/simple/torch/`.
        url: RedactedUrl,
        /// e.g. `default`.
        index: String,
        /// The limit that ran out, e.g. `60s`.
        timeout: Duration,
    },
    /// The index answered with an error status (after retries where they apply).
    #[error("Failed to fetch `{url}` from index `{index}`: HTTP {status}")]
    Status {
        /// e.g. `https://mirror.example/simple/torch/`.
        url: RedactedUrl,
        /// e.g. `default`.
        index: String,
        /// e.g. `503 Service Unavailable`.
        status: String,
    },
    /// A project page is neither valid PEP 691 JSON nor a PEP 503 page.
    #[error("Failed to parse the project page `{url}` from index `{index}`: {reason}")]
    Page {
        /// e.g. `https://mirror.example/simple/torch/`.
        url: RedactedUrl,
        /// e.g. `default`.
        index: String,
        /// e.g. `expected value at line 1 column 1`.
        reason: String,
    },
    /// A downloaded body does not have the sha256 the index announced.
    #[error(
        "Failed to verify `{url}` from index `{index}`: its sha256 is `{actual}`, the index says `{expected}`"
    )]
    HashMismatch {
        /// e.g. `https://mirror.example/files/a-1.0-py3-none-any.whl.metadata`.
        url: RedactedUrl,
        /// e.g. `default`.
        index: String,
        /// The digest announced.
        expected: String,
        /// The digest of what arrived.
        actual: String,
    },
    /// The metadata of a file could not be read.
    #[error("Failed to read the metadata of `{filename}` from index `{index}`")]
    Metadata {
        /// e.g. `torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl`.
        filename: String,
        /// e.g. `default`.
        index: String,
        /// Why.
        #[source]
        source: Box<MetadataError>,
    },
    /// A release lists no file to read its metadata from.
    #[error(
        "Failed to read the metadata of `{filename}` from index `{index}`: the release lists no file to read it from"
    )]
    SdistMetadata {
        /// e.g. `legacy-1.0.tar.gz`.
        filename: String,
        /// e.g. `default`.
        index: String,
    },
    /// An sdist's metadata could be neither read statically nor built.
    #[error("Failed to read the metadata of the sdist `{filename}` from index `{index}`: {reason}")]
    SdistBuild {
        /// e.g. `deepspeed-0.19.8.tar.gz`.
        filename: String,
        /// e.g. `default`.
        index: String,
        /// e.g. `its metadata build failed (exit status: 1): …`.
        reason: String,
    },
    /// A wheel's zip structure could not be read with range requests.
    #[error("Failed to read the zip directory of `{url}` from index `{index}`: {reason}")]
    Zip {
        /// e.g. `https://mirror.example/files/a-1.0-py3-none-any.whl`.
        url: RedactedUrl,
        /// e.g. `default`.
        index: String,
        /// e.g. `the file needs more than 8 range requests`.
        reason: String,
    },
    /// `--offline` and the response is not in the cache.
    #[error(
        "Failed to fetch `{url}` from index `{index}`: it is not in the cache and the network is off (`--offline`)"
    )]
    Offline {
        /// e.g. `https://mirror.example/simple/torch/`.
        url: RedactedUrl,
        /// e.g. `default`.
        index: String,
    },
    /// The cache directory could not be read or written.
    #[error("Failed to use the cache at `{}`", path.display())]
    Cache {
        /// e.g. `/root/.cache/cuda-upgrade/simple-v1/3f….json`.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// An index URL is not an absolute http(s) URL.
    #[error("Failed to use `{url}` as the URL of index `{index}`: {reason}")]
    IndexUrl {
        /// The URL as given, credentials removed.
        url: RedactedUrl,
        /// e.g. `default`.
        index: String,
        /// e.g. `relative URL without a base`.
        reason: String,
    },
    /// Exploring the manifest's closure went past a limit.
    #[error("Failed to record the closure: more than {limit} {what} (raise `{flag}`)")]
    Limit {
        /// e.g. `1000`.
        limit: usize,
        /// e.g. `projects`.
        what: &'static str,
        /// The flag that raises it, e.g. `--max-projects`.
        flag: &'static str,
    },
    /// Live resolution waited too long for an index answer that never came.
    #[error("Failed to resolve live: no answer for {what} within {seconds} s")]
    Stalled {
        /// e.g. `` the project page of `torch` ``.
        what: String,
        /// e.g. `300`.
        seconds: u64,
    },
    /// The runtime that fetches for live resolution could not start.
    #[error("Failed to start the network runtime of live resolution")]
    Runtime(#[source] std::io::Error),
}
