//! Findings: what the facts alone show is wrong or risky on a node, e.g. a system cuDNN
//! older than the one torch's wheel needs, or a `sitecustomize.py` that would be
//! shadowed. A pure function of [`NodeFacts`]; rules that need a manifest or sourced
//! compatibility data (driver minimums, ABI pins) live elsewhere.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::facts::NodeFacts;
use crate::facts::python::is_under;
use crate::facts::sections::SectionStatus;
use crate::facts::torch::TorchVariant;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Worth knowing, e.g. torch carries no local label.
    Info,
    /// Likely to break a launch or a step, e.g. busy GPUs.
    Warning,
}

/// What a finding is about; stable, for scripts reading `--format json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingCode {
    /// A cuDNN on the loader path is older than the one torch's wheel requires.
    SystemCudnnOlderThanWheel,
    /// The interpreter imports a `sitecustomize` from outside its environment.
    SitecustomizeOutsideEnvironment,
    /// The `sitecustomize.py` every start of the interpreter runs can be changed by
    /// users other than its owner, or is not owned by root.
    SitecustomizeWritableByOthers,
    /// A secrets file of the env step can be read by users other than root.
    SecretFileReadable,
    /// Compute processes hold GPUs.
    GpusBusy,
    /// torch's local label names another variant than its build.
    TorchVariantDisagreesWithLabel,
    /// torch's version carries no local label; its variant was read from the build.
    TorchLabelMissing,
    /// A library the manifest expects is not in the loader cache.
    ExpectedLibraryMissing,
    /// The target interpreter does not exist.
    InterpreterMissing,
    /// No `nvidia-smi`: no GPUs or driver were seen.
    NoGpus,
    /// A probe command failed.
    ProbeSectionFailed,
    /// A native extension needs a symbol that the package meant to provide it does not
    /// export (`upgrade abi-check` shows every one).
    AbiSymbolMissing,
}

/// One finding, e.g. warning `system-cudnn-older-than-wheel`: "System cuDNN `9.14.0` in
/// `/usr/lib/x86_64-linux-gnu` is older than the `9.19.0.56` torch's wheel requires".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// What it is about.
    pub code: FindingCode,
    /// What the facts show, values in backticks.
    pub message: String,
    /// What to do about it, printed after the message as `hint: …`.
    pub hint: Option<String>,
}

impl Finding {
    fn new(severity: Severity, code: FindingCode, message: String, hint: Option<String>) -> Self {
        Self {
            severity,
            code,
            message,
            hint,
        }
    }
}

/// The first `count` components of a release, zero padded, e.g. `9.19.0.56` → `[9, 19, 0]`.
fn release_prefix(release: &[u64], count: usize) -> Vec<u64> {
    (0..count)
        .map(|index| release.get(index).copied().unwrap_or_default())
        .collect()
}

/// Computes every finding the facts show, most severe first.
pub fn findings(facts: &NodeFacts) -> Vec<Finding> {
    let mut found = Vec::new();
    cudnn(facts, &mut found);
    sitecustomize(facts, &mut found);
    file_permissions(facts, &mut found);
    gpus(facts, &mut found);
    torch(facts, &mut found);
    libraries(facts, &mut found);
    absences(facts, &mut found);
    found.sort_by_key(|finding| std::cmp::Reverse(finding.severity));
    found
}

fn cudnn(facts: &NodeFacts, found: &mut Vec<Finding>) {
    let wheel = facts
        .torch
        .as_ref()
        .and_then(|torch| torch.build.required_cudnn.clone())
        .map(|version| (version, "torch's wheel requires"))
        .or_else(|| {
            facts
                .packages
                .iter()
                .find(|package| package.name.to_string().starts_with("nvidia-cudnn-cu"))
                .and_then(|package| package.version.clone())
                .map(|version| (version, "the environment's wheel installs"))
        });
    let Some((wheel, source)) = wheel else {
        return;
    };
    let environment = facts.python.as_ref().map(|python| python.prefix.as_path());
    for library in facts.ldconfig.cudnn_libraries() {
        if environment.is_some_and(|prefix| is_under(&library.directory, prefix)) {
            continue;
        }
        if release_prefix(library.version.release(), 3) < release_prefix(wheel.release(), 3) {
            found.push(Finding::new(
                Severity::Warning,
                FindingCode::SystemCudnnOlderThanWheel,
                format!(
                    "System cuDNN `{}` in `{}` is on the loader path and older than the `{wheel}` {source}",
                    library.version,
                    library.directory.display(),
                ),
                Some(format!(
                    "a library that loads `libcudnn.so.{}` by name before torch does gets `{}`; \
                     remove the system cuDNN or make sure the wheel's copy is loaded first",
                    library.version.release().first().copied().unwrap_or_default(),
                    library.version,
                )),
            ));
        }
    }
}

/// Files every start of the interpreter runs, or that hold secrets, must not be open to
/// other users: the one code path from a local user to root.
fn file_permissions(facts: &NodeFacts, found: &mut Vec<Finding>) {
    if let Some(site) = &facts.sitecustomize
        && let (Some(real), Some(mode)) = (&site.real_path, site.mode)
        && (mode & 0o022 != 0 || site.uid.is_some_and(|uid| uid != 0))
    {
        found.push(Finding::new(
            Severity::Warning,
            FindingCode::SitecustomizeWritableByOthers,
            format!(
                "`{}` (run by every start of the interpreter, root's included) has mode `{mode:o}` and owner uid `{}`",
                real.display(),
                site.uid.map_or_else(|| "unknown".to_string(), |uid| uid.to_string())
            ),
            Some(format!(
                "`chown root:root {0}` and `chmod go-w {0}`; `upgrade apply` keeps a file's mode as it finds it",
                real.display()
            )),
        ));
    }
    for file in facts.secret_files.iter().filter(|file| !file.is_private()) {
        found.push(Finding::new(
            Severity::Warning,
            FindingCode::SecretFileReadable,
            format!(
                "the secrets file `{}` has mode `{:o}` and owner uid `{}`",
                file.path.display(),
                file.mode,
                file.uid
            ),
            Some("the next `upgrade apply` makes it root-only (0600)".to_string()),
        ));
    }
}

fn sitecustomize(facts: &NodeFacts, found: &mut Vec<Finding>) {
    let (Some(python), Some(sitecustomize)) = (&facts.python, &facts.sitecustomize) else {
        return;
    };
    let Some(origin) = &sitecustomize.origin else {
        return;
    };
    if !python.is_virtual_environment() || is_under(origin, &python.prefix) {
        return;
    }
    let mut message = format!(
        "`{}` imports `{}`, outside its environment `{}`: a `sitecustomize.py` in the environment's site-packages is never imported",
        python.executable.display(),
        origin.display(),
        python.prefix.display(),
    );
    for shadowed in &sitecustomize.shadowed {
        let _ = write!(message, "; `{}` is shadowed", shadowed.display());
    }
    let startup_file = python
        .site_packages
        .first()
        .map(|directory| {
            format!(
                " or through a `.pth` start-up file in `{}`",
                directory.display()
            )
        })
        .unwrap_or_default();
    found.push(Finding::new(
        Severity::Warning,
        FindingCode::SitecustomizeOutsideEnvironment,
        message,
        Some(format!(
            "inject environment variables into `{}`, the file the interpreter imports,{startup_file}",
            origin.display()
        )),
    ));
}

fn gpus(facts: &NodeFacts, found: &mut Vec<Finding>) {
    let mut holders = Vec::new();
    for gpu in &facts.gpus {
        for process in &gpu.processes {
            holders.push(format!(
                "GPU `{}` (`{}`) is held by `{}` (pid `{}`{})",
                gpu.index,
                gpu.name,
                process.process_name,
                process.pid,
                process
                    .used_memory_mib
                    .map(|mib| format!(", `{mib}` MiB"))
                    .unwrap_or_default(),
            ));
        }
    }
    for process in &facts.unattributed_gpu_processes {
        holders.push(format!(
            "GPU `{}` is held by `{}` (pid `{}`{})",
            process.gpu_uuid,
            process.process_name,
            process.pid,
            process
                .used_memory_mib
                .map(|mib| format!(", `{mib}` MiB"))
                .unwrap_or_default(),
        ));
    }
    if !holders.is_empty() {
        found.push(Finding::new(
            Severity::Warning,
            FindingCode::GpusBusy,
            holders.join("; "),
            Some(
                "stop these processes before a verification launch that requires idle GPUs"
                    .to_string(),
            ),
        ));
    }
}

fn torch(facts: &NodeFacts, found: &mut Vec<Finding>) {
    let Some(torch) = &facts.torch else {
        return;
    };
    let version = torch
        .version
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_else(|| "unknown".to_string());
    let TorchVariant::Cuda {
        version: build_cuda,
    } = &torch.build.variant
    else {
        if let (Some(label), TorchVariant::Cpu | TorchVariant::Rocm { .. }) =
            (torch.build.label_cuda(), &torch.build.variant)
        {
            found.push(Finding::new(
                Severity::Warning,
                FindingCode::TorchVariantDisagreesWithLabel,
                format!("torch `{version}` is labelled CUDA `{label}` but is not a CUDA build"),
                None,
            ));
        }
        return;
    };
    match torch.build.label_cuda() {
        Some(label) if label.major_minor() != build_cuda.major_minor() => {
            found.push(Finding::new(
                Severity::Warning,
                FindingCode::TorchVariantDisagreesWithLabel,
                format!(
                    "torch `{version}` is labelled CUDA `{label}` but was built for CUDA `{build_cuda}`"
                ),
                Some("reinstall torch from the index of the variant the manifest names".to_string()),
            ));
        }
        _ => {}
    }
    if torch.build.local_label.is_none() {
        found.push(Finding::new(
            Severity::Info,
            FindingCode::TorchLabelMissing,
            format!(
                "torch `{version}` carries no local label; its build is CUDA `{build_cuda}` (read from {})",
                match torch.build.variant_source {
                    crate::facts::TorchVariantSource::VersionPy => "`torch/version.py`",
                    crate::facts::TorchVariantSource::Requirements => "its CUDA requirements",
                    crate::facts::TorchVariantSource::LocalLabel
                    | crate::facts::TorchVariantSource::NoEvidence => "its label",
                }
            ),
            None,
        ));
    }
}

fn libraries(facts: &NodeFacts, found: &mut Vec<Finding>) {
    let cache_read = facts
        .sections
        .iter()
        .any(|section| section.name == "ldconfig" && section.status == SectionStatus::Exited(0));
    if !cache_read {
        return;
    }
    for library in &facts.probe.libraries {
        if facts.ldconfig.resolve(library).is_none() {
            found.push(Finding::new(
                Severity::Warning,
                FindingCode::ExpectedLibraryMissing,
                format!("`{library}` is not in the loader cache (`ldconfig -p`)"),
                Some(format!(
                    "register the directory holding `{library}` in `/etc/ld.so.conf.d/` and run `ldconfig`"
                )),
            ));
        }
    }
}

fn absences(facts: &NodeFacts, found: &mut Vec<Finding>) {
    let capability_retry_worked = facts.sections.iter().any(|section| {
        section.name == "nvidia-smi-gpus-without-capability"
            && section.status == SectionStatus::Exited(0)
    });
    let mut nvidia_smi_reported = false;
    for section in &facts.sections {
        match (section.name.as_str(), section.status) {
            ("python", SectionStatus::Absent) => {
                if let Some(python) = &facts.probe.python {
                    found.push(Finding::new(
                        Severity::Info,
                        FindingCode::InterpreterMissing,
                        format!(
                            "The target interpreter `{}` does not exist",
                            python.display()
                        ),
                        None,
                    ));
                }
            }
            ("nvidia-smi-gpus", SectionStatus::Absent) => found.push(Finding::new(
                Severity::Info,
                FindingCode::NoGpus,
                "`nvidia-smi` is not installed: no GPUs were seen".to_string(),
                None,
            )),
            // A failed capability query is retried without the field.
            ("nvidia-smi-gpus", SectionStatus::Exited(_)) if capability_retry_worked => {}
            // pip is optional: the interpreter lists distributions itself.
            ("pip-freeze", SectionStatus::Exited(code))
                if code != 0 && facts.packages_source.is_some() => {}
            (name, SectionStatus::Exited(code)) if code != 0 => {
                // One broken `nvidia-smi` (say, no driver loaded) fails all its queries.
                if name.starts_with("nvidia-smi-") {
                    if nvidia_smi_reported {
                        continue;
                    }
                    nvidia_smi_reported = true;
                }
                let stderr = section
                    .stderr
                    .as_deref()
                    .and_then(|stderr| stderr.lines().find(|line| !line.trim().is_empty()))
                    .map(|line| format!(": {}", line.trim()))
                    .unwrap_or_default();
                found.push(Finding::new(
                    Severity::Warning,
                    FindingCode::ProbeSectionFailed,
                    format!("Probe section `{name}` exited with status `{code}`{stderr}"),
                    None,
                ));
            }
            _ => {}
        }
    }
}
