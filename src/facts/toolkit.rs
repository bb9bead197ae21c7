//! Parsers for installed CUDA toolkits: the `/usr/local/cuda*` entries and where they
//! point, each toolkit's `version.json` / `version.txt`, its packages (Debian's
//! `dpkg-query`, or `rpm` on RHEL, Rocky, Alma, Fedora and SLES), `nvcc --version` and
//! the node's package tools; and which update each toolkit is, exactly, and how that was
//! known (`version.json`, else the version of NVIDIA's deb or rpm meta package, else the
//! nvcc build mapped by `manifests/rules/cuda-updates.yaml` when exactly one update ships
//! it). It does not install toolkits nor decide which one a manifest wants.
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

/// The package manager that answered for a toolkit's prefix (the probe's `manager` line).
///
/// NVIDIA ships the same package names for both, e.g. `cuda-compiler-13-0` `13.0.2-1`.
/// See: <https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html#meta-packages>
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PackageManager {
    /// Debian's and Ubuntu's `dpkg` (NVIDIA's apt packages).
    Dpkg,
    /// `rpm` on RHEL, Rocky, Alma, Fedora, SLES (NVIDIA's rpm packages, installed with
    /// dnf, yum or zypper).
    Rpm,
}

impl PackageManager {
    /// The tool's name, e.g. `dpkg`: "no dpkg package owns it".
    pub fn name(self) -> &'static str {
        match self {
            Self::Dpkg => "dpkg",
            Self::Rpm => "rpm",
        }
    }

    /// What NVIDIA's packages are called on it, e.g. `apt`: "NVIDIA's apt packages".
    pub fn packages(self) -> &'static str {
        match self {
            Self::Dpkg => "apt",
            Self::Rpm => "rpm",
        }
    }

    /// Whether it is rpm.
    pub fn is_rpm(self) -> bool {
        self == Self::Rpm
    }
}

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
    /// The installed version of NVIDIA's rpm meta package of the toolkit's line (`rpm
    /// -qa`), e.g. `cuda-compiler-13-0` `13.0.2-1` → `13.0.2`.
    Rpm,
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
            Self::Rpm => "its rpm meta package",
            Self::NvccBuildRule => "its nvcc build (rules/cuda-updates.yaml)",
            Self::Nvcc => "its nvcc release",
        }
    }

    /// Whether the source names one update exactly (not only the release line).
    pub fn is_exact(self) -> bool {
        !matches!(self, Self::Nvcc)
    }
}

/// A package of a toolkit's line (dpkg's or rpm's), e.g. `cuda-nvcc-13-0` `13.0.88-1`,
/// installed, owning files under the prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolkitPackage {
    /// e.g. `cuda-toolkit-13-0`.
    pub name: String,
    /// The Debian version, or rpm's `[EPOCH:]VERSION-RELEASE`, e.g. `13.0.2-1`.
    pub version: String,
    /// Whether it is installed (dpkg status `ii`, not only configuration files left; every
    /// package rpm lists is installed).
    pub installed: bool,
    /// Whether it owns files under the toolkit's prefix (`dpkg-query -S PREFIX`, or rpm's
    /// file list); meta packages own none.
    pub owns_prefix: bool,
}

impl ToolkitPackage {
    /// The upstream part of the Debian version (rpm's VERSION), e.g. `1:13.0.2-1` →
    /// `13.0.2`.
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
    /// The packages of the toolkit's line (`cuda-*-13-0`), e.g. `cuda-toolkit-13-0`
    /// `13.0.2-1`; empty where neither dpkg nor rpm is there or nothing is installed from
    /// packages.
    #[serde(default)]
    pub packages: Vec<ToolkitPackage>,
    /// Which package manager listed [`Toolkit::packages`]; `None` where neither answered
    /// (and in facts written before it was recorded, when only dpkg was asked).
    #[serde(default)]
    pub package_manager: Option<PackageManager>,
    /// Every update that ships [`Toolkit::nvcc_version`] when more than one does, e.g.
    /// `13.0.1` and `13.0.2` for `13.0.88`: the nvcc build cannot tell them apart.
    #[serde(default)]
    pub nvcc_updates: Vec<CudaVersion>,
}

impl Toolkit {
    /// The package manager that answered for the prefix; dpkg where none is recorded
    /// (facts from before rpm was asked).
    pub fn manager(&self) -> PackageManager {
        self.package_manager.unwrap_or(PackageManager::Dpkg)
    }

    /// Whether installed packages own the prefix (NVIDIA's apt or rpm packages laid it
    /// out; [`Toolkit::manager`] says which).
    pub fn package_managed(&self) -> bool {
        self.packages
            .iter()
            .any(|package| package.installed && package.owns_prefix)
    }

    /// The installed meta package that names the update, e.g. `cuda-toolkit-13-0`
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
            return format!(
                "no recognizable toolkit (no version.json, no {} meta package, no nvcc)",
                self.manager().packages()
            );
        };
        let source = self.version_source.unwrap_or(ToolkitVersionSource::Nvcc);
        let mut text = match source {
            ToolkitVersionSource::Nvcc => format!("a CUDA {version} toolkit"),
            _ => format!("CUDA {version}"),
        };
        let detail = match source {
            ToolkitVersionSource::Dpkg | ToolkitVersionSource::Rpm => self
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
    /// The package tools the node has, of `apt-get`, `dpkg-query`, `rpm`, `dnf`, `yum`,
    /// `zypper` (section `toolkit-package-tools`); `None` where not probed.
    #[serde(default)]
    pub package_tools: Option<Vec<String>>,
}

impl ToolkitFacts {
    /// The toolkit `/usr/local/cuda` points to.
    pub fn default_toolkit(&self) -> Option<&Toolkit> {
        let prefix = self.default_prefix.as_deref()?;
        self.installed
            .iter()
            .find(|toolkit| toolkit.prefix == prefix)
    }

    /// Whether the node has package tool `tool`, e.g. `apt-get`; `None` where not probed.
    pub fn has_package_tool(&self, tool: &str) -> Option<bool> {
        self.package_tools
            .as_ref()
            .map(|tools| tools.iter().any(|found| found == tool))
    }

    /// The tool that installs and removes rpm packages on the node: `dnf`, `zypper` or
    /// `yum`, the first the node has; `None` where it has none of them or was not probed.
    pub fn rpm_front_end(&self) -> Option<&'static str> {
        ["dnf", "zypper", "yum"]
            .into_iter()
            .find(|tool| self.has_package_tool(tool) == Some(true))
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

/// What section `toolkit-packages PREFIX` says: who answered and the packages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageListing {
    /// The `manager` line's tool; `None` without one (the older `toolkit-dpkg` section).
    pub manager: Option<PackageManager>,
    /// The packages of the line, sorted by name.
    pub packages: Vec<ToolkitPackage>,
}

/// Reads section `toolkit-packages PREFIX` (or the older `toolkit-dpkg PREFIX`), in one
/// format for dpkg and rpm: a `manager\tdpkg` or `manager\trpm` line, `owner\tPACKAGE`
/// lines (dpkg: `dpkg-query -S PREFIX`; rpm: `rpm -qf PREFIX` and the line's packages
/// with a file under PREFIX) and `package\tNAME\tVERSION\tSTATUS` lines (`dpkg-query -W`,
/// e.g. `package\tcuda-toolkit-13-0\t13.0.2-1\tii `; `rpm -qa`, e.g.
/// `package\tcuda-compiler-13-0\t13.0.2-1\tinstalled`).
pub fn parse_toolkit_package_listing(text: &str) -> Result<PackageListing, FactsError> {
    let mut manager = None;
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
            ["manager", "dpkg"] => manager = Some(PackageManager::Dpkg),
            ["manager", "rpm"] => manager = Some(PackageManager::Rpm),
            ["owner", name] => owners.push(name.split(':').next().unwrap_or(name).trim()),
            ["package", name, version, status] => {
                // `ii `: wanted install, installed. See: https://man7.org/linux/man-pages/man1/dpkg-query.1.html
                // `installed`: rpm's database lists installed packages only.
                let installed = *status == "installed" || status.as_bytes().get(1) == Some(&b'i');
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
    Ok(PackageListing { manager, packages })
}

/// The packages of [`parse_toolkit_package_listing`], without who answered.
pub fn parse_toolkit_packages(text: &str) -> Result<Vec<ToolkitPackage>, FactsError> {
    parse_toolkit_package_listing(text).map(|listing| listing.packages)
}

/// The update an installed deb or rpm meta package names, e.g. `cuda-toolkit-13-0`
/// `13.0.2-1` → `13.0.2`; only where packages own the prefix and the version is of the
/// package's line.
fn package_update(toolkit: &Toolkit, apt: &AptNaming) -> Option<CudaVersion> {
    if !toolkit.package_managed() {
        return None;
    }
    let meta = toolkit.meta_package(apt)?;
    let update: CudaVersion = meta.upstream_version().parse().ok()?;
    (apt.meta_release(&meta.name) == Some(update.release())).then_some(update)
}

/// Builds the toolkit facts from sections `toolkits`, `toolkit-version-json PREFIX`,
/// `toolkit-version-txt PREFIX`, `toolkit-packages PREFIX` (`toolkit-dpkg PREFIX` in older
/// captures), `toolkit-nvcc PREFIX` and `toolkit-package-tools`.
pub(crate) fn toolkit_facts(sections: &Sections) -> Result<ToolkitFacts, FactsError> {
    let rules = UpdateTable::embedded().map_err(FactsError::ToolkitRules)?;
    let mut facts = ToolkitFacts {
        package_tools: sections.succeeded("toolkit-package-tools").map(|section| {
            section
                .stdout
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .map(str::to_string)
                .collect()
        }),
        ..ToolkitFacts::default()
    };
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
            package_manager: None,
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
        // `toolkit-dpkg`: captures from before rpm was asked, dpkg's without a `manager` line.
        for (name, legacy) in [
            ("toolkit-packages", None),
            ("toolkit-dpkg", Some(PackageManager::Dpkg)),
        ] {
            if let Some(section) = sections
                .get_for(name, &argument)
                .filter(|section| section.succeeded())
            {
                let listing = parse_toolkit_package_listing(&section.stdout)
                    .map_err(|error| error.in_section(name))?;
                toolkit.packages = listing.packages;
                toolkit.package_manager = listing.manager.or(legacy);
                break;
            }
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
            && let Some(update) = package_update(&toolkit, rules.apt())
        {
            toolkit.version = Some(update);
            toolkit.version_source = Some(match toolkit.manager() {
                PackageManager::Dpkg => ToolkitVersionSource::Dpkg,
                PackageManager::Rpm => ToolkitVersionSource::Rpm,
            });
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
#[path = "toolkit_rpm_db_tests.rs"]
mod rpm_db_tests;

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

    /// The real H200 capture's toolkit sections with section `NAME /usr/local/cuda-13.0`
    /// answered by `body`, and `toolkit-package-tools` by `tools` where given.
    fn h200_with_section(name: &str, body: &str, tools: Option<&str>) -> ToolkitFacts {
        let tools = tools
            .map(|tools| format!("@@begin toolkit-package-tools@@\n{tools}@@end status=0@@\n"))
            .unwrap_or_default();
        let probe = fixture("h200.probe.txt").replace(
            "@@begin python ",
            &format!(
                "@@begin {name} /usr/local/cuda-13.0@@\n{body}@@end status=0@@\n{tools}@@begin python "
            ),
        );
        NodeFacts::parse(&probe).unwrap().toolkits
    }

    /// `toolkit_packages /usr/local/cuda-13.0` on a Rocky Linux 9 node where NVIDIA's rpm
    /// packages of CUDA 13.0.2 were installed (`dnf install cuda-compiler-13-0
    /// cuda-libraries-13-0`), as rpm prints it: owners sorted (`sort -u`), packages in
    /// rpm's database order, `-devel` where Debian says `-dev`, every one `installed`.
    /// Versions as NVIDIA's 13.0.2 packages carry them (the real H200's, same builds).
    const RPM_13_0_2: &str = "manager\trpm\n\
        owner\tcuda-cccl-13-0\n\
        owner\tcuda-crt-13-0\n\
        owner\tcuda-cudart-13-0\n\
        owner\tcuda-cudart-devel-13-0\n\
        owner\tcuda-nvcc-13-0\n\
        owner\tcuda-toolkit-13-0-config-common\n\
        owner\tlibcublas-13-0\n\
        package\tcuda-toolkit-13-0-config-common\t13.0.96-1\tinstalled\n\
        package\tcuda-cudart-13-0\t13.0.96-1\tinstalled\n\
        package\tcuda-cccl-13-0\t13.0.85-1\tinstalled\n\
        package\tcuda-crt-13-0\t13.0.88-1\tinstalled\n\
        package\tcuda-nvcc-13-0\t13.0.88-1\tinstalled\n\
        package\tcuda-cudart-devel-13-0\t13.0.96-1\tinstalled\n\
        package\tlibcublas-13-0\t13.1.0.3-1\tinstalled\n\
        package\tcuda-compiler-13-0\t13.0.2-1\tinstalled\n\
        package\tcuda-libraries-13-0\t13.0.2-1\tinstalled\n";

    #[test]
    fn rpm_meta_package_names_the_update_and_rpm_is_recorded() {
        let facts = h200_with_section("toolkit-packages", RPM_13_0_2, Some("rpm\ndnf\n"));
        let toolkit = facts.default_toolkit().unwrap();
        assert_eq!(toolkit.version.as_ref().unwrap().to_string(), "13.0.2");
        assert_eq!(toolkit.version_source, Some(ToolkitVersionSource::Rpm));
        assert_eq!(toolkit.package_manager, Some(PackageManager::Rpm));
        assert!(toolkit.package_managed() && toolkit.nvcc_updates.is_empty());
        assert_eq!(toolkit.packages.len(), 9);
        assert!(toolkit.packages.iter().all(|package| package.installed));
        let rules = UpdateTable::embedded().unwrap();
        assert_eq!(
            toolkit.describe(rules.apt()),
            "CUDA 13.0.2 (identified by its rpm meta package: cuda-compiler-13-0 13.0.2-1)"
        );
        assert_eq!(facts.has_package_tool("apt-get"), Some(false));
        assert_eq!(facts.has_package_tool("rpm"), Some(true));
        assert_eq!(facts.rpm_front_end(), Some("dnf"));
    }

    #[test]
    fn rpm_lines_parse_and_bad_ones_are_refused() {
        let listing = parse_toolkit_package_listing(RPM_13_0_2).unwrap();
        assert_eq!(listing.manager, Some(PackageManager::Rpm));
        // Sorted by name whatever rpm's order.
        assert_eq!(listing.packages[0].name, "cuda-cccl-13-0");
        let compiler = listing
            .packages
            .iter()
            .find(|p| p.name == "cuda-compiler-13-0")
            .unwrap();
        assert!(compiler.installed && !compiler.owns_prefix);
        assert_eq!(compiler.upstream_version(), "13.0.2");
        // rpm's `%|EPOCH?{%{EPOCH}:}|%{VERSION}-%{RELEASE}`: an epoch where the package has one.
        let epoch =
            parse_toolkit_packages("package\tcuda-toolkit-13-0\t1:13.0.2-1\tinstalled\n").unwrap();
        assert_eq!(epoch[0].upstream_version(), "13.0.2");
        assert!(epoch[0].installed);
        assert!(parse_toolkit_package_listing("manager\tpacman\n").is_err());
        assert!(parse_toolkit_package_listing("manager\n").is_err());
        assert!(parse_toolkit_packages("package\tcuda-compiler-13-0\t\tinstalled\n").is_err());
        assert_eq!(
            parse_toolkit_package_listing("manager\tdpkg\n").unwrap(),
            PackageListing {
                manager: Some(PackageManager::Dpkg),
                packages: Vec::new()
            }
        );
    }

    #[test]
    fn an_rpm_node_whose_toolkit_no_package_owns_falls_back_to_nvcc() {
        // A runfile toolkit on a RHEL node: rpm answers, owns nothing, lists nothing.
        let facts = h200_with_section("toolkit-packages", "manager\trpm\n", Some("rpm\nyum\n"));
        let toolkit = facts.default_toolkit().unwrap();
        assert_eq!(toolkit.package_manager, Some(PackageManager::Rpm));
        assert!(!toolkit.package_managed());
        assert_eq!(toolkit.version_source, Some(ToolkitVersionSource::Nvcc));
        assert_eq!(toolkit.nvcc_updates.len(), 2);
        assert_eq!(facts.rpm_front_end(), Some("yum"));
        // rpm's meta package of another line names nothing.
        let other_line = RPM_13_0_2.replace(
            "cuda-compiler-13-0\t13.0.2-1",
            "cuda-compiler-13-0\t12.8.1-1",
        );
        let other_line = other_line.replace(
            "cuda-libraries-13-0\t13.0.2-1",
            "cuda-libraries-13-0\t12.8.1-1",
        );
        let facts = h200_with_section("toolkit-packages", &other_line, None);
        let toolkit = facts.default_toolkit().unwrap();
        assert_eq!(toolkit.version_source, Some(ToolkitVersionSource::Nvcc));
        assert_eq!(facts.package_tools, None);
        assert_eq!(facts.rpm_front_end(), None);
    }

    #[test]
    fn dpkg_answers_in_the_new_section_and_the_old_one_alike() {
        let rules = UpdateTable::embedded().unwrap();
        for (name, body) in [
            ("toolkit-packages", format!("manager\tdpkg\n{APT_13_0_2}")),
            ("toolkit-dpkg", APT_13_0_2.to_string()),
        ] {
            let facts = h200_with_section(name, &body, Some("apt-get\ndpkg-query\n"));
            let toolkit = facts.default_toolkit().unwrap();
            assert_eq!(
                toolkit.package_manager,
                Some(PackageManager::Dpkg),
                "{name}"
            );
            assert_eq!(toolkit.version_source, Some(ToolkitVersionSource::Dpkg));
            assert_eq!(
                toolkit.describe(rules.apt()),
                "CUDA 13.0.2 (identified by its apt meta package (dpkg): cuda-toolkit-13-0 13.0.2-1)"
            );
            assert_eq!(facts.has_package_tool("apt-get"), Some(true));
            assert_eq!(facts.rpm_front_end(), None);
        }
    }

    #[test]
    fn facts_json_without_the_package_manager_fields_still_reads() {
        let facts = h200_with_section("toolkit-packages", RPM_13_0_2, Some("rpm\ndnf\n"));
        let mut json = serde_json::to_value(&facts).unwrap();
        assert_eq!(json["installed"][0]["package_manager"], "rpm");
        assert_eq!(json["installed"][0]["version_source"], "rpm");
        json.as_object_mut().unwrap().remove("package_tools");
        json["installed"][0]
            .as_object_mut()
            .unwrap()
            .remove("package_manager");
        let old: ToolkitFacts = serde_json::from_value(json).unwrap();
        assert_eq!(old.package_tools, None);
        let toolkit = old.default_toolkit().unwrap();
        assert_eq!(toolkit.package_manager, None);
        // Facts from before rpm was asked were dpkg's.
        assert_eq!(toolkit.manager(), PackageManager::Dpkg);
    }

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
