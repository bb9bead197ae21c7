//! Export a lock to what other installers read: pip's requirements file in
//! hash-checking mode ([`requirements_txt`]) and PEP 751's `pylock.toml` ([`pylock`]).
//!
//! A lock is the resolution for one node: one file per package, with its sha256 and
//! the name of the index it comes from. The manifest names the indexes' URLs
//! ([`ExportIndex`]); an index without one is the index pip is configured with. No
//! credential of an index URL is ever written: a requirements file gets `${VARIABLE}`
//! references that pip expands, a `pylock.toml` the URL without them (see
//! [`crate::manifest::mask_url`]). A package built from a git checkout has no file
//! hash an installer could check, so both formats leave it out with a comment that
//! says how to install it. Nothing here does I/O except [`file_urls`], which reads
//! the indexes' project pages for the files' URLs that `pylock.toml` needs.
//!
//! See: <https://packaging.python.org/en/latest/specifications/pylock-toml/>

mod pylock;
mod requirements;
mod urls;

pub use pylock::pylock;
pub use requirements::requirements_txt;
pub use urls::{LockedFileUrl, OtherFile, file_urls};

use super::{FactsFile, Lock, LockedPackage, LockedSource};

/// One index of the manifest, as the export needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportIndex {
    /// e.g. `pytorch-cu130`.
    pub name: String,
    /// The simple-API URL the manifest gives, e.g. `https://mirror.example/whl/cu130`;
    /// `None`: the index pip is configured with. May carry credentials.
    pub url: Option<String>,
    /// Serves only the packages that name it.
    pub explicit: bool,
}

/// Failed to export a lock.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A locked file has no sha256, so no installer could check it.
    #[error(
        "Failed to export `{package}=={version}`: the lock has no sha256 for `{file}` (record it with `upgrade index hash`, then lock again)"
    )]
    MissingHash {
        /// e.g. `torchaudio`.
        package: String,
        /// e.g. `2.9.1+cu130`.
        version: String,
        /// e.g. `torchaudio-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
        file: String,
    },
    /// The lock names an index the manifest does not have.
    #[error(
        "Failed to export `{package}`: the lock names index `{index}`, which the manifest does not have"
    )]
    UnknownIndex {
        /// e.g. `torch`.
        package: String,
        /// e.g. `find-links`.
        index: String,
    },
    /// The index no longer lists the locked file.
    #[error("Failed to find `{file}` of `{package}` on index `{index}` (`{url}`)")]
    FileNotListed {
        /// e.g. `torch`.
        package: String,
        /// e.g. `torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
        file: String,
        /// e.g. `pytorch-cu130`.
        index: String,
        /// The project page, credentials masked.
        url: String,
    },
    /// The index lists the locked file with another sha256 than the lock's.
    #[error(
        "Failed to export `{file}`: index `{index}` lists sha256 `{listed}`, the lock has `{locked}`"
    )]
    HashMismatch {
        /// e.g. `torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
        file: String,
        /// e.g. `pytorch-cu130`.
        index: String,
        /// What the index lists.
        listed: String,
        /// What the lock has.
        locked: String,
    },
    /// The index client could not start.
    #[error("Failed to start the index client")]
    ClientSetup(#[source] Box<crate::index::client::ClientError>),
    /// An index could not be read.
    #[error("Failed to read the files of `{package}` from index `{index}`")]
    Client {
        /// e.g. `torch`.
        package: String,
        /// e.g. `pytorch-cu130`.
        index: String,
        /// Why.
        #[source]
        source: Box<crate::index::client::ClientError>,
    },
}

/// A package the export installs from an index, with its one locked file.
#[derive(Debug, Clone, Copy)]
struct IndexedPackage<'a> {
    package: &'a LockedPackage,
    index: &'a str,
    file: &'a str,
    sha256: &'a str,
}

/// The lock's packages split into those from an index (with their hash) and those
/// built from git; an index package without a sha256 is an error.
fn split(lock: &Lock) -> Result<(Vec<IndexedPackage<'_>>, Vec<&LockedPackage>), ExportError> {
    let mut indexed = Vec::new();
    let mut git = Vec::new();
    for package in &lock.packages {
        match &package.source {
            LockedSource::Index {
                index,
                file,
                sha256,
            } => {
                let Some(sha256) = sha256 else {
                    return Err(ExportError::MissingHash {
                        package: package.name.to_string(),
                        version: package.version.to_string(),
                        file: file.to_string(),
                    });
                };
                indexed.push(IndexedPackage {
                    package,
                    index,
                    file,
                    sha256: sha256.as_str(),
                });
            }
            LockedSource::Git { .. } => git.push(package),
        }
    }
    Ok((indexed, git))
}

/// The index of this name, or the error that names the package asking for it.
fn find_index<'a>(
    indexes: &'a [ExportIndex],
    package: &str,
    name: &str,
) -> Result<&'a ExportIndex, ExportError> {
    indexes
        .iter()
        .find(|index| index.name == name)
        .ok_or_else(|| ExportError::UnknownIndex {
            package: package.to_string(),
            index: name.to_string(),
        })
}

/// The interpreter's `major.minor`, e.g. `3.12` for `3.12.3`.
fn python_minor(assumed: &FactsFile) -> String {
    assumed
        .python
        .split('.')
        .take(2)
        .collect::<Vec<_>>()
        .join(".")
}

/// The PEP 508 marker of the node the lock is for, e.g. `sys_platform == 'linux' and
/// platform_machine == 'x86_64' and python_version == '3.12'`.
fn environment_marker(assumed: &FactsFile) -> String {
    format!(
        "sys_platform == 'linux' and platform_machine == '{}' and python_version == '{}'",
        assumed.arch.as_str(),
        python_minor(assumed)
    )
}

/// How a git package is installed by hand, e.g. `pip install --no-deps 'sglang @
/// git+https://github.com/sgl-project/sglang@v0.5.9#subdirectory=python'`, its URL's
/// credentials masked.
fn git_note(package: &LockedPackage) -> String {
    let LockedSource::Git {
        url,
        rev,
        subdirectory,
    } = &package.source
    else {
        return String::new();
    };
    let subdirectory = subdirectory
        .as_ref()
        .map(|subdirectory| format!("#subdirectory={subdirectory}"))
        .unwrap_or_default();
    format!(
        "{}=={} comes from git and is left out: no installer can check a hash of a checkout; install it after the others with: pip install --no-deps '{} @ git+{}@{rev}{subdirectory}'",
        package.name,
        package.version,
        package.name,
        crate::manifest::redact_url(url)
    )
}

#[cfg(test)]
mod tests;
