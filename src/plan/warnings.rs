//! What a plan warns about: node facts that do not fit the manifest but block nothing by
//! themselves — GPUs outside `target.gpu_arch`, every GPU busy while the verification
//! launch wants idle ones, facts probed for another interpreter than the manifest's.

use crate::cuda::GpuArch;
use crate::facts::NodeFacts;
use crate::manifest::Manifest;

/// The warnings for `manifest` on the node of `facts`, each naming what and where.
pub fn warnings(manifest: &Manifest, facts: &NodeFacts) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(probed) = &facts.probe.python
        && *probed != manifest.target.python
    {
        out.push(format!(
            "the facts were probed for `{}`, not for the manifest's `target.python` `{}`: the interpreter, its packages and its sitecustomize are another environment's; probe again with this manifest",
            probed.display(),
            manifest.target.python.display()
        ));
    }
    if !manifest.target.gpu_arch.is_empty() {
        for gpu in &facts.gpus {
            let Some(capability) = gpu.compute_capability else {
                continue;
            };
            let arch = GpuArch::new(capability.major(), capability.minor());
            let listed = manifest
                .target
                .gpu_arch
                .iter()
                .any(|wanted| wanted.major() == arch.major() && wanted.minor() == arch.minor());
            if !listed {
                out.push(format!(
                    "GPU {} ({}, {arch}) is not in `target.gpu_arch` [{}]: the stack was resolved for other architectures",
                    gpu.index,
                    gpu.name,
                    manifest
                        .target
                        .gpu_arch
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    if let Some(verify) = &manifest.verify
        && verify.require_idle_gpus
        && !facts.gpus.is_empty()
        && facts.gpus.iter().all(|gpu| !gpu.processes.is_empty())
    {
        let processes: usize = facts.gpus.iter().map(|gpu| gpu.processes.len()).sum();
        out.push(format!(
            "every GPU is in use ({processes} compute process{}): the verification launch refuses busy GPUs, so `apply` would fail at its end; free them or pass `--no-verify`",
            if processes == 1 { "" } else { "es" }
        ));
    }
    out
}
