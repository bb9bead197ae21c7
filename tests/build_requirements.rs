//! The build requirements of a source install under `--fetch controller`, applied for
//! real through the local transport against an HTTP index on 127.0.0.1
//! (`tests/support`): the set is resolved by the project's resolver from the index,
//! wheels only, each wheel checked against the sha256 the index gives and sent to the
//! node's build directory, the apply output names the pins; a direct reference, an sdist
//! in the closure and a `pyproject.toml` that does not parse are refused, and nothing
//! of the source runs on the controller.
//!
//! See: issue 33 (every input crosses one checked boundary), case 1.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

#[expect(
    dead_code,
    reason = "the shared fixtures serve the index client's tests too"
)]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use cuda_upgrade::exec::{ApplyContext, ExecError, StepOutcome, apply_step_writing};
use cuda_upgrade::resolve::{ResolveOptions, TargetEnvironment};
use cuda_upgrade::steps::{
    Action, BuildIndex, BuildRequirements, BuildResolution, Operation, Step, StepKind,
};
use cuda_upgrade::transport::{LocalTransport, Transport};
use support::{Route, Server, Wheel, json_page, serve_wheel, wheel};

/// Serve `files` (wheels with their PEP 658 files, sdists without) and the PEP 691 page
/// of `name` listing them with their sha256.
fn serve_project(server: &Server, name: &str, files: &[Wheel]) {
    for file in files {
        serve_wheel(server, file, file.filename.ends_with(".whl"));
    }
    let listed: Vec<(&Wheel, Option<&str>, bool)> = files
        .iter()
        .map(|file| (file, None, file.filename.ends_with(".whl")))
        .collect();
    server.route(
        &format!("/simple/{name}/"),
        Route::ok(
            "application/vnd.pypi.simple.v1+json",
            json_page(name, &listed),
        ),
    );
}

/// An sdist whose in-tree build backend creates `marker` when anything prepares it.
fn evil_sdist(name: &str, version: &str, marker: &Path) -> Wheel {
    let root = format!("{name}-{version}");
    let pkg_info = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n");
    let mut files: Vec<(String, String)> = evil_source(marker)
        .into_iter()
        .map(|(path, text)| (format!("{root}/{path}"), text))
        .collect();
    files.push((format!("{root}/PKG-INFO"), pkg_info.clone()));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_str()))
        .collect();
    let bytes = support::sdist(&files);
    Wheel {
        filename: format!("{root}.tar.gz"),
        sha256: support::sha256(&bytes),
        bytes,
        metadata: pkg_info,
    }
}

/// A source tree whose build backend (in the tree, needing nothing from an index) and
/// `setup.py` create `marker`: whatever prepares it runs that code, as pip does for a
/// direct reference even with `--only-binary=:all:`.
fn evil_source(marker: &Path) -> Vec<(String, String)> {
    let create = format!(
        "open({:?}, 'w').write('ran')\n",
        marker.display().to_string()
    );
    vec![
        (
            "pyproject.toml".to_string(),
            "[build-system]\nrequires = []\nbuild-backend = \"evil_backend\"\nbackend-path = [\".\"]\n"
                .to_string(),
        ),
        ("evil_backend.py".to_string(), create.clone()),
        ("setup.py".to_string(), create),
    ]
}

/// The index of these tests: `setuptools` 69.0 and 70.0, `wheel` 0.43.0 (needs
/// `packaging>=20`), `packaging` 24.0, and `needs-legacy` 1.0, which needs `legacy`,
/// of which there is only an sdist whose build backend creates `marker`.
fn index(marker: &Path) -> (Server, BTreeMap<String, Wheel>) {
    let server = Server::start();
    let mut served = BTreeMap::new();
    let mut project = |name: &str, files: Vec<Wheel>| {
        for file in &files {
            served.insert(file.filename.clone(), file.clone());
        }
        serve_project(&server, name, &files);
    };
    project(
        "setuptools",
        vec![
            wheel("setuptools", "69.0", &[], None, &[], 64),
            wheel("setuptools", "70.0", &[], Some(">=3.8"), &[], 64),
        ],
    );
    project(
        "wheel",
        vec![wheel("wheel", "0.43.0", &["packaging>=20"], None, &[], 64)],
    );
    project(
        "packaging",
        vec![wheel("packaging", "24.0", &[], None, &[], 64)],
    );
    project(
        "needs-legacy",
        vec![wheel("needs-legacy", "1.0", &["legacy"], None, &[], 64)],
    );
    project("legacy", vec![evil_sdist("legacy", "1.0", marker)]);
    (server, served)
}

fn git(args: &[&str], cwd: &Path) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(cwd)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A repository whose `python/pyproject.toml` is `pyproject`, tagged `v1`.
fn repository(dir: &Path, pyproject: &str) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join("python")).unwrap();
    std::fs::write(repo.join("python/pyproject.toml"), pyproject).unwrap();
    git(&["init", "-q"], &repo);
    git(&["add", "."], &repo);
    git(&["commit", "-qm", "source"], &repo);
    git(&["tag", "v1"], &repo);
    repo
}

/// The source install's git bundle with its build requirements, as `plan` makes it
/// for a node of CPython 3.12 on glibc 2.35 x86_64, into `dir`.
fn step(repo: &Path, server: &Server, dir: &Path) -> Step {
    let environment = TargetEnvironment::parse_facts(
        r#"{"python": "3.12.3", "implementation": "cpython", "glibc": "2.35", "arch": "x86_64", "gpu_arch": []}"#,
        "facts.json",
    )
    .unwrap();
    let build = BuildRequirements {
        package: "demo".to_string(),
        subdirectory: Some("python".to_string()),
        resolution: BuildResolution {
            indexes: vec![BuildIndex {
                name: "default".to_string(),
                url: server.url("/simple/"),
                explicit: false,
            }],
            pins: BTreeMap::new(),
            environment: environment.to_facts(),
            options: ResolveOptions::default(),
        },
        dir: dir.join("node/build/demo"),
        known: None,
    };
    Step {
        kind: StepKind::SourceInstall,
        subject: "demo".to_string(),
        action: Action::Create,
        reason: "`demo` has no source install record".to_string(),
        operations: vec![Operation::GitBundle {
            url: format!("file://{}", repo.display()),
            rev: "v1".to_string(),
            path: dir.join("node/bundles/demo.bundle"),
            build: Some(Box::new(build)),
        }],
        verification: None,
        blocked: None,
    }
}

/// Apply `step` through the local transport with the download cache in `dir`.
fn apply(step: &Step, dir: &Path) -> Result<cuda_upgrade::exec::Applied, ExecError> {
    let context = ApplyContext {
        cache_dir: dir.join("cache"),
        before_images: None,
        secrets: Vec::new(),
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(apply_step_writing(
        &Transport::Local(LocalTransport::new()),
        step,
        &context,
        None,
    ))
}

fn chain(error: &ExecError) -> String {
    cuda_upgrade::text::error_chain(error)
}

/// Every file the index was asked for, e.g. `/simple/wheel/`.
fn asked(server: &Server) -> Vec<String> {
    server.log().into_iter().map(|logged| logged.path).collect()
}

/// See: issue 33: the set is resolved from the index by the project's resolver (the
/// newest matching releases, dependencies followed), each wheel is the file the index
/// lists, checked against its sha256, and lands in the node's build directory; the
/// apply output names the pins; a second apply reuses the resolved set and the verified
/// wheels without asking the index anything.
#[test]
fn the_resolved_set_comes_from_the_index_with_its_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let (server, served) = index(&marker);
    let repo = repository(
        dir.path(),
        "[project]\nname = \"demo\"\nversion = \"1.0\"\n[build-system]\nrequires = [\"setuptools>=61\", \"wheel ; python_version >= '3.8'\", \"never ; python_version < '3'\"]\nbuild-backend = \"setuptools.build_meta\"\n",
    );
    let step = step(&repo, &server, dir.path());
    let applied = apply(&step, dir.path()).unwrap();
    assert_eq!(applied.outcome, StepOutcome::Applied);
    assert_eq!(
        applied.notes,
        [
            "build requirements resolved on the controller: `packaging==24.0`, `setuptools==70.0`, `wheel==0.43.0`"
        ]
    );
    let build = dir.path().join("node/build/demo");
    let mut sent: Vec<String> = std::fs::read_dir(&build)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    sent.sort();
    assert_eq!(
        sent,
        [
            "packaging-24.0-py3-none-any.whl",
            "setuptools-70.0-py3-none-any.whl",
            "wheel-0.43.0-py3-none-any.whl"
        ]
    );
    for name in &sent {
        let bytes = std::fs::read(build.join(name)).unwrap();
        assert_eq!(support::sha256(&bytes), served[name].sha256, "{name}");
    }
    let log = asked(&server);
    assert!(
        !log.iter()
            .any(|path| path.contains("setuptools-69.0") || path.contains("legacy")),
        "only what the resolution chose is fetched: {log:?}"
    );
    assert!(!marker.exists());

    // The next node (its build directory emptied) gets the same set from the cache.
    std::fs::remove_dir_all(&build).unwrap();
    server.clear_log();
    let again = apply(&step, dir.path()).unwrap();
    assert_eq!(again.notes, applied.notes);
    assert_eq!(std::fs::read_dir(&build).unwrap().count(), 3);
    assert_eq!(asked(&server), Vec::<String>::new());
}

/// See: issue 33: a wheel whose bytes are not the sha256 its index lists is refused,
/// and never reaches the node; the index's credentials stay out of the failure.
#[test]
fn a_wheel_that_is_not_its_listed_sha256_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let (server, _) = index(&marker);
    let tampered = wheel("packaging", "24.0", &[], None, &[], 65);
    server.route(
        "/files/packaging-24.0-py3-none-any.whl",
        Route::file(tampered.bytes),
    );
    let repo = repository(dir.path(), "[build-system]\nrequires = [\"wheel\"]\n");
    // The index's URL carries credentials, which no failure text may show.
    let mut step = step(&repo, &server, dir.path());
    if let Operation::GitBundle {
        build: Some(build), ..
    } = &mut step.operations[0]
    {
        build.resolution.indexes[0].url = format!("http://user:s3cr3t@{}/simple/", server.address);
    }
    let error = apply(&step, dir.path()).unwrap_err();
    let message = chain(&error);
    assert!(
        message.contains("Failed to fetch the build requirements of `demo` (wheel)")
            && message.contains("packaging-24.0-py3-none-any.whl")
            && message.contains("sha256")
            && message.contains("user:***@"),
        "{message}"
    );
    assert!(!message.contains("s3cr3t"), "{message}");
    assert!(!dir.path().join("node/build/demo").exists());
}

/// See: issue 33, case 1: a direct reference — a local directory or a URL of an sdist
/// whose build backend creates a marker (as it did when pip downloaded the
/// requirements) — is refused with the requirement and the file
/// named, and nothing runs: the marker is never created, the URL never fetched.
#[test]
fn a_direct_reference_is_refused_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let (server, _) = index(&marker);
    let evil = dir.path().join("evil");
    std::fs::create_dir(&evil).unwrap();
    for (path, text) in evil_source(&marker) {
        std::fs::write(evil.join(path), text).unwrap();
    }
    let sdist = evil_sdist("evil", "1.0", &marker);
    server.route("/evil/evil-1.0.tar.gz", Route::file(sdist.bytes));
    let by_url = server.url("/evil/evil-1.0.tar.gz");
    for reference in [
        format!("evil @ file://{}", evil.display()),
        format!("evil @ {by_url}"),
        format!("evil @ {by_url} ; python_version < '3'"),
    ] {
        let case = tempfile::tempdir_in(dir.path()).unwrap();
        let repo = repository(
            case.path(),
            &format!("[build-system]\nrequires = [\"setuptools\", \"{reference}\"]\n"),
        );
        server.clear_log();
        let error = apply(&step(&repo, &server, case.path()), case.path()).unwrap_err();
        let message = chain(&error);
        assert!(
            matches!(error, ExecError::BuildSystem { .. })
                && message.contains("Failed to read the build requirements of `demo`")
                && message.contains(&format!("`{reference}`"))
                && message.contains("`python/pyproject.toml`")
                && message.contains("direct reference"),
            "{message}"
        );
        assert!(!marker.exists(), "{reference}: the source's code ran");
        assert_eq!(asked(&server), Vec::<String>::new(), "{reference}");
        assert!(!case.path().join("node/build/demo").exists());
    }
}

/// See: issue 33: an sdist in the closure is refused, named: it is never downloaded,
/// its metadata never built, and its build backend never runs.
#[test]
fn an_sdist_in_the_closure_is_refused_named() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let (server, _) = index(&marker);
    let repo = repository(
        dir.path(),
        "[build-system]\nrequires = [\"setuptools\", \"needs-legacy\"]\n",
    );
    let error = apply(&step(&repo, &server, dir.path()), dir.path()).unwrap_err();
    let message = chain(&error);
    assert!(
        message.contains("Failed to fetch the build requirements of `demo`")
            && message.contains("`legacy 1.0`")
            && message.contains("wheels only"),
        "{message}"
    );
    assert!(!marker.exists());
    let log = asked(&server);
    assert!(
        !log.iter().any(|path| path.ends_with(".tar.gz")),
        "the sdist is never fetched: {log:?}"
    );
}

/// See: issue 33: a `pyproject.toml` that does not parse is an error naming the package
/// and the file — not pip's default `setuptools>=40.8.0` — and nothing is fetched; a
/// `[build-system]` table inside a multi-line string is not read.
#[test]
fn an_unparsable_pyproject_is_an_error_and_a_hidden_table_is_text() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let (server, _) = index(&marker);
    let repo = repository(
        dir.path(),
        "[build-system\nrequires = [\"setuptools>=61\"]\n",
    );
    let error = apply(&step(&repo, &server, dir.path()), dir.path()).unwrap_err();
    let message = chain(&error);
    assert!(
        matches!(error, ExecError::BuildSystem { .. })
            && message.contains("`demo`")
            && message.contains("Failed to parse `python/pyproject.toml` as TOML"),
        "{message}"
    );
    assert_eq!(asked(&server), Vec::<String>::new());

    // The table a reviewer sees is the one read: the hidden one names a package the
    // index does not have, the real one `setuptools`.
    let case = tempfile::tempdir_in(dir.path()).unwrap();
    let repo = repository(
        case.path(),
        "[project]\nname = \"demo\"\ndescription = \"\"\"\n[build-system]\nrequires = [\"hidden\"]\n\"\"\"\n[build-system]\nrequires = [\"setuptools\"]\n",
    );
    let applied = apply(&step(&repo, &server, case.path()), case.path()).unwrap();
    assert_eq!(
        applied.notes,
        ["build requirements resolved on the controller: `setuptools==70.0`"]
    );
}

/// See: issue 33: `plan` lists a source's build requirements where the controller
/// knows them — the declared ones once its clone holds the revision, and the pins
/// resolved for this node before — and nothing where it does not yet.
#[test]
fn plan_lists_the_build_requirements_known_on_the_controller() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let (server, _) = index(&marker);
    let repo = repository(
        dir.path(),
        "[build-system]\nrequires = [\"setuptools>=61\", \"wheel\"]\n",
    );
    let cache = dir.path().join("cache");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let planned = |step: &Step| {
        let mut steps = vec![step.clone()];
        runtime.block_on(cuda_upgrade::exec::build_requirements::note_known(
            &mut steps, &cache,
        ));
        steps[0].operations[0].describe()
    };
    let step = step(&repo, &server, dir.path());
    let fresh = planned(&step);
    assert!(
        fresh.contains("resolved on the controller for this node from index `default` (wheels only, each checked against the index's sha256)")
            && !fresh.contains("build requirements of commit"),
        "{fresh}"
    );
    assert!(asked(&server).is_empty());

    apply(&step, dir.path()).unwrap();
    server.clear_log();
    let known = planned(&step);
    assert!(
        known.contains("build requirements of commit ")
            && known.contains(": `setuptools>=61`, `wheel`")
            && known.contains(
                "resolved for this node before (reused): `packaging==24.0`, `setuptools==70.0`, `wheel==0.43.0`"
            ),
        "{known}"
    );
    assert!(asked(&server).is_empty(), "plan fetches nothing");
}
