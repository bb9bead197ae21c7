//! The universe of packages: what the indexes offer, per index, as plain data.
//!
//! For each index: its packages; for each package: its releases; for each release: its
//! requirements (PEP 508, markers and extras kept), `Requires-Python`, and its files
//! (wheel tags, sha256, yanked). Every source — a snapshot file, a find-links
//! directory, a live index — produces this type, and the resolver reads only this type.
//! The index policy (which index may serve which package) is the resolver's, not this
//! module's: a universe records everything each index has.

use std::collections::{BTreeMap, BTreeSet};

use pep440_rs::{Version, VersionSpecifiers};
use pep508_rs::{PackageName, Requirement};
use serde::{Deserialize, Serialize};

use crate::index::filename::DistFilename;
use crate::manifest::Sha256;

/// Everything the configured indexes offer, in index priority order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Universe {
    /// One entry per manifest index, highest priority first.
    pub indexes: Vec<IndexContents>,
    /// The snapshot file this universe was read from, e.g.
    /// `manifests/snapshots/sglang-0.5.9-cu130.json`; `None` when it came from live indexes
    /// or a find-links directory. A package missing from a snapshot is a snapshot miss.
    #[serde(skip)]
    pub snapshot: Option<String>,
}

/// What one named index offers, e.g. `pytorch-cu130`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IndexContents {
    /// The manifest's name for the index, e.g. `pytorch-cu130`.
    pub name: String,
    /// Packages by normalized name.
    pub packages: BTreeMap<PackageName, Vec<Release>>,
    /// Per package, the releases listed with files none of which installs on the target,
    /// e.g. `tensorflow 2.9.1` (wheels for `cp37`–`cp310`) for CPython 3.12: a report says
    /// such a release exists and why it cannot be had. Live resolution records them;
    /// snapshots leave them out unless written by hand.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unusable: BTreeMap<PackageName, BTreeMap<Version, UnusableFiles>>,
}

/// The files of a release that cannot install on the target, as a report words them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnusableFiles {
    /// The Python tags of its wheels, e.g. `cp310`, `py3`.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub pythons: BTreeSet<String>,
    /// The platform tags of its wheels, e.g. `macosx_11_0_arm64`.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub platforms: BTreeSet<String>,
    /// The `Requires-Python` values its files declare, e.g. `>=3.13`.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub requires_python: BTreeSet<String>,
    /// How many of its files are sdists.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sdists: usize,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

impl UnusableFiles {
    /// Count one more file, named `dist`, with its `Requires-Python` text.
    pub fn add(&mut self, dist: &DistFilename, requires_python: Option<&str>) {
        match dist {
            DistFilename::Wheel(wheel) => {
                for tag in &wheel.tags {
                    if !self.pythons.contains(&tag.python) {
                        self.pythons.insert(tag.python.clone());
                    }
                    if !self.platforms.contains(&tag.platform) {
                        self.platforms.insert(tag.platform.clone());
                    }
                }
            }
            DistFilename::Sdist(_) => self.sdists += 1,
        }
        if let Some(requires_python) = requires_python.filter(|text| !text.is_empty())
            && !self.requires_python.contains(requires_python)
        {
            self.requires_python.insert(requires_python.to_string());
        }
    }
}

/// One release of a package, e.g. `torch 2.9.1+cu130`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Release {
    /// e.g. `2.9.1+cu130`.
    pub version: Version,
    /// `Requires-Dist`, e.g. `nvidia-cudnn-cu13==9.13.0.50; platform_system == "Linux"`.
    pub requires_dist: Vec<Requirement>,
    /// `Requires-Python`, e.g. `>=3.10`.
    pub requires_python: Option<VersionSpecifiers>,
    /// `Provides-Extra`, e.g. `[srt, test]`; empty where it was not recorded (then an
    /// extra is known from the `extra == "…"` markers of `requires_dist`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provides_extra: Vec<pep508_rs::ExtraName>,
    /// The release's files; a release with no usable file cannot be installed.
    pub files: Vec<DistFile>,
    /// Where this record comes from when it was not read from an index, e.g.
    /// `transcribed: PyTorch cu130 index listing, 2026-12-02`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<String>,
}

impl Release {
    /// Whether the release declares `extra`, from `Provides-Extra` or, where that was
    /// not recorded, from a requirement whose marker names it, e.g. `jax 0.4.21` has no
    /// `cuda12` extra.
    pub fn provides(&self, extra: &pep508_rs::ExtraName) -> bool {
        self.provides_extra.contains(extra)
            || self.requires_dist.iter().any(|requirement| {
                let marker = requirement.marker.clone();
                marker.clone().simplify_extras(std::slice::from_ref(extra)) != marker
            })
    }
}

/// One distribution file, e.g. `torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DistFile {
    /// The file name; names carry the wheel tags. No URL is recorded.
    pub filename: String,
    /// The file's sha256, when the index gave one.
    pub sha256: Option<Sha256>,
    /// `Some(reason)` when yanked (PEP 592); an empty reason is still yanked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yanked: Option<String>,
    /// Per-file `Requires-Python` (PEP 503 `data-requires-python`), when it differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_python: Option<VersionSpecifiers>,
    /// Size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl Universe {
    /// Every project name any index has, e.g. for "did you mean" suggestions.
    pub fn project_names(&self) -> impl Iterator<Item = &PackageName> {
        self.indexes.iter().flat_map(|index| index.packages.keys())
    }

    /// The contents of the index of this name.
    pub fn index(&self, name: &str) -> Option<&IndexContents> {
        self.indexes.iter().find(|index| index.name == name)
    }
}
