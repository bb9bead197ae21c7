//! The digest of node facts that a saved plan records, so that `upgrade apply PLAN`
//! can refuse a plan whose node changed since. It covers what planning reads and leaves
//! out what changes on its own: GPU memory in use, the processes holding GPUs, free
//! disk space and the probe's stderr.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::facts::NodeFacts;
use crate::facts::error::FactsError;

/// A SHA-256 over the canonical JSON of the stable facts, e.g. `sha256:3b1f…` (64 hex
/// digits after the prefix).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FactsDigest(String);

/// A GPU without its volatile fields.
#[derive(Serialize)]
struct StableGpu<'a> {
    index: u32,
    name: &'a str,
    compute_capability: Option<String>,
    memory_total_mib: u64,
    uuid: Option<&'a str>,
}

/// A disk without its free space: only where things are mounted.
#[derive(Serialize)]
struct StableDisk<'a> {
    path: &'a std::path::Path,
    mount: &'a std::path::Path,
}

/// The facts a plan depends on, in a fixed field order.
#[derive(Serialize)]
struct StableFacts<'a> {
    schema: u32,
    probe: &'a crate::facts::ProbeRequest,
    os: &'a Option<crate::facts::OsRelease>,
    kernel: &'a Option<crate::facts::Kernel>,
    driver: &'a Option<crate::facts::DriverFacts>,
    gpus: Vec<StableGpu<'a>>,
    toolkits: &'a crate::facts::ToolkitFacts,
    python: &'a Option<crate::facts::PythonFacts>,
    sitecustomize: &'a Option<crate::facts::SitecustomizeFacts>,
    packages: &'a [crate::facts::InstalledPackage],
    torch: &'a Option<crate::facts::TorchFacts>,
    ldconfig: &'a crate::facts::LdconfigFacts,
    secret_files: &'a [crate::facts::SecretFile],
    disk: Vec<StableDisk<'a>>,
}

impl FactsDigest {
    /// The digest of `facts`.
    pub fn of(facts: &NodeFacts) -> Result<Self, FactsError> {
        let stable = StableFacts {
            schema: facts.schema,
            probe: &facts.probe,
            os: &facts.os,
            kernel: &facts.kernel,
            driver: &facts.driver,
            gpus: facts
                .gpus
                .iter()
                .map(|gpu| StableGpu {
                    index: gpu.index,
                    name: &gpu.name,
                    compute_capability: gpu
                        .compute_capability
                        .map(|capability| capability.to_string()),
                    memory_total_mib: gpu.memory_total_mib,
                    uuid: gpu.uuid.as_deref(),
                })
                .collect(),
            toolkits: &facts.toolkits,
            python: &facts.python,
            sitecustomize: &facts.sitecustomize,
            packages: &facts.packages,
            torch: &facts.torch,
            ldconfig: &facts.ldconfig,
            secret_files: &facts.secret_files,
            disk: facts
                .disk
                .iter()
                .map(|disk| StableDisk {
                    path: &disk.path,
                    mount: &disk.mount,
                })
                .collect(),
        };
        let canonical = serde_json::to_vec(&stable).map_err(FactsError::SerializeFacts)?;
        Ok(Self(format!(
            "sha256:{}",
            hex::encode(Sha256::digest(&canonical))
        )))
    }

    /// The digest as text, e.g. `sha256:3b1f…`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FactsDigest {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}
