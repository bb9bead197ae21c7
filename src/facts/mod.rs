//! Node facts: what a GPU node has now, gathered by one probe script in one round trip
//! and read by pure parsers into [`NodeFacts`]. This module owns the script
//! ([`PROBE_SCRIPT`], [`ProbeRequest`]), the parsers (one file per source), the facts'
//! stable JSON (what `upgrade probe --format json` prints and `--facts FILE` reads), the
//! [`Finding`]s that the facts alone show, and the facts' [`FactsDigest`] for saved plans.
//! It does not run commands (the transports do) and holds no rules about which versions
//! go together (the rules module does).

mod digest;
mod driver;
mod error;
mod findings;
mod ldconfig;
mod nvidia_smi;
mod pip;
mod probe;
mod python;
mod sections;
mod system;
#[cfg(test)]
mod test_support;
mod toolkit;
mod torch;
mod versions;

use std::path::{Path, PathBuf};

use pep440_rs::Version;
use serde::{Deserialize, Serialize};

pub use digest::FactsDigest;
pub use driver::{DriverFacts, DriverVersionSource, KernelModule, parse_driver_version_file};
pub use error::FactsError;
pub use findings::{Finding, FindingCode, Severity, findings};
pub use ldconfig::{
    CudnnLibrary, LdSoConfFile, LdconfigEntry, LdconfigFacts, LibraryFile, parse_ld_so_conf,
    parse_ldconfig, parse_library_files,
};
pub use nvidia_smi::{
    GPU_FIELDS, GPU_FIELDS_WITHOUT_CAPABILITY, Gpu, GpuField, GpuProcess, GpuRow, attach_processes,
    parse_compute_apps, parse_gpus,
};
pub use pip::{
    InstalledPackage, PackageOrigin, PackagesSource, editable_path, find_package, parse_pip_freeze,
};
pub use probe::{DEFAULT_MARKER, PROBE_SCRIPT, ProbeRequest, ProbeScope};
pub use python::{
    Distribution, ENV_HOOK_FILE, EnvHookFacts, InterpreterReport, ManagedBlock, PythonFacts,
    SitecustomizeFacts, TagsSource, TorchFiles, managed_block, parse_python_report,
};
pub use sections::{Section, SectionStatus, Sections};
pub use system::{DiskSpace, Kernel, OsRelease, parse_disk, parse_os_release, parse_uname};
pub use toolkit::{
    PackageManager, Toolkit, ToolkitFacts, ToolkitPackage, ToolkitVersionSource,
    parse_nvcc_version, parse_toolkit_packages, parse_version_json, parse_version_txt,
};
pub use torch::{
    TorchBuild, TorchVariant, TorchVariantSource, parse_torch_version_py, torch_build,
};
pub use versions::{
    ComputeCapability, CudaVersion, DriverVersion, GlibcVersion, package_name, package_version,
};

/// The schema of [`NodeFacts`]' JSON that this build writes and reads.
pub const FACTS_SCHEMA: u32 = 1;

/// An installed torch, e.g. `2.11.0` at
/// `/opt/torch/.venv/lib/python3.12/site-packages/torch`, a CUDA `13.0` build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TorchFacts {
    /// The installed distribution's version, e.g. `2.11.0` or `2.9.1+cu130`.
    pub version: Option<Version>,
    /// The package directory, e.g. `/opt/torch/.venv/lib/python3.12/site-packages/torch`.
    pub location: PathBuf,
    /// What it was built for.
    pub build: TorchBuild,
}

/// How one probe section ended, e.g. `pip-freeze` exited `1` with `No module named pip`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionOutcome {
    /// The section's name, e.g. `pip-freeze`.
    pub name: String,
    /// What it was about, e.g. `/opt/ml-env/bin/python3`.
    pub argument: Option<String>,
    /// How its command ended.
    pub status: SectionStatus,
    /// Its standard error (bounded), when there was any.
    pub stderr: Option<String>,
}

/// Everything a node has now, as the planner and the resolver read it.
///
/// Absent things are facts: a node without `nvidia-smi` has no GPUs and (unless a
/// version file says otherwise) no driver; a fresh node may have no interpreter yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeFacts {
    /// The JSON schema, `1`.
    pub schema: u32,
    /// What was probed (interpreter, expected libraries, marker).
    pub probe: ProbeRequest,
    /// `/etc/os-release`, e.g. Ubuntu `24.04`.
    pub os: Option<OsRelease>,
    /// `uname -srm`, e.g. `Linux 6.18.44-fc-v973-gpu x86_64`.
    pub kernel: Option<Kernel>,
    /// The NVIDIA kernel driver, e.g. `580.159.04`; `None` when there is none.
    pub driver: Option<DriverFacts>,
    /// The GPUs in `nvidia-smi` order, each with the processes holding it.
    pub gpus: Vec<Gpu>,
    /// Compute processes whose GPU UUID matches none of [`NodeFacts::gpus`].
    pub unattributed_gpu_processes: Vec<GpuProcess>,
    /// Installed CUDA toolkits and the default one.
    pub toolkits: ToolkitFacts,
    /// The target interpreter; `None` when it does not exist (yet) or did not answer.
    pub python: Option<PythonFacts>,
    /// The `sitecustomize` module the target interpreter imports.
    pub sitecustomize: Option<SitecustomizeFacts>,
    /// The env step's start-up hook in the target environment's site-packages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_hook: Option<EnvHookFacts>,
    /// The target environment's packages, sorted by name.
    pub packages: Vec<InstalledPackage>,
    /// Where [`NodeFacts::packages`] was read.
    pub packages_source: Option<PackagesSource>,
    /// The installed torch and its build.
    pub torch: Option<TorchFacts>,
    /// The dynamic loader's cache and configuration.
    pub ldconfig: LdconfigFacts,
    /// The root-only files holding the env step's secret values (never their content).
    #[serde(default)]
    pub secret_files: Vec<SecretFile>,
    /// Free space under `/`, `/usr/local`, the environment and `/tmp`.
    pub disk: Vec<DiskSpace>,
    /// What earlier applies recorded about source installs, e.g. sglang's rev and patches.
    #[serde(default)]
    pub install_records: Vec<InstallRecord>,
    /// The run an interrupted apply left open in the node's journal (its last entry is
    /// not an end), e.g. `1796298216-32092`; `unreadable` when that line was cut off
    /// mid-write. Not part of the digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_journal_run: Option<String>,
    /// The journal's last line as the probe read it (`None`: no journal), e.g. for an
    /// apply to tell whether another apply changed the node between its probe and its
    /// lock. Not part of the digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_tail: Option<String>,
    /// How each probe section ended, for troubleshooting; not part of the digest.
    pub sections: Vec<SectionOutcome>,
}

/// A file holding secret values, as the probe sees it: who owns it, its mode and its
/// digest, e.g. `/etc/cuda-upgrade/secrets/env-1f2e….json`, `0:0`, `0o600`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretFile {
    /// e.g. `/etc/cuda-upgrade/secrets/env-1f2e3d4c5b6a7988.json`.
    pub path: PathBuf,
    /// The owner's uid, e.g. `0`.
    pub uid: u32,
    /// The group's gid, e.g. `0`.
    pub gid: u32,
    /// Permission bits, e.g. `0o600`.
    pub mode: u32,
    /// The SHA-256 of the content in hex.
    pub sha256: String,
}

impl SecretFile {
    /// Whether only its owner, root, can read it.
    pub fn is_private(&self) -> bool {
        self.uid == 0 && self.mode & 0o077 == 0
    }
}

/// Parses `PATH\tUID GID MODE\tSHA256` lines (section `secret-files`).
fn parse_secret_files(text: &str) -> Result<Vec<SecretFile>, FactsError> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            let invalid = || FactsError::InvalidLine {
                line: index + 1,
                text: line.to_string(),
            };
            let mut fields = line.split('\t');
            let (Some(path), Some(stat), Some(sha256)) =
                (fields.next(), fields.next(), fields.next())
            else {
                return Err(invalid());
            };
            let stat: Vec<&str> = stat.split(' ').collect();
            let [uid, gid, mode] = stat.as_slice() else {
                return Err(invalid());
            };
            Ok(SecretFile {
                path: PathBuf::from(path),
                uid: uid.parse().map_err(|_| invalid())?,
                gid: gid.parse().map_err(|_| invalid())?,
                mode: u32::from_str_radix(mode, 8).map_err(|_| invalid())?,
                sha256: sha256.to_string(),
            })
        })
        .collect()
}

/// What a source install left on the node, in `/var/lib/cuda-upgrade/records/NAME.json`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InstallRecord {
    /// The package, e.g. `sglang`.
    pub package: String,
    /// The repository, e.g. `https://github.com/sgl-project/sglang`.
    pub url: String,
    /// The revision asked for, e.g. `v0.5.9`.
    pub rev: String,
    /// The commit it resolved to.
    pub commit: String,
    /// The package's directory inside the repository, e.g. `python`.
    #[serde(default)]
    pub subdirectory: Option<String>,
    /// The sha256 of each applied patch, in order.
    #[serde(default)]
    pub patches: Vec<String>,
    /// The interpreter it was installed into.
    pub python: String,
}

impl NodeFacts {
    /// Parses the probe script's output (see [`PROBE_SCRIPT`]) into facts.
    ///
    /// Fails only when the output is not the probe's, or when a section whose command
    /// succeeded holds something its parser does not understand; missing tools and
    /// failed commands become absent facts (and [`SectionOutcome`]s).
    pub fn parse(text: &str) -> Result<Self, FactsError> {
        let sections = Sections::parse(text)?;
        let probe = sections
            .get("arguments")
            .map(|section| probe::parse_arguments(&section.stdout))
            .unwrap_or_default();

        let (mut gpus, smi_driver) = gpu_facts(&sections)?;
        let mut unattributed_gpu_processes = Vec::new();
        if let Some(section) = sections.succeeded("nvidia-smi-compute-apps") {
            let processes = parse_compute_apps(&section.stdout)
                .map_err(|error| error.in_section(&section.name))?;
            unattributed_gpu_processes = attach_processes(&mut gpus, processes);
        }

        let driver = match sections.succeeded("driver") {
            Some(section) => {
                let (version, kernel_module) = parse_driver_version_file(&section.stdout)
                    .map_err(|error| error.in_section(&section.name))?;
                Some(DriverFacts {
                    version,
                    kernel_module,
                    source: DriverVersionSource::File {
                        path: PathBuf::from(section.argument.clone().unwrap_or_default()),
                    },
                })
            }
            None => smi_driver.map(|version| DriverFacts {
                version,
                kernel_module: None,
                source: DriverVersionSource::NvidiaSmi,
            }),
        };

        let toolkits = toolkit::toolkit_facts(&sections)?;

        let mut python = None;
        let mut sitecustomize = None;
        let mut env_hook = None;
        let mut torch_files = None;
        let mut distributions = Vec::new();
        if let Some(section) = sections.succeeded("python") {
            let interpreter = section.argument.clone().unwrap_or_default();
            let report = parse_python_report(&interpreter, &section.stdout, &probe.marker)
                .map_err(|error| error.in_section(&section.name))?;
            python = Some(report.python);
            sitecustomize = Some(report.sitecustomize);
            env_hook = report.env_hook;
            torch_files = report.torch;
            distributions = report.distributions;
        }

        let (packages, packages_source) = match sections.succeeded("pip-freeze") {
            Some(section) => (
                parse_pip_freeze(&section.stdout)
                    .map_err(|error| error.in_section(&section.name))?,
                Some(PackagesSource::PipFreeze),
            ),
            None if python.is_some() => (
                pip::packages_from_distributions(&distributions)
                    .map_err(|error| error.in_section("python"))?,
                Some(PackagesSource::ImportlibMetadata),
            ),
            None => (Vec::new(), None),
        };

        let torch = torch_files.map(|files| {
            let version = find_package(&packages, "torch")
                .and_then(|package| package.version.clone())
                .or_else(|| {
                    files
                        .metadata_version
                        .as_deref()
                        .and_then(|v| v.parse().ok())
                });
            let build = torch_build(
                version.as_ref(),
                files.version_py.as_deref(),
                files.requires.as_deref().unwrap_or_default(),
            );
            TorchFacts {
                version,
                location: files.location,
                build,
            }
        });

        let mut ldconfig = LdconfigFacts::default();
        if let Some(section) = sections.succeeded("ldconfig") {
            ldconfig.entries =
                parse_ldconfig(&section.stdout).map_err(|error| error.in_section(&section.name))?;
        }
        if let Some(section) = sections.succeeded("library-files") {
            ldconfig.files = parse_library_files(&section.stdout)
                .map_err(|error| error.in_section(&section.name))?;
        }
        if let Some(section) = sections.succeeded("paths") {
            ldconfig.directories = parse_library_files(&section.stdout)
                .map_err(|error| error.in_section(&section.name))?;
        }
        let secret_files = match sections.succeeded("secret-files") {
            Some(section) => parse_secret_files(&section.stdout)
                .map_err(|error| error.in_section(&section.name))?,
            None => Vec::new(),
        };
        if let Some(section) = sections.succeeded("ld-so-conf") {
            ldconfig.conf_files = parse_ld_so_conf(&section.stdout)
                .map_err(|error| error.in_section(&section.name))?;
        }

        let disk = match sections.succeeded("disk") {
            Some(section) => {
                parse_disk(&section.stdout).map_err(|error| error.in_section(&section.name))?
            }
            None => Vec::new(),
        };
        let os = sections
            .succeeded("os-release")
            .map(|section| parse_os_release(&section.stdout));
        let kernel = sections
            .succeeded("uname")
            .and_then(|section| parse_uname(&section.stdout));

        let outcomes = sections
            .iter()
            .map(|section| SectionOutcome {
                name: section.name.clone(),
                argument: section.argument.clone(),
                status: section.status,
                stderr: (!section.stderr.is_empty()).then(|| section.stderr.clone()),
            })
            .collect();

        // The journal's last line (`None`: no journal): the run it leaves open, and what
        // an apply compares with the journal's end once it holds the node's lock.
        let journal_tail = sections
            .succeeded("journal-tail")
            .map(|section| section.stdout.trim_end_matches('\n').to_string())
            .filter(|line| !line.is_empty());
        Ok(Self {
            schema: FACTS_SCHEMA,
            probe,
            os,
            kernel,
            driver,
            gpus,
            unattributed_gpu_processes,
            toolkits,
            python,
            sitecustomize,
            env_hook,
            packages,
            packages_source,
            torch,
            ldconfig,
            secret_files,
            disk,
            install_records: sections
                .succeeded("install-records")
                .map(|section| {
                    section
                        .stdout
                        .lines()
                        .filter_map(|line| serde_json::from_str(line).ok())
                        .collect()
                })
                .unwrap_or_default(),
            open_journal_run: journal_tail.as_deref().and_then(open_journal_run),
            journal_tail,
            sections: outcomes,
        })
    }

    /// Reads facts JSON as [`NodeFacts::to_json`] writes it (extra top-level fields, such
    /// as a `findings` list printed beside them, are ignored).
    pub fn from_json(text: &str) -> Result<Self, FactsError> {
        let facts: Self = serde_json::from_str(text).map_err(FactsError::FactsJson)?;
        if facts.schema != FACTS_SCHEMA {
            return Err(FactsError::UnsupportedSchema {
                found: facts.schema,
            });
        }
        Ok(facts)
    }

    /// Reads a facts file, e.g. `h200.facts.json` given to `--facts`.
    pub fn read(path: &Path) -> Result<Self, FactsError> {
        let text = fs_err::read_to_string(path).map_err(|source| FactsError::ReadFacts {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json(&text)
    }

    /// The facts as pretty-printed JSON, fields in declaration order.
    pub fn to_json(&self) -> Result<String, FactsError> {
        serde_json::to_string_pretty(self).map_err(FactsError::SerializeFacts)
    }

    /// What the facts alone show is wrong or risky; see [`findings`].
    pub fn findings(&self) -> Vec<Finding> {
        findings(self)
    }

    /// The digest of the facts that matter for planning; see [`FactsDigest`].
    pub fn digest(&self) -> Result<FactsDigest, FactsError> {
        FactsDigest::of(self)
    }

    /// The installed package named `name` (any spelling), e.g. `nvidia_cudnn_cu13`.
    pub fn package(&self, name: &str) -> Option<&InstalledPackage> {
        find_package(&self.packages, name)
    }
}

/// The run the journal's last line leaves open: `None` when the journal is empty or its
/// last entry ends a run (an `end`, or a rollback's `rolled_back`).
fn open_journal_run(last_line: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Tail {
        run: String,
        event: String,
    }
    let line = last_line.trim();
    if line.is_empty() {
        return None;
    }
    match serde_json::from_str::<Tail>(line) {
        Ok(tail) if matches!(tail.event.as_str(), "end" | "rolled_back") => None,
        Ok(tail) => Some(tail.run),
        Err(_) => Some("unreadable".to_string()),
    }
}

/// GPUs from `nvidia-smi-gpus` (or its fallback without capability) and the driver
/// version those rows report.
fn gpu_facts(sections: &Sections) -> Result<(Vec<Gpu>, Option<DriverVersion>), FactsError> {
    let rows = if let Some(section) = sections.succeeded("nvidia-smi-gpus") {
        parse_gpus(&section.stdout, &GPU_FIELDS).map_err(|error| error.in_section(&section.name))?
    } else if let Some(section) = sections.succeeded("nvidia-smi-gpus-without-capability") {
        parse_gpus(&section.stdout, &GPU_FIELDS_WITHOUT_CAPABILITY)
            .map_err(|error| error.in_section(&section.name))?
    } else {
        Vec::new()
    };
    let driver = rows.iter().find_map(|row| row.driver_version.clone());
    Ok((rows.into_iter().map(|row| row.gpu).collect(), driver))
}

#[cfg(test)]
mod tests;
