//! Wheel-tag compatibility: which wheels a node can install, and which of them fits best.
//!
//! A node is described by [`Platform`]: the interpreter (CPython and its
//! `MAJOR.MINOR`), the operating system with its C library (glibc `2.35` admits
//! `manylinux_2_35` down to `manylinux_2_5`, with the legacy aliases `manylinux1` =
//! 2.5, `manylinux2010` = 2.12, `manylinux2014` = 2.17) and the machine (`x86_64`).
//! The order follows `packaging.tags.sys_tags`: the interpreter's own ABI first, then
//! `abi3` from newest to oldest, then `none`; the newest manylinux first; pure
//! `py3-none-any` wheels last. This module reads tags only; file names are
//! `index::filename`'s and which release to pick is the resolver's.
//! See: https://packaging.python.org/en/latest/specifications/platform-compatibility-tags/

use std::fmt;

use super::filename::WheelTag;

/// The machine architecture, e.g. `x86_64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arch {
    /// `x86_64`.
    X86_64,
    /// `aarch64`.
    Aarch64,
}

impl Arch {
    /// The name in platform tags and in `platform_machine`, e.g. `x86_64`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::X86_64 => "x86_64",
            Self::Aarch64 => "aarch64",
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A glibc version, e.g. `2.35`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Glibc {
    /// Always `2` in practice.
    pub major: u32,
    /// e.g. `35`.
    pub minor: u32,
}

impl fmt::Display for Glibc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl std::str::FromStr for Glibc {
    type Err = String;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let (major, minor) = value
            .trim()
            .split_once('.')
            .ok_or_else(|| format!("`{value}` is not a glibc version (expected e.g. `2.35`)"))?;
        Ok(Self {
            major: major
                .parse()
                .map_err(|_| format!("`{value}` is not a glibc version (expected e.g. `2.35`)"))?,
            minor: minor
                .parse()
                .map_err(|_| format!("`{value}` is not a glibc version (expected e.g. `2.35`)"))?,
        })
    }
}

/// What a node's interpreter and system accept, e.g. CPython 3.12 on glibc 2.35 x86_64.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    /// The interpreter's `(major, minor)`, e.g. `(3, 12)`.
    pub python: (u32, u32),
    /// The glibc the node runs, e.g. `2.35`.
    pub glibc: Glibc,
    /// The machine, e.g. `x86_64`.
    pub arch: Arch,
}

/// How well a wheel fits: higher is better; `None` from [`Platform::rank`] means it
/// cannot be installed at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TagRank(u64);

impl Platform {
    /// The best rank among a wheel's tags, or `None` when no tag fits, e.g.
    /// `cp312-cp312-manylinux_2_28_x86_64` fits CPython 3.12 on glibc 2.35.
    pub fn best_rank(&self, tags: &[WheelTag]) -> Option<TagRank> {
        tags.iter().filter_map(|tag| self.rank(tag)).max()
    }

    /// The rank of one tag, or `None` when it does not fit.
    pub fn rank(&self, tag: &WheelTag) -> Option<TagRank> {
        let platform = self.platform_rank(&tag.platform)?;
        let interpreter = self.interpreter_rank(&tag.python, &tag.abi)?;
        // The interpreter part dominates, as in `sys_tags`; among equal interpreter
        // parts the most specific platform wins.
        Some(TagRank(
            u64::from(interpreter) * 1_000 + u64::from(platform),
        ))
    }

    /// Rank of a `python-abi` pair: cpXY-cpXY > cpXY-abi3 (newest first) > cpXY-none >
    /// py3X-none > py3-none; `None` when it does not fit this interpreter.
    fn interpreter_rank(&self, python: &str, abi: &str) -> Option<u32> {
        let (major, minor) = self.python;
        if let Some(version) = python.strip_prefix("cp") {
            let (tag_major, tag_minor) = split_python_version(version)?;
            if tag_major != major || tag_minor > minor {
                return None;
            }
            let own = format!("cp{major}{minor}");
            return match abi {
                _ if abi == own && tag_minor == minor => Some(900),
                "abi3" if major == 3 => Some(500 + tag_minor),
                "none" if tag_minor == minor => Some(400),
                _ => None,
            };
        }
        if abi != "none" {
            return None;
        }
        let version = python.strip_prefix("py")?;
        if version == major.to_string() {
            return Some(100);
        }
        let (tag_major, tag_minor) = split_python_version(version)?;
        (tag_major == major && tag_minor <= minor).then_some(200 + tag_minor)
    }

    /// Rank of a platform tag: the newest admissible manylinux first, `linux_ARCH`
    /// next, `any` last; `None` for another OS, machine or a newer glibc.
    fn platform_rank(&self, platform: &str) -> Option<u32> {
        if platform == "any" {
            return Some(1);
        }
        let arch = self.arch.as_str();
        let glibc = match platform {
            _ if platform == format!("linux_{arch}") => return Some(2),
            _ if platform == format!("manylinux1_{arch}") => (2, 5),
            _ if platform == format!("manylinux2010_{arch}") => (2, 12),
            _ if platform == format!("manylinux2014_{arch}") => (2, 17),
            _ => {
                let rest = platform.strip_prefix("manylinux_")?;
                let rest = rest.strip_suffix(arch)?.strip_suffix('_')?;
                let (tag_major, tag_minor) = rest.split_once('_')?;
                (tag_major.parse().ok()?, tag_minor.parse().ok()?)
            }
        };
        let admissible = Glibc {
            major: glibc.0,
            minor: glibc.1,
        } <= self.glibc
            && glibc.0 == self.glibc.major;
        admissible.then_some(10 + glibc.1)
    }
}

/// `312` → `(3, 12)`, `3` alone is not a version with a minor.
fn split_python_version(digits: &str) -> Option<(u32, u32)> {
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(1);
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::filename::WheelFilename;

    fn node() -> Platform {
        Platform {
            python: (3, 12),
            glibc: Glibc {
                major: 2,
                minor: 35,
            },
            arch: Arch::X86_64,
        }
    }

    fn rank(filename: &str) -> Option<TagRank> {
        node().best_rank(&WheelFilename::parse(filename).unwrap().tags)
    }

    #[test]
    fn cpython_linux_tags() {
        assert!(rank("torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl").is_some());
        assert!(rank("torch-2.9.1+cu130-cp311-cp311-manylinux_2_28_x86_64.whl").is_none());
        assert!(rank("sgl_kernel-0.3.21+cu130-cp310-abi3-manylinux2014_x86_64.whl").is_some());
        assert!(rank("a-1-cp312-cp312-manylinux_2_39_x86_64.whl").is_none());
        assert!(rank("a-1-cp312-cp312-manylinux1_x86_64.whl").is_some());
        assert!(rank("a-1-cp312-cp312-manylinux2010_x86_64.whl").is_some());
        assert!(rank("a-1-cp312-cp312-linux_x86_64.whl").is_some());
        assert!(rank("a-1-cp312-cp312-manylinux_2_17_aarch64.whl").is_none());
        assert!(rank("a-1-cp312-cp312-win_amd64.whl").is_none());
        assert!(rank("a-1-cp313-abi3-manylinux2014_x86_64.whl").is_none());
        assert!(rank("a-1-py3-graalpy240_310_native-any.whl").is_none());
        assert!(rank("a-1-graalpy310-none-any.whl").is_none());
        assert!(rank("a-1-py3-any-macosx_10_0_ppc64.whl").is_none());
    }

    #[test]
    fn specific_wheels_beat_pure_ones() {
        let specific = rank("a-1-cp312-cp312-manylinux_2_17_x86_64.whl").unwrap();
        let abi3 = rank("a-1-cp310-abi3-manylinux_2_17_x86_64.whl").unwrap();
        let pure = rank("a-1-py3-none-any.whl").unwrap();
        assert!(specific > abi3 && abi3 > pure);
        assert!(
            rank("a-1-cp312-cp312-manylinux_2_28_x86_64.whl").unwrap()
                > rank("a-1-cp312-cp312-manylinux2014_x86_64.whl").unwrap()
        );
    }
}
