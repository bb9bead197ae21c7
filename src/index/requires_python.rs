//! `Requires-Python` as uv reads it: only its lower bounds, compared on release numbers,
//! e.g. `>=3.8,<3.12` admits CPython 3.12.3. An upper bound is almost always a guess
//! about Pythons not yet released, not a known incompatibility; honouring it makes old
//! releases win over working new ones (`scipy<1.11` on 3.12: 1.9.3 instead of 1.10.1).
//! One reading for the page filter, the file choice, the release's own edge and reports.
//! See: https://docs.astral.sh/uv/reference/internals/resolver/#requires-python

use pep440_rs::{Operator, Version, VersionSpecifiers};
use pubgrub::Ranges;

/// The lower bounds of `specifiers`, e.g. `>=3.10,<3.13` → `>=3.10`.
pub fn lower_bounds(specifiers: &VersionSpecifiers) -> Ranges<Version> {
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

/// Whether `specifiers` admit the interpreter `python` (e.g. `3.12.3`) by their lower
/// bounds.
pub fn admits(specifiers: &VersionSpecifiers, python: &Version) -> bool {
    lower_bounds(specifiers).contains(&python.clone().only_release())
}

/// Whether `specifiers` leave `python` out by an upper bound alone, e.g. `<3.12,>=3.8`
/// for 3.12: the bound this reading does not apply, which pip does.
pub fn only_upper_bound_excludes(specifiers: &VersionSpecifiers, python: &Version) -> bool {
    let python = python.clone().only_release();
    admits(specifiers, &python)
        && !pep440_rs::release_specifiers_to_ranges(specifiers.clone()).contains(&python)
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn version(text: &str) -> Version {
        Version::from_str(text).unwrap()
    }

    fn specifiers(text: &str) -> VersionSpecifiers {
        VersionSpecifiers::from_str(text).unwrap()
    }

    #[test]
    fn only_lower_bounds_count() {
        assert!(admits(&specifiers("<3.12,>=3.8"), &version("3.12.3")));
        assert!(!admits(&specifiers(">=3.13"), &version("3.12.3")));
        assert!(admits(&specifiers(">=3.12"), &version("3.12")));
        assert!(!admits(&specifiers(">3.12"), &version("3.12")));
        assert!(only_upper_bound_excludes(
            &specifiers("<3.12,>=3.8"),
            &version("3.12.3")
        ));
        assert!(!only_upper_bound_excludes(
            &specifiers("<3.13,>=3.8"),
            &version("3.12.3")
        ));
        assert!(!only_upper_bound_excludes(
            &specifiers(">=3.13"),
            &version("3.12.3")
        ));
    }
}
