//! The pipeline as one library call: a manifest (read once, with its digest) and a
//! transport → facts → lock → plan → re-check and apply each step → verification launch
//! → a typed [`NodeOutcome`]. `plan`, `apply`, `lock` and `index hash` share its pieces;
//! the verbs only parse arguments and print. A fleet is N of these under a bounded task
//! set.
//!
//! Loads the manifest, gathers the node's facts in one round trip, resolves the
//! manifest for that node (offline on a snapshot, or against its indexes with `--live`
//! (`live`), with the digests recorded beside the manifest), finds each index's URL
//! (pip's configured default for an entry without one), resolves `from_env` values on
//! the controller, and plans. It owns its error type
//! ([`ConvergeError`]); only `commands` maps errors to exit codes.

mod drain;
mod error;
pub mod init;
mod keep;
mod live;
mod node;
mod pinned;
pub mod record;
mod resolution;
mod rollback;
mod sources;

pub use drain::{
    Drain, DrainFailure, DrainFuture, DrainRecord, DrainStep, RollbackRecord, Rollout,
    ServiceRecord,
};
pub use error::ConvergeError;
pub use live::{LiveOptions, live_lock, resolve_live_universe};
pub use node::{
    ApplyOptions, FirstProbe, NodeOutcome, StepRecord, abi_check_step, converge_node,
    converge_probed,
};
pub use pinned::{Saved, read_lock};
pub use resolution::{
    LockFile, LockMode, LockOrigin, ResolutionSettings, ResolvedOn, Source, lock_for,
    refresh_command, resolve_reporting, stale, stamp,
};
pub use rollback::{RollbackOptions, RollbackOutcome, rollback_node};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::exec;
use crate::facts::{NodeFacts, ProbeRequest, ProbeScope};
use crate::index::hashes::RecordedHashes;
use crate::index::{Snapshot, Universe, pip_record};
use crate::manifest::{self, Manifest};
use crate::plan::{self, NodePlan, PlanInput};
use crate::resolve::{Lock, Request, TargetEnvironment};
use crate::rules::RuleSet;
use crate::settings::env;
use crate::steps::env::{ResolvedVar, resolve};
use crate::transport::Transport;

/// The schema of a saved plan file.
pub const PLAN_SCHEMA: u32 = 1;

/// A saved plan: what `upgrade apply PLAN` replays, refusing it if the node changed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedPlan {
    /// Always [`PLAN_SCHEMA`].
    pub schema: u32,
    /// The manifest file the plan was made from.
    pub manifest_path: PathBuf,
    /// Its sha256 then; a changed manifest refuses the plan too.
    pub manifest_sha256: String,
    /// The node, e.g. `node0` or `local`.
    pub node: String,
    /// The digest of the facts the plan was made from.
    pub facts_digest: String,
    /// The lock the plan installs.
    pub lock: Lock,
    /// The plan as shown (secrets masked), for review.
    pub plan: serde_json::Value,
}

/// A manifest with everything needed to plan it.
pub struct Prepared {
    /// The manifest.
    pub manifest: Manifest,
    /// Its path.
    pub path: PathBuf,
    /// Its sha256.
    pub sha256: crate::manifest::Sha256,
    /// Its variables with values.
    pub env: Vec<ResolvedVar>,
    /// How the run gets its lock (`--locked`, `--snapshot`, `--live`, …), decided once.
    pub settings: Arc<ResolutionSettings>,
    /// The lock file the run reads (beside the manifest, or `--lock`), read once.
    pub lock_file: Arc<LockFile>,
    /// The rules (embedded tables, the manifest's `rules:` and `--rules`), loaded once.
    rules: Arc<RuleSet>,
    /// The snapshot it resolves on, read once for every node of a run (a fleet's nodes
    /// share it).
    universe: Arc<OnceLock<Arc<Universe>>>,
    /// What a run learns once for all its nodes: the index URLs, each distinct node
    /// environment's lock, the project pages read for kept wheels.
    shared: Arc<Shared>,
}

/// A lock resolved for one environment, and where.
type ResolvedFor = (TargetEnvironment, Arc<(Lock, ResolvedOn)>);

/// What the nodes of one run share once one of them has it.
#[derive(Default)]
struct Shared {
    /// Index name → URL, found once (pip's default asked at most once a run).
    urls: OnceLock<BTreeMap<String, String>>,
    /// Where the run resolves, decided once.
    on: OnceLock<ResolvedOn>,
    /// The lock of each distinct environment and where it was resolved: nodes alike in
    /// every fact the resolver reads get the same lock, so it is resolved once.
    locks: std::sync::Mutex<Vec<ResolvedFor>>,
    /// Project pages read to keep the wheels of replaced versions (`--fetch controller`).
    pages: keep::Pages,
}

impl Prepared {
    /// The manifest as one inventory host sees it: `python` replaces `target.python`,
    /// and `from_env` values are looked up in `vars` before the controller's environment.
    pub fn for_host(
        &self,
        python: Option<&Path>,
        vars: &BTreeMap<String, String>,
    ) -> Result<Prepared, ConvergeError> {
        self.for_host_with(python, vars, None)
    }

    /// As [`Prepared::for_host`] for `plan`, which shows secret values only as `***`:
    /// a `from_env` value neither the host's variables nor the controller supplies is
    /// planned as unknown (empty) and named in the second value; `apply` needs them all.
    pub fn for_host_plan(
        &self,
        python: Option<&Path>,
        vars: &BTreeMap<String, String>,
    ) -> Result<(Prepared, Vec<String>), ConvergeError> {
        let missing = std::cell::RefCell::new(Vec::new());
        let prepared = self.for_host_with(python, vars, Some(&missing))?;
        Ok((prepared, missing.into_inner()))
    }

    /// [`Prepared::for_host`]; with `missing`, an unset value is empty and noted there.
    fn for_host_with(
        &self,
        python: Option<&Path>,
        vars: &BTreeMap<String, String>,
        missing: Option<&std::cell::RefCell<Vec<String>>>,
    ) -> Result<Prepared, ConvergeError> {
        let mut manifest = self.manifest.clone();
        if let Some(python) = python {
            manifest.target.python = python.to_path_buf();
        }
        let env = resolve(&manifest.env, |name| {
            vars.get(name)
                .cloned()
                .or_else(|| env::var(name))
                .or_else(|| {
                    let missing = missing?;
                    missing.borrow_mut().push(name.to_string());
                    Some(String::new())
                })
        })
        .map_err(ConvergeError::Env)?;
        Ok(Prepared {
            manifest,
            path: self.path.clone(),
            sha256: self.sha256.clone(),
            env,
            settings: Arc::clone(&self.settings),
            lock_file: Arc::clone(&self.lock_file),
            rules: Arc::clone(&self.rules),
            universe: Arc::clone(&self.universe),
            shared: Arc::clone(&self.shared),
        })
    }

    /// The run's rules.
    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }
}

/// Load a manifest and resolve its `from_env` values.
pub fn prepare(path: &Path, settings: ResolutionSettings) -> Result<Prepared, ConvergeError> {
    load(path, settings)?.for_host(None, &BTreeMap::new())
}

/// For `plan`, which shows secret values only as `***`: a manifest whose `from_env`
/// values the controller may lack. Each missing one is planned as unknown (empty) and
/// named in the second value; `apply` needs them all.
pub fn prepare_for_plan(
    path: &Path,
    settings: ResolutionSettings,
) -> Result<(Prepared, Vec<String>), ConvergeError> {
    load(path, settings)?.for_host_plan(None, &BTreeMap::new())
}

/// Load a manifest, its lock file and its rules, its `from_env` values not yet
/// resolved (each inventory host may supply its own: [`Prepared::for_host`]).
pub fn load(path: &Path, settings: ResolutionSettings) -> Result<Prepared, ConvergeError> {
    let text = manifest::read_text(path)?;
    let base = manifest::base_dir(path);
    let manifest = manifest::load_str(&text, &path.display().to_string(), Some(&base))?;
    let lock_path = settings
        .lock_file
        .clone()
        .unwrap_or_else(|| crate::resolve::lock_path_beside(path));
    // The manifest's `rules:`, then `--rules`: the last one laid over wins.
    let rules = RuleSet::load(
        manifest
            .rules
            .iter()
            .chain(settings.rules.iter())
            .map(PathBuf::as_path),
    )?;
    Ok(Prepared {
        sha256: crate::manifest::Sha256::of(text.as_bytes()),
        rules: Arc::new(rules),
        manifest,
        path: path.to_path_buf(),
        env: Vec::new(),
        lock_file: Arc::new(LockFile::read(lock_path)?),
        settings: Arc::new(settings),
        universe: Arc::default(),
        shared: Arc::default(),
    })
}

/// The probe request a manifest implies: what its plan reads ([`ProbeScope::Plan`]).
pub fn probe_request(manifest: &Manifest) -> ProbeRequest {
    let libraries = manifest
        .ldconfig
        .as_ref()
        .map(|ldconfig| ldconfig.expect.clone())
        .unwrap_or_default();
    let mut request = ProbeRequest::new(&manifest.target.python, libraries);
    request.scope = ProbeScope::Plan;
    request.paths = manifest
        .ldconfig
        .as_ref()
        .map(|ldconfig| ldconfig.paths.clone())
        .unwrap_or_default();
    request
}

/// The snapshot at `path` (the embedded one without), with the digests recorded beside
/// `manifest` laid over it: what `lock`, `plan`, `apply` and `index hash` resolve on.
pub fn universe_for(manifest: &Path, path: Option<&Path>) -> Result<Universe, ConvergeError> {
    let mut snapshot = match path {
        Some(path) => Snapshot::read(path)?,
        None => Snapshot::embedded()?,
    };
    let hashes_path = RecordedHashes::path_for(manifest);
    if let Some(recorded) = RecordedHashes::read_optional(&hashes_path)? {
        recorded.apply(&mut snapshot.universe, &hashes_path)?;
    }
    Ok(snapshot.universe)
}

/// The one way a manifest is resolved for a node: `file` names it in reports, e.g.
/// `manifests/sglang-0.5.9-cu130.yaml`.
pub fn resolve_lock(
    manifest: &Manifest,
    file: &str,
    environment: &TargetEnvironment,
    universe: &Universe,
    rules: &RuleSet,
) -> Result<Lock, crate::resolve::ResolveError> {
    let request = Request::from_manifest(manifest, file);
    crate::resolve::resolve(&request, universe, environment, rules)
}

/// The lock the run installs on the node of `facts`: the lock file when the settings
/// let it serve, else a resolution ([`resolution::lock_for`]).
pub fn lock(prepared: &Prepared, facts: &NodeFacts, node: &str) -> Result<Lock, ConvergeError> {
    lock_with_origin(prepared, facts, node).map(|(lock, _)| lock)
}

/// [`lock`], and where it came from.
pub fn lock_with_origin(
    prepared: &Prepared,
    facts: &NodeFacts,
    node: &str,
) -> Result<(Lock, LockOrigin), ConvergeError> {
    let environment = TargetEnvironment::from_node(&prepared.manifest, facts)?;
    resolution::lock_for(prepared, &environment, node)
}

/// The lock of `environment` on the run's snapshot (`--snapshot`, else the embedded
/// one), read once a run.
fn lock_on_snapshot(
    prepared: &Prepared,
    environment: &TargetEnvironment,
) -> Result<Lock, ConvergeError> {
    let universe = match prepared.universe.get() {
        Some(universe) => Arc::clone(universe),
        None => {
            let path = match &prepared.settings.source {
                Source::Snapshot(path) => Some(path.as_path()),
                Source::Auto | Source::Live => None,
            };
            let universe = Arc::new(universe_for(&prepared.path, path)?);
            // Two nodes may read it at once; either copy serves.
            let _ = prepared.universe.set(Arc::clone(&universe));
            universe
        }
    };
    Ok(resolve_lock(
        &prepared.manifest,
        &prepared.path.display().to_string(),
        environment,
        &universe,
        prepared.rules(),
    )?)
}

/// Index name → URL: the manifest's, or pip's configured default for an entry without
/// one (asked once a run of the settings' interpreter, and remembered in the cache
/// directory while nothing pip reads changed).
pub fn index_urls(prepared: &Prepared) -> Result<BTreeMap<String, String>, ConvergeError> {
    if let Some(urls) = prepared.shared.urls.get() {
        return Ok(urls.clone());
    }
    let urls = manifest_index_urls(&prepared.manifest, &prepared.settings.live)?;
    // Two nodes may find them at once; either copy serves.
    let _ = prepared.shared.urls.set(urls.clone());
    Ok(urls)
}

/// [`index_urls`] of a manifest read alone (no run to share them with), pip's default
/// asked of `options.python`.
pub fn manifest_index_urls(
    manifest: &Manifest,
    options: &LiveOptions,
) -> Result<BTreeMap<String, String>, ConvergeError> {
    let mut urls = BTreeMap::new();
    let mut default = None;
    for index in &manifest.indexes {
        let url = match (&index.url, &default) {
            (Some(url), _) => url.clone(),
            (None, Some(url)) => String::clone(url),
            (None, None) => {
                let cache = options.client.cache_dir.as_deref();
                let url = pip_record::default_index(options.python.as_os_str(), cache)?.url;
                default = Some(url.clone());
                url
            }
        };
        urls.insert(index.name.clone(), url);
    }
    Ok(urls)
}

/// Plan one node from its facts and a lock; `hash_command` is the command line that
/// records the digests the lock lacks.
pub fn plan_for(
    prepared: &Prepared,
    node: &str,
    facts: &NodeFacts,
    lock: &Lock,
    index_urls: &BTreeMap<String, String>,
    hash_command: &str,
    delivery: &crate::steps::Delivery,
) -> Result<NodePlan, ConvergeError> {
    let manifest_dir = prepared
        .path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    Ok(plan::plan_node(&PlanInput {
        node,
        manifest: &prepared.manifest,
        manifest_dir: &manifest_dir,
        lock,
        facts,
        index_urls,
        env: &prepared.env,
        hash_command,
        delivery,
    })?)
}

/// A node's plan with the lock it installs and where that lock came from.
pub struct Planned {
    /// The steps.
    pub plan: NodePlan,
    /// The lock the pip step installs.
    pub lock: Lock,
    /// The lock file, or why and where it was resolved.
    pub origin: LockOrigin,
}

/// The run's lock for the node of `facts` ([`lock_with_origin`]) and the node's plan
/// from it: what `plan`, `status` and a fleet's plan show.
pub fn lock_and_plan(
    prepared: &Prepared,
    node: &str,
    facts: &NodeFacts,
    hash_command: &str,
    delivery: &crate::steps::Delivery,
) -> Result<Planned, ConvergeError> {
    let (lock, origin) = lock_with_origin(prepared, facts, node)?;
    let urls = index_urls(prepared)?;
    let plan = plan_for(prepared, node, facts, &lock, &urls, hash_command, delivery)?;
    Ok(Planned { plan, lock, origin })
}

/// Probe the node.
pub async fn facts(transport: &Transport, prepared: &Prepared) -> Result<NodeFacts, ConvergeError> {
    Ok(exec::gather_facts(transport, &probe_request(&prepared.manifest)).await?)
}

/// Probe the node again between an apply's steps ([`ProbeScope::Step`]): what `first`,
/// the run's first probe, said of the GPUs and the driver is kept (no step changes
/// them, and `nvidia-smi` is not started again), the rest is read anew.
pub async fn facts_again(
    transport: &Transport,
    prepared: &Prepared,
    first: &NodeFacts,
) -> Result<NodeFacts, ConvergeError> {
    let fresh = exec::gather_facts(transport, &recheck_request(prepared)).await?;
    Ok(with_gpus_of(fresh, first))
}

/// What [`facts_again`] asks the node: the plan's probe without the GPUs.
pub fn recheck_request(prepared: &Prepared) -> ProbeRequest {
    ProbeRequest {
        scope: ProbeScope::Step,
        ..probe_request(&prepared.manifest)
    }
}

/// `fresh` with the GPUs, the driver and the `nvidia-smi` sections of `first`, read as
/// `first` was requested.
pub fn with_gpus_of(mut fresh: NodeFacts, first: &NodeFacts) -> NodeFacts {
    fresh.probe = first.probe.clone();
    fresh.driver = first.driver.clone();
    fresh.gpus = first.gpus.clone();
    fresh
        .unattributed_gpu_processes
        .clone_from(&first.unattributed_gpu_processes);
    fresh
        .sections
        .retain(|section| !section.name.starts_with("nvidia-smi"));
    fresh.sections.extend(
        first
            .sections
            .iter()
            .filter(|section| section.name.starts_with("nvidia-smi"))
            .cloned(),
    );
    fresh
}

/// Probe the node for `plan`: [`facts`], and who holds its GPUs when the verification
/// launch wants idle ones (a manifest's probe lists no GPU processes), so that the plan
/// warns when every GPU is busy. GPU processes are not in the facts' digest: a plan
/// saved from these facts matches `apply`'s probe.
pub async fn facts_for_plan(
    transport: &Transport,
    prepared: &Prepared,
) -> Result<NodeFacts, ConvergeError> {
    let mut facts = facts(transport, prepared).await?;
    let wants_idle = prepared
        .manifest
        .verify
        .as_ref()
        .is_some_and(|verify| verify.require_idle_gpus);
    if wants_idle && !facts.gpus.is_empty() {
        // Not known (no `nvidia-smi` answer): no warning, the launch checks again.
        if let Ok(holders) = exec::launch::gpu_holders(transport).await? {
            for gpu in &mut facts.gpus {
                gpu.processes = holders
                    .iter()
                    .filter(|holder| gpu.uuid.as_deref() == Some(holder.gpu_uuid.as_str()))
                    .cloned()
                    .collect();
            }
        }
    }
    Ok(facts)
}
