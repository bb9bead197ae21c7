//! What installs, removes, lists and checks an environment's packages on the node: the
//! environment's own pip (the default), or a `uv` binary the controller sends, which
//! does the same work in a fraction of pip's time (no interpreter start-up per command).

use std::fmt;
use std::path::{Path, PathBuf};

use sha2::Digest;

use crate::manifest::Sha256;
use crate::transport::NodeCommand;

use super::Operation;

/// Where the controller puts its `uv` on the node: a root-only directory.
pub const UV_PATH: &str = "/var/lib/cuda-upgrade/tools/uv";

/// The installer a run uses on its nodes (`--installer`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Installer {
    /// `python -m pip` of the target environment.
    #[default]
    Pip,
    /// `uv pip`, sent by the controller to [`UV_PATH`].
    Uv(UvBinary),
}

/// The controller's `uv` binary and its digest (what the node is sent and checked by).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UvBinary {
    /// e.g. `/usr/local/bin/uv`.
    pub local: PathBuf,
    /// Its sha256.
    pub sha256: Sha256,
    /// The ELF machine it runs on, e.g. `x86_64`.
    pub machine: String,
}

/// `--installer` names no installer, or the `uv` to send is missing or unreadable.
#[derive(Debug, thiserror::Error)]
pub enum InstallerError {
    /// e.g. `` `conda` is not an installer (`pip` or `uv`) ``.
    #[error("`{0}` is not an installer (`pip` or `uv`)")]
    Unknown(String),
    /// No `uv` was given and none is on `PATH`.
    #[error(
        "`--installer uv` sends this machine's `uv` to the nodes, and none was found: give its path with `--uv PATH` or put it on PATH"
    )]
    NotFound,
    /// The file could not be read.
    #[error("cannot read the uv binary {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not a Linux executable for a machine a node can have.
    #[error(
        "{path} is not a Linux executable (ELF) for x86_64 or aarch64: it cannot run on a node"
    )]
    NotElf {
        /// The file.
        path: PathBuf,
    },
}

/// Which installer `--installer NAME` asks for, before the binary is found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum InstallerKind {
    /// pip.
    #[default]
    Pip,
    /// uv.
    Uv,
}

impl std::str::FromStr for InstallerKind {
    type Err = InstallerError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "pip" => Ok(Self::Pip),
            "uv" => Ok(Self::Uv),
            other => Err(InstallerError::Unknown(other.to_string())),
        }
    }
}

impl fmt::Display for InstallerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Pip => "pip",
            Self::Uv => "uv",
        })
    }
}

impl UvBinary {
    /// The `uv` at `path`, else the first on `PATH`: read once for its digest and machine.
    pub fn find(path: Option<&Path>) -> Result<Self, InstallerError> {
        let local = match path {
            Some(path) => path.to_path_buf(),
            None => crate::settings::env::on_path(Path::new("uv"), &crate::settings::env::var)
                .ok_or(InstallerError::NotFound)?,
        };
        let bytes = fs_err::read(&local).map_err(|source| InstallerError::Read {
            path: local.clone(),
            source,
        })?;
        let machine = crate::abi::elf::machine(&bytes).ok_or_else(|| InstallerError::NotElf {
            path: local.clone(),
        })?;
        let sha256 = hex::encode(sha2::Sha256::digest(&bytes))
            .parse::<Sha256>()
            .map_err(|_| InstallerError::NotElf {
                path: local.clone(),
            })?;
        Ok(Self {
            local,
            sha256,
            machine: machine.to_string(),
        })
    }
}

impl Installer {
    /// The operation that puts the installer on the node before a step uses it: for uv,
    /// the controller's binary (sent only when the node lacks that digest there).
    pub fn send(&self) -> Option<Operation> {
        match self {
            Self::Pip => None,
            Self::Uv(uv) => Some(Operation::Transfer {
                url: format!("file://{}", uv.local.display()),
                sha256: uv.sha256.clone(),
                path: PathBuf::from(UV_PATH),
                mode: 0o755,
            }),
        }
    }

    /// The node's machine, e.g. `x86_64`, must be the binary's; pip runs anywhere.
    pub fn runs_on(&self, machine: &str) -> Result<(), String> {
        match self {
            Self::Uv(uv) if !machine.is_empty() && uv.machine != machine => Err(format!(
                "the uv binary {} is built for {} and the node is {machine}",
                uv.local.display(),
                uv.machine
            )),
            _ => Ok(()),
        }
    }

    /// An install of exact pins, no dependencies, every file's hash checked and bytecode
    /// compiled as pip does, `Requires-Python` left to the lock, e.g. `PYTHON -m pip
    /// install --no-deps --ignore-requires-python --require-hashes …` or
    /// `uv pip install --python PYTHON --no-deps … --require-hashes`; run by `wrapper`
    /// (a command that runs the rest of its arguments) when there is one.
    pub fn install(&self, wrapper: Option<NodeCommand>, python: &str) -> NodeCommand {
        let program = match self {
            Self::Pip => python,
            Self::Uv(_) => UV_PATH,
        };
        let command = match wrapper {
            Some(wrapper) => wrapper.arg(program),
            None => NodeCommand::new(program),
        };
        match self {
            // The lock applies `Requires-Python` as uv does (lower bounds only); pip
            // would refuse a locked file for an upper bound alone.
            Self::Pip => command.args([
                "-m",
                "pip",
                "install",
                "--no-deps",
                "--no-input",
                "--disable-pip-version-check",
                "--no-cache-dir",
                "--ignore-requires-python",
            ]),
            Self::Uv(_) => command
                .args(["pip", "install", "--python"])
                .arg(python)
                .args(UV_INSTALL_FLAGS.iter().copied()),
        }
        .arg("--require-hashes")
    }

    /// Remove `names` from the environment of `python`.
    pub fn uninstall(&self, python: &str, names: &[String]) -> NodeCommand {
        match self {
            Self::Pip => NodeCommand::new(python).args([
                "-m",
                "pip",
                "uninstall",
                "-y",
                "--disable-pip-version-check",
                "--",
            ]),
            Self::Uv(_) => NodeCommand::new(UV_PATH)
                .args(["pip", "uninstall", "--python"])
                .arg(python)
                .arg("--"),
        }
        .args(names.iter().cloned())
    }

    /// The installed packages as JSON: a list of `{"name", "version"}`.
    pub fn list(&self, python: &str) -> NodeCommand {
        match self {
            Self::Pip => NodeCommand::new(python).args([
                "-m",
                "pip",
                "list",
                "--format=json",
                "--disable-pip-version-check",
            ]),
            Self::Uv(_) => NodeCommand::new(UV_PATH)
                .args(["pip", "list", "--format", "json", "--python"])
                .arg(python),
        }
    }

    /// Every installed package's requirements are met (exit 0), else each unmet one.
    pub fn check(&self, python: &str) -> NodeCommand {
        match self {
            Self::Pip => {
                NodeCommand::new(python).args(["-m", "pip", "check", "--disable-pip-version-check"])
            }
            Self::Uv(_) => NodeCommand::new(UV_PATH)
                .args(["pip", "check", "--python"])
                .arg(python),
        }
    }
}

/// uv's install flags: no cache left on the node, files copied (the cache is temporary,
/// so links would dangle), bytecode compiled as pip compiles it, and neither prompts nor
/// dependencies (the lock names every package).
pub const UV_INSTALL_FLAGS: &[&str] = &[
    "--no-deps",
    "--no-cache",
    "--link-mode",
    "copy",
    "--compile-bytecode",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn uv() -> Installer {
        Installer::Uv(UvBinary {
            local: PathBuf::from("/usr/local/bin/uv"),
            sha256: "a".repeat(64).parse().unwrap(),
            machine: "x86_64".to_string(),
        })
    }

    #[test]
    fn uv_commands_name_the_environment_and_end_options_before_names() {
        let python = "/opt/ml-env/bin/python3";
        let names = vec!["-rf".to_string()];
        assert_eq!(
            uv().uninstall(python, &names).render(),
            format!("{UV_PATH} pip uninstall --python {python} -- -rf")
        );
        assert_eq!(
            Installer::Pip.uninstall(python, &names).render(),
            format!("{python} -m pip uninstall -y --disable-pip-version-check -- -rf")
        );
        let install = uv().install(Some(NodeCommand::new("env")), python).render();
        assert!(
            install.starts_with(&format!(
                "env {UV_PATH} pip install --python {python} --no-deps"
            )) && install.ends_with("--compile-bytecode --require-hashes"),
            "{install}"
        );
        // The lock applies `Requires-Python` as uv does; pip is told not to re-apply it.
        let pip = Installer::Pip.install(None, python).render();
        assert!(
            pip.contains(" --ignore-requires-python ") && pip.ends_with("--require-hashes"),
            "{pip}"
        );
    }

    #[test]
    fn the_binary_is_checked_for_the_nodes_machine() {
        assert!(uv().runs_on("x86_64").is_ok());
        assert!(uv().runs_on("aarch64").unwrap_err().contains("aarch64"));
        assert!(Installer::Pip.runs_on("ppc64le").is_ok());
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("uv");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        assert!(matches!(
            UvBinary::find(Some(&script)),
            Err(InstallerError::NotElf { .. })
        ));
        let this = std::env::current_exe().unwrap();
        let found = UvBinary::find(Some(&this)).unwrap();
        assert_eq!(found.machine, std::env::consts::ARCH);
        assert_eq!("pip".parse::<InstallerKind>().unwrap(), InstallerKind::Pip);
        assert!("conda".parse::<InstallerKind>().is_err());
    }
}
