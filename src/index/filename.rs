//! Distribution file names: what a wheel's or an sdist's name says about it.
//!
//! `torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl` names the project, the
//! version (local label included) and the compressed tag set; an sdist name names
//! project and version. Tag *compatibility* with a node is `index::tags`'s job.
//! See: https://packaging.python.org/en/latest/specifications/binary-distribution-format/

use std::fmt;
use std::str::FromStr;

use pep440_rs::Version;
use pep508_rs::PackageName;

/// Failed to read a distribution file name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Failed to parse distribution file name `{filename}`: {reason}")]
pub struct FilenameError {
    /// e.g. `torch.whl`, escaped so it stays on its line.
    pub filename: String,
    /// e.g. `expected 5 or 6 dash-separated parts`.
    pub reason: String,
}

/// One wheel tag triple, e.g. `cp312-cp312-manylinux_2_28_x86_64`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WheelTag {
    /// e.g. `cp312`, `py3`.
    pub python: String,
    /// e.g. `cp312`, `abi3`, `none`.
    pub abi: String,
    /// e.g. `manylinux_2_28_x86_64`, `any`.
    pub platform: String,
}

impl fmt::Display for WheelTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.python, self.abi, self.platform)
    }
}

impl FromStr for WheelTag {
    type Err = String;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let mut parts = value.splitn(3, '-');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(python), Some(abi), Some(platform))
                if !python.is_empty() && !abi.is_empty() && !platform.is_empty() =>
            {
                Ok(Self {
                    python: python.to_string(),
                    abi: abi.to_string(),
                    platform: platform.to_string(),
                })
            }
            _ => Err(format!("`{value}` is not a `python-abi-platform` tag")),
        }
    }
}

/// A parsed wheel file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelFilename {
    /// e.g. `torch`.
    pub name: PackageName,
    /// e.g. `2.9.1+cu130`.
    pub version: Version,
    /// The optional build tag, e.g. `1`.
    pub build: Option<String>,
    /// Every tag of the compressed tag set, e.g. `cp312-cp312-manylinux_2_28_x86_64`
    /// and `cp312-cp312-manylinux2014_x86_64` for `…-manylinux_2_28_x86_64.manylinux2014_x86_64.whl`.
    pub tags: Vec<WheelTag>,
}

/// A parsed source distribution file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdistFilename {
    /// e.g. `flashinfer-python`.
    pub name: PackageName,
    /// e.g. `0.6.4`.
    pub version: Version,
}

/// A wheel or an sdist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DistFilename {
    /// A built distribution.
    Wheel(WheelFilename),
    /// A source distribution.
    Sdist(SdistFilename),
}

/// The longest distribution file name taken: a file name on Linux is at most 255 bytes.
const MAX_FILENAME_BYTES: usize = 255;

/// Refuse a name that is not one path component of the characters the wheel and sdist
/// specifications produce (ASCII letters, digits, `.`, `_`, `-`, `+` of a local version
/// label, `!` of an epoch), so no `/`, `..`, line break or escape sequence reaches a
/// path on a node, a lock or a terminal.
fn check_characters(filename: &str) -> Result<(), FilenameError> {
    if filename.len() > MAX_FILENAME_BYTES {
        return Err(error(
            filename,
            format!("longer than {MAX_FILENAME_BYTES} bytes"),
        ));
    }
    if filename.starts_with('.') || filename.starts_with('-') {
        return Err(error(filename, "a file name starts with a letter or digit"));
    }
    match filename
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '!')))
    {
        None => Ok(()),
        Some(c) => Err(error(
            filename,
            format!(
                "character `{}` is not one a distribution's file name holds",
                crate::text::text_value(&c.to_string())
            ),
        )),
    }
}

impl DistFilename {
    /// Parse any distribution file name, e.g. `sglang-0.5.9-py3-none-any.whl` or
    /// `sglang-0.5.9.tar.gz`.
    pub fn parse(filename: &str) -> Result<Self, FilenameError> {
        check_characters(filename)?;
        if filename.ends_with(".whl") {
            WheelFilename::parse(filename).map(Self::Wheel)
        } else {
            SdistFilename::parse(filename).map(Self::Sdist)
        }
    }

    /// The project name.
    pub fn name(&self) -> &PackageName {
        match self {
            Self::Wheel(wheel) => &wheel.name,
            Self::Sdist(sdist) => &sdist.name,
        }
    }

    /// The version.
    pub fn version(&self) -> &Version {
        match self {
            Self::Wheel(wheel) => &wheel.version,
            Self::Sdist(sdist) => &sdist.version,
        }
    }
}

fn error(filename: &str, reason: impl Into<String>) -> FilenameError {
    FilenameError {
        filename: crate::text::text_value(filename),
        reason: reason.into(),
    }
}

fn parse_name(filename: &str, text: &str) -> Result<PackageName, FilenameError> {
    PackageName::from_str(text)
        .map_err(|e| error(filename, format!("invalid project name `{text}`: {e}")))
}

fn parse_version(filename: &str, text: &str) -> Result<Version, FilenameError> {
    Version::from_str(text).map_err(|e| error(filename, format!("invalid version `{text}`: {e}")))
}

impl WheelFilename {
    /// Parse `{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl`.
    pub fn parse(filename: &str) -> Result<Self, FilenameError> {
        let stem = filename
            .strip_suffix(".whl")
            .ok_or_else(|| error(filename, "a wheel name ends in `.whl`"))?;
        let parts: Vec<&str> = stem.split('-').collect();
        let (name, version, build, python, abi, platform) = match parts.as_slice() {
            [name, version, python, abi, platform] => {
                (*name, *version, None, *python, *abi, *platform)
            }
            [name, version, build, python, abi, platform] => (
                *name,
                *version,
                Some((*build).to_string()),
                *python,
                *abi,
                *platform,
            ),
            _ => {
                return Err(error(
                    filename,
                    format!(
                        "expected 5 or 6 dash-separated parts, found {}",
                        parts.len()
                    ),
                ));
            }
        };
        let mut tags = Vec::new();
        for python in python.split('.') {
            for abi in abi.split('.') {
                for platform in platform.split('.') {
                    tags.push(WheelTag {
                        python: python.to_string(),
                        abi: abi.to_string(),
                        platform: platform.to_string(),
                    });
                }
            }
        }
        Ok(Self {
            name: parse_name(filename, name)?,
            version: parse_version(filename, version)?,
            build,
            tags,
        })
    }
}

impl SdistFilename {
    /// Parse `{name}-{version}.tar.gz` (or `.zip`); the name may contain dashes in
    /// legacy sdists, so the version is the part after the last dash that parses.
    pub fn parse(filename: &str) -> Result<Self, FilenameError> {
        let stem = [".tar.gz", ".zip", ".tar.bz2", ".tgz"]
            .iter()
            .find_map(|suffix| filename.strip_suffix(suffix))
            .ok_or_else(|| error(filename, "an sdist name ends in `.tar.gz` or `.zip`"))?;
        let (name, version) = stem
            .rsplit_once('-')
            .ok_or_else(|| error(filename, "expected `{name}-{version}`"))?;
        Ok(Self {
            name: parse_name(filename, name)?,
            version: parse_version(filename, version)?,
        })
    }
}

/// A distribution's file name checked where it enters (an index page, a lock, a
/// snapshot): one path component that parses as a wheel or an sdist, e.g.
/// `torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct DistFileName(String);

impl DistFileName {
    /// Check `filename`, e.g. `sglang-0.5.9-py3-none-any.whl`; `../x.whl` is refused.
    pub fn new(filename: impl Into<String>) -> Result<Self, FilenameError> {
        let filename = filename.into();
        DistFilename::parse(&filename)?;
        Ok(Self(filename))
    }

    /// The name, e.g. `sglang-0.5.9.tar.gz`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// What the name says: project, version and tags.
    pub fn parsed(&self) -> Result<DistFilename, FilenameError> {
        DistFilename::parse(&self.0)
    }
}

impl TryFrom<String> for DistFileName {
    type Error = FilenameError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<DistFileName> for String {
    fn from(value: DistFileName) -> Self {
        value.0
    }
}

impl std::ops::Deref for DistFileName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for DistFileName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl AsRef<std::path::Path> for DistFileName {
    fn as_ref(&self) -> &std::path::Path {
        std::path::Path::new(&self.0)
    }
}

impl fmt::Display for DistFileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for DistFileName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for DistFileName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for DistFileName {
    fn eq(&self, other: &String) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_with_local_label_and_compressed_platforms() {
        let wheel = WheelFilename::parse(
            "torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.manylinux2014_x86_64.whl",
        )
        .unwrap();
        assert_eq!(wheel.name.to_string(), "torch");
        assert_eq!(wheel.version.to_string(), "2.9.1+cu130");
        assert_eq!(wheel.tags.len(), 2);
        assert_eq!(
            wheel.tags[1].to_string(),
            "cp312-cp312-manylinux2014_x86_64"
        );
    }

    #[test]
    fn wheel_with_build_tag() {
        let wheel = WheelFilename::parse("a-1.0-1-py3-none-any.whl").unwrap();
        assert_eq!(wheel.build.as_deref(), Some("1"));
        assert!(WheelFilename::parse("a-1.0.whl").is_err());
    }

    #[test]
    fn sdists() {
        let sdist = SdistFilename::parse("flashinfer_python-0.6.4.tar.gz").unwrap();
        assert_eq!(sdist.name.to_string(), "flashinfer-python");
        assert_eq!(sdist.version.to_string(), "0.6.4");
    }

    /// See: issue 33. A name from an index page or a lock is one path component of
    /// the characters the specifications produce.
    #[test]
    fn hostile_file_names_are_refused() {
        for name in [
            "../../etc/cron.d/x-1.0-py3-none-any.whl",
            "a-1.0-py3-none-any/../x.whl",
            "a-1.0-py3-none-any\n--extra-index-url=x.whl",
            "a-1.0-py3-none-\u{1b}[2Jany.whl",
            "a-1.0\u{2028}.tar.gz",
            ".a-1.0.tar.gz",
            "a-1.0 .tar.gz",
            "",
        ] {
            let error = DistFileName::new(name).unwrap_err();
            assert!(
                !error.to_string().contains(['\n', '\u{1b}', '\u{2028}']),
                "{error}"
            );
        }
        let long = format!("{}-1.0.tar.gz", "a".repeat(250));
        assert!(DistFileName::new(long).is_err());
        for name in [
            "torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
            "flashinfer_python-0.6.4.tar.gz",
            "a-1!2.0-1-py3-none-any.whl",
        ] {
            assert_eq!(DistFileName::new(name).unwrap().as_str(), name);
        }
        assert!(serde_json::from_str::<DistFileName>("\"../a-1.0.tar.gz\"").is_err());
    }
}
