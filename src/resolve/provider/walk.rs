//! Packages walked down: a package tried at many versions in one resolution is decided
//! earlier in the next.
//!
//! PubGrub blames the latest decision of a conflict. When a package decided late (say
//! `spacy[cuda12x]`, after `numpy 2.5.5`) conflicts with one decided earlier, each of its
//! versions is tried and rejected in turn while the earlier decision stands: a walk down
//! every release of the package, which live resolution pays for in metadata (old
//! sdist-only releases need builds). As uv marks a package that keeps being rejected as
//! "conflict early", a package tried at more than [`WALK_LIMIT`] versions stops the
//! resolution ([`Halt::Walked`]); the next one decides it before the ordinary packages,
//! so its dependencies narrow theirs before they are chosen.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use pep440_rs::Version;

use super::super::live::Miss;
use super::super::package::ResolverPackage;

/// Versions of one package tried in one resolution before it is decided earlier (uv's
/// conflict threshold is 5 as well).
pub(crate) const WALK_LIMIT: usize = 5;

/// Why a resolution stopped before it finished.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Halt {
    /// The universe being filled lacks something (live resolution).
    #[error(transparent)]
    Missing(#[from] Miss),
    /// This package was tried at more than [`WALK_LIMIT`] versions.
    #[error("`{0}` was tried at more than {WALK_LIMIT} versions")]
    Walked(ResolverPackage),
}

/// The versions tried per package in one resolution, and the packages decided early.
#[derive(Debug, Default)]
pub(crate) struct Walks {
    tried: RefCell<HashMap<ResolverPackage, HashSet<Version>>>,
    early: Vec<ResolverPackage>,
}

impl Walks {
    /// Tracking for a resolution that decides `early` before ordinary packages.
    pub(crate) fn new(early: Vec<ResolverPackage>) -> Self {
        Self {
            tried: RefCell::new(HashMap::new()),
            early,
        }
    }

    /// Whether `package` is decided before the ordinary packages.
    pub(crate) fn is_early(&self, package: &ResolverPackage) -> bool {
        self.early.contains(package)
    }

    /// Note that `package` is tried at `version`; a package not decided early yet that
    /// this makes tried at more than [`WALK_LIMIT`] versions halts the resolution.
    pub(crate) fn try_version(
        &self,
        package: &ResolverPackage,
        version: &Version,
    ) -> Result<(), Halt> {
        if self.is_early(package) {
            return Ok(());
        }
        let mut tried = self.tried.borrow_mut();
        let versions = tried.entry(package.clone()).or_default();
        versions.insert(version.clone());
        if versions.len() > WALK_LIMIT {
            return Err(Halt::Walked(package.clone()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use pep508_rs::PackageName;

    use super::*;

    #[test]
    fn a_package_tried_at_too_many_versions_halts_unless_early() {
        let package = ResolverPackage::Package(PackageName::from_str("spacy").unwrap());
        let walks = Walks::default();
        for minor in 0..WALK_LIMIT {
            let version = Version::from_str(&format!("3.{minor}")).unwrap();
            walks.try_version(&package, &version).unwrap();
            // The same version again is no further walk.
            walks.try_version(&package, &version).unwrap();
        }
        let next = Version::from_str("2.0").unwrap();
        assert_eq!(
            walks.try_version(&package, &next),
            Err(Halt::Walked(package.clone()))
        );
        let early = Walks::new(vec![package.clone()]);
        for minor in 0..=WALK_LIMIT {
            let version = Version::from_str(&format!("3.{minor}")).unwrap();
            early.try_version(&package, &version).unwrap();
        }
    }
}
