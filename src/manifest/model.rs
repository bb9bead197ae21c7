//! The typed manifest, schema 1: what a validated manifest file says.
//!
//! Every value here has already been parsed (PEP 440 specifiers, PEP 508 requirements,
//! CUDA versions, absolute paths, sha256 digests, durations), so later stages never
//! re-check syntax. Spans are kept where a later stage reports on a line of the file
//! (the resolver's conflict report names the manifest line that asked for a package).
//! Loading lives in `manifest::load`; this module has no I/O.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use pep440_rs::VersionSpecifiers;
use pep508_rs::{PackageName, Requirement};
use serde::Serialize;

use super::yaml::Span;
use crate::cuda::{CudaVersion, CudaWheelPolicy, DriverVersion, GpuArch};

/// The only schema version this build reads.
pub const SCHEMA_VERSION: u32 = 1;

/// A whole manifest, e.g. `manifests/sglang-0.5.9-cu130.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Manifest {
    /// Human name of the stack, e.g. `sglang-0.5.9-cuda13`.
    pub name: String,
    /// Optional free text for reviewers.
    pub description: Option<String>,
    /// Which `upgrade` versions may apply this manifest, e.g. `>=0.2`.
    #[serde(serialize_with = "serialize_display_opt")]
    pub upgrade: Option<semver::VersionReq>,
    /// When pre-releases and dev releases may be chosen, e.g. `allow`.
    pub prereleases: Prereleases,
    /// A user rules directory laid over the embedded rule tables (`rules:`): absolute, or
    /// resolved against the manifest's directory, e.g. `manifests/site-rules`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rules: Option<PathBuf>,
    /// The environment being converged.
    pub target: Target,
    /// The CUDA toolkit to install, if any.
    pub toolkit: Option<Toolkit>,
    /// Package indexes in priority order.
    pub indexes: Vec<Index>,
    /// Direct packages, in file order.
    pub packages: Vec<Package>,
    /// Requirements that replace every other requirement on the same package.
    pub overrides: Vec<Pin>,
    /// Requirements that narrow a package if it is in the closure, without adding it.
    pub constraints: Vec<Pin>,
    /// Shared-library registration with the dynamic linker.
    pub ldconfig: Option<Ldconfig>,
    /// Variables injected into every start of the target interpreter.
    pub env: Vec<EnvVar>,
    /// The verification launch.
    pub verify: Option<Verify>,
    /// How the node's production service is started again after the verification.
    pub service: Option<Service>,
    /// The workload measured before and after an apply changes the node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<Benchmark>,
}

/// When the resolver may choose a pre-release or dev release (`prereleases:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Prereleases {
    /// Only for a package whose every release is one, or that a requirement of the
    /// manifest names one for (`if-necessary-or-explicit`, pip's and uv's default).
    #[default]
    IfNecessaryOrExplicit,
    /// For every package (`allow`).
    Allow,
}

impl FromStr for Prereleases {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "if-necessary-or-explicit" => Ok(Self::IfNecessaryOrExplicit),
            "allow" => Ok(Self::Allow),
            _ => Err(format!(
                "`{value}` is not a pre-release policy (expected `if-necessary-or-explicit` or `allow`)"
            )),
        }
    }
}

/// The environment on the node that the manifest converges.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Target {
    /// The interpreter of the environment, e.g. `/opt/ml-env/bin/python3`.
    pub python: PathBuf,
    /// The interpreter that creates the environment when it is missing, e.g. `/usr/bin/python3`.
    pub base_python: Option<PathBuf>,
    /// The interpreter's `MAJOR.MINOR[.PATCH]` when resolving without a node, e.g. `3.12`.
    pub python_version: Option<String>,
    /// The node's glibc when resolving without a node, e.g. `2.35` (`manylinux_2_35`).
    pub glibc: Option<String>,
    /// The driver assumed when resolving without a node, e.g. `580.82.07`.
    pub driver: Option<DriverVersion>,
    /// GPU architectures the stack must run on, e.g. `[sm_90, sm_120]`.
    pub gpu_arch: Vec<GpuArch>,
    /// Which CUDA majors the wheels may carry, e.g. `toolkit`; `None` is `any`.
    pub cuda_wheels: Option<CudaWheelPolicy>,
    /// Which interpreters the `env` variables reach.
    pub env_scope: EnvScope,
    /// Keep installed packages the lock does not name (by default `apply` removes them).
    pub keep_unlocked_packages: bool,
}

/// Which interpreters see the manifest's `env` variables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EnvScope {
    /// Only the target environment's interpreters: a `.pth` start-up file in its
    /// site-packages (the default).
    #[default]
    Environment,
    /// Every environment of the target's base interpreter: a block in the
    /// `sitecustomize.py` the target imports (on Debian and Ubuntu the system one).
    Interpreter,
}

/// How a toolkit is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InstallerKind {
    /// NVIDIA's self-extracting `cuda_X.Y.Z_DRIVER_linux.run`, run with `--silent --toolkit`.
    Runfile,
    /// The distribution's `cuda-toolkit-X-Y` package from NVIDIA's apt repository.
    Apt,
}

impl fmt::Display for InstallerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Runfile => "runfile",
            Self::Apt => "apt",
        })
    }
}

/// A CUDA toolkit installation, e.g. 13.0.1 into `/usr/local/cuda-13.0`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Toolkit {
    /// The toolkit version, e.g. `13.0.1`.
    pub version: CudaVersion,
    /// Where it is installed, e.g. `/usr/local/cuda-13.0`.
    pub prefix: PathBuf,
    /// Runfile or apt.
    pub installer: InstallerKind,
    /// Where the installer comes from (a runfile needs one).
    pub source: Option<Source>,
    /// The apt package for `installer: apt`, e.g. `cuda-toolkit-13-0`.
    pub package: Option<String>,
    /// Keep other toolkits installed side by side (default `true`).
    pub keep_existing: bool,
    /// Where the fact that pins this toolkit comes from.
    pub provenance: Option<String>,
}

/// A downloadable file with its digest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    /// Where to download it, e.g. `https://developer.download.nvidia.com/.../cuda_13.0.1_580.82.07_linux.run`.
    pub url: String,
    /// Its sha256, 64 lowercase hex digits.
    pub sha256: Sha256,
}

/// A sha256 digest, 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Sha256(String);

impl TryFrom<String> for Sha256 {
    type Error = String;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<Sha256> for String {
    fn from(value: Sha256) -> Self {
        value.0
    }
}

impl Sha256 {
    /// The digest as hex.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The digest of `bytes`, e.g. of a manifest's text.
    pub fn of(bytes: &[u8]) -> Self {
        Self(hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes)))
    }
}

impl PartialEq<str> for Sha256 {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<String> for Sha256 {
    fn eq(&self, other: &String) -> bool {
        self.0 == *other
    }
}

impl FromStr for Sha256 {
    type Err = String;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let digits = value.strip_prefix("sha256:").unwrap_or(value);
        if digits.len() == 64 && digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(Self(digits.to_ascii_lowercase()))
        } else {
            Err(format!(
                "expected a sha256 digest of 64 hex digits, found `{}` ({} characters)",
                crate::text::text_value(value),
                digits.chars().count()
            ))
        }
    }
}

impl fmt::Display for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A named package index, e.g. `pytorch-cu130`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Index {
    /// The name packages refer to, e.g. `pytorch-cu130`.
    pub name: String,
    /// The simple-API base URL; `None` means the index pip is configured with.
    pub url: Option<String>,
    /// An explicit index serves only the packages that name it.
    pub explicit: bool,
    /// Where the index's role is documented.
    pub provenance: Option<String>,
    /// Where the entry was written.
    #[serde(skip)]
    pub span: Span,
}

/// A direct package of the stack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Package {
    /// Normalized name, e.g. `sgl-kernel`.
    #[serde(serialize_with = "serialize_display")]
    pub name: PackageName,
    /// Where the version or source comes from.
    pub origin: PackageOrigin,
    /// Extras to install, e.g. `[srt]`.
    pub extras: Vec<String>,
    /// Why this pin, for reviewers.
    pub reason: Option<String>,
    /// Where the entry was written.
    #[serde(skip)]
    pub span: Span,
}

/// Where a direct package comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum PackageOrigin {
    /// A release from an index, selected by a PEP 440 specifier.
    Index {
        /// e.g. `==2.9.1+cu130`; empty means any version.
        #[serde(serialize_with = "serialize_display")]
        specifiers: VersionSpecifiers,
        /// The index name, or `None` for the first index that has the package.
        index: Option<String>,
    },
    /// A source checkout built on the node.
    Git(GitSource),
}

/// A git source: repository, revision, subdirectory and local patches.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GitSource {
    /// e.g. `https://github.com/sgl-project/sglang`.
    pub url: String,
    /// A tag, branch or commit, e.g. `v0.5.9`.
    pub rev: String,
    /// The package's directory inside the repository, e.g. `python`.
    pub subdirectory: Option<String>,
    /// Patch files, relative to the manifest's directory, applied in order.
    pub patches: Vec<PathBuf>,
    /// The version the checkout builds, used by the resolver, e.g. `0.5.9`.
    pub version: Option<pep440_rs::Version>,
}

/// An override or constraint: a requirement with the reason it exists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pin {
    /// e.g. `flashinfer-python==0.6.4`.
    #[serde(serialize_with = "serialize_display")]
    pub requirement: Requirement,
    /// Why, in words a reviewer can check, e.g. `sglang 0.5.9 pins 0.6.3; 0.6.4 fixes …`.
    pub reason: String,
    /// Where the fact behind the reason comes from.
    pub provenance: Option<String>,
    /// Where the entry was written.
    #[serde(skip)]
    pub span: Span,
}

/// Registration of library directories with the dynamic linker.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ldconfig {
    /// The conf file to own, e.g. `/etc/ld.so.conf.d/cuda-13-0.conf`.
    pub file: PathBuf,
    /// Directories it lists, e.g. `/usr/local/cuda-13.0/targets/x86_64-linux/lib`.
    pub paths: Vec<PathBuf>,
    /// Sonames that must then resolve into those directories, e.g. `libnvrtc.so.13`.
    pub expect: Vec<String>,
}

/// One environment variable.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvVar {
    /// e.g. `CUDA_HOME`.
    pub name: String,
    /// Where the value comes from.
    pub value: EnvValue,
    /// A secret is never printed: plans, logs, diffs and journals show `***`.
    pub secret: bool,
    /// Set even when the process already has the variable; by default a value the
    /// process was started with wins (`NCCL_DEBUG=INFO python …`).
    pub override_existing: bool,
}

/// Where an environment variable's value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum EnvValue {
    /// Written in the manifest, e.g. `/usr/local/cuda-13.0`.
    Literal(String),
    /// Read from the controller's environment at apply time, e.g. `HF_TOKEN`.
    FromEnv(String),
}

/// The verification launch that proves the stack works.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verify {
    /// The program and its arguments, e.g. `[python3, -m, sglang.launch_server, …]`.
    pub launch: Vec<String>,
    /// Working directory of the launch.
    pub workdir: Option<PathBuf>,
    /// Where the server's output goes, e.g. `/data/logs/cuda13_baseline.log`.
    pub log: PathBuf,
    /// A line containing this text means ready, e.g. `The server is fired up`.
    pub ready: String,
    /// A line containing any of these means failure, e.g. `Traceback`.
    pub fail: Vec<String>,
    /// How long to wait for `ready`.
    #[serde(serialize_with = "serialize_duration")]
    pub timeout: Duration,
    /// Refuse to launch while any process holds a GPU.
    pub require_idle_gpus: bool,
    /// Probed with GET after `ready`, e.g. `http://127.0.0.1:30000/health`.
    pub health: Option<String>,
    /// Leave the server running after a successful verification.
    pub keep_running: bool,
}

/// The workload measured on the node before an apply's first change and again after
/// its verification (`benchmark:`): a figure worse than the baseline beyond the
/// tolerance fails the node, e.g. `output throughput` in `tok/s`, higher is better,
/// within `5%`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Benchmark {
    /// The program and its arguments, run on the node as the launch is, e.g. `[python3,
    /// -m, sglang.bench_serving, …]`.
    pub command: Vec<String>,
    /// Reads the figure from the command's output: its one capture group, e.g.
    /// `output throughput: ([0-9.]+) tok/s`.
    pub pattern: FigurePattern,
    /// What the figure is, e.g. `output throughput`.
    pub name: String,
    /// Its unit, e.g. `tok/s`.
    pub unit: String,
    /// Which way is better, e.g. `higher`.
    pub better: Better,
    /// How much worse than the baseline still passes, in percent, e.g. `5.0`.
    pub tolerance_percent: f64,
    /// How long the command may run, e.g. `10m`.
    #[serde(serialize_with = "serialize_duration")]
    pub timeout: Duration,
}

/// A benchmark's pattern, compiled when the manifest is loaded, with exactly one
/// capture group, e.g. `output throughput: ([0-9.]+) tok/s`.
#[derive(Debug, Clone)]
pub struct FigurePattern(regex::Regex);

impl FigurePattern {
    /// A pattern with one capture group; `Err` says why not, e.g. `it has no capture
    /// group`.
    pub fn new(text: &str) -> Result<Self, String> {
        let regex = regex::Regex::new(text).map_err(|error| {
            // The parser's message draws the pattern with a caret; its `error:` line says it.
            let message = error.to_string();
            message
                .lines()
                .find_map(|line| line.trim().strip_prefix("error: "))
                .map_or_else(|| message.clone(), str::to_string)
        })?;
        match regex.captures_len() {
            2 => Ok(Self(regex)),
            1 => Err("it has no capture group: wrap the number in `( )`".to_string()),
            n => Err(format!(
                "it has {} capture groups, and the figure is read from exactly one (use `(?: )` for the others)",
                n - 1
            )),
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The figure in `output`: the capture of the last line that matches, read as a
    /// number; `None` when no line matches or the capture is not a number.
    pub fn figure(&self, output: &str) -> Option<f64> {
        output
            .lines()
            .rev()
            .filter_map(|line| self.0.captures(line))
            .find_map(|captures| captures.get(1)?.as_str().trim().parse::<f64>().ok())
            .filter(|value| value.is_finite())
    }
}

impl PartialEq for FigurePattern {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Serialize for FigurePattern {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Which way a benchmark's figure is better, e.g. `higher` for a throughput.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// A throughput: less is a regression.
    Higher,
    /// A latency: more is a regression.
    Lower,
}

impl fmt::Display for Better {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Higher => "higher",
            Self::Lower => "lower",
        })
    }
}

/// The node's production service, started again once the verification server stopped
/// (`service:`); the node goes back in service only once it is up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Service {
    /// How it starts.
    pub start: ServiceStart,
    /// Probed with GET until it answers 200, e.g. `http://127.0.0.1:30000/health`.
    pub health: Option<String>,
    /// How long it may take to be up (`5m` unless said).
    #[serde(serialize_with = "serialize_duration")]
    pub timeout: Duration,
}

/// How a production service starts, e.g. a systemd unit restarted.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceStart {
    /// `systemctl restart -- UNIT`; up once `systemctl is-active` says `active`.
    Systemd {
        /// e.g. `sglang.service`.
        unit: String,
    },
    /// The program started detached, in its own session, its output appended to `log`.
    Command {
        /// The program and its arguments, e.g. `[python3, -m, sglang.launch_server, …]`.
        command: Vec<String>,
        /// Its working directory.
        workdir: Option<PathBuf>,
        /// Where its output goes, e.g. `/var/log/sglang.log`.
        log: PathBuf,
    },
}

/// Format a duration as the manifest spells it, e.g. `10m` or `1h30m`.
pub fn format_duration(duration: Duration) -> String {
    let total = duration.as_secs();
    if total == 0 {
        return format!("{}ms", duration.as_millis());
    }
    let (hours, minutes, seconds) = (total / 3600, (total % 3600) / 60, total % 60);
    let mut text = String::new();
    if hours > 0 {
        text.push_str(&format!("{hours}h"));
    }
    if minutes > 0 {
        text.push_str(&format!("{minutes}m"));
    }
    if seconds > 0 {
        text.push_str(&format!("{seconds}s"));
    }
    text
}

impl Manifest {
    /// The index a name refers to, e.g. `pytorch-cu130`.
    pub fn index(&self, name: &str) -> Option<&Index> {
        self.indexes.iter().find(|index| index.name == name)
    }

    /// The direct package of this name.
    pub fn package(&self, name: &PackageName) -> Option<&Package> {
        self.packages.iter().find(|package| &package.name == name)
    }

    /// Environment variables by name.
    pub fn env_map(&self) -> BTreeMap<&str, &EnvVar> {
        self.env
            .iter()
            .map(|var| (var.name.as_str(), var))
            .collect()
    }
}

fn serialize_display<T: fmt::Display, S: serde::Serializer>(
    value: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

fn serialize_display_opt<T: fmt::Display, S: serde::Serializer>(
    value: &Option<T>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => serializer.collect_str(value),
        None => serializer.serialize_none(),
    }
}

fn serialize_duration<S: serde::Serializer>(
    value: &Duration,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&format_duration(*value))
}

/// A figure as reports write it: `89.5`, `84.0`, `1200.0`; the one spelling of a
/// benchmark's figures and tolerance.
pub fn figure_text(value: f64) -> String {
    format!("{value:?}")
}

/// A tolerance as reports write it, without its `%`: `5`, `2.5`.
pub fn tolerance_text(percent: f64) -> String {
    let text = figure_text(percent);
    text.strip_suffix(".0").map_or(text.clone(), str::to_string)
}
