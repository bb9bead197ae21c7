//! The ABI check's report kept on this machine between runs, as `ldconfig` keeps its
//! auxiliary cache: keyed by everything the check reads (each distribution's RECORD and
//! METADATA, and each shared object's device, inode, size, modification and change
//! times) and by this binary (its path, size and modification time), so a package
//! installed, removed or patched in place, or another build of the tool, is a miss. A
//! converged node's `probe` and no-op verification then skip reading and matching the
//! tables (0.2 s for a torch environment of 846 shared objects).
//!
//! One file per set of site directories, `<cache>/abi/<digest of the roots>.json`,
//! replaced on each miss: the cache holds one report per environment.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Report;
use super::tree::Listing;

/// Bumped when the check or the report changes meaning without a new binary.
const FORMAT: &str = "abi-report-v1";

/// Where the reports are kept, e.g. `/root/.cache/cuda-upgrade/abi`; `None` without a
/// cache directory.
pub fn directory() -> Option<PathBuf> {
    crate::settings::default_cache_dir().map(|cache| cache.join("abi"))
}

/// The key of `listing`'s environment as it is on disk now.
pub fn key(listing: &Listing) -> String {
    let mut digest = listing.digest.clone();
    digest.update(FORMAT.as_bytes());
    if let Some(binary) = std::env::current_exe()
        .ok()
        .and_then(|path| Some((std::fs::metadata(&path).ok()?, path)))
    {
        let (metadata, path) = binary;
        digest.update(path.as_os_str().as_encoded_bytes());
        update_stat(&mut digest, &metadata);
    }
    for pending in &listing.pending {
        digest.update((pending.path.len() as u64).to_le_bytes());
        digest.update(pending.path.as_bytes());
        match std::fs::metadata(&pending.path) {
            Ok(metadata) => update_stat(&mut digest, &metadata),
            Err(error) => digest.update(format!("missing {:?}", error.kind()).as_bytes()),
        }
    }
    hex::encode(digest.finalize())
}

fn update_stat(digest: &mut Sha256, metadata: &std::fs::Metadata) {
    for value in [
        metadata.dev(),
        metadata.ino(),
        metadata.size(),
        metadata.mtime() as u64,
        metadata.mtime_nsec() as u64,
        metadata.ctime() as u64,
        metadata.ctime_nsec() as u64,
    ] {
        digest.update(value.to_le_bytes());
    }
}

#[derive(Serialize, Deserialize)]
struct Entry {
    key: String,
    report: Report,
}

fn file(directory: &Path, roots: &[String]) -> PathBuf {
    let digest = Sha256::digest(roots.join("\n").as_bytes());
    directory.join(format!("{}.json", &hex::encode(digest)[..16]))
}

/// The report kept for `roots` under `key`, if any.
pub fn load(directory: &Path, roots: &[String], key: &str) -> Option<Report> {
    let bytes = std::fs::read(file(directory, roots)).ok()?;
    let entry: Entry = serde_json::from_slice(&bytes).ok()?;
    (entry.key == key).then_some(entry.report)
}

/// Keep `report` for `roots` under `key`; a cache that cannot be written is no error.
pub fn store(directory: &Path, roots: &[String], key: &str, report: &Report) {
    let entry = Entry {
        key: key.to_string(),
        report: report.clone(),
    };
    if let Ok(bytes) = serde_json::to_vec(&entry) {
        let _ = crate::local_file::write_atomic(&file(directory, roots), &bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(root: &Path) -> PathBuf {
        let site = root.join("site-packages");
        std::fs::create_dir_all(site.join("pkg-1.0.dist-info")).unwrap();
        std::fs::create_dir_all(site.join("pkg")).unwrap();
        std::fs::write(
            site.join("pkg-1.0.dist-info/METADATA"),
            "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n\n",
        )
        .unwrap();
        std::fs::write(
            site.join("pkg-1.0.dist-info/RECORD"),
            "pkg/libpkg.so,,\npkg-1.0.dist-info/METADATA,,\n",
        )
        .unwrap();
        std::fs::write(site.join("pkg/libpkg.so"), b"not an ELF file, but a file").unwrap();
        site
    }

    fn key_of(site: &Path) -> String {
        key(&super::super::tree::listing(&[site]).unwrap())
    }

    #[test]
    fn the_key_changes_when_a_shared_object_or_a_record_changes_and_only_then() {
        let root = tempfile::tempdir().unwrap();
        let site = site(root.path());
        let first = key_of(&site);
        assert_eq!(key_of(&site), first, "nothing changed");
        // Patched in place, same size: the change time moves.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(site.join("pkg/libpkg.so"), b"not an ELF file, but b file").unwrap();
        let patched = key_of(&site);
        assert_ne!(patched, first);
        std::fs::write(
            site.join("pkg-1.0.dist-info/RECORD"),
            "pkg/libpkg.so,,\npkg-1.0.dist-info/METADATA,,\nextra,,\n",
        )
        .unwrap();
        assert_ne!(key_of(&site), patched);
        std::fs::remove_file(site.join("pkg/libpkg.so")).unwrap();
        assert_ne!(key_of(&site), patched);
    }

    #[test]
    fn a_report_is_found_under_its_key_only() {
        let cache = tempfile::tempdir().unwrap();
        let roots = vec!["/venv/lib/python3.12/site-packages".to_string()];
        let report = Report {
            ok: true,
            roots: roots.clone(),
            packages: 3,
            objects: 2,
            objects_checked: 1,
            imports_checked: 10,
            missing: Vec::new(),
            skipped: Vec::new(),
            seconds: 0.2,
        };
        assert!(load(cache.path(), &roots, "k1").is_none());
        store(cache.path(), &roots, "k1", &report);
        assert_eq!(load(cache.path(), &roots, "k1"), Some(report.clone()));
        assert!(load(cache.path(), &roots, "k2").is_none());
        assert!(load(cache.path(), &["/other".to_string()], "k1").is_none());
    }
}
