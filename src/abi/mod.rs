//! The ABI check: read the dynamic symbol tables of every shared object of an
//! environment's distributions (a site-packages directory, a directory of wheels, or a
//! node's environment) and find the undefined symbols another distribution is meant to
//! provide but does not export, e.g. sgl-kernel built against torch 2.9.1 needing
//! `c10::cuda::c10_cuda_check_implementation(int, …, int, bool)` where torch 2.10 exports
//! `(…, unsigned int, bool)`. No rule names the pair: the binaries say it.
//!
//! [`tree`] and [`remote`] gather the tables, [`elf`] reads them, [`ownership`] maps
//! files to distributions, [`check`] matches imports to exports, [`report`] prints.

pub mod cache;
pub mod check;
pub mod demangle;
pub mod elf;
pub mod locked;
pub mod node;
pub mod ownership;
pub mod remote;
pub mod report;
pub mod sparse;
pub mod tree;

use std::path::PathBuf;

pub use check::{Missing, Nearest, Outcome, check};
pub use report::Report;

/// An installed (or wheel-borne) distribution, e.g. `torch` `2.11.0+cu130`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dist {
    /// Its `Name`, e.g. `sgl-kernel`.
    pub name: String,
    /// Its `Version`, e.g. `0.3.21`.
    pub version: String,
}

impl Dist {
    /// e.g. `sgl-kernel 0.3.21`.
    pub fn label(&self) -> String {
        format!("{} {}", self.name, self.version)
    }
}

/// One shared object of the environment, e.g. `torch/lib/libc10_cuda.so` of torch.
#[derive(Debug, Clone)]
pub struct Object {
    /// Its full path, normalized, e.g. `/venv/lib/python3.12/site-packages/torch/lib/libc10.so`.
    pub path: String,
    /// Its path relative to its site-packages (or wheel), e.g. `torch/lib/libc10.so`.
    pub shown: String,
    /// The distribution whose RECORD lists it.
    pub dist: usize,
    /// Its tables.
    pub info: elf::ElfInfo,
}

/// Everything the check reads: distributions and their shared objects.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// Where it was read, e.g. `/venv/lib/python3.12/site-packages`.
    pub roots: Vec<String>,
    /// The distributions.
    pub dists: Vec<Dist>,
    /// Their shared objects.
    pub objects: Vec<Object>,
    /// Files that could not be read, e.g. `torch/lib/x.so: invalid ELF: …`.
    pub skipped: Vec<String>,
}

/// Why an environment could not be read.
#[derive(Debug, thiserror::Error)]
pub enum AbiError {
    /// A directory or file could not be read.
    #[error("Failed to read `{}`: {source}", path.display())]
    Read {
        /// What.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A wheel is not a valid zip file.
    #[error("Failed to read wheel `{}`: {message}", path.display())]
    Wheel {
        /// The wheel.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The directory holds neither distributions nor wheels.
    #[error(
        "`{}` is neither a site-packages directory (no `*.dist-info`) nor a directory of wheels (no `*.whl`)",
        path.display()
    )]
    NotAnEnvironment {
        /// The directory.
        path: PathBuf,
    },
    /// The node's interpreter could not list its environment.
    #[error("Failed to read the environment of `{python}` on `{node}`: {message}")]
    Node {
        /// e.g. `node0`.
        node: String,
        /// e.g. `/opt/venv/bin/python3`.
        python: String,
        /// Why.
        message: String,
    },
    /// A wheel found for the lock is not the file the lock names.
    #[error(
        "`{}` is not the locked file: its sha256 is `{actual}`, the lock says `{expected}`",
        path.display()
    )]
    Digest {
        /// The wheel found.
        path: PathBuf,
        /// The lock's sha256.
        expected: String,
        /// The file's.
        actual: String,
    },
    /// The command could not run on the node.
    #[error(transparent)]
    Transport(#[from] crate::transport::TransportError),
}
