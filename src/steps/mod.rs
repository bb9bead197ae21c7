//! Steps: one unit of change each, with a read-only `check` (here: a pure function of
//! the node's facts), the operations that `apply` runs, and a `verify` that proves the
//! result.
//!
//! A step yields operations only when the facts differ from what the manifest wants;
//! re-running on a converged node yields none. This module decides and describes; it
//! never talks to a node (the executor does).

pub mod env;
pub mod installer;
pub mod ldconfig;
pub mod pip;
pub mod python_env;
pub mod source;
pub mod toolkit;

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

use crate::transport::NodeCommand;

pub use installer::Installer;

/// What a step will do, as a plan shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// `+`: something new is created.
    Create,
    /// `~`: something that exists is changed.
    Change,
    /// `-`: something is removed.
    Remove,
    /// Nothing to do: the node already is as wanted.
    NoOp,
}

impl Action {
    /// The plan's glyph, e.g. `+`.
    pub fn glyph(self) -> char {
        match self {
            Self::Create => '+',
            Self::Change => '~',
            Self::Remove => '-',
            Self::NoOp => ' ',
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Create => "create",
            Self::Change => "change",
            Self::Remove => "remove",
            Self::NoOp => "no-op",
        })
    }
}

/// The kinds of step, in the order a plan runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// The target virtual environment.
    PythonEnv,
    /// The CUDA toolkit in its own prefix.
    Toolkit,
    /// The environment's packages equal to the lock.
    PipPins,
    /// A package built from a git checkout with local patches.
    SourceInstall,
    /// The dynamic linker's registration of library directories.
    Ldconfig,
    /// Environment variables in the interpreter's `sitecustomize.py`.
    EnvInjection,
}

impl fmt::Display for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::PythonEnv => "python-env",
            Self::Toolkit => "toolkit",
            Self::PipPins => "pip",
            Self::SourceInstall => "source",
            Self::Ldconfig => "ldconfig",
            Self::EnvInjection => "env",
        })
    }
}

/// Where staged files (runfiles, requirement files, patches) wait on the node: a
/// root-owned 0700 directory, refused when another user owns it or may write to it.
pub const STAGING_DIR: &str = "/var/tmp/cuda-upgrade";

/// Where the pip step finds the wheels the controller sent (`--fetch controller`):
/// one file per locked file, under its own name, inside the root-only staging directory.
pub const WHEELS_DIR: &str = "/var/tmp/cuda-upgrade/wheels";

/// How a node gets its packages: who downloads the locked files (`--fetch`) and what
/// installs them (`--installer`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivery {
    /// The node itself, or the controller.
    pub fetch: FetchMode,
    /// pip, or a uv the controller sends.
    pub installer: Installer,
}

/// Who downloads the locked files of a node's packages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FetchMode {
    /// The node itself, from each file's index (it needs a route to the indexes).
    #[default]
    Node,
    /// The controller, once per file for the whole fleet: verified by sha256, kept in
    /// its download cache, and sent to each node that lacks it; pip then installs
    /// with `--no-index --find-links`.
    Controller,
}

impl std::str::FromStr for FetchMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "node" => Ok(Self::Node),
            "controller" => Ok(Self::Controller),
            other => Err(format!(
                "`{}` is not a fetch mode (`controller` or `node`)",
                crate::text::text_value(other)
            )),
        }
    }
}

impl fmt::Display for FetchMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Node => "node",
            Self::Controller => "controller",
        })
    }
}

/// The build requirements of a source install, sent from the controller: the controller
/// reads them from the bundled commit's `pyproject.toml`, resolves them for the node
/// from the manifest's indexes with its own resolver (wheels only, each with the
/// index's sha256), downloads and verifies the wheels (once per set, kept in its cache)
/// and the node builds with `--no-index --find-links DIR`. Nothing of the source runs
/// on the controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildRequirements {
    /// The package built, e.g. `sglang`.
    pub package: String,
    /// Where its `pyproject.toml` is in the repository, e.g. `python`; `None`: the root.
    pub subdirectory: Option<String>,
    /// Where they are resolved from, and for what node.
    pub resolution: BuildResolution,
    /// Where the wheels go on the node, e.g. `/var/tmp/cuda-upgrade/build/sglang`.
    pub dir: PathBuf,
    /// What the controller knows of them before fetching anything (`plan` fills it in
    /// from its cache); `None`: nothing yet.
    pub known: Option<KnownBuildRequirements>,
}

/// The build requirements of a source as the controller's cache knows them: the commit
/// its clone holds for the revision, what that commit's `pyproject.toml` declares, and
/// the wheels resolved for this node before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownBuildRequirements {
    /// e.g. `4f1c2d…`.
    pub commit: String,
    /// The declared requirements, e.g. `setuptools>=61`, or why they cannot be read.
    pub declared: Result<Vec<String>, String>,
    /// The pins resolved for this node before, e.g. `setuptools==80.9.0`; `None` when
    /// they are resolved at `apply`.
    pub resolved: Option<Vec<String>>,
}

/// What the controller resolves build requirements against: the manifest's indexes and
/// policies, and the node its lock was resolved for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildResolution {
    /// The manifest's indexes, highest priority first.
    pub indexes: Vec<BuildIndex>,
    /// Packages the manifest pins to an index, e.g. `torch` → `pytorch-cu130`.
    pub pins: std::collections::BTreeMap<String, String>,
    /// The node, as its lock assumed it (interpreter, glibc, machine, driver, GPUs).
    pub environment: crate::resolve::FactsFile,
    /// The manifest's pre-release and CUDA wheel policies.
    pub options: crate::resolve::ResolveOptions,
}

/// An index build requirements may come from, e.g. `default`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildIndex {
    /// e.g. `default`.
    pub name: String,
    /// Its URL (may carry credentials: never shown).
    pub url: String,
    /// An explicit index serves only the packages pinned to it.
    pub explicit: bool,
}

/// Where secret values of the env step live on the node: root-only files in a
/// root-owned 0700 directory, read by the managed block at interpreter start.
pub const SECRETS_DIR: &str = "/etc/cuda-upgrade/secrets";

/// How a file is placed on the node by the one write primitive
/// ([`crate::transport::WriteSpec`]): symlinks followed, owner and mode of an existing
/// file kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// An ordinary file, e.g. an ld.so.conf.d entry: `mode` when new.
    Public {
        /// e.g. `0o644`.
        mode: u32,
    },
    /// A file in a private directory (staging): `mode` when new, the directory
    /// root-owned 0700.
    Staged {
        /// e.g. `0o700` for a runfile.
        mode: u32,
    },
    /// A file holding secret values: 0600 in a private directory; an existing file
    /// loses its group and other bits.
    Secret,
}

impl Placement {
    /// The primitive's settings for `path`.
    pub fn spec(self, path: &std::path::Path) -> crate::transport::WriteSpec {
        let mut spec = crate::transport::WriteSpec::new(path, 0o644);
        match self {
            Self::Public { mode } => spec.new_mode = mode,
            Self::Staged { mode } => {
                spec.new_mode = mode;
                spec.private_directory = true;
            }
            Self::Secret => {
                spec.new_mode = 0o600;
                spec.secret = true;
                spec.private_directory = true;
            }
        }
        spec
    }
}

/// One thing `apply` does on the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// Run a command; a non-zero exit fails the step.
    Run(NodeCommand),
    /// Write a whole file through the write primitive.
    Upload {
        /// e.g. `/etc/ld.so.conf.d/cuda-13-0.conf`.
        path: PathBuf,
        /// How it is placed.
        placement: Placement,
        /// The new content (never shown when the placement is secret).
        content: Vec<u8>,
    },
    /// Fetch a file on the controller (once, verified against its sha256), then
    /// stream it into the staging directory on the node, unless the node already has a
    /// file of that digest there.
    Transfer {
        /// e.g. the runfile's URL.
        url: String,
        /// Its digest from the manifest.
        sha256: crate::manifest::Sha256,
        /// Where it goes on the node, e.g. `/var/tmp/cuda-upgrade/cuda_13.0.1_580.82.07_linux.run`.
        path: PathBuf,
        /// e.g. `0o700`.
        mode: u32,
    },
    /// Fetch a locked file of an index on the controller (its URL from the index's
    /// project page, once per digest: a verified copy in the download cache is reused),
    /// then stream it into the staging directory on the node, unless the node already
    /// has a file of that digest there.
    FetchIndexFile {
        /// The index's name in the lock, e.g. `pytorch-cu130`.
        index: String,
        /// Its URL (may carry credentials: never shown).
        index_url: String,
        /// The project, e.g. `torch`.
        project: String,
        /// The file's name, e.g. `torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
        file: String,
        /// Its digest from the lock.
        sha256: crate::manifest::Sha256,
        /// Where it goes on the node, e.g. `/var/tmp/cuda-upgrade/wheels/torch-….whl`.
        path: PathBuf,
    },
    /// Make a `git bundle` of a repository's revision on the controller (its clone kept
    /// in the download cache) and stream it into the staging directory on the node.
    GitBundle {
        /// The repository (may carry credentials: shown redacted).
        url: String,
        /// The pinned revision, e.g. `v0.5.9`.
        rev: String,
        /// Where it goes on the node, e.g. `/var/tmp/cuda-upgrade/bundles/sglang.bundle`.
        path: PathBuf,
        /// The wheels of the build requirements to send with it (`--fetch controller`).
        build: Option<Box<BuildRequirements>>,
    },
    /// Replace (or append) the managed block of a file, keeping every other byte;
    /// creates the file when missing. A file whose markers do not pair up is refused.
    ReplaceBlock {
        /// e.g. `/usr/lib/python3.12/sitecustomize.py` (a link is followed).
        path: PathBuf,
        /// The marker name, e.g. `cuda-upgrade managed block`.
        marker: String,
        /// The lines between the markers (no secret values: those live in a secret file).
        block: String,
    },
    /// Remove the managed block of a file (markers included), keeping every other byte;
    /// nothing happens when the file or its block is gone.
    RemoveBlock {
        /// e.g. `/usr/lib/python3.12/sitecustomize.py` (a link is followed).
        path: PathBuf,
        /// The marker name, e.g. `cuda-upgrade managed block`.
        marker: String,
    },
}

impl Operation {
    /// Write `content` to the staging file `path` (new files `0o644`).
    pub fn staged(path: PathBuf, content: Vec<u8>) -> Self {
        Self::Upload {
            path,
            placement: Placement::Staged { mode: 0o644 },
            content,
        }
    }

    /// How the plan shows it (secrets masked), e.g. `ldconfig`.
    pub fn describe(&self) -> String {
        match self {
            Self::Run(command) => command.display(),
            Self::Upload {
                path,
                placement,
                content,
            } => match placement {
                Placement::Public { mode } | Placement::Staged { mode } => format!(
                    "write {} ({} bytes, mode {mode:o} when new; an existing file keeps its owner and mode)",
                    path.display(),
                    content.len()
                ),
                Placement::Secret => format!(
                    "write the secret values to {} (root only, mode 600)",
                    path.display()
                ),
            },
            Self::Transfer {
                url, sha256, path, ..
            } => {
                format!("download {url} (sha256 {sha256}) to {}", path.display())
            }
            Self::FetchIndexFile {
                index,
                file,
                sha256,
                path,
                ..
            } => format!(
                "send {file} from index `{index}` (sha256 {sha256}, fetched once on the controller) to {}",
                path.display()
            ),
            Self::GitBundle {
                url,
                rev,
                path,
                build,
            } => {
                let mut text = format!(
                    "send a git bundle of {}@{rev}, made on the controller, to {}",
                    crate::manifest::redact_url(url),
                    path.display()
                );
                if let Some(build) = build {
                    let indexes: Vec<String> = build
                        .resolution
                        .indexes
                        .iter()
                        .map(|index| format!("`{}`", index.name))
                        .collect();
                    text.push_str(&format!(
                        ", and the wheels of its build requirements (its pyproject.toml's `[build-system] requires`, names and version ranges only), resolved on the controller for this node from index {} (wheels only, each checked against the index's sha256), to {}",
                        indexes.join(", "),
                        build.dir.display()
                    ));
                    if let Some(known) = &build.known {
                        let quoted = |items: &[String]| {
                            items
                                .iter()
                                .map(|item| format!("`{item}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        };
                        let commit = known.commit.get(..12).unwrap_or(&known.commit);
                        match &known.declared {
                            Ok(declared) if declared.is_empty() => text.push_str(&format!(
                                "\nbuild requirements of commit {commit}: none"
                            )),
                            Ok(declared) => text.push_str(&format!(
                                "\nbuild requirements of commit {commit}: {}",
                                quoted(declared)
                            )),
                            Err(reason) => text.push_str(&format!(
                                "\nbuild requirements of commit {commit}: unreadable, `apply` stops here: {reason}"
                            )),
                        }
                        if let Some(resolved) = &known.resolved {
                            text.push_str(&format!(
                                "\nresolved for this node before (reused): {}",
                                quoted(resolved)
                            ));
                        }
                    }
                }
                text
            }
            Self::RemoveBlock { path, .. } => format!(
                "remove the managed block of {} (links followed; owner, mode and every other byte kept)",
                path.display()
            ),
            Self::ReplaceBlock { path, block, .. } => {
                format!(
                    "rewrite the managed block of {} (links followed; owner and mode kept):\n{block}",
                    path.display()
                )
            }
        }
    }
}

/// A read-only proof that a step took effect, evaluated by the executor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    /// Each soname resolves through `ldconfig -p` into one of the directories.
    LibrariesResolve {
        /// e.g. `libnvrtc.so.13`.
        sonames: Vec<String>,
        /// e.g. `/usr/local/cuda-13.0/targets/x86_64-linux/lib`.
        directories: Vec<PathBuf>,
    },
    /// The interpreter starts.
    PythonRuns {
        /// e.g. `/opt/ml-env/bin/python3`.
        python: PathBuf,
    },
    /// The installer's list shows exactly these versions (local labels included), none
    /// of the removed packages, and its check passes.
    PackagesMatch {
        /// e.g. `/opt/ml-env/bin/python3`.
        python: PathBuf,
        /// pip or uv: what lists and checks.
        installer: Installer,
        /// Name and exact version, e.g. `torch`, `2.9.1+cu130`.
        expected: Vec<(String, String)>,
        /// Names that must not be installed.
        absent: Vec<String>,
        /// Also run `pip check` (off when source installs follow: the environment is
        /// consistent only after them).
        pip_check: bool,
    },
    /// A source install's record names this commit and these patches.
    SourceInstalled {
        /// The interpreter, e.g. `/opt/ml-env/bin/python3`.
        python: PathBuf,
        /// e.g. `sglang`.
        package: String,
        /// pip or uv: what checks.
        installer: Installer,
        /// Also run `pip check` (on the last source install).
        pip_check: bool,
    },
    /// The toolkit at the prefix is identified, as the plan identifies it (`version.json`,
    /// its apt meta package, or its nvcc build), as this update.
    ToolkitVersion {
        /// e.g. `/usr/local/cuda-13.0`.
        prefix: PathBuf,
        /// e.g. `13.0.1`.
        version: crate::cuda::CudaVersion,
    },
    /// A fresh interpreter sees these variables with these values.
    EnvironmentVisible {
        /// The interpreter, e.g. `/opt/ml-env/bin/python3`.
        python: PathBuf,
        /// Name and expected value (values of secrets are compared, never shown).
        variables: Vec<(String, String)>,
        /// The names set even when the process already has them (`override: true`);
        /// for the others a value the process was started with must win.
        overrides: Vec<String>,
    },
}

/// One planned step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// What kind of step.
    pub kind: StepKind,
    /// What it is about, unique among the node's steps of its kind, e.g. the toolkit
    /// prefix `/usr/local/cuda-13.0` or the package `sglang`.
    pub subject: String,
    /// What it will do.
    pub action: Action,
    /// Why, in words, e.g. ``/etc/ld.so.conf.d/cuda-13-0.conf` is missing`.
    pub reason: String,
    /// What `apply` runs, in order; empty for a no-op.
    pub operations: Vec<Operation>,
    /// What proves it afterwards.
    pub verification: Option<Verification>,
    /// Why the step cannot be applied as planned, e.g. a locked file without a
    /// sha256; the plan shows it with `!` and `apply` refuses the node.
    pub blocked: Option<String>,
}
