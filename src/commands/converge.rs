//! What `plan` and `apply` share: from a manifest and a node to that node's plan.
//!
//! Loads the manifest, gathers the node's facts in one round trip, resolves the
//! manifest for that node (offline on a snapshot, with the digests recorded beside the
//! manifest), finds each index's URL (pip's configured default for an entry without
//! one), resolves `from_env` values on the controller, and plans.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::commands::CommandError;
use crate::exec;
use crate::facts::{NodeFacts, ProbeRequest};
use crate::index::pip_config;
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
    pub sha256: String,
    /// Its variables with values.
    pub env: Vec<ResolvedVar>,
}

/// Load a manifest and resolve its `from_env` values.
pub fn prepare(path: &Path) -> Result<Prepared, CommandError> {
    let text = manifest::read_text(path)?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let manifest = manifest::load_str(&text, &path.display().to_string(), Some(&base))?;
    let env = resolve(&manifest.env, env::var).map_err(CommandError::Env)?;
    Ok(Prepared {
        sha256: hex::encode(<sha2::Sha256 as sha2::Digest>::digest(text.as_bytes())),
        manifest,
        path: path.to_path_buf(),
        env,
    })
}

/// The probe request a manifest implies.
pub fn probe_request(manifest: &Manifest) -> ProbeRequest {
    let libraries = manifest
        .ldconfig
        .as_ref()
        .map(|ldconfig| ldconfig.expect.clone())
        .unwrap_or_default();
    let mut request = ProbeRequest::new(&manifest.target.python, libraries);
    request.paths = manifest
        .ldconfig
        .as_ref()
        .map(|ldconfig| ldconfig.paths.clone())
        .unwrap_or_default();
    request
}

/// Resolve the manifest for the node's facts.
pub fn lock(
    prepared: &Prepared,
    facts: &NodeFacts,
    snapshot: Option<&Path>,
) -> Result<Lock, CommandError> {
    let environment = TargetEnvironment::from_node(&prepared.manifest, facts)?;
    let universe = super::lock::universe_for(&prepared.path, snapshot)?;
    let rules = RuleSet::embedded()?;
    let request = Request::from_manifest(&prepared.manifest, &prepared.path.display().to_string());
    Ok(crate::resolve::resolve(
        &request,
        &universe,
        &environment,
        &rules,
    )?)
}

/// Index name → URL: the manifest's, or pip's configured default for an entry without one.
pub fn index_urls(manifest: &Manifest) -> Result<BTreeMap<String, String>, CommandError> {
    let mut urls = BTreeMap::new();
    for index in &manifest.indexes {
        let url = match &index.url {
            Some(url) => url.clone(),
            None => pip_config::default_index(OsStr::new("python3"))?.url,
        };
        urls.insert(index.name.clone(), url);
    }
    Ok(urls)
}

/// Plan one node from its facts and a lock; `hash_command` records the digests the
/// lock lacks (`super::index::hash_command`).
pub fn plan_for(
    prepared: &Prepared,
    node: &str,
    facts: &NodeFacts,
    lock: &Lock,
    index_urls: &BTreeMap<String, String>,
    hash_command: &str,
) -> Result<NodePlan, CommandError> {
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
    })?)
}

/// Probe the node.
pub async fn facts(transport: &Transport, prepared: &Prepared) -> Result<NodeFacts, CommandError> {
    Ok(exec::gather_facts(transport, &probe_request(&prepared.manifest)).await?)
}
