//! Releases an index lists with no file for the node, in a report's words, e.g.
//! "`tensorflow 2.9.1` is on index `default`, but none of its files installs on this
//! node (CPython 3.12, x86_64, glibc 2.35): its wheels are for cp37, cp38, cp39, cp310".
//!
//! Without this a pin such as `tensorflow==2.9.1` on CPython 3.12 reads as if the
//! release did not exist; uv says the same as here ("no wheels with a matching Python
//! ABI tag").

use std::str::FromStr;

use pep440_rs::{Version, VersionSpecifiers};

use super::environment::TargetEnvironment;
use crate::index::UnusableFiles;

/// How many versions, tags or platforms a sentence names before "and N more".
const LISTED: usize = 4;

/// The fact and the hint for the `unusable` releases (newest first) of `name` that a
/// requirement matched, when nothing else matched it; `None` when there are none.
/// `usable` are the releases that do have a file here, newest first; the hint names the
/// newest final one among them (a pre-release only when there is nothing else).
pub fn explain(
    name: &str,
    index: &str,
    unusable: &[&(Version, UnusableFiles)],
    usable: &[Version],
    environment: &TargetEnvironment,
) -> Option<(String, String)> {
    let (first, _) = unusable.first()?;
    let subject = if unusable.len() == 1 {
        format!("`{name} {first}` is on index `{index}`, but none of its files installs")
    } else {
        let versions: Vec<String> = unusable
            .iter()
            .map(|(version, _)| version.to_string())
            .collect();
        format!(
            "{} of `{name}` are on index `{index}`, but none of their files installs",
            listed(&versions, "releases")
        )
    };
    let node = format!(
        "CPython {}, {}, glibc {}",
        python_line(&environment.python),
        environment.arch,
        environment.glibc
    );
    let mut summary = UnusableFiles::default();
    for (_, files) in unusable {
        summary.pythons.extend(files.pythons.iter().cloned());
        summary.platforms.extend(files.platforms.iter().cloned());
        summary
            .requires_python
            .extend(files.requires_python.iter().cloned());
        summary.sdists += files.sdists;
    }
    let why = reason(&summary, &environment.python, environment.arch.as_str());
    let fact = format!("{subject} on this node ({node}): {why}");
    let newest = usable
        .iter()
        .find(|version| !version.any_prerelease())
        .or(usable.first());
    let hint = match newest {
        Some(newest) => format!(
            "the newest release of `{name}` with a file for this node is {newest}: require it (or a range that holds it), or target a Python the older release supports"
        ),
        None => format!(
            "no release of `{name}` has a file for this node: target a Python and platform its files support"
        ),
    };
    Some((fact, hint))
}

/// Why the files cannot install: the Python range they require when it leaves the
/// node's Python out, else what their wheels are tagged for.
fn reason(files: &UnusableFiles, python: &Version, arch: &str) -> String {
    let excluding: Vec<&String> = files
        .requires_python
        .iter()
        .filter(|text| {
            VersionSpecifiers::from_str(text)
                .is_ok_and(|specifiers| !crate::index::requires_python::admits(&specifiers, python))
        })
        .collect();
    if !excluding.is_empty() && files.pythons.is_empty() {
        let ranges: Vec<String> = excluding.iter().map(|text| format!("`{text}`")).collect();
        return format!("its files require Python {}", ranges.join(" or "));
    }
    let mut parts = Vec::new();
    if !files.pythons.is_empty() {
        let mut pythons: Vec<&String> = files.pythons.iter().collect();
        pythons.sort_by_key(|tag| python_tag_order(tag));
        let pythons = match (pythons.first(), pythons.last()) {
            (Some(first), Some(last)) if pythons.len() > LISTED => {
                format!("{first} to {last} ({} tags)", pythons.len())
            }
            _ => pythons
                .iter()
                .map(|tag| tag.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        };
        // The node's own architecture first: those are the platforms that matter.
        let mut platforms: Vec<String> = files.platforms.iter().cloned().collect();
        platforms.sort_by_key(|platform| !platform.ends_with(arch));
        parts.push(format!(
            "its wheels are for {pythons} on {}",
            listed(&platforms, "platforms")
        ));
    }
    if !excluding.is_empty() {
        let ranges: Vec<String> = excluding.iter().map(|text| format!("`{text}`")).collect();
        parts.push(format!("its files require Python {}", ranges.join(" or ")));
    }
    if files.sdists > 0 && excluding.is_empty() {
        parts.push("its sdist was left out".to_string());
    }
    if parts.is_empty() {
        return "it lists no distribution this node can use".to_string();
    }
    parts.join("; ")
}

/// `cp37` < `cp38` < `cp310`: by the number, then the text.
fn python_tag_order(tag: &str) -> (u64, String) {
    let digits: String = tag.chars().filter(char::is_ascii_digit).collect();
    let number = match digits.get(..1) {
        Some(major) => {
            let minor = digits.get(1..).and_then(|minor| minor.parse::<u64>().ok());
            major.parse::<u64>().unwrap_or(0) * 1000 + minor.unwrap_or(0)
        }
        None => 0,
    };
    (number, tag.to_string())
}

/// `3.12` from `3.12.3`.
fn python_line(python: &Version) -> String {
    let release = python.release();
    match release {
        [major, minor, ..] => format!("{major}.{minor}"),
        _ => python.to_string(),
    }
}

/// The first few items, then how many more, e.g. `cp37, cp38, cp39, cp310 and 2 more tags`.
/// `items` are distinct: versions of one project, or the members of a set.
fn listed(items: &[String], what: &str) -> String {
    let shown: Vec<&str> = items.iter().take(LISTED).map(String::as_str).collect();
    let rest = items.len().saturating_sub(LISTED);
    if rest == 0 {
        shown.join(", ")
    } else {
        format!("{} and {rest} more {what}", shown.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn environment() -> TargetEnvironment {
        TargetEnvironment::parse_facts(
            r#"{"python": "3.12.3", "implementation": "cpython", "glibc": "2.35", "arch": "x86_64", "gpu_arch": []}"#,
            "facts.json",
        )
        .unwrap()
    }

    fn files(
        pythons: &[&str],
        platforms: &[&str],
        requires: &[&str],
        sdists: usize,
    ) -> UnusableFiles {
        UnusableFiles {
            pythons: pythons.iter().map(|text| text.to_string()).collect(),
            platforms: platforms.iter().map(|text| text.to_string()).collect(),
            requires_python: requires.iter().map(|text| text.to_string()).collect(),
            sdists,
        }
    }

    #[test]
    fn wheels_for_older_pythons_are_named_in_order() {
        let release = (
            Version::from_str("2.9.1").unwrap(),
            files(
                &["cp310", "cp37", "cp38", "cp39"],
                &["manylinux2014_x86_64", "win_amd64"],
                &[">=3.7"],
                0,
            ),
        );
        let usable = [
            Version::from_str("2.21.0rc0").unwrap(),
            Version::from_str("2.20.0").unwrap(),
        ];
        let (fact, hint) = explain(
            "tensorflow",
            "default",
            &[&release],
            &usable,
            &environment(),
        )
        .unwrap();
        assert_eq!(
            fact,
            "`tensorflow 2.9.1` is on index `default`, but none of its files installs on this node (CPython 3.12, x86_64, glibc 2.35): its wheels are for cp37, cp38, cp39, cp310 on manylinux2014_x86_64, win_amd64"
        );
        assert!(hint.contains("is 2.20.0"), "{hint}");
    }

    #[test]
    fn a_python_range_that_leaves_the_node_out_is_the_reason() {
        let newer = (
            Version::from_str("3.0").unwrap(),
            files(&[], &[], &[">=3.13"], 1),
        );
        let older = (
            Version::from_str("2.9").unwrap(),
            files(&[], &[], &[">=3.13"], 1),
        );
        let (fact, hint) =
            explain("lib", "default", &[&newer, &older], &[], &environment()).unwrap();
        assert!(
            fact.starts_with("3.0, 2.9 of `lib` are on index `default`"),
            "{fact}"
        );
        assert!(
            fact.ends_with("its files require Python `>=3.13`"),
            "{fact}"
        );
        assert!(hint.starts_with("no release of `lib` has a file"), "{hint}");
    }

    #[test]
    fn many_tags_are_a_span_and_the_nodes_platforms_come_first() {
        let release = (
            Version::from_str("1.13.1").unwrap(),
            files(
                &["cp37", "cp38", "cp39", "cp310", "cp311"],
                &["macosx_11_0_arm64", "manylinux1_x86_64", "win_amd64"],
                &[],
                0,
            ),
        );
        let (fact, _) = explain("torch", "default", &[&release], &[], &environment()).unwrap();
        assert!(
            fact.ends_with("its wheels are for cp37 to cp311 (5 tags) on manylinux1_x86_64, macosx_11_0_arm64, win_amd64"),
            "{fact}"
        );
    }

    #[test]
    fn long_lists_are_cut() {
        let items: Vec<String> = (0..7).map(|n| format!("p{n}")).collect();
        assert_eq!(
            listed(&items, "platforms"),
            "p0, p1, p2, p3 and 3 more platforms"
        );
    }
}
