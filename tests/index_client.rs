//! The package sources against a real HTTP server on 127.0.0.1 and real wheels built
//! here: the index client (PEP 691, PEP 503, PEP 658, range requests, cache, retries,
//! timeouts), the closure explorer, the find-links reader, pip's default index, and
//! `upgrade index snapshot` through the binary.
//!
//! See: issue 3, item 1 (package sources).
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

mod support;

use std::path::Path;
use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

use cuda_upgrade::index::Snapshot;
use cuda_upgrade::index::client::explore::TargetPlatform;
use cuda_upgrade::index::client::{
    ClientError, ClientSettings, ExploreSettings, IndexClient, IndexLocation, IndexSource,
    MetadataOffer, NoReporter, ProjectFile, RootRequest, explore,
};
use cuda_upgrade::index::find_links::read_find_links;
use pep440_rs::Version;
use pep508_rs::{MarkerEnvironment, MarkerEnvironmentBuilder, PackageName, Requirement};
use support::{Route, Server, Wheel, json_page, sdist, serve_wheel, wheel, wheel_with_tag};

const PADDING: usize = 200 * 1024;

fn name(text: &str) -> PackageName {
    PackageName::from_str(text).unwrap()
}

fn settings(cache: Option<&Path>) -> ClientSettings {
    ClientSettings {
        connect_timeout: Duration::from_secs(5),
        timeout: Duration::from_secs(5),
        retries: 3,
        backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(50),
        concurrency: 8,
        cache_dir: cache.map(Path::to_path_buf),
        offline: false,
        build_python: "python3".into(),
    }
}

/// A PEP 517 backend that prepares metadata and builds nothing.
const BACKEND: &str = r#"import os

def get_requires_for_build_wheel(config_settings=None):
    return []

def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    name = "built-1.0.dist-info"
    os.makedirs(os.path.join(metadata_directory, name))
    with open(os.path.join(metadata_directory, name, "METADATA"), "w") as handle:
        handle.write("Metadata-Version: 2.1\nName: built\nVersion: 1.0\nRequires-Dist: alpha>=2\nProvides-Extra: fast\n")
    return name

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise RuntimeError("this fixture builds no wheel")
"#;

/// The fixture index:
/// - `alpha` (PEP 691 JSON): 1.0 with a PEP 658 file, 2.0 without (ranges), 2.1 yanked;
/// - `beta` (PEP 503 HTML): 1.0 (ranges), 1.5 (PEP 658), 3.0 (`Requires-Python >=3.14`);
/// - `gamma` (HTML), `delta` (HTML, windows-only dependency never followed);
/// - `flaky`: two 503s, then a page; `down`: 503 forever; `slow`: answers after 3 s;
/// - `norange`: a wheel whose server ignores `Range`.
struct Fixture {
    server: Server,
    alpha_1: Wheel,
    alpha_2: Wheel,
    beta_1: Wheel,
}

fn fixture() -> Fixture {
    let server = Server::start();
    let alpha_1 = wheel("alpha", "1.0", &["beta>=1.0"], Some(">=3.9"), &[], PADDING);
    let alpha_2 = wheel(
        "alpha",
        "2.0",
        &[
            "beta>=1.0",
            "gamma; extra == \"g\"",
            "windows-only; sys_platform == \"win32\"",
        ],
        Some(">=3.9"),
        &["g"],
        PADDING,
    );
    let alpha_21 = wheel("alpha", "2.1", &["beta>=1.0"], None, &[], 1024);
    let alpha_mac = wheel_with_tag(
        "alpha",
        "2.0",
        "cp312-cp312-macosx_11_0_arm64",
        &[],
        None,
        &[],
        16,
    );
    serve_wheel(&server, &alpha_1, true);
    serve_wheel(&server, &alpha_2, false);
    serve_wheel(&server, &alpha_21, false);
    let mut alpha_page = json_page(
        "alpha",
        &[
            (&alpha_1, None, true),
            (&alpha_2, None, false),
            (&alpha_mac, None, false),
            (&alpha_21, Some("broken build"), false),
        ],
    );
    alpha_page.push('\n');
    server.route(
        "/simple/alpha/",
        Route {
            etag: Some("\"alpha-v1\"".to_string()),
            ..Route::ok("application/vnd.pypi.simple.v1+json", alpha_page)
        },
    );

    let beta_1 = wheel("beta", "1.0", &["delta"], Some(">=3.8"), &[], PADDING);
    let beta_15 = wheel("beta", "1.5", &["delta"], Some(">=3.8"), &[], 1024);
    let beta_3 = wheel("beta", "3.0", &[], Some(">=3.14"), &[], 1024);
    serve_wheel(&server, &beta_1, false);
    serve_wheel(&server, &beta_15, true);
    serve_wheel(&server, &beta_3, true);
    let beta_html = format!(
        r#"<!DOCTYPE html>
<html><head><meta name="pypi:repository-version" content="1.0"></head><body>
<a href="../../files/{b1}#sha256={b1h}" data-requires-python="&gt;=3.8">{b1}</a><br/>
<a href="/files/{b15}#sha256={b15h}" data-requires-python="&gt;=3.8" data-dist-info-metadata="sha256={b15m}">{b15}</a><br/>
<a href="/files/{b3}#sha256={b3h}" data-requires-python="&gt;=3.14" data-core-metadata="true">{b3}</a><br/>
</body></html>"#,
        b1 = beta_1.filename,
        b1h = beta_1.sha256,
        b15 = beta_15.filename,
        b15h = beta_15.sha256,
        b15m = support::sha256(beta_15.metadata.as_bytes()),
        b3 = beta_3.filename,
        b3h = beta_3.sha256,
    );
    server.route(
        "/simple/beta/",
        Route {
            etag: Some("\"beta-v1\"".to_string()),
            ..Route::ok("text/html", beta_html)
        },
    );

    for (project, requires) in [("gamma", vec![]), ("delta", vec!["beta<2"])] {
        let built = wheel(project, "1.0", &requires, None, &[], 64);
        serve_wheel(&server, &built, true);
        server.route(
            &format!("/simple/{project}/"),
            Route::ok(
                "text/html",
                format!(
                    "<a href=\"/files/{0}#sha256={1}\" data-core-metadata=\"true\">{0}</a>",
                    built.filename, built.sha256
                ),
            ),
        );
    }

    let flaky = wheel("flaky", "1.0", &[], None, &[], 64);
    serve_wheel(&server, &flaky, true);
    server.route(
        "/simple/flaky/",
        Route {
            fail_first: 2,
            ..Route::ok(
                "text/html",
                format!("<a href=\"/files/{0}\">{0}</a>", flaky.filename),
            )
        },
    );
    server.route("/simple/down/", Route::status(503));
    server.route(
        "/simple/slow/",
        Route {
            delay: Some(Duration::from_secs(3)),
            ..Route::ok("text/html", "")
        },
    );
    let legacy = wheel("legacy", "0.2", &[], None, &[], 64);
    serve_wheel(&server, &legacy, false);
    server.route(
        "/simple/legacy/",
        Route::ok(
            "text/html",
            format!(
                "<a href=\"/files/legacy-0.1.tar.gz\">legacy-0.1.tar.gz</a>\n<a href=\"/files/{0}\">{0}</a>\n<a href=\"/files/legacy-0.2.tar.gz\">legacy-0.2.tar.gz</a>",
                legacy.filename
            ),
        ),
    );
    // legacy 0.1 offers only an sdist whose PKG-INFO is static (PEP 643).
    server.route(
        "/files/legacy-0.1.tar.gz",
        Route::file(sdist(&[(
            "legacy-0.1/PKG-INFO",
            "Metadata-Version: 2.2\nName: legacy\nVersion: 0.1\nRequires-Dist: alpha>=1\n",
        )])),
    );
    // built 1.0: an sdist whose dependencies are dynamic; its in-tree backend prepares
    // them (no build requirement, so pip's isolated environment needs no index).
    server.route(
        "/files/built-1.0.tar.gz",
        Route::file(sdist(&[
            (
                "built-1.0/PKG-INFO",
                "Metadata-Version: 2.2\nName: built\nVersion: 1.0\nDynamic: Requires-Dist\n",
            ),
            (
                "built-1.0/pyproject.toml",
                "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n",
            ),
            ("built-1.0/backend.py", BACKEND),
        ])),
    );
    server.route(
        "/simple/built/",
        Route::ok(
            "text/html",
            "<a href=\"/files/built-1.0.tar.gz\">built-1.0.tar.gz</a>\n",
        ),
    );
    let norange = wheel("norange", "1.0", &["alpha"], None, &[], PADDING);
    server.route(
        &format!("/files/{}", norange.filename),
        Route {
            ranges: false,
            ..Route::file(norange.bytes.clone())
        },
    );
    server.route(
        "/simple/norange/",
        Route::ok(
            "text/html",
            format!("<a href=\"/files/{0}\">{0}</a>", norange.filename),
        ),
    );
    Fixture {
        server,
        alpha_1,
        alpha_2,
        beta_1,
    }
}

fn index(server: &Server) -> IndexLocation {
    IndexLocation::new("fixture", &server.url("/simple")).unwrap()
}

/// A client with the test settings, the index at `server`, and the files it lists for
/// `project` (which it has).
async fn listed(server: &Server, project: &str) -> (IndexClient, IndexLocation, Vec<ProjectFile>) {
    let client = IndexClient::new(settings(None)).unwrap();
    let location = index(server);
    let files = client
        .fetch_project(&location, &name(project))
        .await
        .unwrap()
        .unwrap();
    (client, location, files)
}

#[tokio::test]
async fn json_page_lists_files_hashes_and_yanked() {
    let fixture = fixture();
    let client = IndexClient::new(settings(None)).unwrap();
    let files = client
        .fetch_project(&index(&fixture.server), &name("Alpha"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(files.len(), 4);
    let first = &files[0];
    assert_eq!(first.filename, fixture.alpha_1.filename);
    assert_eq!(
        first.url.as_str(),
        fixture
            .server
            .url(&format!("/files/{}", fixture.alpha_1.filename))
    );
    assert_eq!(
        first.sha256.as_ref().unwrap().as_str(),
        fixture.alpha_1.sha256
    );
    assert!(matches!(first.metadata, MetadataOffer::Offered(Some(_))));
    assert_eq!(files[3].yanked.as_deref(), Some("broken build"));
    assert_eq!(files[1].metadata, MetadataOffer::Absent);
}

#[tokio::test]
async fn html_page_unescapes_and_resolves_links() {
    let fixture = fixture();
    let client = IndexClient::new(settings(None)).unwrap();
    let files = client
        .fetch_project(&index(&fixture.server), &name("beta"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(files.len(), 3);
    assert_eq!(
        files[0].requires_python.as_ref().unwrap().to_string(),
        ">=3.8"
    );
    assert_eq!(
        files[0].url.as_str(),
        fixture
            .server
            .url(&format!("/files/{}", fixture.beta_1.filename))
    );
    assert_eq!(
        files[0].sha256.as_ref().unwrap().as_str(),
        fixture.beta_1.sha256
    );
    assert_eq!(files[0].metadata, MetadataOffer::Absent);
    assert!(matches!(files[1].metadata, MetadataOffer::Offered(Some(_))));
    assert_eq!(files[2].metadata, MetadataOffer::Offered(None));
}

#[tokio::test]
async fn pep658_metadata_is_used_and_verified() {
    let fixture = fixture();
    let (client, location, files) = listed(&fixture.server, "alpha").await;
    let metadata = client.fetch_metadata(&location, &files[0]).await.unwrap();
    assert_eq!(metadata.version.to_string(), "1.0");
    assert_eq!(metadata.requires_dist[0].to_string(), "beta>=1.0");
    let wheel_path = format!("/files/{}", fixture.alpha_1.filename);
    assert_eq!(
        fixture
            .server
            .requests_to(&format!("{wheel_path}.metadata"))
            .len(),
        1
    );
    assert!(
        fixture.server.requests_to(&wheel_path).is_empty(),
        "no wheel download"
    );

    // A metadata file whose hash differs from the page's is refused.
    fixture.server.route(
        &format!("{wheel_path}.metadata"),
        Route::ok(
            "application/octet-stream",
            "Name: alpha\nVersion: 1.0\nRequires-Dist: evil\n",
        ),
    );
    let error = client
        .fetch_metadata(&location, &files[0])
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::HashMismatch { .. }), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("Failed to verify `http://127.0.0.1:")
    );
}

#[tokio::test]
async fn wheel_metadata_is_read_with_range_requests() {
    let fixture = fixture();
    let (client, location, files) = listed(&fixture.server, "alpha").await;
    let metadata = client.fetch_metadata(&location, &files[1]).await.unwrap();
    assert_eq!(metadata.version.to_string(), "2.0");
    assert_eq!(metadata.requires_dist.len(), 3);
    assert_eq!(metadata.provides_extra.len(), 1);
    let requests = fixture
        .server
        .requests_to(&format!("/files/{}", fixture.alpha_2.filename));
    assert!(requests.len() >= 2, "tail, then the entry: {requests:?}");
    assert!(
        requests
            .iter()
            .all(|logged| logged.range.is_some() && logged.status == 206)
    );
    assert_eq!(requests[0].range.as_deref(), Some("bytes=-65536"));
    let served: usize = requests.iter().map(|logged| logged.body_bytes).sum();
    assert!(
        served < fixture.alpha_2.bytes.len() / 2,
        "{served} of {} bytes served",
        fixture.alpha_2.bytes.len()
    );
}

#[tokio::test]
async fn a_large_central_directory_is_fetched_in_one_range() {
    let server = Server::start();
    let big = support::wheel_with_many_entries("wide", "1.0", 2000);
    assert!(big.bytes.len() > 3 * 65_536, "{} bytes", big.bytes.len());
    serve_wheel(&server, &big, false);
    server.route(
        "/simple/wide/",
        Route::ok(
            "text/html",
            format!("<a href=\"/files/{0}\">{0}</a>", big.filename),
        ),
    );
    let (client, location, files) = listed(&server, "wide").await;
    let metadata = client.fetch_metadata(&location, &files[0]).await.unwrap();
    assert_eq!(metadata.requires_dist[0].to_string(), "alpha");
    let requests = server.requests_to(&format!("/files/{}", big.filename));
    // The tail, the rest of the central directory at once (its start is in the tail's
    // end record), then `METADATA`: not the directory in growing windows.
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert!(requests.iter().all(|logged| logged.status == 206));
}

#[tokio::test]
async fn whole_wheel_is_read_when_ranges_are_refused() {
    let fixture = fixture();
    let (client, location, files) = listed(&fixture.server, "norange").await;
    let metadata = client.fetch_metadata(&location, &files[0]).await.unwrap();
    assert_eq!(metadata.requires_dist[0].to_string(), "alpha");
    let requests = fixture
        .server
        .requests_to(&format!("/files/{}", files[0].filename));
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].status, 200);
}

#[tokio::test]
async fn missing_project_is_not_an_error() {
    let fixture = fixture();
    let client = IndexClient::new(settings(None)).unwrap();
    let files = client
        .fetch_project(&index(&fixture.server), &name("missing"))
        .await
        .unwrap();
    assert!(files.is_none());
}

#[tokio::test]
async fn server_errors_are_retried_then_reported() {
    let fixture = fixture();
    let (client, location, files) = listed(&fixture.server, "flaky").await;
    assert_eq!(files.len(), 1);
    let statuses: Vec<u16> = fixture
        .server
        .requests_to("/simple/flaky/")
        .iter()
        .map(|logged| logged.status)
        .collect();
    assert_eq!(statuses, [503, 503, 200]);

    let error = client
        .fetch_project(&location, &name("down"))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "Failed to fetch `{}` from index `fixture`: HTTP 503 Service Unavailable",
            fixture.server.url("/simple/down/")
        )
    );
    assert_eq!(
        fixture.server.requests_to("/simple/down/").len(),
        4,
        "1 + 3 retries"
    );
}

#[tokio::test]
async fn slow_responses_time_out() {
    let fixture = fixture();
    let client = IndexClient::new(ClientSettings {
        timeout: Duration::from_millis(300),
        ..settings(None)
    })
    .unwrap();
    let started = std::time::Instant::now();
    let error = client
        .fetch_project(&index(&fixture.server), &name("slow"))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Timeout { .. }), "{error}");
    assert!(
        error.to_string().ends_with("no response within 0.3s"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn credentials_never_reach_messages() {
    let fixture = fixture();
    let client = IndexClient::new(settings(None)).unwrap();
    let url = format!("http://ops:s3cret@{}/simple", fixture.server.address);
    let location = IndexLocation::new("private", &url).unwrap();
    let error = client
        .fetch_project(&location, &name("down"))
        .await
        .unwrap_err();
    let text = cuda_upgrade::report::error_chain(&error);
    assert!(!text.contains("s3cret") && !text.contains("ops@"), "{text}");
    assert!(
        fixture
            .server
            .log()
            .iter()
            .all(|logged| logged.authorization)
    );
}

#[tokio::test]
async fn cached_pages_are_revalidated_and_metadata_is_kept() {
    let fixture = fixture();
    let cache = tempfile::tempdir().unwrap();
    let location = index(&fixture.server);
    for _ in 0..2 {
        let client = IndexClient::new(settings(Some(cache.path()))).unwrap();
        let files = client
            .fetch_project(&location, &name("alpha"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(files.len(), 4);
        client.fetch_metadata(&location, &files[1]).await.unwrap();
    }
    let pages = fixture.server.requests_to("/simple/alpha/");
    assert_eq!(pages.len(), 2);
    assert_eq!(
        (pages[0].status, pages[0].if_none_match.as_deref()),
        (200, None)
    );
    assert_eq!(
        (
            pages[1].status,
            pages[1].if_none_match.as_deref(),
            pages[1].body_bytes
        ),
        (304, Some("\"alpha-v1\""), 0)
    );
    let wheel_requests = fixture
        .server
        .requests_to(&format!("/files/{}", fixture.alpha_2.filename))
        .len();

    // Offline: the cache answers; nothing reaches the server.
    fixture.server.clear_log();
    let offline = IndexClient::new(ClientSettings {
        offline: true,
        ..settings(Some(cache.path()))
    })
    .unwrap();
    let files = offline
        .fetch_project(&location, &name("alpha"))
        .await
        .unwrap()
        .unwrap();
    offline.fetch_metadata(&location, &files[1]).await.unwrap();
    assert!(fixture.server.log().is_empty());
    assert!(
        wheel_requests >= 2,
        "the first run read the wheel with ranges"
    );
    let error = offline
        .fetch_project(&location, &name("beta"))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Offline { .. }), "{error}");
}

fn target(only: Option<Vec<String>>) -> ExploreSettings {
    let markers = MarkerEnvironment::try_from(MarkerEnvironmentBuilder {
        implementation_name: "cpython",
        implementation_version: "3.12.0",
        os_name: "posix",
        platform_machine: "x86_64",
        platform_python_implementation: "CPython",
        platform_release: "",
        platform_system: "Linux",
        platform_version: "",
        python_full_version: "3.12.0",
        python_version: "3.12",
        sys_platform: "linux",
    })
    .unwrap();
    ExploreSettings {
        markers,
        python_version: Version::from_str("3.12.0").unwrap(),
        platform: TargetPlatform::parse("manylinux_2_35_x86_64"),
        transitive: true,
        max_projects: 50,
        max_versions: 20,
        max_releases: 100,
        only_indexes: only,
        overrides: Vec::new(),
        constraints: Vec::new(),
        wheels_only: false,
    }
}

fn root(text: &str, index: Option<&str>) -> RootRequest {
    RootRequest {
        requirement: Requirement::from_str(text).unwrap(),
        index: index.map(str::to_string),
    }
}

fn versions(snapshot_index: &cuda_upgrade::index::IndexContents, package: &str) -> Vec<String> {
    snapshot_index
        .packages
        .get(&name(package))
        .map(|releases| {
            releases
                .iter()
                .map(|release| release.version.to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn closure_follows_markers_extras_and_policy() {
    let fixture = fixture();
    let client = IndexClient::new(settings(None)).unwrap();
    let sources = [
        IndexSource {
            location: IndexLocation::new("pinned", &fixture.server.url("/nothing")).unwrap(),
            explicit: true,
        },
        IndexSource {
            location: index(&fixture.server),
            explicit: false,
        },
    ];
    let exploration = explore(
        &client,
        &sources,
        &[root("alpha[g]>=1", None)],
        &target(None),
        &NoReporter,
    )
    .await
    .unwrap();
    let contents = &exploration.universe.indexes[1];
    assert!(exploration.universe.indexes[0].packages.is_empty());
    // 2.1 is yanked and not pinned; beta 3.0 needs Python 3.14.
    assert_eq!(versions(contents, "alpha"), ["1.0", "2.0"]);
    assert_eq!(versions(contents, "beta"), ["1.0", "1.5"]);
    assert_eq!(
        versions(contents, "gamma"),
        ["1.0"],
        "extra `g` was asked for"
    );
    assert_eq!(versions(contents, "delta"), ["1.0"]);
    assert!(versions(contents, "windows-only").is_empty());
    let alpha_2 = &contents.packages[&name("alpha")][1];
    assert_eq!(alpha_2.files.len(), 1, "the macOS wheel is not recorded");
    assert_eq!(
        alpha_2.requires_python.as_ref().unwrap().to_string(),
        ">=3.9"
    );
    // The explicit index was never asked: alpha is not pinned to it.
    assert!(
        fixture
            .server
            .log()
            .iter()
            .all(|logged| !logged.path.starts_with("/nothing"))
    );

    // Pinned to the explicit index: looked up only there, and it has nothing.
    let pinned = explore(
        &client,
        &sources,
        &[root("alpha", Some("pinned"))],
        &target(None),
        &NoReporter,
    )
    .await
    .unwrap();
    assert!(
        pinned
            .universe
            .indexes
            .iter()
            .all(|index| index.packages.is_empty())
    );
    assert!(
        pinned
            .notes
            .iter()
            .any(|note| note.contains("no allowed index"))
    );

    // An exact pin keeps a yanked release; overrides replace what dependencies ask.
    let mut overridden = target(None);
    overridden.overrides = vec![Requirement::from_str("beta==1.0").unwrap()];
    let exact = explore(
        &client,
        &sources,
        &[root("alpha==2.1", None)],
        &overridden,
        &NoReporter,
    )
    .await
    .unwrap();
    assert_eq!(versions(&exact.universe.indexes[1], "alpha"), ["2.1"]);
    assert_eq!(versions(&exact.universe.indexes[1], "beta"), ["1.0"]);

    // A release that offers only an sdist is read from its PKG-INFO when that is static,
    // else from the metadata pip's isolated build prepares.
    let legacy = explore(
        &client,
        &sources,
        &[root("legacy", None)],
        &target(None),
        &NoReporter,
    )
    .await
    .unwrap();
    assert_eq!(
        versions(&legacy.universe.indexes[1], "legacy"),
        ["0.1", "0.2"]
    );
    let legacy_01 = &legacy.universe.indexes[1].packages[&PackageName::from_str("legacy").unwrap()]
        .iter()
        .find(|release| release.version.to_string() == "0.1")
        .unwrap()
        .requires_dist;
    assert_eq!(legacy_01[0].to_string(), "alpha>=1");
    let built = explore(
        &client,
        &sources,
        &[root("built", None)],
        &target(None),
        &NoReporter,
    )
    .await
    .unwrap();
    let built_10 = built
        .universe
        .indexes
        .iter()
        .find_map(|index| index.packages.get(&PackageName::from_str("built").unwrap()))
        .unwrap_or_else(|| panic!("built not recorded: {:?}", built.notes))
        .first()
        .unwrap();
    assert_eq!(built_10.requires_dist[0].to_string(), "alpha>=2");
    assert_eq!(built_10.provides_extra.len(), 1);

    // A root whose marker excludes the target is not recorded.
    let windows = explore(
        &client,
        &sources,
        &[root("gamma; sys_platform == 'win32'", None)],
        &target(None),
        &NoReporter,
    )
    .await
    .unwrap();
    assert!(windows.universe.indexes[1].packages.is_empty());

    // Limits are errors, not silent truncation.
    let mut tight = target(None);
    tight.max_projects = 2;
    let error = explore(
        &client,
        &sources,
        &[root("alpha[g]", None)],
        &tight,
        &NoReporter,
    )
    .await
    .unwrap_err();
    assert!(
        error.to_string().contains("more than 2 projects"),
        "{error}"
    );
}

#[test]
fn find_links_directory_reads_wheels_and_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let a = wheel("alpha", "1.0", &["beta>=1"], Some(">=3.9"), &[], 64);
    let b = wheel("alpha", "2.0", &[], None, &[], 64);
    for built in [&a, &b] {
        std::fs::write(dir.path().join(&built.filename), &built.bytes).unwrap();
    }
    std::fs::write(dir.path().join("alpha-2.0.tar.gz"), b"not read").unwrap();
    std::fs::write(dir.path().join("orphan-0.1.tar.gz"), b"not read").unwrap();
    std::fs::write(dir.path().join("README.txt"), b"ignored").unwrap();
    let found = read_find_links(dir.path(), "local").unwrap();
    assert_eq!(found.contents.name, "local");
    let releases = &found.contents.packages[&name("alpha")];
    assert_eq!(releases.len(), 2);
    assert_eq!(releases[0].requires_dist[0].to_string(), "beta>=1");
    assert_eq!(
        releases[0].files[0].sha256.as_ref().unwrap().as_str(),
        a.sha256
    );
    assert_eq!(
        releases[1].files.len(),
        2,
        "the sdist joins its wheel's release"
    );
    assert_eq!(found.notes.len(), 1, "{:?}", found.notes);
    assert!(found.notes[0].contains("orphan-0.1.tar.gz"));

    // A wheel whose metadata names another project is refused, naming the file.
    let liar = wheel("other", "1.0", &[], None, &[], 16);
    std::fs::write(dir.path().join("alpha-3.0-py3-none-any.whl"), &liar.bytes).unwrap();
    let error = read_find_links(dir.path(), "local").unwrap_err();
    assert!(
        error.to_string().contains("its metadata says `other 1.0`"),
        "{error}"
    );
}

fn upgrade(args: &[&str], envs: &[(&str, &str)], remove: &[&str]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_upgrade"));
    command.args(args);
    for (key, value) in envs {
        command.env(key, value);
    }
    for key in remove {
        command.env_remove(key);
    }
    command.output().unwrap()
}

/// `upgrade index snapshot MANIFEST -o OUT ARGS…` with `envs` set.
fn index_snapshot(
    manifest: &Path,
    out: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> std::process::Output {
    let mut all = vec![
        "index",
        "snapshot",
        manifest.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    upgrade(&all, envs, &[])
}

#[test]
fn default_index_comes_from_pip_index_url() {
    let output = upgrade(
        &["index", "default-url"],
        &[("PIP_INDEX_URL", "http://ops:s3cret@127.0.0.1:9/simple")],
        &[],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        stdout,
        "http://ops:***@127.0.0.1:9/simple\n  from `PIP_INDEX_URL`\n"
    );
}

#[test]
fn default_index_comes_from_pip_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pip.conf");
    std::fs::write(
        &config,
        "[global]\nindex-url = http://127.0.0.1:7/global/simple\n[install]\nindex-url = http://127.0.0.1:7/install/simple\n",
    )
    .unwrap();
    let output = upgrade(
        &["index", "default-url", "--format", "json"],
        &[("PIP_CONFIG_FILE", config.to_str().unwrap())],
        &["PIP_INDEX_URL"],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["url"], "http://127.0.0.1:7/install/simple");
    assert_eq!(report["source"], "pip configuration `install.index-url`");
}

#[test]
fn default_index_falls_back_to_what_pip_uses() {
    let output = upgrade(
        &["index", "default-url", "--format", "json"],
        &[("PIP_CONFIG_FILE", "/dev/null")],
        &["PIP_INDEX_URL"],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["source"], "pip's built-in default");
    assert!(report["url"].as_str().unwrap().contains("://"));

    let missing = upgrade(
        &[
            "index",
            "default-url",
            "--pip-python",
            "/nonexistent/python3",
        ],
        &[],
        &["PIP_INDEX_URL"],
    );
    assert_eq!(missing.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.starts_with("error: Failed to find pip's default index URL: `PIP_INDEX_URL` is unset and `/nonexistent/python3 -m pip` named none (cannot run `/nonexistent/python3`"),
        "{stderr}"
    );
}

#[test]
fn snapshot_records_the_manifest_closure() {
    let fixture = fixture();
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("stack.yaml");
    std::fs::write(
        &manifest,
        format!(
            "schema: 1\nname: fixture-stack\ntarget:\n  python: /opt/env/bin/python3\n  python_version: \"3.12\"\n  glibc: \"2.35\"\nindexes:\n  - {{ name: pinned, url: \"{}\", explicit: true }}\n  - {{ name: default }}\npackages:\n  alpha:\n    version: \">=1\"\n    extras: [g]\n  gamma:\n    version: \"==1.0\"\n    index: pinned\noverrides:\n  - requirement: beta==1.5\n    reason: the fixture says so\n",
            fixture.server.url("/nothing/")
        ),
    )
    .unwrap();
    let output_file = dir.path().join("snapshot.json");
    let cache = dir.path().join("cache");
    let output = index_snapshot(
        &manifest,
        &output_file,
        &[
            "--cache-dir",
            cache.to_str().unwrap(),
            "--retries",
            "0",
            "--with",
            "norange",
        ],
        &[("PIP_INDEX_URL", &fixture.server.url("/simple/"))],
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("index `default` at http://127.0.0.1:"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&output_file).unwrap();
    assert!(!text.contains("http"), "a snapshot holds no URL");
    let snapshot = Snapshot::parse(&text, "snapshot.json").unwrap();
    assert!(
        snapshot
            .how
            .contains("--python-version 3.12 --platform manylinux_2_35_x86_64")
    );
    let default = snapshot.universe.index("default").unwrap();
    assert_eq!(versions(default, "alpha"), ["1.0", "2.0"]);
    assert_eq!(
        versions(default, "beta"),
        ["1.5"],
        "the override replaces `beta>=1.0`"
    );
    assert!(
        versions(default, "gamma").is_empty(),
        "gamma is pinned elsewhere"
    );
    assert_eq!(
        versions(default, "norange"),
        ["1.0"],
        "`--with` adds a root"
    );
    assert!(
        snapshot.how.ends_with("--with 'norange'"),
        "{}",
        snapshot.how
    );
    let alpha_1 = &default.packages[&name("alpha")][0];
    assert_eq!(
        alpha_1.files[0].sha256.as_ref().unwrap().as_str(),
        fixture.alpha_1.sha256
    );
    assert!(stdout.contains("note: skipped `gamma`"), "{stdout}");

    // Without `--cache-dir` the cache lives under `$XDG_CACHE_HOME/cuda-upgrade`.
    let cache_home = dir.path().join("xdg");
    let defaulted = index_snapshot(
        &manifest,
        &output_file,
        &["--no-deps"],
        &[
            ("PIP_INDEX_URL", &fixture.server.url("/simple/")),
            ("XDG_CACHE_HOME", cache_home.to_str().unwrap()),
        ],
    );
    assert_eq!(defaulted.status.code(), Some(0));
    assert!(cache_home.join("cuda-upgrade/simple-v1").is_dir());
    assert!(cache_home.join("cuda-upgrade/metadata-v1").is_dir());

    // An index that keeps failing: exit 1, the URL and index named, no snapshot written.
    let broken = dir.path().join("broken.yaml");
    std::fs::write(
        &broken,
        format!(
            "schema: 1\nname: broken\ntarget:\n  python: /opt/env/bin/python3\n  python_version: \"3.12\"\nindexes:\n  - {{ name: broken, url: \"{}\" }}\npackages:\n  down: \">=1\"\n",
            fixture.server.url("/simple/")
        ),
    )
    .unwrap();
    let failed_file = dir.path().join("failed.json");
    let failed = index_snapshot(
        &broken,
        &failed_file,
        &["--no-cache", "--retries", "1"],
        &[],
    );
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "error: Failed to fetch `{}` from index `broken`: HTTP 503 Service Unavailable\n",
            fixture.server.url("/simple/down/")
        )
    );
    assert!(!failed_file.exists());

    // A second run revalidates: every page answers 304.
    fixture.server.clear_log();
    let again = index_snapshot(
        &manifest,
        &output_file,
        &["--cache-dir", cache.to_str().unwrap()],
        &[("PIP_INDEX_URL", &fixture.server.url("/simple/"))],
    );
    assert_eq!(again.status.code(), Some(0));
    let log = fixture.server.log();
    let alpha: Vec<_> = log.iter().filter(|l| l.path == "/simple/alpha/").collect();
    assert_eq!(alpha.len(), 1);
    assert_eq!(alpha[0].status, 304);
    assert!(
        log.iter().all(|logged| !logged.path.starts_with("/files/")),
        "metadata came from the cache"
    );
}

/// The seed manifest, copied into `dir` with its patch, its indexes pointed at `server`:
/// `pytorch-cu130` at `/whl/cu130/`, `sgl-cu130` at `/sgl/cu130/`.
fn seed_manifest_on(server: &Server, dir: &Path) -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("manifests/sglang-0.5.9-cu130.yaml")).unwrap();
    let text = text
        .replace(
            "url: https://download.pytorch.org/whl/cu130",
            &format!("url: {}", server.url("/whl/cu130/")),
        )
        .replace(
            "url: https://docs.sglang.ai/whl/cu130/",
            &format!("url: {}", server.url("/sgl/cu130/")),
        );
    assert!(!text.contains("https://download.pytorch.org/whl"));
    assert!(!text.contains("https://docs.sglang.ai/whl"));
    std::fs::create_dir_all(dir.join("patches")).unwrap();
    std::fs::copy(
        root.join("manifests/patches/sglang-0.5.9-flashinfer-0.6.4.patch"),
        dir.join("patches/sglang-0.5.9-flashinfer-0.6.4.patch"),
    )
    .unwrap();
    let manifest = dir.join("seed.yaml");
    std::fs::write(&manifest, text).unwrap();
    manifest
}

/// `upgrade` run from the repository root, with pip's default index on loopback.
fn upgrade_at(server: &Server, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_upgrade"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("PIP_INDEX_URL", server.url("/simple/"))
        .env_remove("PIP_CONFIG_FILE")
        .output()
        .unwrap()
}

const TORCHAUDIO: &str = "torchaudio-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl";
const H200_FACTS: &str = "tests/fixtures/facts/h200.facts.json";

/// Serve `bytes` as the torchaudio wheel, on a PEP 503 page that announces `fragment`
/// and also lists the cp311 build.
fn serve_torchaudio(server: &Server, bytes: &[u8], fragment: Option<&str>) {
    let fragment = fragment.map_or(String::new(), |digest| format!("#sha256={digest}"));
    let cp311 = "torchaudio-2.9.1+cu130-cp311-cp311-manylinux_2_28_x86_64.whl";
    server.route(
        "/whl/cu130/torchaudio/",
        Route::ok(
            "text/html",
            format!(
                "<!DOCTYPE html><html><body>\n\
                 <a href=\"/whl/cu130/{cp311}\">{cp311}</a><br/>\n\
                 <a href=\"/whl/cu130/{TORCHAUDIO}{fragment}\" data-requires-python=\"&gt;=3.10\">{TORCHAUDIO}</a><br/>\n\
                 </body></html>"
            ),
        ),
    );
    server.route(
        &format!("/whl/cu130/{cp311}"),
        Route::file(b"cp311".to_vec()),
    );
    server.route(
        &format!("/whl/cu130/{TORCHAUDIO}"),
        Route::file(bytes.to_vec()),
    );
}

/// The seed stack's torchaudio wheel has no public sha256: `plan` blocks the pip step
/// and names the one command that records it; that command, run as printed, downloads
/// exactly the locked file from its index (loopback here), records the sha256 of the
/// bytes served beside the manifest, and the next `plan` installs it with that hash.
#[test]
fn index_hash_records_the_digest_plan_asks_for() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let manifest = seed_manifest_on(&server, dir.path());
    let manifest_text = manifest.display().to_string();
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    serve_torchaudio(&server, &bytes, None);

    let plan = |format: &str| {
        upgrade_at(
            &server,
            &[
                "plan",
                &manifest_text,
                "--facts",
                H200_FACTS,
                "--format",
                format,
            ],
        )
    };
    let before = plan("text");
    // Blocked steps fail the plan: the facts' toolkit blocks too, so exit 1.
    assert_eq!(before.status.code(), Some(1), "{before:?}");
    let before = String::from_utf8(before.stdout).unwrap();
    let blocked = before
        .lines()
        .find(|line| line.contains("cannot be installed with `--require-hashes`"))
        .unwrap_or_else(|| panic!("no pip block in:\n{before}"));
    // sgl-kernel's digest comes from its index page; only torchaudio's is missing.
    assert!(!blocked.contains("sgl_kernel"), "{blocked}");
    assert!(
        blocked.contains(&format!(
            "`torchaudio==2.9.1+cu130`: the lock has no sha256 for `{TORCHAUDIO}`"
        )),
        "{blocked}"
    );
    let printed = blocked
        .split_once("record it with: ")
        .map(|(_, command)| command)
        .unwrap();
    assert_eq!(
        printed,
        format!("upgrade index hash {manifest_text} --facts {H200_FACTS} --package torchaudio")
    );

    // Run the printed command as printed (no cache, so the test reads nothing stale).
    let words = cuda_upgrade::shell::split(printed).unwrap();
    assert_eq!(words[0], "upgrade");
    let mut args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    args.push("--no-cache");
    let recorded = upgrade_at(&server, &args);
    let stdout = String::from_utf8_lossy(&recorded.stdout);
    assert_eq!(recorded.status.code(), Some(0), "{recorded:?}");
    let served = support::sha256(&bytes);
    assert!(
        stdout.contains(&format!(
            "recorded `{TORCHAUDIO}` (`torchaudio==2.9.1+cu130` from index `pytorch-cu130`, 300000 bytes): sha256 {served}"
        )),
        "{stdout}"
    );
    // Only the locked file was downloaded, whole and once; not its cp311 sibling.
    let downloads: Vec<_> = server
        .log()
        .into_iter()
        .filter(|logged| logged.path.ends_with(".whl"))
        .collect();
    assert_eq!(downloads.len(), 1, "{downloads:?}");
    assert_eq!(downloads[0].path, format!("/whl/cu130/{TORCHAUDIO}"));
    assert_eq!(downloads[0].range, None);
    assert_eq!(downloads[0].body_bytes, bytes.len());

    let hashes_path = dir.path().join("seed.hashes.json");
    let hashes_text = std::fs::read_to_string(&hashes_path).unwrap();
    let hashes: serde_json::Value = serde_json::from_str(&hashes_text).unwrap();
    assert_eq!(hashes["schema"], 1);
    assert_eq!(hashes["files"].as_array().unwrap().len(), 1);
    let entry = &hashes["files"][0];
    assert_eq!(entry["index"], "pytorch-cu130");
    assert_eq!(entry["filename"], TORCHAUDIO);
    assert_eq!(entry["sha256"], served.as_str());
    assert_eq!(entry["size"], 300_000);
    assert!(!hashes_text.contains("127.0.0.1"), "{hashes_text}");

    // The next plan installs the file with the recorded hash: the pip step is not blocked.
    let after = plan("json");
    let text = String::from_utf8(after.stdout.clone()).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    // Only the toolkit (installed by other means in the facts) is still blocked.
    assert_eq!(json["summary"]["blocked"], 1, "{text}");
    assert_eq!(after.status.code(), Some(1), "{after:?}");
    assert!(!text.contains("no sha256"), "{text}");
    assert!(!text.contains("index hash"), "{text}");
    let lock = upgrade_at(&server, &["lock", &manifest_text, "--facts", H200_FACTS]);
    assert_eq!(lock.status.code(), Some(0), "{lock:?}");
    let lock = String::from_utf8(lock.stdout).unwrap();
    assert!(
        lock.contains(&format!(
            "torchaudio==2.9.1+cu130  # pytorch-cu130: {TORCHAUDIO} sha256:{served}"
        )),
        "{lock}"
    );
    assert!(!lock.contains("sha256:unknown"), "{lock}");

    // Again: nothing left to record, nothing downloaded.
    server.clear_log();
    let again = upgrade_at(&server, &args);
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("already has a sha256"),
        "{again:?}"
    );
    assert!(
        server
            .log()
            .iter()
            .all(|logged| !logged.path.ends_with(".whl"))
    );
}

/// Bytes that contradict the digest the page announces are not recorded; a package
/// the lock does not install from an index is refused by name.
#[test]
fn index_hash_refuses_bytes_that_contradict_the_page() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let manifest = seed_manifest_on(&server, dir.path());
    let manifest_text = manifest.display().to_string();
    let announced = "0".repeat(64);
    serve_torchaudio(&server, b"not the announced bytes", Some(&announced));
    let output = upgrade_at(
        &server,
        &[
            "index",
            "hash",
            &manifest_text,
            "--facts",
            H200_FACTS,
            "--package",
            "torchaudio",
            "--no-cache",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        stderr.contains(&format!("the index says `{announced}`")),
        "{stderr}"
    );
    assert!(!dir.path().join("seed.hashes.json").exists());

    let output = upgrade_at(
        &server,
        &[
            "index",
            "hash",
            &manifest_text,
            "--package",
            "sglang",
            "--no-cache",
        ],
    );
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("has no index package of that name"),
        "{output:?}"
    );
}
