//! Parser for the target interpreter's report: the JSON object the probe's embedded
//! Python program prints (version, prefixes, site directories, platform tags, glibc,
//! the `sitecustomize` module it really imports, torch's build files). It does not
//! create environments nor choose wheels for these tags.
//!
//! See: <https://docs.python.org/3/library/site.html>

use std::path::{Path, PathBuf};

use pep440_rs::Version;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::facts::error::FactsError;
use crate::facts::versions::{GlibcVersion, package_version};

/// Who computed [`PythonFacts::tags`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TagsSource {
    /// `packaging.tags.sys_tags()` of an importable `packaging`.
    Packaging,
    /// The copy of `packaging` vendored in pip.
    Pip,
    /// The probe's own computation (cp/abi3/none × `manylinux_2_N` for N ≤ glibc's minor).
    Fallback,
}

/// The target interpreter, e.g. `/opt/torch/.venv/bin/python3`, CPython `3.12.3`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PythonFacts {
    /// `sys.executable`, e.g. `/opt/torch/.venv/bin/python3`.
    pub executable: PathBuf,
    /// `platform.python_version()`, e.g. `3.12.3`.
    pub version: Version,
    /// `sys.implementation.name`, e.g. `cpython`.
    pub implementation: String,
    /// `sys.prefix`, e.g. `/opt/torch/.venv`.
    pub prefix: PathBuf,
    /// `sys.base_prefix`, e.g. `/usr`.
    pub base_prefix: PathBuf,
    /// `site.getsitepackages()`, e.g. `["/opt/torch/.venv/lib/python3.12/site-packages", …]`.
    pub site_packages: Vec<PathBuf>,
    /// `sys.path` without empty entries, in import order.
    pub path: Vec<PathBuf>,
    /// `platform.machine()`, e.g. `x86_64`.
    pub machine: String,
    /// The C library, e.g. `2.39`; `None` on a non-glibc system.
    pub glibc: Option<GlibcVersion>,
    /// Supported wheel tags, most preferred first, e.g. `cp312-cp312-manylinux_2_39_x86_64`.
    pub tags: Vec<String>,
    /// Who computed the tags.
    pub tags_source: TagsSource,
}

impl PythonFacts {
    /// Whether the interpreter runs in a virtual environment (`sys.prefix !=
    /// sys.base_prefix`).
    pub fn is_virtual_environment(&self) -> bool {
        self.prefix != self.base_prefix
    }
}

/// The block the env injection step manages inside `sitecustomize.py`, between
/// `# >>> cuda-upgrade managed block >>>` and `# <<< cuda-upgrade managed block <<<`.
///
/// Its content may hold secret values, so it never leaves the process: the facts JSON
/// (what `upgrade probe` prints and `--facts` reads) carries only its digest, which is
/// all a plan needs to compare the block with the desired one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManagedBlock {
    /// The lines between the markers, e.g. `os.environ.setdefault("CUDA_HOME", "/usr/local/cuda-13.0")\n`.
    #[serde(skip)]
    pub content: String,
    /// The SHA-256 of [`ManagedBlock::content`] in hex, e.g. `9f86d0…`.
    pub sha256: String,
}

/// The `sitecustomize` module the interpreter really imports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SitecustomizeFacts {
    /// `importlib.util.find_spec('sitecustomize').origin`, e.g.
    /// `/usr/lib/python3.12/sitecustomize.py`; `None` when there is none.
    pub origin: Option<PathBuf>,
    /// Whether the interpreter imported it at start-up.
    pub imported: bool,
    /// The SHA-256 of the whole file in hex, when it was read.
    pub file_sha256: Option<String>,
    /// The file a write changes: the origin with its symlinks resolved, e.g.
    /// `/etc/python3.12/sitecustomize.py`.
    #[serde(default)]
    pub real_path: Option<PathBuf>,
    /// That file's permission bits, e.g. `0o644`.
    #[serde(default)]
    pub mode: Option<u32>,
    /// Its owner's uid, e.g. `0`.
    #[serde(default)]
    pub uid: Option<u32>,
    /// The managed block, when the file has one.
    pub managed_block: Option<ManagedBlock>,
    /// Why the file's markers cannot be read as one block, e.g. `line 12: the managed
    /// block's begin marker has no end marker`; the env step refuses to rewrite it.
    #[serde(default)]
    pub malformed_block: Option<String>,
    /// `sitecustomize.py` files in site-packages directories that are never imported
    /// because [`SitecustomizeFacts::origin`] comes first, e.g.
    /// `/opt/torch/.venv/lib/python3.12/site-packages/sitecustomize.py`.
    pub shadowed: Vec<PathBuf>,
}

/// The file name of the env step's start-up hook in the environment's first
/// site-packages directory: a `.pth` file, run by `site` for this environment's
/// interpreters only.
pub const ENV_HOOK_FILE: &str = "cuda_upgrade_env.pth";

/// The env step's start-up hook ([`ENV_HOOK_FILE`]) as the probe found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvHookFacts {
    /// e.g. `/opt/torch/.venv/lib/python3.12/site-packages/cuda_upgrade_env.pth`.
    pub path: PathBuf,
    /// Whether the file exists.
    pub exists: bool,
    /// The managed block, when the file has one.
    pub managed_block: Option<ManagedBlock>,
    /// Why the file's markers cannot be read as one block.
    #[serde(default)]
    pub malformed_block: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct EnvHookReport {
    path: Option<PathBuf>,
    text: Option<String>,
}

/// Torch's build files as the interpreter found them, without importing torch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct TorchFiles {
    /// The package directory, e.g. `/opt/torch/.venv/lib/python3.12/site-packages/torch`.
    pub location: PathBuf,
    /// `torch/version.py`'s text, bounded.
    pub version_py: Option<String>,
    /// `Requires-Dist` values of its METADATA.
    pub requires: Option<Vec<String>>,
    /// The distribution's version, e.g. `2.11.0`.
    pub metadata_version: Option<String>,
}

/// The raw JSON object the embedded Python program prints.
#[derive(Debug, Clone, Deserialize)]
struct PythonReport {
    executable: PathBuf,
    version: String,
    implementation: String,
    prefix: PathBuf,
    base_prefix: PathBuf,
    site_packages: Vec<PathBuf>,
    path: Vec<PathBuf>,
    machine: String,
    glibc: Option<String>,
    tags: Vec<String>,
    tags_source: TagsSource,
    sitecustomize: SitecustomizeReport,
    #[serde(default)]
    env_hook: Option<EnvHookReport>,
    torch: Option<TorchFiles>,
    #[serde(default)]
    distributions: Vec<DistributionRow>,
}

/// One distribution as the probe reports it: `[name, version, direct_url.json or null]`
/// (older probes wrote `[name, version]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum DistributionRow {
    WithOrigin(String, String, Option<String>),
    Plain(String, String),
}

impl From<DistributionRow> for Distribution {
    fn from(row: DistributionRow) -> Self {
        match row {
            DistributionRow::WithOrigin(name, version, direct_url) => Self {
                name,
                version,
                direct_url,
            },
            DistributionRow::Plain(name, version) => Self {
                name,
                version,
                direct_url: None,
            },
        }
    }
}

/// An installed distribution as `importlib.metadata` lists it, e.g. `Jinja2` `3.1.6`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distribution {
    /// The name as its metadata spells it.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its `direct_url.json` (PEP 610) when it was not installed from an index.
    pub direct_url: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct SitecustomizeReport {
    origin: Option<PathBuf>,
    #[serde(default)]
    real_path: Option<PathBuf>,
    #[serde(default)]
    mode: Option<u32>,
    #[serde(default)]
    uid: Option<u32>,
    imported: bool,
    text: Option<String>,
    shadowed: Vec<PathBuf>,
}

/// Everything the interpreter's report holds, split by topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterpreterReport {
    /// The interpreter.
    pub python: PythonFacts,
    /// Its `sitecustomize` module.
    pub sitecustomize: SitecustomizeFacts,
    /// The env step's start-up hook in its site-packages.
    pub env_hook: Option<EnvHookFacts>,
    /// Torch's build files, when torch is installed.
    pub torch: Option<TorchFiles>,
    /// Every distribution, e.g. `Jinja2` `3.1.6`.
    pub distributions: Vec<Distribution>,
}

/// The SHA-256 of `text` in hex.
pub(crate) fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Cuts the block between `# >>> MARKER >>>` and `# <<< MARKER <<<` out of `text`,
/// e.g. marker `cuda-upgrade managed block` (see [`crate::managed_block`]).
pub fn managed_block(
    text: &str,
    marker: &str,
) -> Result<Option<ManagedBlock>, crate::managed_block::MalformedBlock> {
    Ok(
        crate::managed_block::content(text.as_bytes(), marker)?.map(|block| ManagedBlock {
            content: String::from_utf8_lossy(&block.content).into_owned(),
            sha256: block.sha256,
        }),
    )
}

/// Parses the interpreter's JSON report, e.g. of `/opt/torch/.venv/bin/python3`, and
/// reads the managed block named `marker` out of its `sitecustomize`.
pub fn parse_python_report(
    python: &str,
    text: &str,
    marker: &str,
) -> Result<InterpreterReport, FactsError> {
    let report: PythonReport =
        serde_json::from_str(text.trim()).map_err(|source| FactsError::PythonReport {
            python: python.to_string(),
            source,
        })?;
    let glibc = report
        .glibc
        .as_deref()
        .map(str::parse::<GlibcVersion>)
        .transpose()?;
    let block = report
        .sitecustomize
        .text
        .as_deref()
        .map(|text| managed_block(text, marker))
        .transpose();
    let sitecustomize = SitecustomizeFacts {
        origin: report.sitecustomize.origin,
        real_path: report.sitecustomize.real_path,
        mode: report.sitecustomize.mode,
        uid: report.sitecustomize.uid,
        imported: report.sitecustomize.imported,
        file_sha256: report.sitecustomize.text.as_deref().map(sha256_hex),
        managed_block: block.as_ref().ok().cloned().flatten().flatten(),
        malformed_block: block.err().map(|error| error.to_string()),
        shadowed: report.sitecustomize.shadowed,
    };
    let env_hook = report.env_hook.and_then(|hook| {
        let path = hook.path?;
        let block = hook
            .text
            .as_deref()
            .map(|text| managed_block(text, marker))
            .transpose();
        Some(EnvHookFacts {
            path,
            exists: hook.text.is_some(),
            managed_block: block.as_ref().ok().cloned().flatten().flatten(),
            malformed_block: block.err().map(|error| error.to_string()),
        })
    });
    Ok(InterpreterReport {
        env_hook,
        python: PythonFacts {
            executable: report.executable,
            version: package_version(&report.version)?,
            implementation: report.implementation,
            prefix: report.prefix,
            base_prefix: report.base_prefix,
            site_packages: report.site_packages,
            path: report.path,
            machine: report.machine,
            glibc,
            tags: report.tags,
            tags_source: report.tags_source,
        },
        sitecustomize,
        torch: report.torch,
        distributions: report
            .distributions
            .into_iter()
            .map(Distribution::from)
            .collect(),
    })
}

/// Whether `path` lies under `prefix`, e.g. `/usr/lib/python3.12/sitecustomize.py` is not
/// under `/opt/torch/.venv`.
pub fn is_under(path: &Path, prefix: &Path) -> bool {
    path.starts_with(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::test_support::fixture;

    #[test]
    fn h200_report_parses() {
        let report = parse_python_report(
            "/opt/torch/.venv/bin/python3",
            &fixture("h200.python.json"),
            "cuda-upgrade managed block",
        )
        .unwrap();
        assert_eq!(report.python.version.to_string(), "3.12.3");
        assert!(report.python.is_virtual_environment());
        assert_eq!(report.python.glibc.unwrap().to_string(), "2.39");
        assert_eq!(report.python.tags[0], "cp312-cp312-linux_x86_64");
        assert_eq!(
            report.sitecustomize.origin.as_deref(),
            Some(Path::new("/usr/lib/python3.12/sitecustomize.py"))
        );
        assert_eq!(report.sitecustomize.managed_block, None);
        assert!(!is_under(
            report.sitecustomize.origin.as_deref().unwrap(),
            &report.python.prefix
        ));
    }

    #[test]
    fn managed_block_is_cut_between_markers() {
        let text = "import os\n\
            # >>> cuda-upgrade managed block >>>\n\
            os.environ.setdefault('CUDA_HOME', '/usr/local/cuda-13.0')\n\
            # <<< cuda-upgrade managed block <<<\n\
            print('kept')\n";
        let block = managed_block(text, "cuda-upgrade managed block")
            .unwrap()
            .unwrap();
        assert_eq!(
            block.content,
            "os.environ.setdefault('CUDA_HOME', '/usr/local/cuda-13.0')\n"
        );
        assert_eq!(block.sha256, sha256_hex(&block.content));
        assert_eq!(
            managed_block("import os\n", "cuda-upgrade managed block"),
            Ok(None)
        );
    }

    #[test]
    fn broken_report_is_an_error() {
        assert!(matches!(
            parse_python_report("/x/python3", "{", "m"),
            Err(FactsError::PythonReport { .. })
        ));
    }
}
