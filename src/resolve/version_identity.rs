//! One version identity: whether two version texts name the same release, by PEP 440.
//!
//! A version is spelled in many ways that name one release: `2` and `2.0.0`, `1.0.post0`,
//! `1.0-post0` and `1.0post0`, `1.0a1`, `1.0.0a1` and `1.0alpha1`, `2.9.1+cu130` and
//! `2.9.1+CU130`, `1.0+ubuntu-1` and `1.0+ubuntu.1`. Installed metadata, a lock, a
//! manifest pin and a file name may each spell it another way, so every comparison of an
//! installed version with a locked one (the pip step, the check after an install, a
//! rollback's before-image, a lock against a fresh resolution) asks [`same_version`]
//! here, never compares the texts. A text that is not a PEP 440 version (a legacy
//! version kept with `===`) is the same only as the identical text.
//! See: https://peps.python.org/pep-0440/#version-matching

use std::str::FromStr;

use pep440_rs::Version;

/// Whether `a` and `b` name the same release: PEP 440 equality of the parsed versions
/// (release segments padded with zeros, pre/post/dev spellings normalized, local labels
/// compared lower-case segment by segment), exact text equality when either does not
/// parse. e.g. `2` and `2.0.0` are the same, `2.9.1` and `2.9.1+cu130` are not.
pub fn same_version(a: &str, b: &str) -> bool {
    match (Version::from_str(a), Version::from_str(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::same_version;

    #[test]
    fn spellings_of_one_release_are_the_same_version() {
        for (a, b) in [
            ("2", "2.0.0"),
            ("2.0", "2.0.0"),
            ("1.0.post0", "1.0-post0"),
            ("1.0.post0", "1.0post0"),
            ("1.0.post0", "1.0.0.post0"),
            ("1.0a1", "1.0.0a1"),
            ("1.0a1", "1.0alpha1"),
            ("1.0a1", "1.0-a1"),
            ("1.0rc1", "1.0c1"),
            ("1.0.dev0", "1.0-dev0"),
            ("2.9.1+cu130", "2.9.1+CU130"),
            ("2.9.1+cu130", "2.9.1.0+cu130"),
            ("1.0+ubuntu-1", "1.0+ubuntu.1"),
            ("1.0+ubuntu_1", "1.0+Ubuntu.1"),
            ("0!1.0", "1.0"),
            ("v1.0", "1.0"),
            ("1.0", "1.0"),
        ] {
            assert!(same_version(a, b), "{a} and {b}");
            assert!(same_version(b, a), "{b} and {a}");
        }
    }

    #[test]
    fn other_releases_are_other_versions() {
        for (a, b) in [
            ("2", "2.0.1"),
            ("2.9.1", "2.9.1+cu130"),
            ("2.9.1+cu130", "2.9.1+cu128"),
            ("1.0", "1.0.post0"),
            ("1.0a1", "1.0"),
            ("1.0a1", "1.0b1"),
            ("1.0.dev0", "1.0"),
            ("1!1.0", "1.0"),
            ("1.0+ubuntu.1", "1.0+ubuntu.2"),
        ] {
            assert!(!same_version(a, b), "{a} and {b}");
            assert!(!same_version(b, a), "{b} and {a}");
        }
    }

    #[test]
    fn a_text_that_is_not_a_version_is_only_itself() {
        assert!(same_version("1.0-custom-build", "1.0-custom-build"));
        assert!(!same_version("1.0-custom-build", "1.0-Custom-Build"));
        assert!(!same_version("1.0-custom-build", "1.0"));
        assert!(!same_version("", "0"));
        assert!(same_version("", ""));
    }
}
