//! pip's default index read from pip's own files, without starting Python.
//!
//! Starting the interpreter to ask pip costs a fifth of a second or more on every cold
//! run. Where the answer can be read directly, it is: the configuration files pip
//! loads for `pip install` (global: `$XDG_CONFIG_DIRS/pip/pip.conf`, `/etc/pip.conf`;
//! user: `~/.pip/pip.conf`, `$XDG_CONFIG_HOME/pip/pip.conf`; site: `sys.prefix/pip.conf`;
//! later ones win, `install.index-url` over `global.index-url`), and otherwise the
//! `PyPI = PackageIndex("…")` constant of pip's installed `pip/_internal/models/index.py`
//! joined with `simple`, as pip joins it.
//!
//! `sys.prefix` and pip's location are derived from the interpreter's path: a virtual
//! environment's `pyvenv.cfg`, or the real executable's `bin/..`; a pyenv shim is
//! followed through `PYENV_VERSION`, `.python-version` and `$PYENV_ROOT/version`.
//! Anything this reading cannot be sure of gives `None`, and the caller asks pip
//! itself: `PIP_CONFIG_FILE`, `PYTHONPATH`, `PYTHONHOME` or `PYTHONUSERBASE` set, a
//! venv that includes the system's packages, no pip or two copies
//! that could shadow each other, a configuration file it cannot parse exactly as
//! Python's `configparser` does (a `[DEFAULT]` section, a value spread over lines, `$`
//! or `%` in a value), or a constant it cannot find.

use std::path::{Path, PathBuf};

use super::pip_config::{DefaultIndex, DefaultIndexSource};

/// Variables that make pip read something this module does not follow.
const UNFOLLOWED: [&str; 4] = [
    "PIP_CONFIG_FILE",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUSERBASE",
];

/// The keys pip reads the default index from, strongest first.
const KEYS: [(&str, &str); 2] = [("install", "index-url"), ("global", "index-url")];

/// The environment as this module reads it (e.g. [`crate::settings::env::var`]).
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// pip's default index for the interpreter `python` (a name looked up on `PATH`, or a
/// path), read from pip's files; `None` where only pip itself can say.
pub fn default_index(python: &Path, lookup: Lookup<'_>) -> Option<DefaultIndex> {
    read_default(python, lookup, Path::new("/etc"))
}

/// [`default_index`] with the system configuration directory `etc` (`/etc`).
fn read_default(python: &Path, lookup: Lookup<'_>, etc: &Path) -> Option<DefaultIndex> {
    if UNFOLLOWED.iter().any(|name| lookup(name).is_some()) {
        return None;
    }
    let interpreter = Interpreter::locate(python, lookup)?;
    let mut found: Option<(usize, String)> = None;
    for file in config_files(&interpreter.prefix, lookup, etc)? {
        let Ok(text) = fs_err::read_to_string(&file) else {
            if file.exists() {
                return None;
            }
            continue;
        };
        for (rank, url) in index_urls(&text)? {
            if found.as_ref().is_none_or(|(best, _)| rank <= *best) {
                found = Some((rank, url));
            }
        }
    }
    if let Some((rank, url)) = found {
        let (section, key) = KEYS[rank];
        return Some(DefaultIndex {
            url,
            source: DefaultIndexSource::PipConfig(format!("{section}.{key}")),
        });
    }
    let source =
        fs_err::read_to_string(interpreter.pip()?.join("_internal/models/index.py")).ok()?;
    Some(DefaultIndex {
        url: builtin_simple_url(&source)?,
        source: DefaultIndexSource::PipDefault,
    })
}

/// Where an interpreter keeps its prefix and packages.
struct Interpreter {
    /// `sys.prefix`.
    prefix: PathBuf,
    /// The directories pip may be imported from, in `sys.path` order.
    package_dirs: Vec<PathBuf>,
}

impl Interpreter {
    fn locate(python: &Path, lookup: Lookup<'_>) -> Option<Self> {
        let path = crate::settings::env::on_path(python, lookup)?;
        let path = follow_pyenv(&path, lookup).unwrap_or(path);
        let real = fs_err::canonicalize(&path).ok()?;
        if !is_elf(&real) {
            return None;
        }
        // `python3.12` names its library directory; `python3` leaves it to a search.
        let name = real.file_name()?.to_str()?;
        let version = name.strip_prefix("python").filter(|v| v.contains('.'));
        let base = real.parent()?.parent()?.to_path_buf();
        let venv = path.parent()?.parent()?.to_path_buf();
        let mut package_dirs = Vec::new();
        if let Ok(config) = fs_err::read_to_string(venv.join("pyvenv.cfg")) {
            // A venv that also sees the system's packages: left to pip itself.
            if config.lines().any(|line| {
                let line = line.replace(' ', "");
                line.eq_ignore_ascii_case("include-system-site-packages=true")
            }) {
                return None;
            }
            package_dirs.extend(site_packages(&venv, version));
            return Some(Self {
                prefix: venv,
                package_dirs,
            });
        }
        // The user's site directory comes first on `sys.path` outside a venv.
        let home = PathBuf::from(lookup("HOME")?);
        package_dirs.extend(site_packages(&home.join(".local"), version));
        package_dirs.extend(site_packages(&base.join("local"), version));
        package_dirs.extend(site_packages(&base, version));
        Some(Self {
            prefix: base,
            package_dirs,
        })
    }

    /// pip's package directory: exactly one copy on the interpreter's path.
    fn pip(&self) -> Option<PathBuf> {
        let mut copies = self
            .package_dirs
            .iter()
            .map(|dir| dir.join("pip"))
            .filter(|pip| pip.join("__init__.py").is_file());
        let pip = copies.next()?;
        copies.next().is_none().then_some(pip)
    }
}

/// `lib/python3.X/site-packages`, `lib/python3/dist-packages` and the like under `root`.
fn site_packages(root: &Path, version: Option<&str>) -> Vec<PathBuf> {
    let Ok(entries) = fs_err::read_dir(root.join("lib")) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|dir| {
            let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name == "python3"
                || version.map_or(name.starts_with("python3"), |v| {
                    name == format!("python{v}")
                })
        })
        .flat_map(|dir| [dir.join("site-packages"), dir.join("dist-packages")])
        .filter(|dir| dir.is_dir())
        .collect();
    found.sort();
    found
}

/// The interpreter a pyenv shim runs: `None` unless `path` is one and the version is
/// installed.
fn follow_pyenv(path: &Path, lookup: Lookup<'_>) -> Option<PathBuf> {
    let root = PathBuf::from(lookup("PYENV_ROOT")?);
    if path.parent()? != root.join("shims") {
        return None;
    }
    let version = match lookup("PYENV_VERSION").filter(|v| !v.is_empty()) {
        Some(version) => version,
        None => {
            let cwd = std::env::current_dir().ok()?;
            let file = cwd
                .ancestors()
                .map(|dir| dir.join(".python-version"))
                .find(|file| file.is_file())
                .unwrap_or_else(|| root.join("version"));
            fs_err::read_to_string(file).ok()?
        }
    };
    let mut words = version.split_whitespace();
    let first = words.next()?;
    if words.next().is_some() || first.contains(':') || first == "system" {
        return None;
    }
    let interpreter = root
        .join("versions")
        .join(first)
        .join("bin")
        .join(path.file_name()?);
    interpreter.is_file().then_some(interpreter)
}

fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    fs_err::File::open(path)
        .and_then(|mut file| file.read_exact(&mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

/// The files pip loads for `pip install`, weakest first; `None` without a home.
fn config_files(prefix: &Path, lookup: Lookup<'_>, etc: &Path) -> Option<Vec<PathBuf>> {
    let home = PathBuf::from(lookup("HOME")?);
    let dirs = lookup("XDG_CONFIG_DIRS")
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| etc.join("xdg").display().to_string());
    let mut files: Vec<PathBuf> = std::env::split_paths(&dirs)
        .map(|dir| dir.join("pip").join("pip.conf"))
        .collect();
    files.push(etc.join("pip.conf"));
    files.push(home.join(".pip").join("pip.conf"));
    let config_home = lookup("XDG_CONFIG_HOME")
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .map_or_else(|| home.join(".config"), PathBuf::from);
    files.push(config_home.join("pip").join("pip.conf"));
    files.push(prefix.join("pip.conf"));
    Some(files)
}

/// Each index URL a configuration file sets, as (rank in [`KEYS`], URL), in file order;
/// `None` for anything `configparser` might read otherwise than this does.
fn index_urls(text: &str) -> Option<Vec<(usize, String)>> {
    let mut found = Vec::new();
    let mut section: Option<&str> = None;
    let mut last_key: Option<usize> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            // A continuation line: harmless unless it extends an index URL.
            if last_key.is_some() {
                return None;
            }
            continue;
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            if name == "DEFAULT" {
                return None;
            }
            section = Some(name);
            last_key = None;
            continue;
        }
        let split = trimmed.find(['=', ':'])?;
        let key = trimmed[..split].trim().to_lowercase().replace('_', "-");
        let value = trimmed[split + 1..].trim();
        last_key = KEYS
            .iter()
            .position(|(s, k)| Some(*s) == section && *k == key);
        if let Some(rank) = last_key {
            if value.is_empty() || value.contains(['$', '%', ' ', '\t']) {
                return None;
            }
            found.push((rank, value.to_string()));
        }
    }
    Some(found)
}

/// `urljoin(PyPI.url, "simple")` from the source of `pip/_internal/models/index.py`.
fn builtin_simple_url(source: &str) -> Option<String> {
    let start = source.find("PyPI = PackageIndex(")? + "PyPI = PackageIndex(".len();
    let rest = source[start..].trim_start();
    let rest = rest.strip_prefix("url=").unwrap_or(rest);
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let url = &rest[1..rest[1..].find(quote)? + 1];
    let parsed = url::Url::parse(url).ok()?;
    if !url.ends_with('/') || parsed.query().is_some() {
        return None;
    }
    Some(format!("{url}simple"))
}

#[cfg(test)]
#[path = "pip_files_tests.rs"]
mod tests;
