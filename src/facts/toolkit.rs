//! Parsers for installed CUDA toolkits: the `/usr/local/cuda*` entries and where they
//! point, each toolkit's `version.json` / `version.txt`, its Debian packages (`dpkg-query`)
//! and `nvcc --version`; and which update each toolkit is, exactly, and how that was
//! known (`version.json`, else the apt meta package's version, else the nvcc build mapped
//! by `manifests/rules/cuda-updates.yaml` when exactly one update ships it). It does not
//! install toolkits nor decide which one a manifest wants.
//!
//! See: <https://docs.nvidia.com/cuda/cuda-installation-guide-linux/>

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::facts::error::FactsError;
use crate::facts::sections::Sections;
use crate::facts::versions::CudaVersion;
use crate::rules::{AptNaming, NvccMatch, UpdateTable};

/// The entry that names the default toolkit, a symlink on most nodes.
///
/// See: <https://docs.nvidia.com/cuda/cuda-installation-guide-linux/#post-installation-actions>
pub const DEFAULT_TOOLKIT_LINK: &str = "/usr/local/cuda";

/// Where a toolkit's version was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolkitVersionSource {
    /// `version.json`'s `cuda.version`, e.g. `13.0.2` (toolkits since 11.1).
    VersionJson,
    /// `version.txt`'s `CUDA Version 11.0.3` (older toolkits).
    VersionTxt,
    /// The installed version of NVIDIA's apt meta package of the toolkit's line, e.g.
    /// `cuda-toolkit-13-0` `13.0.2-1` → `13.0.2`.
    Dpkg,
    /// `nvcc --version`'s build, e.g. `V13.0.88`, mapped to the one update that ships it
    /// (`manifests/rules/cuda-updates.yaml`).
    NvccBuildRule,
    /// `nvcc --version`'s `release 13.0` (no patch level): nothing told the update apart.
    Nvcc,
}

impl ToolkitVersionSource {
    /// How the version was known, for messages, e.g. `its dpkg packages`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::VersionJson => "its version.json",
            Self::VersionTxt => "its version.txt",
            Self::Dpkg => "its apt meta package (dpkg)",
            Self::NvccBuildRule => "its nvcc build (rules/cuda-updates.yaml)",
            Self::Nvcc => "its nvcc release",
        }
    }

    /// Whether the source names one update exactly (not only the release line).
    pub fn is_exact(self) -> bool {
        !matches!(self, Self::Nvcc)
    }
}

/// A Debian package of a toolkit's line, e.g. `cuda-nvcc-13-0` `13.0.88-1`, installed,
/// owning files under the prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolkitPackage {
    /// e.g. `cuda-toolkit-13-0`.
    pub name: String,
    /// The Debian version, e.g. `13.0.2-1`.
    pub version: String,
    /// Whether dpkg has it installed (status `ii`, not only configuration files left).
    pub installed: bool,
    /// Whether it owns files under the toolkit's prefix (`dpkg-query -S PREFIX`); meta
    /// packages own none.
    pub owns_prefix: bool,
}

impl ToolkitPackage {
    /// The upstream part of the Debian version, e.g. `1:13.0.2-1` → `13.0.2`.
    pub fn upstream_version(&self) -> &str {
        let without_epoch = self
            .version
            .split_once(':')
            .map_or(self.version.as_str(), |(_, rest)| rest);
        without_epoch
            .rsplit_once('-')
            .map_or(without_epoch, |(upstream, _)| upstream)
    }
}

/// One installed toolkit, e.g. `/usr/local/cuda-13.0` at `13.0`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Toolkit {
    /// The real directory, e.g. `/usr/local/cuda-13.0`.
    pub prefix: PathBuf,
    /// Other `/usr/local/cuda*` entries resolving to it, e.g. `/usr/local/cuda`,
    /// `/usr/local/cuda-13`.
    pub aliases: Vec<PathBuf>,
    /// The toolkit's version, e.g. `13.0.2` or, read from `nvcc`, `13.0`.
    pub version: Option<CudaVersion>,
    /// Where [`Toolkit::version`] was read.
    pub version_source: Option<ToolkitVersionSource>,
    /// The compiler's own version, e.g. `13.0.88` (from `V13.0.88`).
    pub nvcc_version: Option<CudaVersion>,
    /// The Debian packages of the toolkit's line (`cuda-*-13-0`), e.g. `cuda-toolkit-13-0`
    /// `13.0.2-1`; empty where dpkg is absent or nothing is installed from packages.
    #[serde(default)]
    pub packages: Vec<ToolkitPackage>,
    /// Every update that ships [`Toolkit::nvcc_version`] when more than one does, e.g.
    /// `13.0.1` and `13.0.2` for `13.0.88`: the nvcc build cannot tell them apart.
    #[serde(default)]
    pub nvcc_updates: Vec<CudaVersion>,
}

impl Toolkit {
    /// Whether Debian packages own the prefix (NVIDIA's apt packages laid it out).
    pub fn package_managed(&self) -> bool {
        self.packages
            .iter()
            .any(|package| package.installed && package.owns_prefix)
    }

    /// The installed apt meta package that names the update, e.g. `cuda-toolkit-13-0`
    /// `13.0.2-1`, first in the order of `manifests/rules/cuda-updates.yaml`.
    pub fn meta_package(&self, apt: &AptNaming) -> Option<&ToolkitPackage> {
        let from_prefix = self.prefix.file_name().and_then(|name| {
            name.to_str()?
                .strip_prefix("cuda-")?
                .parse::<CudaVersion>()
                .ok()
        });
        let release = self
            .version
            .clone()
            .or_else(|| self.nvcc_version.clone())
            .or(from_prefix)?
            .release();
        apt.meta_packages_for(&release)
            .into_iter()
            .find_map(|name| {
                self.packages
                    .iter()
                    .find(|package| package.installed && package.name == name)
            })
    }

    /// The toolkit's identity in words, e.g. `CUDA 13.0.2 (identified by its apt meta
    /// package (dpkg): cuda-toolkit-13-0 13.0.2-1)`.
    pub fn describe(&self, apt: &AptNaming) -> String {
        let Some(version) = &self.version else {
            return "no recognizable toolkit (no version.json, no apt meta package, no nvcc)"
                .to_string();
        };
        let source = self.version_source.unwrap_or(ToolkitVersionSource::Nvcc);
        let mut text = match source {
            ToolkitVersionSource::Nvcc => format!("a CUDA {version} toolkit"),
            _ => format!("CUDA {version}"),
        };
        let detail = match source {
            ToolkitVersionSource::Dpkg => self
                .meta_package(apt)
                .map(|meta| format!(": {} {}", meta.name, meta.version)),
            ToolkitVersionSource::NvccBuildRule | ToolkitVersionSource::Nvcc => self
                .nvcc_version
                .as_ref()
                .map(|build| format!(": nvcc V{build}")),
            _ => None,
        }
        .unwrap_or_default();
        text.push_str(&format!(" (identified by {}{detail})", source.describe()));
        if !self.nvcc_updates.is_empty() {
            let updates: Vec<String> = self.nvcc_updates.iter().map(ToString::to_string).collect();
            text.push_str(&format!(
                "; nvcc V{} ships with CUDA {} alike (rules/cuda-updates.yaml), so it cannot tell which",
                self.nvcc_version
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                updates.join(" and ")
            ));
        }
        text
    }
}

/// The installed toolkits and which one is the default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolkitFacts {
    /// What `/usr/local/cuda` resolves to, e.g. `/usr/local/cuda-13.0`.
    pub default_prefix: Option<PathBuf>,
    /// Every toolkit directory, sorted by prefix.
    pub installed: Vec<Toolkit>,
}

impl ToolkitFacts {
    /// The toolkit `/usr/local/cuda` points to.
    pub fn default_toolkit(&self) -> Option<&Toolkit> {
        let prefix = self.default_prefix.as_deref()?;
        self.installed
            .iter()
            .find(|toolkit| toolkit.prefix == prefix)
    }

    /// The toolkit whose real prefix or alias is `prefix`, e.g. `/usr/local/cuda-13.0`.
    pub fn find(&self, prefix: &Path) -> Option<&Toolkit> {
        self.installed.iter().find(|toolkit| {
            toolkit.prefix == prefix || toolkit.aliases.iter().any(|alias| alias == prefix)
        })
    }
}

/// Reads `version.json`'s `cuda.version`, e.g. `{"cuda": {"version": "13.0.2"}}` → `13.0.2`.
pub fn parse_version_json(path: &Path, text: &str) -> Result<Option<CudaVersion>, FactsError> {
    let document: serde_json::Value =
        serde_json::from_str(text).map_err(|source| FactsError::ToolkitVersionJson {
            path: path.to_path_buf(),
            source,
        })?;
    document
        .get("cuda")
        .and_then(|cuda| cuda.get("version"))
        .and_then(serde_json::Value::as_str)
        .map(|text| text.parse::<CudaVersion>().map_err(FactsError::from))
        .transpose()
}

/// Reads `version.txt`, e.g. `CUDA Version 11.0.3` → `11.0.3`.
pub fn parse_version_txt(text: &str) -> Result<Option<CudaVersion>, FactsError> {
    text.lines()
        .find_map(|line| line.trim().strip_prefix("CUDA Version "))
        .map(|text| text.parse::<CudaVersion>().map_err(FactsError::from))
        .transpose()
}

/// Reads `nvcc --version`'s last lines, e.g. `Cuda compilation tools, release 13.0,
/// V13.0.88` → (`13.0`, `13.0.88`).
pub fn parse_nvcc_version(
    text: &str,
) -> Result<Option<(CudaVersion, Option<CudaVersion>)>, FactsError> {
    for (index, line) in text.lines().enumerate() {
        let Some(rest) = line.trim().strip_prefix("Cuda compilation tools, release ") else {
            continue;
        };
        let (release, compiler) = match rest.split_once(',') {
            Some((release, compiler)) => (release, Some(compiler.trim())),
            None => (rest, None),
        };
        let release = release
            .parse::<CudaVersion>()
            .map_err(|error| FactsError::from(error).on_line(index + 1, line))?;
        let compiler = compiler
            .and_then(|compiler| compiler.strip_prefix('V'))
            .map(|text| text.parse::<CudaVersion>().map_err(FactsError::from))
            .transpose()
            .map_err(|error: FactsError| error.on_line(index + 1, line))?;
        return Ok(Some((release, compiler)));
    }
    Ok(None)
}

/// Reads section `toolkit-dpkg PREFIX`: `owner\tPACKAGE` lines (from `dpkg-query -S
/// PREFIX`) and `package\tNAME\tVERSION\tSTATUS` lines (from `dpkg-query -W`), e.g.
/// `package\tcuda-toolkit-13-0\t13.0.2-1\tii `.
pub fn parse_toolkit_packages(text: &str) -> Result<Vec<ToolkitPackage>, FactsError> {
    let mut owners: Vec<&str> = Vec::new();
    let mut packages: Vec<ToolkitPackage> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let invalid = || FactsError::InvalidLine {
            line: index + 1,
            text: line.to_string(),
        };
        let fields: Vec<&str> = line.split('\t').collect();
        match fields.as_slice() {
            [""] => {}
            ["owner", name] => owners.push(name.split(':').next().unwrap_or(name).trim()),
            ["package", name, version, status] => {
                // `ii `: wanted install, installed. See: https://man7.org/linux/man-pages/man1/dpkg-query.1.html
                let installed = status.as_bytes().get(1) == Some(&b'i');
                if name.is_empty() || version.is_empty() && installed {
                    return Err(invalid());
                }
                packages.push(ToolkitPackage {
                    name: name.to_string(),
                    version: version.to_string(),
                    installed,
                    owns_prefix: false,
                });
            }
            _ => return Err(invalid()),
        }
    }
    for package in &mut packages {
        package.owns_prefix = owners.contains(&package.name.as_str());
    }
    packages.sort_by(|a, b| a.name.cmp(&b.name));
    packages.dedup_by(|a, b| a.name == b.name);
    Ok(packages)
}

/// The update an installed apt meta package names, e.g. `cuda-toolkit-13-0` `13.0.2-1` →
/// `13.0.2`; only where packages own the prefix and the version is of the package's line.
fn dpkg_update(toolkit: &Toolkit, apt: &AptNaming) -> Option<CudaVersion> {
    if !toolkit.package_managed() {
        return None;
    }
    let meta = toolkit.meta_package(apt)?;
    let update: CudaVersion = meta.upstream_version().parse().ok()?;
    (apt.meta_release(&meta.name) == Some(update.release())).then_some(update)
}

/// Builds the toolkit facts from sections `toolkits`, `toolkit-version-json PREFIX`,
/// `toolkit-version-txt PREFIX`, `toolkit-dpkg PREFIX` and `toolkit-nvcc PREFIX`.
pub(crate) fn toolkit_facts(sections: &Sections) -> Result<ToolkitFacts, FactsError> {
    let rules = UpdateTable::embedded().map_err(FactsError::ToolkitRules)?;
    let mut facts = ToolkitFacts::default();
    let Some(listing) = sections.succeeded("toolkits") else {
        return Ok(facts);
    };
    let mut links: Vec<(PathBuf, PathBuf)> = Vec::new();
    for (index, line) in listing.stdout.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let (entry, target) = line
            .split_once('\t')
            .ok_or_else(|| FactsError::InvalidLine {
                line: index + 1,
                text: line.to_string(),
            })?;
        links.push((PathBuf::from(entry), PathBuf::from(target)));
    }
    facts.default_prefix = links
        .iter()
        .find(|(entry, _)| entry == Path::new(DEFAULT_TOOLKIT_LINK))
        .map(|(_, target)| target.clone());
    let mut prefixes: Vec<&PathBuf> = links.iter().map(|(_, target)| target).collect();
    prefixes.sort();
    prefixes.dedup();
    for prefix in prefixes {
        let argument = prefix.to_string_lossy();
        let mut toolkit = Toolkit {
            prefix: prefix.clone(),
            aliases: links
                .iter()
                .filter(|(entry, target)| target == prefix && entry != prefix)
                .map(|(entry, _)| entry.clone())
                .collect(),
            version: None,
            version_source: None,
            nvcc_version: None,
            packages: Vec::new(),
            nvcc_updates: Vec::new(),
        };
        if let Some(section) = sections
            .get_for("toolkit-version-json", &argument)
            .filter(|section| section.succeeded())
        {
            toolkit.version = parse_version_json(&prefix.join("version.json"), &section.stdout)
                .map_err(|error| error.in_section("toolkit-version-json"))?;
            toolkit.version_source = toolkit
                .version
                .as_ref()
                .map(|_| ToolkitVersionSource::VersionJson);
        }
        if toolkit.version.is_none()
            && let Some(section) = sections
                .get_for("toolkit-version-txt", &argument)
                .filter(|section| section.succeeded())
        {
            toolkit.version = parse_version_txt(&section.stdout)
                .map_err(|error| error.in_section("toolkit-version-txt"))?;
            toolkit.version_source = toolkit
                .version
                .as_ref()
                .map(|_| ToolkitVersionSource::VersionTxt);
        }
        if let Some(section) = sections
            .get_for("toolkit-dpkg", &argument)
            .filter(|section| section.succeeded())
        {
            toolkit.packages = parse_toolkit_packages(&section.stdout)
                .map_err(|error| error.in_section("toolkit-dpkg"))?;
        }
        let mut release = None;
        if let Some(section) = sections
            .get_for("toolkit-nvcc", &argument)
            .filter(|section| section.succeeded())
            && let Some((nvcc_release, compiler)) = parse_nvcc_version(&section.stdout)
                .map_err(|error| error.in_section("toolkit-nvcc"))?
        {
            toolkit.nvcc_version = compiler;
            release = Some(nvcc_release);
        }
        if toolkit.version.is_none()
            && let Some(update) = dpkg_update(&toolkit, rules.apt())
        {
            toolkit.version = Some(update);
            toolkit.version_source = Some(ToolkitVersionSource::Dpkg);
        }
        if toolkit.version.is_none()
            && let Some(build) = toolkit.nvcc_version.clone()
        {
            match rules.for_nvcc(&build) {
                NvccMatch::Exact(row) => {
                    toolkit.version = Some(row.update.clone());
                    toolkit.version_source = Some(ToolkitVersionSource::NvccBuildRule);
                }
                NvccMatch::Ambiguous(rows) => {
                    toolkit.nvcc_updates = rows.iter().map(|row| row.update.clone()).collect();
                }
                NvccMatch::Unknown => {}
            }
        }
        if toolkit.version.is_none()
            && let Some(release) = release
        {
            toolkit.version = Some(release);
            toolkit.version_source = Some(ToolkitVersionSource::Nvcc);
        }
        facts.installed.push(toolkit);
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::NodeFacts;
    use crate::facts::test_support::{capture_part, fixture};

    /// The real H200 capture's toolkit sections (`h200.probe.txt`) with `toolkit-dpkg`
    /// answered as NVIDIA's apt packages of `update` would be.
    fn h200_with_dpkg(dpkg: &str) -> ToolkitFacts {
        let probe = fixture("h200.probe.txt").replace(
            "@@begin python ",
            &format!("@@begin toolkit-dpkg /usr/local/cuda-13.0@@\n{dpkg}@@end status=0@@\n@@begin python "),
        );
        NodeFacts::parse(&probe).unwrap().toolkits
    }

    const APT_13_0_2: &str = "owner\tcuda-nvcc-13-0\nowner\tcuda-cudart-13-0:amd64\n\
        package\tcuda-cudart-13-0\t13.0.96-1\tii \n\
        package\tcuda-nvcc-13-0\t13.0.88-1\tii \n\
        package\tcuda-toolkit-13-0\t13.0.2-1\tii \n\
        package\tcuda-toolkit-13-0-config-common\t13.0.96-1\tii \n";

    #[test]
    fn h200_without_version_json_is_release_13_0_and_its_nvcc_build_is_ambiguous() {
        let facts = NodeFacts::parse(&fixture("h200.probe.txt")).unwrap();
        let toolkit = facts.toolkits.default_toolkit().unwrap();
        assert_eq!(toolkit.version.as_ref().unwrap().to_string(), "13.0");
        assert_eq!(toolkit.version_source, Some(ToolkitVersionSource::Nvcc));
        let updates: Vec<String> = toolkit
            .nvcc_updates
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(updates, ["13.0.1", "13.0.2"]);
        assert!(!toolkit.package_managed());
        let rules = UpdateTable::embedded().unwrap();
        assert_eq!(
            toolkit.describe(rules.apt()),
            "a CUDA 13.0 toolkit (identified by its nvcc release: nvcc V13.0.88); nvcc V13.0.88 ships with CUDA 13.0.1 and 13.0.2 alike (rules/cuda-updates.yaml), so it cannot tell which"
        );
    }

    #[test]
    fn h200_apt_meta_package_names_the_update() {
        let facts = h200_with_dpkg(APT_13_0_2);
        let toolkit = facts.default_toolkit().unwrap();
        assert_eq!(toolkit.version.as_ref().unwrap().to_string(), "13.0.2");
        assert_eq!(toolkit.version_source, Some(ToolkitVersionSource::Dpkg));
        assert!(toolkit.package_managed());
        assert!(toolkit.nvcc_updates.is_empty());
        let nvcc = toolkit
            .packages
            .iter()
            .find(|p| p.name == "cuda-nvcc-13-0")
            .unwrap();
        assert!(nvcc.owns_prefix && nvcc.installed);
        let rules = UpdateTable::embedded().unwrap();
        assert_eq!(
            toolkit.describe(rules.apt()),
            "CUDA 13.0.2 (identified by its apt meta package (dpkg): cuda-toolkit-13-0 13.0.2-1)"
        );
    }

    #[test]
    fn components_without_a_meta_package_fall_back_to_the_nvcc_build() {
        // Components only (e.g. `apt-get install cuda-nvcc-13-0`): no meta package names
        // the update, and V13.0.88 ships with two updates.
        let facts = h200_with_dpkg(
            "owner\tcuda-nvcc-13-0\npackage\tcuda-nvcc-13-0\t13.0.88-1\tii \n\
             package\tcuda-toolkit-13-0\t13.0.2-1\trc \n",
        );
        let toolkit = facts.default_toolkit().unwrap();
        assert!(toolkit.package_managed());
        assert_eq!(toolkit.version_source, Some(ToolkitVersionSource::Nvcc));
        assert_eq!(toolkit.nvcc_updates.len(), 2);
    }

    #[test]
    fn a_unique_nvcc_build_is_mapped_by_the_rule() {
        let probe = fixture("h200.probe.txt").replace("V13.0.88", "V13.0.48");
        let facts = NodeFacts::parse(&probe).unwrap();
        let toolkit = facts.toolkits.default_toolkit().unwrap();
        assert_eq!(toolkit.version.as_ref().unwrap().to_string(), "13.0.0");
        assert_eq!(
            toolkit.version_source,
            Some(ToolkitVersionSource::NvccBuildRule)
        );
    }

    #[test]
    fn dpkg_lines_parse_and_bad_ones_are_refused() {
        let packages = parse_toolkit_packages(APT_13_0_2).unwrap();
        assert_eq!(packages.len(), 4);
        assert_eq!(packages[2].upstream_version(), "13.0.2");
        assert!(
            packages
                .iter()
                .find(|p| p.name == "cuda-cudart-13-0")
                .unwrap()
                .owns_prefix
        );
        assert!(parse_toolkit_packages("package\tx\n").is_err());
        assert!(parse_toolkit_packages("").unwrap().is_empty());
        let epoch = ToolkitPackage {
            name: "x".into(),
            version: "1:13.0.2-1ubuntu1".into(),
            installed: true,
            owns_prefix: false,
        };
        assert_eq!(epoch.upstream_version(), "13.0.2");
    }

    #[test]
    fn h200_nvcc_is_release_13_0() {
        let nvcc = capture_part("system.txt", "## nvcc", "## cuda dirs");
        let (release, compiler) = parse_nvcc_version(&nvcc).unwrap().unwrap();
        assert_eq!(release.to_string(), "13.0");
        assert_eq!(compiler.unwrap().to_string(), "13.0.88");
    }

    #[test]
    fn version_files_give_the_full_version() {
        let json = r#"{"cuda": {"name": "CUDA SDK", "version": "12.8.1"}, "cuda_cudart": {"version": "12.8.90"}}"#;
        assert_eq!(
            parse_version_json(Path::new("/usr/local/cuda-12.8/version.json"), json)
                .unwrap()
                .unwrap()
                .to_string(),
            "12.8.1"
        );
        assert!(parse_version_json(Path::new("/x/version.json"), "{").is_err());
        assert_eq!(
            parse_version_txt("CUDA Version 11.0.3\n")
                .unwrap()
                .unwrap()
                .to_string(),
            "11.0.3"
        );
        assert_eq!(parse_version_txt("").unwrap(), None);
    }
}
