//! The ABI check's report kept on this machine between runs, as `ldconfig` keeps its
//! auxiliary cache: with the stamp (device, inode, size, modification and change times)
//! of everything the check read (each distribution's RECORD and METADATA, each shared
//! object its RECORD lists) and of this binary. A run whose stamps all match takes the
//! report without reading a file: a package installed, removed or patched in place, or
//! another build of the tool, is a miss. A converged node's `probe` and no-op
//! verification then cost a few hundred `stat` calls instead of reading and matching the
//! tables (0.2 s for a torch environment of 846 shared objects).
//!
//! One file per set of site directories, `<cache>/abi/<digest of the roots>.json`,
//! replaced on each miss: the cache holds one report per environment.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Report;
use super::tree::{self, Pending};

/// Bumped when the check or the report changes meaning without a new binary.
const FORMAT: &str = "abi-report-v2";

/// Where the reports are kept, e.g. `/root/.cache/cuda-upgrade/abi`; `None` without a
/// cache directory.
pub fn directory() -> Option<PathBuf> {
    crate::settings::default_cache_dir().map(|cache| cache.join("abi"))
}

/// A file as `stat` sees it: `None` when it is missing; else device, inode, size,
/// modification and change times (seconds and nanoseconds).
type Stat = Option<[i64; 7]>;

fn stat(path: &Path) -> Stat {
    let metadata = std::fs::metadata(path).ok()?;
    Some([
        metadata.dev() as i64,
        metadata.ino() as i64,
        metadata.size() as i64,
        metadata.mtime(),
        metadata.mtime_nsec(),
        metadata.ctime(),
        metadata.ctime_nsec(),
    ])
}

/// What a report was made from: stamps taken before anything was read, so a file that
/// changes while the check runs makes the next run a miss.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamps {
    format: String,
    binary: Option<(PathBuf, Stat)>,
    /// Each distribution's RECORD and METADATA, root by root.
    records: Vec<(String, Stat)>,
    /// Each shared object the RECORDs list.
    objects: Vec<(String, Stat)>,
}

fn binary() -> Option<(PathBuf, Stat)> {
    let path = std::env::current_exe().ok()?;
    let stat = stat(&path);
    Some((path, stat))
}

/// The RECORD and METADATA of every distribution in `roots` (normalized site-packages
/// directories).
fn records(roots: &[String]) -> Vec<(String, Stat)> {
    let mut records = Vec::new();
    for root in roots {
        for info in tree::dist_infos(Path::new(root)).unwrap_or_default() {
            for name in ["RECORD", "METADATA"] {
                let path = format!("{root}/{info}/{name}");
                let stat = stat(Path::new(&path));
                records.push((path, stat));
            }
        }
    }
    records
}

impl Stamps {
    /// The stamps of the environment in `roots` (normalized site-packages directories)
    /// before anything of it is read: this binary and every RECORD and METADATA.
    pub fn before(roots: &[String]) -> Self {
        Self {
            format: FORMAT.to_string(),
            binary: binary(),
            records: records(roots),
            objects: Vec::new(),
        }
    }

    /// With the stamps of the shared objects `pending` lists, before they are read.
    pub fn with_objects(mut self, pending: &[Pending]) -> Self {
        self.objects = pending
            .iter()
            .map(|object| (object.path.clone(), stat(Path::new(&object.path))))
            .collect();
        self
    }
}

#[derive(Serialize, Deserialize)]
struct Entry {
    roots: Vec<String>,
    stamps: Stamps,
    report: Report,
}

fn file(directory: &Path, roots: &[String]) -> PathBuf {
    let digest = Sha256::digest(roots.join("\n").as_bytes());
    directory.join(format!("{}.json", &hex::encode(digest)[..16]))
}

/// The report kept for `roots`, if every file it was made from is as it was then:
/// `now` holds the stamps [`Stamps::before`] took.
pub fn load(directory: &Path, roots: &[String], now: &Stamps) -> Option<Report> {
    let bytes = std::fs::read(file(directory, roots)).ok()?;
    let entry: Entry = serde_json::from_slice(&bytes).ok()?;
    let kept = &entry.stamps;
    let same = entry.roots == roots
        && kept.format == now.format
        && kept.binary == now.binary
        && kept.records == now.records
        && kept
            .objects
            .iter()
            .all(|(path, before)| stat(Path::new(path)) == *before);
    same.then_some(entry.report)
}

/// Keep `report` for `roots` with what it was made from; a cache that cannot be
/// written is no error.
pub fn store(directory: &Path, roots: &[String], stamps: Stamps, report: &Report) {
    let entry = Entry {
        roots: roots.to_vec(),
        stamps,
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

    fn report(roots: &[String]) -> Report {
        Report {
            ok: true,
            roots: roots.to_vec(),
            packages: 1,
            objects: 1,
            objects_checked: 0,
            imports_checked: 0,
            missing: Vec::new(),
            skipped: Vec::new(),
            seconds: 0.2,
        }
    }

    /// Keep a report of `site` as it is now; the roots it was kept for.
    fn keep(cache: &Path, site: &Path) -> Vec<String> {
        let listing = tree::listing(&[site]).unwrap();
        let stamps = Stamps::before(&listing.roots).with_objects(&listing.pending);
        store(cache, &listing.roots, stamps, &report(&listing.roots));
        listing.roots
    }

    fn kept(cache: &Path, roots: &[String]) -> Option<Report> {
        load(cache, roots, &Stamps::before(roots))
    }

    #[test]
    fn a_report_is_kept_until_a_shared_object_a_record_or_a_distribution_changes() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("cache");
        let site = site(root.path());
        let roots = keep(&cache, &site);
        assert_eq!(kept(&cache, &roots), Some(report(&roots)));
        assert!(kept(&cache, &["/other".to_string()]).is_none());

        // Patched in place, same size: the change time moves.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(site.join("pkg/libpkg.so"), b"not an ELF file, but b file").unwrap();
        assert!(kept(&cache, &roots).is_none());

        keep(&cache, &site);
        std::fs::write(
            site.join("pkg-1.0.dist-info/RECORD"),
            "pkg/libpkg.so,,\npkg-1.0.dist-info/METADATA,,\nextra,,\n",
        )
        .unwrap();
        assert!(kept(&cache, &roots).is_none());

        keep(&cache, &site);
        std::fs::create_dir_all(site.join("other-2.0.dist-info")).unwrap();
        assert!(kept(&cache, &roots).is_none(), "a distribution installed");

        keep(&cache, &site);
        assert!(kept(&cache, &roots).is_some());
        std::fs::remove_file(site.join("pkg/libpkg.so")).unwrap();
        assert!(kept(&cache, &roots).is_none(), "a shared object removed");
    }
}
