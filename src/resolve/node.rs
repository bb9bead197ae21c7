//! The resolver's view of a probed node: [`NodeFacts`] → [`TargetEnvironment`].
//!
//! What the node has (interpreter, glibc, driver, GPUs) comes from its facts; what it
//! will have after the change (the manifest's toolkit) comes from the manifest. Where
//! the node lacks a fact (a fresh node has no environment yet), the manifest's target
//! fills in.

use crate::facts::NodeFacts;
use crate::index::tags::Arch;
use crate::manifest::Manifest;

use super::{FactsFile, Implementation, ResolveError, TargetEnvironment};

impl TargetEnvironment {
    /// The environment of a probed node converged to `manifest`.
    pub fn from_node(manifest: &Manifest, facts: &NodeFacts) -> Result<Self, ResolveError> {
        let planned = Self::from_manifest(manifest)?.to_facts();
        let python = facts.python.as_ref();
        let arch = match python.map(|python| python.machine.as_str()) {
            Some("aarch64" | "arm64") => Arch::Aarch64,
            _ => planned.arch,
        };
        let gpu_arch: Vec<_> = facts
            .gpus
            .iter()
            .filter_map(|gpu| gpu.compute_capability)
            .map(|capability| crate::cuda::GpuArch::new(capability.major(), capability.minor()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let toolkit = manifest
            .toolkit
            .as_ref()
            .map(|toolkit| toolkit.version.clone())
            .or_else(|| {
                facts
                    .toolkits
                    .default_toolkit()
                    .and_then(|toolkit| toolkit.version.clone())
            });
        Self::from_facts(FactsFile {
            python: python.map_or(planned.python, |python| python.version.to_string()),
            implementation: Implementation::Cpython,
            glibc: python
                .and_then(|python| python.glibc)
                .map_or(planned.glibc, |glibc| glibc.to_string()),
            arch,
            driver: facts.driver.as_ref().map(|driver| driver.version.clone()),
            gpu_arch: if gpu_arch.is_empty() && facts.driver.is_none() {
                planned.gpu_arch
            } else {
                gpu_arch
            },
            cuda_runtime: toolkit.as_ref().map(crate::cuda::CudaVersion::release),
            toolkit,
        })
    }

    /// Read `--facts FILE`: the JSON `upgrade probe --format json` prints, or the short
    /// environment form (`python`, `glibc`, `driver`, …).
    pub fn read_facts(manifest: &Manifest, text: &str, file: &str) -> Result<Self, ResolveError> {
        match NodeFacts::from_json(text) {
            Ok(facts) => Self::from_node(manifest, &facts),
            Err(_) => Self::parse_facts(text, file),
        }
    }
}
