//! Live resolution through the binary against a real HTTP index on 127.0.0.1
//! (`tests/support`): the lock, only the visited releases' metadata fetched, a second
//! run served from the cache (`304` pages, no metadata request), and `index snapshot
//! --live` recording exactly what resolves offline to the same lock.
//!
//! See: issue 12 (resolver reach), live lazy resolution.
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

use std::path::Path;
use std::process::Output;

use common::cli::upgrade_ok;
use cuda_upgrade::index::Snapshot;
use support::{Route, Server, Wheel, json_page, sdist, serve_wheel, wheel};

/// The fixture index at `/simple/`, every project a PEP 691 page with an `ETag` and
/// every wheel with a PEP 658 file:
/// - `app 1.0` needs `lib` and `many>=1` (in that order: `lib` is met first, so decided
///   first, as uv decides);
/// - `many` has 20 releases, `1.0` … `20.0`, the newest is what the resolver tries;
/// - `lib` has `1.0` and `2.0`;
/// - `unused` is never asked for.
///
/// With `capped`, `lib 2.0` needs `many<20`: `many 20.0` is read ahead (the newest that
/// `app` allows) but the resolver, deciding `lib` first (met first), never tries it.
fn fixture_with(capped: bool) -> Server {
    let server = Server::start();
    let project = |name: &str, wheels: &[Wheel]| serve_project(&server, name, wheels);
    project(
        "app",
        &[wheel(
            "app",
            "1.0",
            &["lib", "many>=1"],
            Some(">=3.9"),
            &[],
            64,
        )],
    );
    let many: Vec<Wheel> = (1..=20)
        .map(|major| wheel("many", &format!("{major}.0"), &[], None, &[], 64))
        .collect();
    project("many", &many);
    project(
        "lib",
        &[
            wheel("lib", "1.0", &[], None, &[], 64),
            wheel(
                "lib",
                "2.0",
                if capped { &["many<20"] } else { &[] },
                None,
                &[],
                64,
            ),
        ],
    );
    project("unused", &[wheel("unused", "1.0", &[], None, &[], 64)]);
    server
}

/// Serve `wheels` (each with a PEP 658 file) and the PEP 691 page of `name` listing
/// them, with an `ETag`.
fn serve_project(server: &Server, name: &str, wheels: &[Wheel]) {
    for built in wheels {
        serve_wheel(server, built, true);
    }
    let listed: Vec<(&Wheel, Option<&str>, bool)> =
        wheels.iter().map(|built| (built, None, true)).collect();
    server.route(
        &format!("/simple/{name}/"),
        Route {
            etag: Some(format!("\"{name}-1\"")),
            ..Route::ok(
                "application/vnd.pypi.simple.v1+json",
                json_page(name, &listed),
            )
        },
    );
}

fn fixture() -> Server {
    fixture_with(false)
}

fn manifest(dir: &Path, server: &Server) -> String {
    let path = dir.join("stack.yaml");
    std::fs::write(
        &path,
        format!(
            "schema: 1\nname: live-stack\ntarget:\n  python: /opt/env/bin/python3\n  python_version: \"3.12\"\n  glibc: \"2.35\"\nindexes:\n  - {{ name: default, url: \"{}\" }}\npackages:\n  app: \">=1\"\n",
            server.url("/simple/")
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

/// `upgrade lock --live` of [`manifest`] in `dir`, with a fresh cache there, as JSON.
fn lock_live(dir: &Path, server: &Server) -> Output {
    let manifest = manifest(dir, server);
    let cache = dir.join("cache").display().to_string();
    upgrade_ok(&[
        "lock",
        &manifest,
        "--live",
        "--cache-dir",
        &cache,
        "--format",
        "json",
    ])
}

/// `name==version` of every locked package, in the lock's order.
fn pins(output: &Output) -> Vec<String> {
    let lock: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    lock["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|package| format!("{}=={}", package["name"], package["version"]).replace('"', ""))
        .collect()
}

fn metadata_requests(server: &Server) -> Vec<String> {
    let mut paths: Vec<String> = server
        .log()
        .into_iter()
        .map(|logged| logged.path)
        .filter(|path| path.ends_with(".metadata"))
        .collect();
    paths.sort();
    paths
}

#[test]
fn live_lock_fetches_only_what_the_resolution_visits() {
    let server = fixture();
    let dir = tempfile::tempdir().unwrap();
    let manifest = manifest(dir.path(), &server);
    let cache = dir.path().join("cache");
    let cache = cache.to_str().unwrap();
    let lock_args = [
        "lock",
        &manifest,
        "--live",
        "--cache-dir",
        cache,
        "--format",
        "json",
    ];

    let first = upgrade_ok(&lock_args);
    assert_eq!(pins(&first), ["app==1.0", "lib==2.0", "many==20.0"]);
    assert_eq!(
        metadata_requests(&server),
        [
            "/files/app-1.0-py3-none-any.whl.metadata",
            "/files/lib-2.0-py3-none-any.whl.metadata",
            "/files/many-20.0-py3-none-any.whl.metadata",
        ],
        "one metadata file per release the resolver tried, of 23 listed"
    );
    let log = server.log();
    assert!(
        log.iter()
            .all(|logged| !logged.path.ends_with(".whl") && logged.path != "/simple/unused/"),
        "no wheel is downloaded and no project outside the resolution is looked up: {log:?}"
    );
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(
        stderr.contains("resolved live: 3 projects looked up, 3 releases read, 3 visited"),
        "{stderr}"
    );

    // The second run revalidates each page (`304`) and reads every metadata file from
    // the cache.
    server.clear_log();
    let second = upgrade_ok(&lock_args);
    assert_eq!(pins(&second), pins(&first));
    assert!(metadata_requests(&server).is_empty(), "{:?}", server.log());
    let pages: Vec<(String, u16)> = server
        .log()
        .into_iter()
        .map(|logged| (logged.path, logged.status))
        .collect();
    assert_eq!(pages.len(), 3, "{pages:?}");
    assert!(
        pages
            .iter()
            .all(|(path, status)| path.starts_with("/simple/") && *status == 304),
        "{pages:?}"
    );
}

#[test]
fn live_snapshot_records_what_resolves_offline_to_the_same_lock() {
    let server = fixture();
    let dir = tempfile::tempdir().unwrap();
    let manifest = manifest(dir.path(), &server);
    let cache = dir.path().join("cache");
    let cache = cache.to_str().unwrap();
    let snapshot_file = dir.path().join("snapshot.json");
    let snapshot_file = snapshot_file.to_str().unwrap();

    let output = live_snapshot(&manifest, snapshot_file, cache);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("index `default` at http://127.0.0.1:")
            && stdout.contains(": 3 packages, 3 releases")
            && stdout.contains("3 projects looked up, 3 releases fetched"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(snapshot_file).unwrap();
    assert!(!text.contains("http"), "a snapshot holds no URL");
    let snapshot = Snapshot::parse(&text, "snapshot.json").unwrap();
    assert!(snapshot.how.ends_with("--live"), "{}", snapshot.how);
    assert_eq!(recorded(&snapshot), ["app==1.0", "lib==2.0", "many==20.0"]);

    let (live, offline) = lock_live_then_offline(&server, &manifest, snapshot_file, cache);
    assert!(server.log().is_empty(), "offline asks nothing");
    assert_eq!(offline.stdout, live.stdout);
}

/// `upgrade index snapshot MANIFEST --live -o FILE --cache-dir CACHE`.
fn live_snapshot(manifest: &str, file: &str, cache: &str) -> Output {
    upgrade_ok(&[
        "index",
        "snapshot",
        manifest,
        "--live",
        "-o",
        file,
        "--cache-dir",
        cache,
    ])
}

/// `upgrade lock MANIFEST --live`, then (`server`'s log cleared) `lock` from the
/// snapshot `file`, both as JSON.
fn lock_live_then_offline(
    server: &Server,
    manifest: &str,
    file: &str,
    cache: &str,
) -> (Output, Output) {
    let live = upgrade_ok(&[
        "lock",
        manifest,
        "--live",
        "--cache-dir",
        cache,
        "--format",
        "json",
    ]);
    server.clear_log();
    let offline = upgrade_ok(&["lock", manifest, "--snapshot", file, "--format", "json"]);
    (live, offline)
}

/// `name==version` of every release a snapshot records.
fn recorded(snapshot: &Snapshot) -> Vec<String> {
    snapshot
        .universe
        .index("default")
        .unwrap()
        .packages
        .iter()
        .flat_map(|(name, releases)| {
            releases
                .iter()
                .map(move |release| format!("{name}=={}", release.version))
        })
        .collect()
}

#[test]
fn a_release_only_read_ahead_is_not_recorded() {
    let server = fixture_with(true);
    let dir = tempfile::tempdir().unwrap();
    let manifest = manifest(dir.path(), &server);
    let cache = dir.path().join("cache");
    let cache = cache.to_str().unwrap();
    let snapshot_file = dir.path().join("snapshot.json");
    let snapshot_file = snapshot_file.to_str().unwrap();

    live_snapshot(&manifest, snapshot_file, cache);
    let text = std::fs::read_to_string(snapshot_file).unwrap();
    let snapshot = Snapshot::parse(&text, "snapshot.json").unwrap();
    assert_eq!(recorded(&snapshot), ["app==1.0", "lib==2.0", "many==19.0"]);
    let (live, offline) = lock_live_then_offline(&server, &manifest, snapshot_file, cache);
    assert_eq!(pins(&live), ["app==1.0", "lib==2.0", "many==19.0"]);
    assert_eq!(offline.stdout, live.stdout);
}

/// The read-ahead follows the extras a requirement asks for: `app 1.0` needs
/// `kit[gpu]`, and `kit 1.0` needs `kernel` only under its `gpu` extra. The first run
/// misses `app`'s page; everything else arrives ahead of the second run, which
/// resolves (a read-ahead blind to extras leaves `kernel`'s page and metadata for two
/// more runs).
#[test]
fn extras_are_read_ahead() {
    let server = Server::start();
    for (name, built) in [
        ("app", wheel("app", "1.0", &["kit[gpu]"], None, &[], 64)),
        (
            "kit",
            wheel(
                "kit",
                "1.0",
                &["kernel ; extra == 'gpu'"],
                None,
                &["gpu"],
                64,
            ),
        ),
        ("kernel", wheel("kernel", "1.0", &[], None, &[], 64)),
    ] {
        serve_wheel(&server, &built, true);
        server.route(
            &format!("/simple/{name}/"),
            Route::ok(
                "application/vnd.pypi.simple.v1+json",
                json_page(name, &[(&built, None, true)]),
            ),
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let output = lock_live(dir.path(), &server);
    assert_eq!(pins(&output), ["app==1.0", "kernel==1.0", "kit==1.0"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("3 projects looked up, 3 releases read, 3 visited, 2 runs"),
        "{stderr}"
    );
}

/// A package walked down is decided earlier, not read to its oldest release: `app 1.0`
/// needs `num` and `top[gpu]`; `num` (two releases) is decided first, at `2.0`; each of
/// the twelve `top` releases needs `accel` under `gpu`, and `accel 1.0` needs `num<2`.
/// PubGrub blames the latest decision, `top[gpu]`, and tries its releases one by one,
/// each one's metadata fetched (on a real index, old sdist-only releases are builds).
/// After a few, `top[gpu]` is decided before `num` instead, and the lock has
/// `top 12.0` with `num 1.0` without the metadata of the oldest `top` releases.
#[test]
fn a_package_walked_down_is_decided_earlier_not_read_to_the_bottom() {
    let server = Server::start();
    let mut projects: Vec<(&str, Vec<Wheel>)> = vec![
        (
            "app",
            vec![wheel("app", "1.0", &["num", "top[gpu]"], None, &[], 64)],
        ),
        (
            "num",
            vec![
                wheel("num", "1.0", &[], None, &[], 64),
                wheel("num", "2.0", &[], None, &[], 64),
            ],
        ),
        (
            "accel",
            vec![wheel("accel", "1.0", &["num<2"], None, &[], 64)],
        ),
    ];
    let top: Vec<Wheel> = (1..=12)
        .map(|major| {
            wheel(
                "top",
                &format!("{major}.0"),
                &["accel ; extra == 'gpu'"],
                None,
                &["gpu"],
                64,
            )
        })
        .collect();
    projects.push(("top", top));
    for (name, wheels) in &projects {
        serve_project(&server, name, wheels);
    }
    let dir = tempfile::tempdir().unwrap();
    let output = lock_live(dir.path(), &server);
    assert_eq!(
        pins(&output),
        ["accel==1.0", "app==1.0", "num==1.0", "top==12.0"]
    );
    let top_read: Vec<String> = metadata_requests(&server)
        .into_iter()
        .filter(|path| path.starts_with("/files/top-"))
        .collect();
    assert!(
        top_read.len() < 12
            && !top_read.contains(&"/files/top-1.0-py3-none-any.whl.metadata".to_string()),
        "{top_read:?}"
    );
}

/// A PEP 517 backend whose metadata preparation fails as an old `setup.py` does on a
/// setuptools without `pkg_resources`.
const FAILING_BACKEND: &str = r#"def get_requires_for_build_wheel(config_settings=None):
    return []

def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    raise ModuleNotFoundError("No module named 'pkg_resources'")

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise ModuleNotFoundError("No module named 'pkg_resources'")
"#;

/// The `.tar.gz` sdist of `name version` (`Metadata-Version` 2.1, so not static) whose
/// metadata build fails through [`FAILING_BACKEND`]; `project` is appended to its
/// `pyproject.toml`, e.g. a static `[project]` table.
fn unbuildable_sdist(name: &str, version: &str, project: &str) -> Vec<u8> {
    let top = format!("{name}-{version}");
    sdist(&[
        (
            &format!("{top}/PKG-INFO"),
            &format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
        ),
        (
            &format!("{top}/pyproject.toml"),
            &format!(
                "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n{project}"
            ),
        ),
        (&format!("{top}/backend.py"), FAILING_BACKEND),
    ])
}

/// A release the resolution needs whose sdist's metadata build fails stops the
/// resolution, naming the build's error, as uv and pip stop: it is not walked past to
/// an older release (`mmcv` 2.2.0 failed so, and the walk took 260 s down to `mmcv`
/// 0.2.8 of 2019).
#[test]
fn a_needed_release_whose_metadata_build_fails_stops_the_resolution() {
    let server = Server::start();
    serve_project(
        &server,
        "app",
        &[wheel("app", "1.0", &["broken"], None, &[], 64)],
    );
    let old = wheel("broken", "1.0", &[], None, &[], 64);
    serve_wheel(&server, &old, true);
    server.route(
        "/files/broken-2.0.tar.gz",
        Route::file(unbuildable_sdist("broken", "2.0", "")),
    );
    server.route(
        "/simple/broken/",
        Route::ok(
            "text/html",
            format!(
                "<a href=\"/files/{0}\">{0}</a>\n<a href=\"/files/broken-2.0.tar.gz\">broken-2.0.tar.gz</a>\n",
                old.filename
            ),
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let manifest = manifest(dir.path(), &server);
    let cache = dir.path().join("cache").display().to_string();
    let output = common::cli::upgrade(&["lock", &manifest, "--live", "--cache-dir", &cache]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("`broken 2.0`, which offers only an sdist")
            && stderr.contains("ModuleNotFoundError: No module named 'pkg_resources'"),
        "{stderr}"
    );
}

/// `native 2.0` has a wheel only for CPython 3.11 (its metadata offered as a PEP 658
/// file) and an sdist whose build fails. On CPython 3.12 the sdist is what installs, and
/// its dependencies are read from the 3.11 wheel's metadata, as uv reads them: no build.
#[test]
fn a_release_installed_from_its_sdist_is_read_from_a_wheel_for_another_python() {
    let server = Server::start();
    serve_project(
        &server,
        "app",
        &[wheel("app", "1.0", &["native"], None, &[], 64)],
    );
    serve_project(&server, "dep", &[wheel("dep", "1.0", &[], None, &[], 64)]);
    let other = support::wheel_with_tag(
        "native",
        "2.0",
        "cp311-cp311-manylinux_2_17_x86_64",
        &["dep>=1"],
        None,
        &[],
        64,
    );
    serve_wheel(&server, &other, true);
    server.route(
        "/files/native-2.0.tar.gz",
        Route::file(unbuildable_sdist("native", "2.0", "")),
    );
    server.route(
        "/simple/native/",
        Route::ok(
            "text/html",
            format!(
                "<a href=\"/files/{0}\" data-core-metadata=\"true\">{0}</a>\n<a href=\"/files/native-2.0.tar.gz\">native-2.0.tar.gz</a>\n",
                other.filename
            ),
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let output = lock_live(dir.path(), &server);
    assert_eq!(pins(&output), ["app==1.0", "dep==1.0", "native==2.0"]);
    let lock: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let native = lock["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|package| package["name"] == "native")
        .unwrap();
    assert!(
        native.to_string().contains("native-2.0.tar.gz") && !native.to_string().contains("cp311"),
        "the lock installs the sdist: {native}"
    );
}

/// A pin of a release that exists but has wheels only for older Pythons says so, and
/// names the newest release that has a file for the node; it never reads as a release
/// the index does not have.
#[test]
fn a_pinned_release_without_a_file_for_the_node_is_named_with_its_wheels() {
    let server = Server::start();
    let old: Vec<Wheel> = ["cp39", "cp310"]
        .iter()
        .map(|python| {
            support::wheel_with_tag(
                "old",
                "1.0",
                &format!("{python}-{python}-manylinux_2_17_x86_64"),
                &[],
                None,
                &[],
                64,
            )
        })
        .chain([wheel("old", "2.0", &[], None, &[], 64)])
        .collect();
    serve_project(&server, "old", &old);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stack.yaml");
    std::fs::write(
        &path,
        format!(
            "schema: 1\nname: pinned-old\ntarget:\n  python: /opt/env/bin/python3\n  python_version: \"3.12\"\n  glibc: \"2.35\"\nindexes:\n  - {{ name: default, url: \"{}\" }}\npackages:\n  old: \"==1.0\"\n",
            server.url("/simple/")
        ),
    )
    .unwrap();
    let cache = dir.path().join("cache").display().to_string();
    let output = common::cli::upgrade(&[
        "lock",
        path.to_str().unwrap(),
        "--live",
        "--cache-dir",
        &cache,
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("`old 1.0` is on index `default`, but none of its files installs on this node (CPython 3.12, x86_64, glibc 2.35): its wheels are for cp39, cp310 on manylinux_2_17_x86_64"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the newest release of `old` with a file for this node is 2.0"),
        "{stderr}"
    );
    assert!(!stderr.contains("no release of `old`"), "{stderr}");
}

/// `scikit 3.0` offers only an sdist whose `PKG-INFO` is Metadata 2.1 (not static under
/// PEP 643) and whose build fails, but whose `pyproject.toml` declares its dependencies
/// statically with a dynamic version: they are read from there, as uv reads them.
#[test]
fn an_sdist_with_static_pyproject_dependencies_is_read_without_a_build() {
    let server = Server::start();
    serve_project(
        &server,
        "app",
        &[wheel("app", "1.0", &["scikit"], None, &[], 64)],
    );
    serve_project(&server, "dep", &[wheel("dep", "1.0", &[], None, &[], 64)]);
    server.route(
        "/files/scikit-3.0.tar.gz",
        Route::file(unbuildable_sdist("scikit", "3.0", "\n[project]\nname = \"scikit\"\ndynamic = [\"version\"]\nrequires-python = \">=3.9\"\ndependencies = [\"dep>=1\"]\n")),
    );
    server.route(
        "/simple/scikit/",
        Route::ok(
            "text/html",
            "<a href=\"/files/scikit-3.0.tar.gz\">scikit-3.0.tar.gz</a>\n".to_string(),
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let output = lock_live(dir.path(), &server);
    assert_eq!(pins(&output), ["app==1.0", "dep==1.0", "scikit==3.0"]);
}

/// `stack 3.0[complete]` needs `stack[dist]` (itself), whose `dist==3.0` does not exist;
/// `stack 1.0` offers only an sdist whose build fails. A release's requirement on its own
/// project means that release, as uv and pip read it: `stack 2.0` is chosen, and no
/// older `stack` is tried for the extra (which would stop on the build of `stack 1.0`).
#[test]
fn a_release_requiring_its_own_extras_means_itself() {
    let server = Server::start();
    let stack = |version: &str| {
        wheel(
            "stack",
            version,
            &[
                "stack[dist]; extra == \"complete\"",
                &format!("dist=={version}; extra == \"dist\""),
            ],
            None,
            &["complete", "dist"],
            64,
        )
    };
    let (two, three) = (stack("2.0"), stack("3.0"));
    serve_wheel(&server, &two, true);
    serve_wheel(&server, &three, true);
    server.route(
        "/files/stack-1.0.tar.gz",
        Route::file(unbuildable_sdist("stack", "1.0", "")),
    );
    server.route(
        "/simple/stack/",
        Route::ok(
            "text/html",
            format!(
                "<a href=\"/files/stack-1.0.tar.gz\">stack-1.0.tar.gz</a>\n<a href=\"/files/{0}\" data-core-metadata=\"true\">{0}</a>\n<a href=\"/files/{1}\" data-core-metadata=\"true\">{1}</a>\n",
                two.filename, three.filename
            ),
        ),
    );
    serve_project(&server, "dist", &[wheel("dist", "2.0", &[], None, &[], 64)]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stack.yaml");
    std::fs::write(
        &path,
        format!(
            "schema: 1\nname: self-extras\ntarget:\n  python: /opt/env/bin/python3\n  python_version: \"3.12\"\n  glibc: \"2.35\"\nindexes:\n  - {{ name: default, url: \"{}\" }}\npackages:\n  stack: {{ extras: [complete] }}\n",
            server.url("/simple/")
        ),
    )
    .unwrap();
    let cache = dir.path().join("cache").display().to_string();
    let output = upgrade_ok(&[
        "lock",
        path.to_str().unwrap(),
        "--live",
        "--cache-dir",
        &cache,
        "--format",
        "json",
    ]);
    assert_eq!(pins(&output), ["dist==2.0", "stack==2.0"]);
}
