//! Rules: knowledge no package metadata carries, loaded from `manifests/rules/` (embedded
//! in the binary) and from a user's rules directory laid over them ([`RuleSet::load`]).
//!
//! Every fact is data with a `source:`: CUDA toolkit → minimum driver
//! (`cuda-driver.yaml`), toolkit → GPU architectures (`cuda-arch.yaml`), local labels
//! and wheel families → CUDA major, and each major's driver floor (`cuda-runtime.yaml`), native ABI pins and version
//! locks (`abi-pins.yaml`), toolkit update → nvcc build and NVIDIA's apt naming
//! (`cuda-updates.yaml`). This module parses and looks them up, and does not decide
//! anything on its own (the resolver and the diff apply the rules).

mod abi;
mod arch;
mod coverage;
mod driver;
mod error;
mod file;
mod runtime;
mod updates;

pub use abi::{ABI_PINS_FILE, AbiPin, AbiRules, VersionLock};
pub use arch::{ArchSupport, ArchTable, CUDA_ARCH_FILE, KnownArch, RenamedArch};
pub use coverage::RuleGap;
pub use driver::{CUDA_DRIVER_FILE, DriverMinimum, DriverRequirement, DriverTable};
pub use error::RulesError;
pub use runtime::{
    CUDA_RUNTIME_FILE, FamilyRule, IndependentPackage, LocalLabelPolicy, MajorRule, RuntimeGap,
    RuntimeKind, RuntimeRule, RuntimeRules,
};
pub use updates::{AptNaming, CUDA_UPDATES_FILE, NvccMatch, UpdateRow, UpdateTable};

use std::io::Read;
use std::path::{Path, PathBuf};

use abi::AbiLayer;
use arch::ArchLayer;
use driver::DriverLayer;
use runtime::RuntimeLayer;
use updates::UpdateLayer;

/// The rule files a user's rules directory may hold, each laid over the embedded table
/// of the same name.
pub const RULE_FILES: [&str; 5] = [
    "abi-pins.yaml",
    "cuda-arch.yaml",
    "cuda-driver.yaml",
    "cuda-runtime.yaml",
    "cuda-updates.yaml",
];

/// The largest rule file read from a user's rules directory, 1 MiB (the embedded ones
/// are a few kilobytes).
pub const MAX_RULE_FILE_BYTES: u64 = 1024 * 1024;

/// Where a user adds rows, as hints say it.
pub const USER_RULES: &str = "a rules directory named by the manifest's `rules:` key (or `upgrade validate --rules DIR`), whose files are laid over the embedded tables";

/// The hint that says how to add a row to the rule file `name`, e.g. `cuda-driver.yaml`.
pub fn add_row_hint(name: &str) -> String {
    format!("add a row to `{name}` in {USER_RULES}")
}

/// The file name of a rule file, e.g. `cuda-driver.yaml` for
/// `manifests/rules/cuda-driver.yaml`.
pub fn file_name(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

/// Every rule table, as the resolver applies them.
#[derive(Debug, Clone)]
pub struct RuleSet {
    /// Toolkit → minimum driver.
    pub drivers: DriverTable,
    /// Toolkit → GPU architectures.
    pub arches: ArchTable,
    /// Wheel → CUDA runtime.
    pub runtimes: RuntimeRules,
    /// Native ABI pins and version locks.
    pub abi: AbiRules,
    /// Toolkit update → nvcc build, and NVIDIA's package naming.
    pub updates: UpdateTable,
}

impl RuleSet {
    /// The rules shipped in the binary: [`RuleSet::load`] of no directory, parsed once a
    /// process (every table's `embedded()` is a part of this one).
    pub fn embedded() -> Result<Self, RulesError> {
        static EMBEDDED: std::sync::OnceLock<RuleSet> = std::sync::OnceLock::new();
        if let Some(rules) = EMBEDDED.get() {
            return Ok(rules.clone());
        }
        let rules = Self::load(None)?;
        Ok(EMBEDDED.get_or_init(|| rules).clone())
    }

    /// The rules shipped in the binary with each user rules directory of `user` laid over
    /// them in order (`None`, `Some(dir)`, or several, e.g. a manifest's `rules:` and
    /// `validate --rules`, the last one winning).
    ///
    /// A directory holds any of [`RULE_FILES`], each parsed with the checks of the
    /// embedded file of its name; every section is optional. Its rows are added to the
    /// table, a row with the key of one already there (a toolkit update, a release line,
    /// an architecture, a CUDA major, a package) replacing it. Any other entry is refused
    /// (names starting with `.` are skipped), and so is a directory that does not exist.
    /// Errors name `file:line`.
    pub fn load<'a>(user: impl IntoIterator<Item = &'a Path>) -> Result<Self, RulesError> {
        let mut drivers = DriverLayer::parse(driver::CUDA_DRIVER_YAML, CUDA_DRIVER_FILE)?;
        let mut arches = ArchLayer::parse(arch::CUDA_ARCH_YAML, CUDA_ARCH_FILE)?;
        let mut runtimes = RuntimeLayer::parse(runtime::CUDA_RUNTIME_YAML, CUDA_RUNTIME_FILE)?;
        let mut abi = AbiLayer::parse(abi::ABI_PINS_YAML, ABI_PINS_FILE)?;
        let mut updates = UpdateLayer::parse(updates::CUDA_UPDATES_YAML, CUDA_UPDATES_FILE)?;
        for dir in user {
            for (name, path) in user_files(dir)? {
                let text = read_rule_file(&path)?;
                let file = path.display().to_string();
                match name {
                    "abi-pins.yaml" => abi.layer(AbiLayer::parse(&text, &file)?),
                    "cuda-arch.yaml" => arches.layer(ArchLayer::parse(&text, &file)?),
                    "cuda-driver.yaml" => drivers.layer(DriverLayer::parse(&text, &file)?),
                    "cuda-runtime.yaml" => runtimes.layer(RuntimeLayer::parse(&text, &file)?),
                    _ => updates.layer(UpdateLayer::parse(&text, &file)?),
                }
            }
        }
        Ok(Self {
            drivers: drivers.build()?,
            arches: arches.build()?,
            runtimes: runtimes.build()?,
            abi: abi.build(),
            updates: updates.build()?,
        })
    }
}

/// The rule files of a user's rules directory, by name order: each one of
/// [`RULE_FILES`] with its path; another entry is an error.
fn user_files(dir: &Path) -> Result<Vec<(&'static str, PathBuf)>, RulesError> {
    let read_error = |source| RulesError::ReadDir {
        dir: dir.to_path_buf(),
        source,
    };
    let mut found = Vec::new();
    for entry in fs_err::read_dir(dir).map_err(read_error)? {
        let entry = entry.map_err(read_error)?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        match RULE_FILES.iter().find(|known| **known == name) {
            Some(known) if path.is_file() => found.push((*known, path)),
            _ => return Err(RulesError::UnknownFile { path }),
        }
    }
    found.sort();
    Ok(found)
}

/// A user's rule file as text, at most [`MAX_RULE_FILE_BYTES`].
fn read_rule_file(path: &Path) -> Result<String, RulesError> {
    let read_error = |source| RulesError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut text = String::new();
    fs_err::File::open(path)
        .map_err(read_error)?
        .take(MAX_RULE_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(read_error)?;
    if text.len() as u64 > MAX_RULE_FILE_BYTES {
        return Err(RulesError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    Ok(text)
}

/// The SHA-256 of the rule files shipped in the binary, in hex, e.g. `3f1c…`: each
/// file's name and bytes in a fixed order, so `upgrade --version` names the rules every
/// result depends on.
pub fn embedded_digest() -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for (name, text) in [
        ("abi-pins.yaml", abi::ABI_PINS_YAML),
        ("cuda-arch.yaml", arch::CUDA_ARCH_YAML),
        ("cuda-driver.yaml", driver::CUDA_DRIVER_YAML),
        ("cuda-runtime.yaml", runtime::CUDA_RUNTIME_YAML),
        ("cuda-updates.yaml", updates::CUDA_UPDATES_YAML),
    ] {
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update(text.as_bytes());
        hasher.update([0]);
    }
    hex::encode(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::{CudaVersion, GpuArch};

    fn version(text: &str) -> CudaVersion {
        text.parse().unwrap()
    }

    fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    const UPDATE_13_4_0: &str = "schema: 1\nupdates:\n  - update: \"13.4.0\"\n    nvcc: \"13.4.48\"\n    source: https://docs.nvidia.com/cuda/archive/13.4.0/cuda-toolkit-release-notes/index.html\n    checked: a test\n";

    #[test]
    fn a_user_directory_adds_and_replaces_rows() {
        let embedded = RuleSet::load(None).unwrap();
        assert!(!embedded.knows_toolkit(&version("13.4.0")));
        let dir = dir_with(&[
            ("cuda-updates.yaml", UPDATE_13_4_0),
            (
                "cuda-driver.yaml",
                "schema: 1\ndriver_minimums:\n  - { toolkit: \"13.4.0\", driver: \"595.45.04\", source: a test }\n  - { toolkit: \"13.0.1\", driver: \"580.99.01\", source: a test }\n",
            ),
        ]);
        let rules = RuleSet::load(Some(dir.path())).unwrap();
        assert!(rules.knows_toolkit(&version("13.4.0")));
        assert_eq!(
            rules.updates.rows().len(),
            embedded.updates.rows().len() + 1
        );
        let replaced = rules.drivers.minimum_for(&version("13.0.1")).unwrap();
        assert_eq!(replaced.rule.driver.to_string(), "580.99.01");
        assert_eq!(
            rules.drivers.rows().len(),
            embedded.drivers.rows().len() + 1
        );
        // The embedded naming stays where the user's file has no `apt:`.
        assert_eq!(rules.updates.apt(), embedded.updates.apt());
        // Directories are laid in order, the last one winning.
        let later = dir_with(&[(
            "cuda-driver.yaml",
            "schema: 1\ndriver_minimums:\n  - { toolkit: \"13.0.1\", driver: \"580.100.01\", source: a test }\n",
        )]);
        let rules = RuleSet::load([dir.path(), later.path()]).unwrap();
        let replaced = rules.drivers.minimum_for(&version("13.0.1")).unwrap();
        assert_eq!(replaced.rule.driver.to_string(), "580.100.01");
    }

    #[test]
    fn a_user_family_comes_before_the_embedded_ones() {
        let dir = dir_with(&[(
            "cuda-runtime.yaml",
            "schema: 1\nfamilies:\n  - { packages: nvidia-cublas-cu12, major: 13, source: a test }\n",
        )]);
        let rules = RuleSet::load(Some(dir.path())).unwrap();
        let name = "nvidia-cublas-cu12".parse().unwrap();
        let found = rules
            .runtimes
            .rules_for(&name, &"12.8.4.1".parse().unwrap())
            .unwrap();
        assert_eq!(found[0].major, 13);
    }

    #[test]
    fn user_files_are_checked_like_the_embedded_ones_with_file_and_line() {
        let dir = dir_with(&[(
            "cuda-updates.yaml",
            &format!(
                "{UPDATE_13_4_0}  - update: \"13.4.0\"\n    nvcc: \"13.4.48\"\n    source: https://x\n    checked: x\n"
            ),
        )]);
        let error = RuleSet::load(Some(dir.path())).unwrap_err().to_string();
        let file = dir.path().join("cuda-updates.yaml").display().to_string();
        assert_eq!(
            error,
            format!("{file}:7: invalid rule file: update `13.4.0` is listed twice")
        );
        let dir = dir_with(&[(
            "cuda-driver.yaml",
            "schema: 1\ndriver_minimums:\n  - toolkit: \"13.4.0\"\n    drive: \"595.45.04\"\n",
        )]);
        let error = RuleSet::load(Some(dir.path())).unwrap_err().to_string();
        let file = dir.path().join("cuda-driver.yaml").display().to_string();
        assert!(error.starts_with(&format!("{file}:4:5: ")), "{error}");
        assert!(error.contains("unknown field `drive`"), "{error}");
        // A release line that names an architecture no row lists: the user's row's line.
        let dir = dir_with(&[(
            "cuda-arch.yaml",
            "schema: 1\ntoolkits:\n  - toolkit: \"13.9\"\n    arches: [sm_90, sm_95]\n    source: a test\n",
        )]);
        let error = RuleSet::load(Some(dir.path())).unwrap_err().to_string();
        assert!(error.contains("cuda-arch.yaml:3: "), "{error}");
        assert!(error.contains("`sm_95`"), "{error}");
    }

    #[test]
    fn unknown_files_and_missing_directories_are_refused() {
        let dir = dir_with(&[("cuda-drivers.yaml", "schema: 1\n"), (".swp", "")]);
        let error = RuleSet::load(Some(dir.path())).unwrap_err();
        assert!(matches!(error, RulesError::UnknownFile { .. }), "{error}");
        assert!(
            error
                .to_string()
                .contains("cuda-drivers.yaml: not a rule file")
        );
        let missing = dir.path().join("nowhere");
        let error = RuleSet::load(Some(missing.as_path())).unwrap_err();
        assert!(matches!(error, RulesError::ReadDir { .. }), "{error}");
    }

    #[test]
    fn nearest_known_values() {
        let rules = RuleSet::embedded().unwrap();
        let nearest: Vec<String> = rules
            .nearest_toolkits(&version("12.7.0"))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(nearest, ["12.6.3", "12.8.0"]);
        assert!(rules.knows_toolkit(&version("12.8")));
        let arch: GpuArch = "sm_91".parse().unwrap();
        let nearest: Vec<String> = rules
            .nearest_arches(&arch)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(nearest, ["sm_90", "sm_100"]);
    }
}
