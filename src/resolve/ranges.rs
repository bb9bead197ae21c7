//! PEP 440 specifiers as `version_ranges::Ranges<Version>`, the one range type that
//! pubgrub and `pep440_rs` share.
//!
//! `pep440_rs`'s own conversion treats `==2.9.1` as the single version `2.9.1`, so it
//! would refuse `2.9.1+cu130`. PEP 440 says a specifier without a local label matches
//! every local build of that release, so this module widens `==`, `!=` and `<=` to the
//! whole run of local builds; a specifier with a local label stays exact. Everything
//! else (`>V` excluding post releases and local builds of `V`, `<V` excluding
//! pre-releases of `V`, `~=`, `==V.*`) is `pep440_rs`'s conversion unchanged. This
//! module does not decide which pre-releases may be chosen; that is the provider's.
//! See: https://peps.python.org/pep-0440/#version-matching

use pep440_rs::{Operator, Version, VersionSpecifier, VersionSpecifiers};
use pubgrub::Ranges;

/// The range of versions a set of specifiers admits, e.g. `>=2.9,<2.10` → `[2.9, 2.10)`.
pub fn specifiers_to_ranges(specifiers: &VersionSpecifiers) -> Ranges<Version> {
    let mut range = Ranges::full();
    for specifier in specifiers.iter() {
        range = range.intersection(&specifier_to_range(specifier));
    }
    range
}

/// The range one specifier admits, e.g. `==2.9.1` → `[2.9.1, 2.9.1.post0.dev0)`,
/// which holds `2.9.1+cu130` and no post release.
pub fn specifier_to_range(specifier: &VersionSpecifier) -> Ranges<Version> {
    let version = specifier.version();
    match specifier.operator() {
        Operator::Equal | Operator::ExactEqual if !version.is_local() => {
            Ranges::from_range_bounds(version.clone()..after_local_builds(version))
        }
        Operator::NotEqual if !version.is_local() => {
            Ranges::from_range_bounds(version.clone()..after_local_builds(version)).complement()
        }
        Operator::LessThanEqual if !version.is_local() => {
            Ranges::strictly_lower_than(after_local_builds(version))
        }
        _ => Ranges::from(specifier.clone()),
    }
}

/// The range a `Requires-Python` admits for an interpreter version, compared on
/// release numbers only, e.g. `>=3.10` holds `3.12.3`.
pub fn python_ranges(specifiers: &VersionSpecifiers) -> Ranges<Version> {
    pep440_rs::release_specifiers_to_ranges(specifiers.clone())
}

/// The lower bounds of a release's `Requires-Python`, e.g. `>=3.10,<3.13` → `>=3.10`.
///
/// Upper bounds are ignored, as uv and packse do: `<3.13` is almost always a guess
/// about the future, not a known incompatibility, and honouring it makes old releases
/// win over working new ones.
/// See: https://docs.astral.sh/uv/reference/internals/resolver/#requires-python
pub fn python_lower_bounds(specifiers: &VersionSpecifiers) -> Ranges<Version> {
    let mut range = Ranges::full();
    for specifier in specifiers.iter() {
        let version = specifier.version().only_release();
        let lower = match specifier.operator() {
            Operator::GreaterThanEqual
            | Operator::TildeEqual
            | Operator::EqualStar
            | Operator::Equal
            | Operator::ExactEqual => Ranges::higher_than(version),
            Operator::GreaterThan => Ranges::strictly_higher_than(version),
            Operator::LessThan
            | Operator::LessThanEqual
            | Operator::NotEqual
            | Operator::NotEqualStar => continue,
        };
        range = range.intersection(&lower);
    }
    range
}

/// The smallest version above every local build of `version`, e.g. `2.9.1` →
/// `2.9.1.post0.dev0`, `1.0.post1` → `1.0.post2.dev0`, `1.0.dev1` → `1.0.dev2`.
fn after_local_builds(version: &Version) -> Version {
    let public = version.clone().without_local();
    if let Some(dev) = public.dev() {
        public.with_dev(Some(dev + 1))
    } else if let Some(post) = public.post() {
        public.with_post(Some(post + 1)).with_dev(Some(0))
    } else {
        public.with_post(Some(0)).with_dev(Some(0))
    }
}

/// Whether a range names a pre-release in one of its bounds, e.g. `>=0.1.0a1`.
pub fn specifiers_name_prerelease(specifiers: &VersionSpecifiers) -> bool {
    specifiers
        .iter()
        .any(|specifier| specifier.version().any_prerelease())
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn admits(specifiers: &str, version: &str) -> bool {
        let specifiers = VersionSpecifiers::from_str(specifiers).unwrap();
        specifiers_to_ranges(&specifiers).contains(&Version::from_str(version).unwrap())
    }

    #[test]
    fn local_labels_follow_pep_440() {
        assert!(admits("==2.9.1", "2.9.1+cu130"));
        assert!(admits("==2.9.1", "2.9.1"));
        assert!(!admits("==2.9.1+cu130", "2.9.1"));
        assert!(admits("==2.9.1+cu130", "2.9.1+cu130"));
        assert!(!admits("==2.9.1+cu130", "2.9.1+cu128"));
        assert!(!admits("==2.9.1", "2.9.1.post1"));
        assert!(!admits(">2.9.1", "2.9.1+cu130"));
        assert!(admits(">=2.9.1", "2.9.1+cu130"));
        assert!(admits("<=2.9.1", "2.9.1+cu130"));
        assert!(!admits("<2.9.1", "2.9.1+cu130"));
        assert!(!admits("!=2.9.1", "2.9.1+cu130"));
        assert!(admits("!=2.9.1+cu128", "2.9.1+cu130"));
        assert!(admits("==2.9.*", "2.9.1+cu130"));
        assert!(admits("~=2.9", "2.10.0+cu130"));
    }

    #[test]
    fn post_and_pre_releases_follow_pep_440() {
        assert!(!admits(">1.0", "1.0.post1"));
        assert!(admits(">1.0.post1", "1.0.post2"));
        assert!(admits("==1.0.post1", "1.0.post1+local"));
        assert!(!admits("<1.0", "1.0a1"));
        assert!(admits("<1.0a2", "1.0a1"));
        assert!(admits("==1.0.dev1", "1.0.dev1+local"));
        assert!(!admits("==1.0.dev1", "1.0.dev2"));
    }
}
