//! The ABI check of a lock before anything is installed: the lock's wheels found in
//! directories of this machine (`plan --wheels DIR`: a `pip download` directory, a
//! `--find-links` directory, a wheel cache), each matched by its file name and, where
//! the lock records one, by its sha256, then read together as one environment.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{AbiError, Environment, tree};
use crate::resolve::{Lock, LockedSource};

/// The lock's wheels as found on this machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AtHand {
    /// The locked wheels found, in the lock's order, e.g. `/wheels/torch-2.9.1+cu130-…whl`.
    pub found: Vec<PathBuf>,
    /// The locked wheels in none of the directories, by file name.
    pub absent: Vec<String>,
}

impl AtHand {
    /// How many wheels the lock installs from indexes.
    pub fn wanted(&self) -> usize {
        self.found.len() + self.absent.len()
    }
}

/// Find each wheel `lock` installs from an index in `directories` (the first that has
/// its file name wins). A file whose sha256 differs from the lock's is an error: it is
/// not the file `apply` would install.
pub fn find(lock: &Lock, directories: &[PathBuf]) -> Result<AtHand, AbiError> {
    let mut at_hand = AtHand::default();
    for package in &lock.packages {
        let LockedSource::Index { file, sha256, .. } = &package.source else {
            continue;
        };
        if !file.ends_with(".whl") {
            continue;
        }
        let candidate = directories
            .iter()
            .flat_map(|directory| names_of(file).map(move |name| directory.join(name)))
            .find(|path| path.is_file());
        let Some(path) = candidate else {
            at_hand.absent.push(file.to_string());
            continue;
        };
        if let Some(expected) = sha256 {
            let actual = sha256_of(&path)?;
            if !actual.eq_ignore_ascii_case(expected.as_str()) {
                return Err(AbiError::Digest {
                    path,
                    expected: expected.to_string(),
                    actual,
                });
            }
        }
        at_hand.found.push(path);
    }
    Ok(at_hand)
}

/// The environment the found wheels make once installed together; `label` names it in
/// the report (e.g. the first directory).
pub fn environment(at_hand: &AtHand, label: &Path) -> Result<Environment, AbiError> {
    tree::wheel_files(label, &at_hand.found)
}

/// The names a file of the lock may have on disk: as the index names it, and with a
/// local version's `+` percent-encoded, as some download tools save it.
fn names_of(file: &str) -> impl Iterator<Item = String> {
    let encoded = file.replace('+', "%2B");
    let alternative = (encoded != file).then_some(encoded);
    std::iter::once(file.to_string()).chain(alternative)
}

fn sha256_of(path: &Path) -> Result<String, AbiError> {
    let read_error = |source| AbiError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(read_error)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer).map_err(read_error)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::LockedPackage;

    fn package(name: &str, file: &str, sha256: Option<&str>) -> LockedPackage {
        LockedPackage {
            name: name.parse().unwrap(),
            version: "1.0".parse().unwrap(),
            extras: Vec::new(),
            source: LockedSource::Index {
                index: crate::text::Line::new("default").unwrap(),
                file: crate::index::filename::DistFileName::new(file).unwrap(),
                sha256: sha256.map(|sha256| sha256.parse().unwrap()),
            },
            also_on_explicit: Vec::new(),
        }
    }

    fn lock(packages: Vec<LockedPackage>) -> Lock {
        Lock {
            schema: crate::resolve::LOCK_SCHEMA,
            manifest: crate::text::Line::new("m").unwrap(),
            manifest_sha256: None,
        inputs: None,
            assumed: serde_json::from_str(
                r#"{"python": "3.12", "implementation": "cpython", "glibc": "2.35", "arch": "x86_64", "gpu_arch": []}"#,
            )
            .unwrap(),
            packages,
            findings: Vec::new(),
        }
    }

    #[test]
    fn wheels_are_found_by_name_and_digest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a-1.0-py3-none-any.whl"), b"a").unwrap();
        std::fs::write(dir.path().join("b-1.0%2Bcu130-py3-none-any.whl"), b"b").unwrap();
        let digest_a = hex::encode(Sha256::digest(b"a"));
        let lock = lock(vec![
            package("a", "a-1.0-py3-none-any.whl", Some(&digest_a)),
            package("b", "b-1.0+cu130-py3-none-any.whl", None),
            package("c", "c-1.0-py3-none-any.whl", None),
            package("d", "d-1.0.tar.gz", None),
        ]);
        let at_hand = find(&lock, &[dir.path().to_path_buf()]).unwrap();
        assert_eq!(
            at_hand.found,
            vec![
                dir.path().join("a-1.0-py3-none-any.whl"),
                dir.path().join("b-1.0%2Bcu130-py3-none-any.whl"),
            ]
        );
        assert_eq!(at_hand.absent, vec!["c-1.0-py3-none-any.whl".to_string()]);
        assert_eq!(at_hand.wanted(), 3);
    }

    #[test]
    fn a_wheel_with_another_digest_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a-1.0-py3-none-any.whl"), b"not a").unwrap();
        let lock = lock(vec![package(
            "a",
            "a-1.0-py3-none-any.whl",
            Some(&hex::encode(Sha256::digest(b"a"))),
        )]);
        let error = find(&lock, &[dir.path().to_path_buf()]).unwrap_err();
        assert!(error.to_string().contains("the lock says"), "{error}");
    }
}
