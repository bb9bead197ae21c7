//! `upgrade export` round trip (issue 20): a lock resolved live from two fixture
//! indexes on 127.0.0.1 (`tests/support`; one explicit, serving a `+cu130` build) is
//! exported as a requirements file and as `pylock.toml`, then installed for real into
//! throwaway virtual environments — by pip in hash-checking mode and by uv (from the
//! Python index, installed by `scripts/tool-venv` under the target directory) — and the
//! installed versions must equal the lock's.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

#[expect(
    dead_code,
    reason = "the shared fixtures serve the index client's tests too"
)]
mod support;

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::cli::upgrade_ok;
use support::{Route, Server, Wheel, json_page, wheel, wheel_with_tag};

/// `default` at `/simple/`: `app 1.0` (needs `lib`), `lib 1.0` and `2.0` (also as an
/// aarch64 wheel no interpreter here installs), and a default build `torchlike 2.9.1`; `cu130` at `/cu130/simple/`: `torchlike
/// 2.9.1+cu130`, which the manifest pins.
fn fixture() -> Server {
    let server = Server::start();
    let project = |prefix: &str, name: &str, wheels: &[Wheel]| {
        for built in wheels {
            // pip asks for `+` as `%2B`, uv as it is.
            for path in [built.filename.clone(), built.filename.replace('+', "%2B")] {
                server.route(
                    &format!("{prefix}/files/{path}"),
                    Route::file(built.bytes.clone()),
                );
                server.route(
                    &format!("{prefix}/files/{path}.metadata"),
                    Route::ok("application/octet-stream", built.metadata.clone()),
                );
            }
        }
        let listed: Vec<(&Wheel, Option<&str>, bool)> =
            wheels.iter().map(|built| (built, None, true)).collect();
        server.route(
            &format!("{prefix}/simple/{name}/"),
            Route::ok(
                "application/vnd.pypi.simple.v1+json",
                json_page(name, &listed),
            ),
        );
    };
    project(
        "",
        "app",
        &[wheel("app", "1.0", &["lib"], Some(">=3.8"), &[], 64)],
    );
    project(
        "",
        "lib",
        &[
            wheel("lib", "1.0", &[], None, &[], 64),
            wheel("lib", "2.0", &[], None, &[], 64),
            wheel_with_tag(
                "lib",
                "2.0",
                "cp312-cp312-manylinux_2_28_aarch64",
                &[],
                None,
                &[],
                64,
            ),
        ],
    );
    project(
        "",
        "torchlike",
        &[wheel("torchlike", "2.9.1", &[], None, &[], 64)],
    );
    project(
        "/cu130",
        "torchlike",
        &[wheel("torchlike", "2.9.1+cu130", &[], None, &[], 64)],
    );
    server
}

/// The interpreter the virtual environments are made from, and its `major.minor`.
fn host_python() -> (String, String) {
    let output = Command::new("python3")
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output()
        .unwrap();
    assert!(output.status.success());
    (
        "python3".to_string(),
        String::from_utf8(output.stdout).unwrap().trim().to_string(),
    )
}

/// A command with none of the host's pip or uv configuration.
fn isolated(program: impl AsRef<std::ffi::OsStr>, cache: &Path) -> Command {
    let mut command = Command::new(program);
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().to_string();
        if name.starts_with("PIP_") || name.starts_with("UV_") {
            command.env_remove(name);
        }
    }
    command
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env("UV_NO_CONFIG", "1")
        .env("UV_CACHE_DIR", cache)
        .env("UV_PYTHON_DOWNLOADS", "never");
    command
}

fn run(command: &mut Command) {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Name → version of every distribution in the environment of `python`, without the
/// environment's own tools.
fn installed(python: &Path) -> BTreeMap<String, String> {
    let output = Command::new(python)
        .args([
            "-c",
            "import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))",
        ])
        .output()
        .unwrap();
    assert!(output.status.success());
    let all: BTreeMap<String, String> = serde_json::from_slice(&output.stdout).unwrap();
    all.into_iter()
        .filter(|(name, _)| !matches!(name.as_str(), "pip" | "setuptools" | "wheel"))
        .collect()
}

fn venv(dir: &Path, name: &str) -> PathBuf {
    let (python, _) = host_python();
    let path = dir.join(name);
    run(Command::new(python).args(["-m", "venv"]).arg(&path));
    path.join("bin/python")
}

#[test]
fn exported_locks_install_the_locked_versions_with_pip_and_uv() {
    let server = fixture();
    let dir = tempfile::tempdir().unwrap();
    let (_, version) = host_python();
    let manifest = dir.path().join("stack.yaml");
    std::fs::write(
        &manifest,
        format!(
            "schema: 1\nname: export-stack\ntarget:\n  python: /opt/env/bin/python3\n  python_version: \"{version}\"\n  glibc: \"2.35\"\n  driver: \"580.82.07\"\nindexes:\n  - {{ name: cu130, url: \"{}\", explicit: true }}\n  - {{ name: default, url: \"{}\" }}\npackages:\n  app: \">=1\"\n  torchlike: {{ version: \"==2.9.1+cu130\", index: cu130 }}\n",
            server.url("/cu130/simple/"),
            server.url("/simple/"),
        ),
    )
    .unwrap();
    let manifest = manifest.to_str().unwrap();
    let lock = dir.path().join("lock.json");
    let cache = dir.path().join("cache");
    upgrade_ok(&[
        "lock",
        manifest,
        "--live",
        "--cache-dir",
        cache.to_str().unwrap(),
        "--format",
        "json",
        "-o",
        lock.to_str().unwrap(),
    ]);
    let locked: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&lock).unwrap()).unwrap();
    let expected: BTreeMap<String, String> = locked["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|package| {
            (
                package["name"].as_str().unwrap().to_string(),
                package["version"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        expected,
        BTreeMap::from([
            ("app".to_string(), "1.0".to_string()),
            ("lib".to_string(), "2.0".to_string()),
            ("torchlike".to_string(), "2.9.1+cu130".to_string()),
        ])
    );

    // pip, hash-checking mode, every dependency pinned (no `--no-deps`).
    let requirements = dir.path().join("requirements.txt");
    upgrade_ok(&[
        "export",
        lock.to_str().unwrap(),
        "--manifest",
        manifest,
        "--format",
        "requirements-txt",
        "-o",
        requirements.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&requirements).unwrap();
    assert!(
        text.contains(&format!("--index-url {}\n", server.url("/simple/")))
            && text.contains(&format!(
                "--extra-index-url {}\n",
                server.url("/cu130/simple/")
            ))
            && text.contains("torchlike==2.9.1+cu130 \\\n    --hash=sha256:"),
        "{text}"
    );
    let pip_env = venv(dir.path(), "pip-env");
    run(isolated(&pip_env, &cache)
        .args([
            "-m",
            "pip",
            "install",
            "--no-cache-dir",
            "--require-hashes",
            "-r",
        ])
        .arg(&requirements));
    assert_eq!(installed(&pip_env), expected, "pip: {text}");

    // `--all-files`: the aarch64 wheel's hash too, for pip on such a node.
    let all = upgrade_ok(&[
        "export",
        lock.to_str().unwrap(),
        "--manifest",
        manifest,
        "--format",
        "requirements-txt",
        "--all-files",
        "--no-cache",
    ]);
    let all = String::from_utf8(all.stdout).unwrap();
    assert!(
        all.contains("lib==2.0 \\\n    --hash=sha256:")
            && all
                .lines()
                .skip_while(|line| !line.starts_with("lib==2.0"))
                .take_while(|line| line.starts_with("lib==") || line.starts_with("    --hash"))
                .count()
                == 3,
        "{all}"
    );

    // uv, from PEP 751's pylock.toml: the lock's files, then every file of each release.
    let uv = common::cli::uv();
    for (name, extra) in [
        ("pylock.toml", None),
        ("pylock.all.toml", Some("--all-files")),
    ] {
        let pylock = dir.path().join(name);
        let mut args = vec![
            "export",
            lock.to_str().unwrap(),
            "--manifest",
            manifest,
            "--format",
            "pylock",
            "--no-cache",
            "-o",
            pylock.to_str().unwrap(),
        ];
        args.extend(extra);
        upgrade_ok(&args);
        let toml = std::fs::read_to_string(&pylock).unwrap();
        assert_eq!(
            toml.matches("manylinux_2_28_aarch64").count(),
            usize::from(extra.is_some()) * 2,
            "{toml}"
        );
        let uv_env = venv(dir.path(), &format!("uv-env-{name}"));
        run(isolated(&uv, &dir.path().join("uv-cache"))
            .args(["pip", "install", "--python"])
            .arg(&uv_env)
            .arg("-r")
            .arg(&pylock));
        assert_eq!(installed(&uv_env), expected, "uv: {toml}");
    }
}
