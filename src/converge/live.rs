//! Live resolution for the verbs (`lock`, `plan`, `apply`, `index snapshot` with
//! `--live`): the manifest's indexes (pip's configured default for an entry without a
//! URL), its index pins, overrides and constraints, and the node's interpreter and
//! platform, handed to the lazy fetcher and the resolver (`resolve::resolve_live`).
//! The lock is the ordinary resolution of the releases the live resolution visited,
//! with the digests recorded beside the manifest laid over them, as for a snapshot.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::ConvergeError;
use super::sources::{SourceError, index_sources};
use crate::index::Universe;
use crate::index::client::live::LiveIndex;
use crate::index::client::{ClientError, ClientSettings, ExploreSettings, IndexClient};
use crate::index::hashes::RecordedHashes;
use crate::manifest::Manifest;
use crate::resolve::{LiveError, LiveResolution, Lock, Request, TargetEnvironment};
use crate::rules::RuleSet;

/// How a live resolution talks to the indexes.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// The client's timeouts, retries, concurrency and cache, e.g. an empty cache dir.
    pub client: ClientSettings,
    /// The interpreter asked for pip's default index, e.g. `python3`.
    pub python: PathBuf,
    /// Fail after looking up this many projects, e.g. `1000`.
    pub max_projects: usize,
    /// Fail after reading the metadata of this many releases, e.g. `5000`.
    pub max_releases: usize,
}

/// Resolve `manifest` (named `file` in reports) live for `environment`: the releases
/// its resolution visited, and why it failed when it did.
pub fn resolve_live_universe(
    manifest: &Manifest,
    file: &str,
    environment: &TargetEnvironment,
    rules: &RuleSet,
    options: &LiveOptions,
) -> Result<LiveResolution, ConvergeError> {
    let client_error = |source: ClientError| {
        ConvergeError::Live(Box::new(LiveError::Client {
            manifest: file.to_string(),
            source,
        }))
    };
    let request = Request::from_manifest(manifest, file);
    let sources = index_sources(
        manifest,
        &options.python,
        options.client.cache_dir.as_deref(),
        None,
    )
    .map(|found| found.sources)
    .map_err(|error| match error {
        SourceError::Client(error) => client_error(error),
        SourceError::PipConfig(error) => ConvergeError::PipConfig(error),
    })?;
    let (overrides, constraints) = crate::index::client::explore::manifest_requirements(manifest);
    let settings = ExploreSettings {
        overrides,
        constraints,
        ..crate::resolve::live_settings(environment, options.max_projects, options.max_releases)?
    };
    let pins = request.index_pins();
    let wait_limit = wait_limit(&options.client);
    let client = IndexClient::new(options.client.clone()).map_err(client_error)?;
    let live = LiveIndex::new(client, sources, settings, pins, wait_limit).map_err(client_error)?;
    Ok(crate::resolve::resolve_live(
        &request,
        &live,
        environment,
        rules,
    )?)
}

/// [`resolve_live_universe`], then the lock of what it visited with the digests
/// recorded beside the manifest at `path` laid over it.
pub fn live_lock(
    path: &Path,
    manifest: &Manifest,
    environment: &TargetEnvironment,
    rules: &RuleSet,
    options: &LiveOptions,
) -> Result<(Lock, LiveResolution), ConvergeError> {
    let file = path.display().to_string();
    let mut resolution = resolve_live_universe(manifest, &file, environment, rules, options)?;
    if let Some(failure) = resolution.failure.take() {
        return Err(failure.into());
    }
    let mut universe: Universe = resolution.universe.clone();
    let hashes_path = RecordedHashes::path_for(path);
    if let Some(recorded) = RecordedHashes::read_optional(&hashes_path)? {
        recorded.apply(&mut universe, &hashes_path)?;
    }
    let lock = super::resolve_lock(manifest, &file, environment, &universe, rules)?;
    Ok((lock, resolution))
}

/// The longest wait for one answer: every attempt of a request, with room for the
/// requests queued ahead of it.
fn wait_limit(client: &ClientSettings) -> Duration {
    let attempts = client.retries.saturating_add(1);
    let one = client.timeout.saturating_add(client.max_backoff);
    one.saturating_mul(attempts)
        .saturating_mul(4)
        .max(Duration::from_secs(60))
}
