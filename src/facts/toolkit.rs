//! Parsers for installed CUDA toolkits: the `/usr/local/cuda*` entries and where they
//! point, each toolkit's `version.json` / `version.txt`, and `nvcc --version`. It does
//! not install toolkits nor decide which one a manifest wants.
//!
//! See: <https://docs.nvidia.com/cuda/cuda-installation-guide-linux/>

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::facts::error::FactsError;
use crate::facts::sections::Sections;
use crate::facts::versions::CudaVersion;

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
    /// `nvcc --version`'s `release 13.0` (no patch level).
    Nvcc,
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

/// Builds the toolkit facts from sections `toolkits`, `toolkit-version-json PREFIX`,
/// `toolkit-version-txt PREFIX` and `toolkit-nvcc PREFIX`.
pub(crate) fn toolkit_facts(sections: &Sections) -> Result<ToolkitFacts, FactsError> {
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
            .get_for("toolkit-nvcc", &argument)
            .filter(|section| section.succeeded())
            && let Some((release, compiler)) = parse_nvcc_version(&section.stdout)
                .map_err(|error| error.in_section("toolkit-nvcc"))?
        {
            toolkit.nvcc_version = compiler;
            if toolkit.version.is_none() {
                toolkit.version = Some(release);
                toolkit.version_source = Some(ToolkitVersionSource::Nvcc);
            }
        }
        facts.installed.push(toolkit);
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::test_support::capture_part;

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
