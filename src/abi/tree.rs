//! Gathering an environment's tables from this machine: a site-packages directory (its
//! `*.dist-info` RECORDs name the shared objects, read in place, in parallel) or a
//! directory of wheels (each wheel's RECORD and its `.so` entries, as they would be
//! installed side by side).

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

use super::elf::{self, ElfError, ElfInfo};
use super::ownership::{self, is_library_path, normalize};
use super::sparse::Sparse;
use super::{AbiError, Dist, Environment, Object};

/// Where a shared object's tables come from.
#[derive(Debug)]
pub enum Source {
    /// A file on this machine, read in place.
    File,
    /// Ranges already read (a wheel's entry, a node's answer).
    Ranges(Sparse),
}

/// A shared object waiting to be read: its full path, its distribution and its bytes.
#[derive(Debug)]
pub struct Pending {
    /// Full normalized path, e.g. `/site/torch/lib/libc10.so`.
    pub path: String,
    /// Its site-packages (or wheel directory), e.g. `/site`.
    pub root: String,
    /// Index into the distributions.
    pub dist: usize,
    /// Where its bytes are.
    pub source: Source,
}

/// Apply `work` to every item on all cores, keeping the order.
pub fn parallel_map<T: Send, R: Send>(items: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(usize::from)
        .unwrap_or(1)
        .clamp(1, 32);
    let count = items.len();
    if count < 2 || threads == 1 {
        return items.into_iter().map(work).collect();
    }
    let queue = std::sync::Mutex::new(items.into_iter().enumerate());
    let results = std::sync::Mutex::new(Vec::with_capacity(count));
    std::thread::scope(|scope| {
        for _ in 0..threads.min(count) {
            scope.spawn(|| {
                loop {
                    let next = match queue.lock() {
                        Ok(mut queue) => queue.next(),
                        Err(_) => None,
                    };
                    let Some((index, item)) = next else { break };
                    let result = work(item);
                    if let Ok(mut results) = results.lock() {
                        results.push((index, result));
                    }
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|(index, _)| *index);
    results.into_iter().map(|(_, result)| result).collect()
}

fn read_one(pending: &Pending) -> Result<Option<ElfInfo>, ElfError> {
    let sparse = match &pending.source {
        Source::Ranges(sparse) => Some(std::borrow::Cow::Borrowed(sparse)),
        Source::File => {
            let file = std::fs::File::open(&pending.path)?;
            elf::ranges_of_file(&file)?.map(std::borrow::Cow::Owned)
        }
    };
    sparse.map(|sparse| elf::parse(&sparse)).transpose()
}

/// Read every pending object (in parallel) into an environment.
pub fn build(roots: Vec<String>, dists: Vec<Dist>, pending: Vec<Pending>) -> Environment {
    let mut seen = HashSet::new();
    let pending: Vec<Pending> = pending
        .into_iter()
        .filter(|item| seen.insert(item.path.clone()))
        .collect();
    let read = parallel_map(pending, |item| {
        let result = read_one(&item);
        (item, result)
    });
    let mut environment = Environment {
        roots,
        dists,
        ..Environment::default()
    };
    for (item, result) in read {
        let shown = item
            .path
            .strip_prefix(&format!("{}/", item.root))
            .unwrap_or(&item.path)
            .to_string();
        match result {
            Ok(Some(info)) => environment.objects.push(Object {
                path: item.path,
                shown,
                dist: item.dist,
                info,
            }),
            Ok(None) => {}
            // A file the RECORD lists but that is gone is not a break of this check.
            Err(ElfError::Io(error)) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => environment.skipped.push(format!("{shown}: {error}")),
        }
    }
    environment
}

fn dist_of(record: &[u8], metadata: &[u8], fallback: &str) -> (Dist, Vec<String>) {
    let (name, version) = ownership::metadata(metadata);
    let fallback_name = fallback
        .trim_end_matches(".dist-info")
        .split('-')
        .next()
        .unwrap_or(fallback);
    (
        Dist {
            name: name.unwrap_or_else(|| fallback_name.to_string()),
            version: version.unwrap_or_else(|| "?".to_string()),
        },
        ownership::record_paths(record),
    )
}

fn read_error(path: &Path) -> impl Fn(std::io::Error) -> AbiError + '_ {
    move |source| AbiError::Read {
        path: path.to_path_buf(),
        source,
    }
}

/// What reading site-packages directories finds before any shared object is opened:
/// the distributions and the shared objects their RECORDs list.
pub struct Listing {
    /// The directories read, normalized.
    pub roots: Vec<String>,
    /// Their distributions.
    pub dists: Vec<Dist>,
    /// The shared objects to read.
    pub pending: Vec<Pending>,
}

impl Listing {
    /// Read every listed shared object (in parallel) into an environment.
    pub fn read(self) -> Environment {
        build(self.roots, self.dists, self.pending)
    }
}

/// The distributions and shared objects of site-packages directories, e.g.
/// `/venv/lib/python3.12/site-packages`; a missing directory is skipped.
pub fn site_packages(directories: &[&Path]) -> Result<Environment, AbiError> {
    listing(directories).map(Listing::read)
}

/// The site-packages directories of `directories` that exist, absolute and normalized,
/// e.g. `/venv/lib/python3.12/site-packages`, each with the path it was given as.
pub fn roots<'a>(directories: &[&'a Path]) -> Result<Vec<(String, &'a Path)>, AbiError> {
    let mut roots = Vec::new();
    for directory in directories {
        if !directory.is_dir() {
            continue;
        }
        let root = normalize(
            &std::path::absolute(directory)
                .map_err(read_error(directory))?
                .display()
                .to_string(),
        );
        roots.push((root, *directory));
    }
    Ok(roots)
}

/// The `*.dist-info` directories of a site-packages directory, by name, sorted.
pub fn dist_infos(directory: &Path) -> Result<Vec<String>, AbiError> {
    let mut infos: Vec<String> = std::fs::read_dir(directory)
        .map_err(read_error(directory))?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".dist-info"))
        .collect();
    infos.sort();
    Ok(infos)
}

/// [`site_packages`] up to the point where the shared objects are read.
pub fn listing(directories: &[&Path]) -> Result<Listing, AbiError> {
    let mut roots = Vec::new();
    let mut dists = Vec::new();
    let mut pending = Vec::new();
    for (root, directory) in self::roots(directories)? {
        for info in dist_infos(directory)? {
            let dir = directory.join(&info);
            let Ok(record) = std::fs::read(dir.join("RECORD")) else {
                continue;
            };
            let metadata = std::fs::read(dir.join("METADATA")).unwrap_or_default();
            let (dist, paths) = dist_of(&record, &metadata, &info);
            let index = dists.len();
            dists.push(dist);
            for path in paths.iter().filter(|path| is_library_path(path)) {
                pending.push(Pending {
                    path: normalize(&format!("{root}/{path}")),
                    root: root.clone(),
                    dist: index,
                    source: Source::File,
                });
            }
        }
        roots.push(root);
    }
    Ok(Listing {
        roots,
        dists,
        pending,
    })
}

/// Where a wheel entry lands when installed: `NAME.data/purelib/x` and
/// `NAME.data/platlib/x` → `x`; other `.data` entries (scripts, headers) → `None`.
fn installed_path(entry: &str) -> Option<&str> {
    let (first, rest) = entry.split_once('/')?;
    if !first.ends_with(".data") {
        return Some(entry);
    }
    rest.strip_prefix("purelib/")
        .or_else(|| rest.strip_prefix("platlib/"))
}

/// The distributions and shared objects of the wheels in `directory`, as if installed
/// together into one site-packages.
pub fn wheels(directory: &Path) -> Result<Environment, AbiError> {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(directory)
        .map_err(read_error(directory))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .collect();
    files.sort();
    wheel_files(directory, &files)
}

/// The distributions and shared objects of `files` (wheels), as if installed together
/// into one site-packages; `root` names that place in the report, e.g. the directory
/// they were found in.
pub fn wheel_files(root: &Path, files: &[std::path::PathBuf]) -> Result<Environment, AbiError> {
    let root = normalize(
        &std::path::absolute(root)
            .map_err(read_error(root))?
            .display()
            .to_string(),
    );
    let mut dists = Vec::new();
    let mut pending = Vec::new();
    let mut skipped = Vec::new();
    for file in files {
        let wheel_error = |message: String| AbiError::Wheel {
            path: file.clone(),
            message,
        };
        let handle = std::fs::File::open(file).map_err(read_error(file))?;
        let mut archive =
            zip::ZipArchive::new(handle).map_err(|error| wheel_error(error.to_string()))?;
        let names: Vec<String> = archive
            .file_names()
            .filter_map(Result::ok)
            .map(|name| name.into_owned())
            .collect();
        let read_entry = |archive: &mut zip::ZipArchive<std::fs::File>, name: &str| {
            let mut entry = archive
                .by_name(name)
                .map_err(|error| wheel_error(format!("{name}: {error}")))?;
            let mut bytes = Vec::new();
            entry
                .read_to_end(&mut bytes)
                .map_err(|error| wheel_error(format!("{name}: {error}")))?;
            Ok::<_, AbiError>(bytes)
        };
        let Some(record_name) = names
            .iter()
            .find(|name| name.ends_with(".dist-info/RECORD") && name.matches('/').count() == 1)
        else {
            return Err(wheel_error("it has no `*.dist-info/RECORD`".to_string()));
        };
        let info_dir = record_name.trim_end_matches("/RECORD").to_string();
        let record = read_entry(&mut archive, record_name)?;
        let metadata =
            read_entry(&mut archive, &format!("{info_dir}/METADATA")).unwrap_or_default();
        let (dist, _) = dist_of(&record, &metadata, &info_dir);
        let index = dists.len();
        dists.push(dist);
        for name in names.iter().filter(|name| is_library_path(name)) {
            let Some(installed) = installed_path(name) else {
                continue;
            };
            let bytes = read_entry(&mut archive, name)?;
            match elf::ranges_of_bytes(&bytes) {
                Ok(Some(sparse)) => pending.push(Pending {
                    path: normalize(&format!("{root}/{installed}")),
                    root: root.clone(),
                    dist: index,
                    source: Source::Ranges(sparse),
                }),
                Ok(None) => {}
                Err(error) => skipped.push(format!("{installed}: {error}")),
            }
        }
    }
    let mut environment = build(vec![root], dists, pending);
    environment.skipped.extend(skipped);
    Ok(environment)
}

/// A directory: wheels when it holds `*.whl`, else a site-packages directory.
pub fn directory(path: &Path) -> Result<Environment, AbiError> {
    let entries: Vec<String> = std::fs::read_dir(path)
        .map_err(read_error(path))?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    if entries.iter().any(|name| name.ends_with(".whl")) {
        wheels(path)
    } else if entries.iter().any(|name| name.ends_with(".dist-info")) {
        site_packages(&[path])
    } else {
        Err(AbiError::NotAnEnvironment {
            path: path.to_path_buf(),
        })
    }
}
