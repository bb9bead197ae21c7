//! Plans: the desired state (manifest + lock) × a node's facts → the ordered steps for
//! that node, each with its action (`+ ~ -` or no-op), its reason and its exact
//! commands (secrets masked). Pure: `plan` is `apply` minus the executor.

mod render;
mod warnings;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::facts::NodeFacts;
use crate::manifest::{Manifest, PackageOrigin, Verify};
use crate::resolve::Lock;
use crate::steps::env::ResolvedVar;
use crate::steps::pip::{PackageCounts, PackageDiff};
use crate::steps::{self, Action, Step};

pub use render::{json, text};

/// Failed to plan a node.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The environment is missing and the manifest says nothing about creating it.
    #[error(
        "Failed to plan `{node}`: `{python}` does not exist and the manifest names no `target.base_python` to create it from"
    )]
    NoBaseInterpreter {
        /// e.g. `node0`.
        node: String,
        /// e.g. `/opt/ml-env/bin/python3`.
        python: String,
    },
    /// The installer cannot run on the node.
    #[error(
        "Failed to plan `{node}`: {detail} (use `--installer pip`, or give a uv for the node's machine with `--uv PATH`)"
    )]
    Installer {
        /// e.g. `node0`.
        node: String,
        /// e.g. `the uv binary /usr/bin/uv is built for x86_64 and the node is aarch64`.
        detail: String,
    },
    /// The pip step could not be planned.
    #[error(transparent)]
    Pip(#[from] steps::pip::PipError),
    /// A source install could not be planned.
    #[error(transparent)]
    Source(#[from] steps::source::SourceError),
}

/// Everything a node's plan is made from.
pub struct PlanInput<'a> {
    /// The node's name, e.g. `node0` or `local`.
    pub node: &'a str,
    /// The manifest.
    pub manifest: &'a Manifest,
    /// Its directory, for patch files.
    pub manifest_dir: &'a Path,
    /// Its resolution for this node.
    pub lock: &'a Lock,
    /// The node's facts.
    pub facts: &'a NodeFacts,
    /// Index name → URL for the lock's indexes.
    pub index_urls: &'a BTreeMap<String, String>,
    /// The manifest's variables with their values resolved.
    pub env: &'a [ResolvedVar],
    /// The command that records the sha256 of locked files without one, for this
    /// manifest and node, e.g. `upgrade index hash manifests/x.yaml --facts f.json`.
    pub hash_command: &'a str,
    /// Who downloads the locked files (the node, or the controller, which sends them)
    /// and what installs them.
    pub delivery: &'a steps::Delivery,
}

/// One node's plan.
#[derive(Debug, Clone)]
pub struct NodePlan {
    /// e.g. `node0`.
    pub node: String,
    /// The manifest's name.
    pub manifest: String,
    /// The ordered steps, no-ops included.
    pub steps: Vec<Step>,
    /// The verification launch that ends `apply`.
    pub verify: Option<Verify>,
    /// The benchmark `apply` runs before the first change and after the verification;
    /// `None` when the manifest has none or the node is already converged (nothing
    /// changes, nothing is measured).
    pub benchmark: Option<crate::manifest::Benchmark>,
    /// What the pip step does to each package; `None` when the manifest does not
    /// manage the environment's packages.
    pub packages: Option<PackageDiff>,
    /// Node facts that do not fit the manifest, e.g. a GPU outside `target.gpu_arch`.
    pub warnings: Vec<String>,
}

/// How many steps of each action a plan has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// `+`.
    pub create: usize,
    /// `~`.
    pub change: usize,
    /// `-`.
    pub remove: usize,
    /// Nothing to do.
    pub unchanged: usize,
    /// Steps that cannot be applied as planned (`apply` refuses the node).
    pub blocked: usize,
    /// What the pip step does to packages: every removal counted.
    pub packages: PackageCounts,
}

impl NodePlan {
    /// Counts by action.
    pub fn summary(&self) -> Summary {
        let mut summary = Summary::default();
        for step in &self.steps {
            match step.action {
                Action::Create => summary.create += 1,
                Action::Change => summary.change += 1,
                Action::Remove => summary.remove += 1,
                Action::NoOp => summary.unchanged += 1,
            }
            if step.blocked.is_some() {
                summary.blocked += 1;
            }
        }
        summary.packages = self
            .packages
            .as_ref()
            .map(PackageDiff::counts)
            .unwrap_or_default();
        summary
    }

    /// The steps that cannot be applied as planned.
    pub fn blocked(&self) -> Vec<&Step> {
        self.steps
            .iter()
            .filter(|step| step.blocked.is_some())
            .collect()
    }

    /// Block the node's step of `kind` (e.g. the pip step when the locked wheels fail
    /// the ABI check); `false` when the plan has no such step.
    pub fn block(&mut self, kind: steps::StepKind, why: String) -> bool {
        match self.steps.iter_mut().find(|step| step.kind == kind) {
            Some(step) => {
                step.blocked = Some(why);
                true
            }
            None => false,
        }
    }

    /// `true` when every step is a no-op.
    pub fn is_converged(&self) -> bool {
        self.steps.iter().all(|step| step.action == Action::NoOp)
    }
}

/// What the controller resolves a source install's build requirements against
/// (`--fetch controller`): the manifest's indexes, its index pins and policies, and
/// the node the lock was resolved for.
fn build_resolution(
    manifest: &Manifest,
    lock: &Lock,
    index_urls: &BTreeMap<String, String>,
) -> steps::BuildResolution {
    let indexes = manifest
        .indexes
        .iter()
        .filter_map(|index| {
            Some(steps::BuildIndex {
                name: index.name.clone(),
                url: index_urls.get(&index.name)?.clone(),
                explicit: index.explicit,
            })
        })
        .collect();
    let pins = manifest
        .packages
        .iter()
        .filter_map(|package| match &package.origin {
            PackageOrigin::Index {
                index: Some(index), ..
            } => Some((package.name.to_string(), index.clone())),
            _ => None,
        })
        .collect();
    steps::BuildResolution {
        indexes,
        pins,
        environment: lock.assumed.clone(),
        options: crate::resolve::Request::from_manifest(manifest, "").options,
    }
}

/// Plan one node: python environment, toolkit, pip pins, source installs, ldconfig,
/// env injection — in that order, each judged from the facts.
pub fn plan_node(input: &PlanInput<'_>) -> Result<NodePlan, PlanError> {
    let PlanInput {
        node,
        manifest,
        manifest_dir,
        lock,
        facts,
        index_urls,
        env,
        hash_command,
        delivery,
    } = input;
    let python = &manifest.target.python;
    if let Some(kernel) = &facts.kernel {
        delivery
            .installer
            .runs_on(&kernel.machine)
            .map_err(|detail| PlanError::Installer {
                node: node.to_string(),
                detail,
            })?;
    }
    let mut steps = Vec::new();
    let env_step = steps::python_env::plan(&manifest.target, facts).ok_or_else(|| {
        PlanError::NoBaseInterpreter {
            node: node.to_string(),
            python: python.display().to_string(),
        }
    })?;
    let fresh_env = env_step.action != Action::NoOp;
    steps.push(env_step);
    if let Some(toolkit) = &manifest.toolkit {
        steps.push(steps::toolkit::plan(toolkit, facts));
        steps.extend(steps::toolkit::removals(toolkit, facts));
    }
    // A new environment has nothing installed, whatever the old facts said.
    let empty;
    let package_facts = if fresh_env {
        empty = NodeFacts {
            python: None,
            sitecustomize: None,
            env_hook: None,
            packages: Vec::new(),
            install_records: Vec::new(),
            ..(*facts).clone()
        };
        &empty
    } else {
        *facts
    };
    // A manifest without packages does not manage the environment's packages.
    let mut packages = None;
    if !manifest.packages.is_empty() {
        let pip = steps::pip::plan(
            lock,
            python,
            package_facts,
            index_urls,
            hash_command,
            manifest.target.keep_unlocked_packages,
            delivery,
        )?;
        steps.push(pip.step);
        packages = Some(pip.packages);
    }
    let build_resolution = build_resolution(manifest, lock, index_urls);
    for package in &manifest.packages {
        if let PackageOrigin::Git(git) = &package.origin {
            steps.push(steps::source::plan(
                package.name.as_ref(),
                git,
                python,
                manifest_dir,
                &build_resolution,
                package_facts,
                delivery,
            )?);
        }
    }
    if let Some(ldconfig) = &manifest.ldconfig {
        steps.push(steps::ldconfig::plan(ldconfig, &manifest.name, facts));
    }
    if !env.is_empty() {
        // A new environment is planned against itself once it exists: `apply` probes
        // again after the python-env step and plans this step anew.
        let env_facts = if fresh_env { package_facts } else { *facts };
        steps.push(steps::env::plan(
            env,
            &manifest.name,
            python,
            env_facts,
            manifest.target.env_scope,
        ));
    }
    let changes = steps.iter().any(|step| step.action != Action::NoOp);
    Ok(NodePlan {
        node: node.to_string(),
        manifest: manifest.name.clone(),
        steps,
        verify: manifest.verify.clone(),
        benchmark: manifest.benchmark.clone().filter(|_| changes),
        packages,
        warnings: warnings::warnings(manifest, facts),
    })
}
