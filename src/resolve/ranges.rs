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
//! It also writes ranges back in PEP 440 words for reports, simplified against the
//! versions that exist ([`show_existing`]).
//! See: https://peps.python.org/pep-0440/#version-matching

use std::ops::Bound;

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

/// How many intervals a range shows before the rest are counted, e.g. in the default
/// conflict report.
pub const SHORT_INTERVALS: usize = 3;

/// A range in PEP 440 words, every interval, e.g. `>=2.9.1, <2.9.1.post0.dev0` →
/// `==2.9.1`, `[1.0, 2.0) ∪ [3.0, ∞)` → `>=1.0, <2.0 or >=3.0`.
pub fn show_range(range: &Ranges<Version>) -> String {
    join(written_intervals(range), None)
}

/// [`show_range`] with at most `limit` intervals, the rest counted, e.g.
/// `==1.0 or ==1.2 or ==1.4 or … (5 more)`.
pub fn show_range_limited(range: &Ranges<Version>, limit: Option<usize>) -> String {
    join(written_intervals(range), limit)
}

/// A range written against the versions that exist (`existing`, any order): a union
/// whose gaps hold no existing version is one interval, each interval runs from the
/// first existing version it holds to the next existing version it does not (or on
/// from the first when it holds the newest), e.g.
/// `>0.5.2, <0.5.3 or >0.5.3, <0.5.4 or …` over sixty releases → `>=0.5.3, <0.30.0`.
/// A range of one interval, or holding no existing version, is written as it is.
/// At most `limit` intervals are shown, the rest counted.
pub fn show_existing(
    range: &Ranges<Version>,
    existing: &[Version],
    limit: Option<usize>,
) -> String {
    match runs(range, existing) {
        Some(runs) => join(runs.iter().map(Run::text).collect(), limit),
        None => show_range_limited(range, limit),
    }
}

/// The first version of a range written against existing versions when it holds every
/// existing version from there on, e.g. `2.9.0` for `>=2.9.0` (read "every release from
/// 2.9.0"); `Some(None)` when it holds every existing version.
pub fn every_release_from(
    range: &Ranges<Version>,
    existing: &[Version],
) -> Option<Option<Version>> {
    let (lower, upper) = match runs(range, existing).as_deref() {
        Some([run]) => (run.lower.clone(), run.upper.clone()),
        Some(_) => return None,
        None => {
            let mut intervals = range.iter();
            let (lower, upper) = intervals.next()?;
            if intervals.next().is_some() {
                return None;
            }
            (lower.clone(), upper.clone())
        }
    };
    match (lower, upper) {
        (Bound::Unbounded, Bound::Unbounded) => Some(None),
        (Bound::Included(first), Bound::Unbounded) => Some(Some(first)),
        _ => None,
    }
}

/// A run of consecutive existing versions inside a range, with the bounds that write it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Run {
    lower: Bound<Version>,
    upper: Bound<Version>,
    /// The run holds this one version and no other build of it.
    only: Option<Version>,
}

impl Run {
    fn text(&self) -> String {
        match &self.only {
            Some(version) => format!("=={version}"),
            None => bounds_text(self.lower.as_ref(), self.upper.as_ref()),
        }
    }
}

/// The runs of existing versions in `range`; `None` when the range is one interval or
/// holds no existing version (nothing to simplify).
fn runs(range: &Ranges<Version>, existing: &[Version]) -> Option<Vec<Run>> {
    // A second interval, or nothing to simplify.
    range.iter().nth(1)?;
    let (range_lower, _) = range.bounding_range()?;
    let mut sorted: Vec<&Version> = existing.iter().collect();
    sorted.sort();
    sorted.dedup();
    let mut found = Vec::new();
    let mut position = 0;
    while position < sorted.len() {
        if !range.contains(sorted[position]) {
            position += 1;
            continue;
        }
        let start = position;
        while position < sorted.len() && range.contains(sorted[position]) {
            position += 1;
        }
        let first = sorted[start];
        let next = sorted.get(position).copied();
        let lower = if start == 0 && range_lower == Bound::Unbounded {
            Bound::Unbounded
        } else {
            Bound::Included(first.clone())
        };
        // Up to the newest release is every release from the first one on.
        let upper = match next {
            Some(next) => Bound::Excluded(next.clone()),
            None => Bound::Unbounded,
        };
        let other_build = |version: Option<&Version>| {
            version.is_some_and(|version| {
                version.clone().without_local() == first.clone().without_local()
            })
        };
        let only = (start + 1 == position
            && !other_build(next)
            && !other_build(
                start
                    .checked_sub(1)
                    .and_then(|before| sorted.get(before).copied()),
            ))
        .then(|| first.clone());
        found.push(Run { lower, upper, only });
    }
    (!found.is_empty()).then_some(found)
}

fn written_intervals(range: &Ranges<Version>) -> Vec<String> {
    if let Some(version) = range.as_singleton() {
        return vec![format!("=={version}")];
    }
    range
        .iter()
        .map(|(lower, upper)| match (lower, upper) {
            (Bound::Included(low), Bound::Excluded(high)) if is_local_run_end(low, high) => {
                format!("=={low}")
            }
            (Bound::Included(low), Bound::Included(high)) if low == high => format!("=={low}"),
            _ => bounds_text(lower.as_ref(), upper.as_ref()),
        })
        .collect()
}

fn bounds_text(lower: Bound<&Version>, upper: Bound<&Version>) -> String {
    let low = match lower {
        Bound::Included(low) => Some(format!(">={low}")),
        Bound::Excluded(low) => Some(format!(">{low}")),
        Bound::Unbounded => None,
    };
    let high = match upper {
        Bound::Included(high) => Some(format!("<={high}")),
        Bound::Excluded(high) => Some(format!("<{high}")),
        Bound::Unbounded => None,
    };
    let text = [low, high]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ");
    if text.is_empty() {
        "*".to_string()
    } else {
        text
    }
}

fn join(parts: Vec<String>, limit: Option<usize>) -> String {
    if parts.is_empty() {
        return "no version".to_string();
    }
    match limit {
        Some(limit) if parts.len() > limit => format!(
            "{} or … ({} more)",
            parts[..limit].join(" or "),
            parts.len() - limit
        ),
        _ => parts.join(" or "),
    }
}

/// Whether `[low, high)` is exactly the run of local builds of `low`.
fn is_local_run_end(low: &Version, high: &Version) -> bool {
    let specifier = VersionSpecifier::equals_version(low.clone());
    specifier_to_range(&specifier)
        .bounding_range()
        .is_some_and(|(_, upper)| matches!(upper, Bound::Excluded(end) if end == high))
        && !low.is_local()
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

    fn versions(texts: &[&str]) -> Vec<Version> {
        texts
            .iter()
            .map(|text| Version::from_str(text).unwrap())
            .collect()
    }

    /// See: issue 16 — a union whose gaps hold no existing version is one interval.
    #[test]
    fn unions_are_written_against_the_versions_that_exist() {
        let existing = versions(&["1.0", "1.1", "1.2", "1.3", "2.0", "2.1"]);
        let mut range = Ranges::empty();
        for version in &existing[1..4] {
            range = range.union(&Ranges::singleton(version.clone()));
        }
        assert_eq!(show_range(&range), "==1.1 or ==1.2 or ==1.3");
        assert_eq!(show_existing(&range, &existing, None), ">=1.1, <2.0");
        assert_eq!(
            show_existing(
                &range.union(&Ranges::singleton(existing[5].clone())),
                &existing,
                None
            ),
            ">=1.1, <2.0 or ==2.1"
        );
        let from = Ranges::higher_than(existing[2].clone())
            .intersection(&Ranges::singleton(existing[3].clone()).complement());
        assert_eq!(show_existing(&from, &existing, None), "==1.2 or >=2.0");
        let gaps_only = Ranges::higher_than(existing[4].clone())
            .intersection(&Ranges::singleton(existing[5].clone()).complement());
        assert_eq!(every_release_from(&gaps_only, &existing), None);
        let tail = Ranges::higher_than(existing[3].clone())
            .union(&Ranges::singleton(Version::from_str("1.2.5").unwrap()));
        assert_eq!(
            every_release_from(&tail, &existing),
            Some(Some(existing[3].clone()))
        );
        assert_eq!(every_release_from(&Ranges::full(), &existing), Some(None));
    }

    #[test]
    fn long_ranges_show_three_intervals_and_count_the_rest() {
        let mut range = Ranges::empty();
        for version in versions(&["1.0", "1.2", "1.4", "1.6", "1.8"]) {
            range = range.union(&Ranges::singleton(version));
        }
        assert_eq!(
            show_range_limited(&range, Some(SHORT_INTERVALS)),
            "==1.0 or ==1.2 or ==1.4 or … (2 more)"
        );
        assert_eq!(
            show_range(&range),
            "==1.0 or ==1.2 or ==1.4 or ==1.6 or ==1.8"
        );
    }
}
