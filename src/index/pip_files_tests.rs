//! Tests of reading pip's default index from pip's files, on fake installs in temp dirs.

use super::*;
use std::collections::HashMap;

/// A fake prefix with an interpreter (`bin/python3.12`, ELF magic only) and pip whose
/// built-in index is `builtin`; returns the interpreter's path.
fn install(prefix: &Path, builtin: &str) -> PathBuf {
    let bin = prefix.join("bin");
    fs_err::create_dir_all(&bin).unwrap();
    let python = bin.join("python3.12");
    fs_err::write(&python, b"\x7fELF fake interpreter").unwrap();
    let models = prefix.join("lib/python3.12/site-packages/pip/_internal/models");
    fs_err::create_dir_all(&models).unwrap();
    fs_err::write(
        prefix.join("lib/python3.12/site-packages/pip/__init__.py"),
        "",
    )
    .unwrap();
    fs_err::write(
        models.join("index.py"),
        format!(
            "class PackageIndex:\n    pass\n\n\nPyPI = PackageIndex(\"{builtin}\", file_storage_domain=\"files.example\")\n"
        ),
    )
    .unwrap();
    python
}

fn read(python: &Path, vars: &HashMap<&str, String>) -> Option<DefaultIndex> {
    let lookup = |name: &str| vars.get(name).cloned();
    let etc = vars
        .get("(etc)")
        .map_or_else(|| PathBuf::from("/nonexistent-etc"), PathBuf::from);
    read_default(python, &lookup, &etc)
}

#[test]
fn pips_builtin_default_is_read_from_its_source() {
    let root = tempfile::tempdir().unwrap();
    let python = install(&root.path().join("usr"), "http://127.0.0.1:9/");
    let home = root.path().join("home");
    let vars = HashMap::from([
        ("HOME", home.display().to_string()),
        (
            "XDG_CONFIG_DIRS",
            root.path().join("xdg").display().to_string(),
        ),
    ]);
    let found = read(&python, &vars).unwrap();
    assert_eq!(found.url, "http://127.0.0.1:9/simple");
    assert_eq!(found.source, DefaultIndexSource::PipDefault);

    // Named on PATH, as `python3.12`.
    let mut on_path = vars.clone();
    on_path.insert("PATH", root.path().join("usr/bin").display().to_string());
    assert_eq!(
        read(Path::new("python3.12"), &on_path).unwrap().url,
        "http://127.0.0.1:9/simple"
    );

    // A second pip in the user's site directory could shadow it: pip is asked instead.
    install(&home.join(".local"), "http://127.0.0.1:10/");
    assert_eq!(read(&python, &vars), None);
}

#[test]
fn configuration_files_win_in_pips_order() {
    let root = tempfile::tempdir().unwrap();
    let prefix = root.path().join("usr");
    let python = install(&prefix, "http://127.0.0.1:9/");
    let home = root.path().join("home");
    let xdg = root.path().join("xdg");
    let vars = HashMap::from([
        ("HOME", home.display().to_string()),
        ("XDG_CONFIG_DIRS", xdg.display().to_string()),
    ]);
    let write = |path: PathBuf, text: &str| {
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    };
    write(
        xdg.join("pip/pip.conf"),
        "# global\n[global]\nindex_url = http://127.0.0.1:1/simple\ntimeout = 60\n",
    );
    let found = read(&python, &vars).unwrap();
    assert_eq!(found.url, "http://127.0.0.1:1/simple");
    assert_eq!(
        found.source,
        DefaultIndexSource::PipConfig("global.index-url".to_string())
    );

    // The user's file beats the global one; `install` beats `global` from any file.
    write(
        home.join(".config/pip/pip.conf"),
        "[global]\nindex-url: http://127.0.0.1:2/simple\n",
    );
    assert_eq!(
        read(&python, &vars).unwrap().url,
        "http://127.0.0.1:2/simple"
    );
    write(
        home.join(".pip/pip.conf"),
        "[install]\nindex-url = http://127.0.0.1:3/simple\n",
    );
    let found = read(&python, &vars).unwrap();
    assert_eq!(found.url, "http://127.0.0.1:3/simple");
    assert_eq!(
        found.source,
        DefaultIndexSource::PipConfig("install.index-url".to_string())
    );

    // The site file (`sys.prefix/pip.conf`) is read last.
    write(
        prefix.join("pip.conf"),
        "[install]\nindex-url = http://127.0.0.1:4/simple\n",
    );
    assert_eq!(
        read(&python, &vars).unwrap().url,
        "http://127.0.0.1:4/simple"
    );

    // What only pip can read exactly is left to pip.
    write(
        prefix.join("pip.conf"),
        "[install]\nindex-url =\n  http://127.0.0.1:4/simple\n",
    );
    assert_eq!(read(&python, &vars), None);
    write(
        prefix.join("pip.conf"),
        "[DEFAULT]\nindex-url = http://127.0.0.1:4/simple\n",
    );
    assert_eq!(read(&python, &vars), None);
    write(
        prefix.join("pip.conf"),
        "[install]\nindex-url = http://${HOST}/simple\n",
    );
    assert_eq!(read(&python, &vars), None);
    write(prefix.join("pip.conf"), "[install]\nno-cache-dir = true\n");
    assert_eq!(
        read(&python, &vars).unwrap().url,
        "http://127.0.0.1:3/simple"
    );
    let mut with_file = vars.clone();
    with_file.insert(
        "PIP_CONFIG_FILE",
        root.path().join("other.conf").display().to_string(),
    );
    assert_eq!(read(&python, &with_file), None);
}

#[test]
fn a_virtual_environment_is_its_own_prefix() {
    let root = tempfile::tempdir().unwrap();
    let base = install(&root.path().join("usr"), "http://127.0.0.1:9/");
    let venv = root.path().join("venv");
    install(&venv, "http://127.0.0.1:11/");
    let python = venv.join("bin/python3");
    fs_err::remove_file(venv.join("bin/python3.12")).unwrap();
    std::os::unix::fs::symlink(&base, &python).unwrap();
    fs_err::write(
        venv.join("pyvenv.cfg"),
        "include-system-site-packages = false\n",
    )
    .unwrap();
    fs_err::write(
        venv.join("pip.conf"),
        "[global]\nindex-url = http://127.0.0.1:12/simple\n",
    )
    .unwrap();
    let vars = HashMap::from([("HOME", root.path().join("home").display().to_string())]);
    assert_eq!(
        read(&python, &vars).unwrap().url,
        "http://127.0.0.1:12/simple"
    );
    fs_err::remove_file(venv.join("pip.conf")).unwrap();
    assert_eq!(
        read(&python, &vars).unwrap().url,
        "http://127.0.0.1:11/simple"
    );
    fs_err::write(
        venv.join("pyvenv.cfg"),
        "include-system-site-packages = true\n",
    )
    .unwrap();
    assert_eq!(read(&python, &vars), None);
}

#[test]
fn a_pyenv_shim_is_followed_to_its_version() {
    let root = tempfile::tempdir().unwrap();
    let pyenv = root.path().join("pyenv");
    install(&pyenv.join("versions/3.12.1"), "http://127.0.0.1:13/");
    fs_err::create_dir_all(pyenv.join("shims")).unwrap();
    let shim = pyenv.join("shims/python3.12");
    fs_err::write(&shim, "#!/usr/bin/env bash\nexec pyenv exec \"$0\"\n").unwrap();
    let mut vars = HashMap::from([
        ("HOME", root.path().join("home").display().to_string()),
        ("PYENV_ROOT", pyenv.display().to_string()),
        ("PYENV_VERSION", "3.12.1".to_string()),
    ]);
    assert_eq!(
        read(&shim, &vars).unwrap().url,
        "http://127.0.0.1:13/simple"
    );
    vars.insert("PYENV_VERSION", "system".to_string());
    assert_eq!(read(&shim, &vars), None);
}

#[test]
fn the_builtin_constant_is_joined_as_pip_joins_it() {
    let source = "PyPI = PackageIndex(\n    'http://127.0.0.1:9/', file_storage_domain='x'\n)\n";
    assert_eq!(
        builtin_simple_url(source).as_deref(),
        Some("http://127.0.0.1:9/simple")
    );
    assert_eq!(builtin_simple_url("PyPI = PackageIndex(URL)"), None);
    assert_eq!(
        builtin_simple_url("PyPI = PackageIndex(\"http://127.0.0.1:9/a\")"),
        None
    );
}
