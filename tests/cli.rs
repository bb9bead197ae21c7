//! The `upgrade` binary as a user runs it: `validate` and `diff`.
//!
//! See: issue 2 (foundation) — the malformed-manifest corpus, the seed diff, and the
//! guarantee that no manifest value reaches any output format unescaped.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test fails loudly at the first surprise"
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::cli::{command, stderr, stdout, upgrade, upgrade_in};

fn invalid_corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/manifests/invalid");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// A manifest named without a directory (`upgrade validate seed.yaml` run beside it)
/// finds its patches in the current directory.
#[test]
fn patches_resolve_beside_a_manifest_named_without_a_directory() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("patches")).unwrap();
    let patch = "patches/sglang-0.5.9-flashinfer-0.6.4.patch";
    std::fs::copy(root.join("manifests").join(patch), dir.path().join(patch)).unwrap();
    std::fs::copy(
        root.join("manifests/sglang-0.5.9-cu130.yaml"),
        dir.path().join("seed.yaml"),
    )
    .unwrap();
    let output = upgrade_in(dir.path(), &["validate", "seed.yaml"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // The node verbs read it through the pipeline's loader: the same directory.
    let facts = root.join("tests/fixtures/facts/h200.facts.json");
    let output = upgrade_in(
        dir.path(),
        &["plan", "seed.yaml", "--facts", facts.to_str().unwrap()],
    );
    // The plan is printed; its blocked steps (the facts' toolkit, torchaudio's hash)
    // fail it, but the patch was found.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).is_empty(), "{}", stderr(&output));
    assert!(stdout(&output).contains("2 blocked"), "{}", stdout(&output));
}

#[test]
fn shipped_manifests_are_valid() {
    let output = upgrade(&[
        "validate",
        "manifests/sglang-0.5.9-cu130.yaml",
        "manifests/cuda12.8-baseline.yaml",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("ok: manifests/sglang-0.5.9-cu130.yaml"));
}

/// Every file of the corpus exits 2 and reports each `# expect: LINE:COLUMN text` line
/// of its header at exactly that position.
#[test]
fn malformed_manifests_are_located() {
    let files = invalid_corpus();
    assert!(files.len() >= 25, "corpus has {} files", files.len());
    let mut all_text = String::new();
    for file in &files {
        let relative = file
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap()
            .to_str()
            .unwrap()
            .trim_start_matches('/')
            .to_string();
        let output = upgrade(&["validate", "--format", "json", &relative]);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{relative}: {}",
            stdout(&output)
        );
        let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
        let diagnostics = report["files"][0]["diagnostics"]
            .as_array()
            .unwrap()
            .clone();
        // Lossy: one file of the corpus is deliberately not UTF-8.
        let source = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
        let expectations: Vec<&str> = source
            .lines()
            .filter_map(|line| line.strip_prefix("# expect: "))
            .collect();
        assert!(
            !expectations.is_empty(),
            "{relative} has no `# expect:` line"
        );
        for expectation in expectations {
            let (location, text) = expectation.split_once(' ').unwrap();
            let (line, column) = location.split_once(':').unwrap();
            let found = diagnostics.iter().any(|d| {
                d["line"].as_u64() == line.parse().ok()
                    && d["column"].as_u64() == column.parse().ok()
                    && (d["message"].as_str().unwrap().contains(text)
                        || d["hint"].as_str().is_some_and(|hint| hint.contains(text)))
            });
            assert!(
                found,
                "{relative}: no diagnostic `{expectation}` in {diagnostics:#?}"
            );
        }
        let text = upgrade(&["validate", &relative]);
        assert_eq!(text.status.code(), Some(2));
        all_text.push_str(&stderr(&text));
    }
    insta::assert_snapshot!("malformed_corpus", all_text);
}

#[test]
fn validate_reports_every_file_and_exits_2_if_any_is_invalid() {
    let output = upgrade(&[
        "validate",
        "manifests/sglang-0.5.9-cu130.yaml",
        "tests/manifests/invalid/bad-specifier.yaml",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stdout(&output).contains("ok: manifests/sglang-0.5.9-cu130.yaml"));
    assert!(stderr(&output).contains("tests/manifests/invalid/bad-specifier.yaml:7:10: error:"));
}

#[test]
fn missing_file_is_invalid_input() {
    let output = upgrade(&["validate", "manifests/does-not-exist.yaml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("Failed to read manifest `manifests/does-not-exist.yaml`"));
}

#[test]
fn unknown_flag_is_invalid_input() {
    let output = upgrade(&["diff", "--no-such-flag"]);
    assert_eq!(output.status.code(), Some(2));
}

/// See: issue 2, "Done when": toolkit 12.8 → 13.0.1 with driver 580.82.07, torch's
/// variant change, the flashinfer override with its reason, new env vars and ldconfig.
#[test]
fn seed_diff_in_markdown() {
    let output = upgrade(&[
        "diff",
        "manifests/cuda12.8-baseline.yaml",
        "manifests/sglang-0.5.9-cu130.yaml",
        "--format",
        "markdown",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let markdown = stdout(&output);
    let expected = [
        "**changed** `toolkit.version`: `12.8` → `13.0.1` — *upgrade*",
        "driver minimum: ≥ 570.26 → ≥ 580.82.07",
        "**changed** `torch`: `==2.9.1` → `==2.9.1+cu130` — *variant change: default build → +cu130*",
        "**added** `flashinfer-python`: `flashinfer-python==0.6.4`",
        "reason: sglang 0.5.9's metadata pins flashinfer\\_python==0.6.3",
        "**added** `SGLANG_DISABLE_CUDNN_CHECK`: `1`",
        "**added** `ldconfig.paths`: `/usr/local/cuda-13.0/targets/x86_64-linux/lib`",
        "**added** `ldconfig.expect`: `libnvrtc.so.13`",
    ];
    for line in expected {
        assert!(markdown.contains(line), "missing `{line}` in:\n{markdown}");
    }
    insta::assert_snapshot!("seed_diff_markdown", markdown);
}

#[test]
fn seed_diff_json_and_exit_code() {
    let output = upgrade(&[
        "diff",
        "manifests/cuda12.8-baseline.yaml",
        "manifests/sglang-0.5.9-cu130.yaml",
        "--format",
        "json",
        "--exit-code",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let diff: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let torch = diff["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["subject"] == "torch")
        .unwrap();
    assert_eq!(torch["change"], "changed");
    assert_eq!(torch["direction"]["kind"], "variant_change");
    assert_eq!(torch["direction"]["to"], "+cu130");

    let same = upgrade(&[
        "diff",
        "manifests/sglang-0.5.9-cu130.yaml",
        "manifests/sglang-0.5.9-cu130.yaml",
        "--exit-code",
    ]);
    assert_eq!(same.status.code(), Some(0));
    assert!(stdout(&same).contains("no semantic changes"));
}

#[test]
fn diff_reads_git_revisions() {
    let repo = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(args)
            .current_dir(repo.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    let manifest = "schema: 1\nname: x\ntarget: { python: /opt/ml-env/bin/python3 }\npackages:\n  torch: \"==2.9.1\"\n";
    std::fs::write(repo.path().join("m.yaml"), manifest).unwrap();
    git(&["init", "-q"]);
    git(&["add", "m.yaml"]);
    git(&["commit", "-qm", "base"]);
    std::fs::write(
        repo.path().join("m.yaml"),
        manifest.replace("==2.9.1", "==2.9.1+cu130"),
    )
    .unwrap();
    let output = upgrade_in(repo.path(), &["diff", "HEAD:m.yaml", "m.yaml"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output)
            .contains("torch: ==2.9.1 → ==2.9.1+cu130 (variant change: default build → +cu130)")
    );

    let missing = upgrade_in(repo.path(), &["diff", "HEAD:nope.yaml", "m.yaml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("Failed to read `nope.yaml` at git revision `HEAD`"));

    std::fs::write(repo.path().join("bad.yaml"), "schema: 1\nname: x\n").unwrap();
    git(&["add", "bad.yaml"]);
    git(&["commit", "-qm", "bad"]);
    let invalid = upgrade_in(repo.path(), &["diff", "HEAD:bad.yaml", "m.yaml"]);
    assert_eq!(invalid.status.code(), Some(2));
    assert!(stderr(&invalid).contains("HEAD:bad.yaml:1:1: missing required key `target`"));
}

/// A value that tries every trick a manifest still accepts: markdown, HTML, a new line
/// that forges a line of output, shell syntax. Terminal escapes and bidirectional
/// overrides are refused by validation (see `control_characters_are_refused_and_escaped`).
const HOSTILE: &str = "x`y``*em*_u_<b>b</b>[l](http://e.invalid)\n# forged | row[31m$(id)";

fn hostile_manifest(secret: &str) -> String {
    let quoted = serde_json::to_string(HOSTILE).unwrap();
    // Names, paths and patterns are one line: the same tricks without the line break.
    let line = serde_json::to_string(&HOSTILE.replace('\n', " ")).unwrap();
    let path = serde_json::to_string(&format!("/opt/{}", HOSTILE.replace('\n', " "))).unwrap();
    format!(
        r#"schema: 1
name: {line}
description: {quoted}
target:
  python: {path}
  base_python: {path}
toolkit:
  version: "13.0.1"
  prefix: {path}
  installer: runfile
  source: {{ url: "https://example.invalid/{HOSTILE_URL}", sha256: 4c7ac59d1f41d67be27d140a4622801738ad71088570a0facfd6ec878a4c4100 }}
  provenance: {quoted}
indexes:
  - {{ name: default, provenance: {quoted} }}
packages:
  torch: {{ version: "==2.9.1", reason: {quoted} }}
overrides:
  - {{ requirement: "flashinfer-python==0.6.4", reason: {quoted} }}
ldconfig:
  file: /etc/ld.so.conf.d/x.conf
  paths: [{path}]
  expect: [libnvrtc.so.13]
env:
  PLAIN: {quoted}
  TOKEN: {{ value: {secret}, secret: true }}
verify:
  launch: [python3, {line}]
  workdir: {path}
  log: {path}
  ready: {line}
  fail: [{line}]
  timeout: 1m
  health: "http://127.0.0.1:1/{HOSTILE_URL}"
"#,
        HOSTILE_URL = "a%60b%3Cscript%3E"
    )
}

const PLAIN: &str = "schema: 1\nname: plain\ntarget: { python: /opt/ml-env/bin/python3 }\nenv:\n  TOKEN: { value: old-secret-value, secret: true }\n";

#[test]
fn hostile_values_are_escaped_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "s3cr3t-token-value";
    std::fs::write(dir.path().join("plain.yaml"), PLAIN).unwrap();
    std::fs::write(dir.path().join("hostile.yaml"), hostile_manifest(secret)).unwrap();
    let valid = upgrade_in(dir.path(), &["validate", "hostile.yaml"]);
    assert_eq!(valid.status.code(), Some(0), "{}", stderr(&valid));

    for format in ["text", "markdown", "json"] {
        let output = upgrade_in(
            dir.path(),
            &["diff", "plain.yaml", "hostile.yaml", "--format", format],
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let text = stdout(&output);
        assert!(!text.contains(secret), "{format}: secret leaked");
        assert!(
            !text.contains("old-secret-value"),
            "{format}: old secret leaked"
        );
        assert!(!text.contains('\u{1b}'), "{format}: raw escape sequence");
        assert!(
            !text.contains("\n# forged"),
            "{format}: a value forged a line"
        );
        match format {
            "json" => {
                let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
                let plain = parsed["entries"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|entry| entry["subject"] == "PLAIN")
                    .unwrap();
                assert_eq!(plain["new"], HOSTILE, "JSON keeps the exact value");
            }
            "markdown" => assert_markdown_is_inert(&text),
            _ => {}
        }
    }
}

/// Parse the markdown as a renderer would: the only markup is the tool's own.
fn assert_markdown_is_inert(markdown: &str) {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let mut in_heading = false;
    let mut heading = String::new();
    for event in Parser::new(markdown) {
        match event {
            Event::Html(html) | Event::InlineHtml(html) => panic!("raw HTML in markdown: {html:?}"),
            Event::Start(Tag::Link { .. } | Tag::Image { .. }) => panic!("a value became a link"),
            Event::Start(Tag::Table(_)) => panic!("a value became a table"),
            Event::Start(Tag::Heading { .. }) => {
                in_heading = true;
                heading.clear();
            }
            Event::End(TagEnd::Heading(_)) => {
                in_heading = false;
                let known = heading.starts_with("Stack diff:")
                    || [
                        "Manifest",
                        "Target",
                        "CUDA toolkit",
                        "Indexes",
                        "Packages",
                        "Overrides",
                        "Constraints",
                        "ldconfig",
                        "Environment",
                        "Verification launch",
                        "Resolution (locked closure, offline)",
                        "Hazards",
                    ]
                    .contains(&heading.as_str());
                assert!(known, "a value became a heading: {heading:?}");
            }
            Event::Text(text) | Event::Code(text) if in_heading => heading.push_str(&text),
            _ => {}
        }
    }
}

/// See: issue 9 — control characters and bidirectional overrides are refused with their
/// location, and the report that quotes them escapes them.
#[test]
fn control_characters_are_refused_and_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = "schema: 1\nname: \"a\\e[31mred\"\ndescription: \"safe\\u202Eexe.txt\"\ntarget: { python: \"/opt/env/bin/python3\\u202E\" }\n";
    std::fs::write(dir.path().join("m.yaml"), manifest).unwrap();
    let output = upgrade_in(dir.path(), &["validate", "m.yaml"]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains("m.yaml:2:7: error: invalid `name`: control character U+001B"));
    assert!(text.contains(
        "m.yaml:3:14: error: invalid `description`: bidirectional control character U+202E"
    ));
    assert!(text.contains("m.yaml:4:19: error: invalid `target.python`"));
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{202e}'),
        "{text}"
    );
}

/// See: issue 9 — a byte order mark is accepted; a file over 16 MiB is refused.
#[test]
fn byte_order_mark_is_accepted_and_size_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = "\u{feff}schema: 1\nname: bom\ntarget: { python: /opt/ml-env/bin/python3 }\n";
    std::fs::write(dir.path().join("bom.yaml"), manifest).unwrap();
    let output = upgrade_in(dir.path(), &["validate", "bom.yaml"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    let mut large = String::from(
        "schema: 1\nname: large\ntarget: { python: /opt/ml-env/bin/python3 }\ndescription: \"",
    );
    large.push_str(&"x".repeat(16 * 1024 * 1024));
    large.push_str("\"\n");
    std::fs::write(dir.path().join("large.yaml"), large).unwrap();
    let output = upgrade_in(dir.path(), &["validate", "large.yaml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("more than the limit of 16 MiB"),
        "{}",
        stderr(&output)
    );
}

/// See: issue 9 — a `REV:PATH` argument that starts with `-` never reaches `git show`
/// as an option (`--output=FILE` would create the file).
#[test]
fn diff_revision_is_never_an_option() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("created");
    let argument = format!("--output={}:m.yaml", target.display());
    let output = upgrade_in(
        dir.path(),
        &["diff", "--", &argument, "/nonexistent/m.yaml"],
    );
    assert_ne!(output.status.code(), Some(0));
    assert!(!target.exists(), "git show wrote {}", target.display());
    assert!(
        stderr(&output).contains("a revision does not start with `-`"),
        "{}",
        stderr(&output)
    );
}

/// See: issue 9 — credentials in index and git URLs never appear in any diff format or
/// in validation messages.
#[test]
fn url_credentials_are_masked_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = |token: &str| {
        format!(
            "schema: 1\nname: creds\ntarget: {{ python: /opt/ml-env/bin/python3 }}\nindexes:\n  - {{ name: private, url: \"https://user:{token}@index.example.invalid/simple?token={token}\" }}\npackages:\n  torch: \"==2.9.1\"\n  sglang: {{ git: \"https://{token}@git.example.invalid/org/sglang\", rev: v0.5.9 }}\n"
        )
    };
    std::fs::write(dir.path().join("old.yaml"), manifest("0ld-t0ken-value")).unwrap();
    std::fs::write(dir.path().join("new.yaml"), manifest("n3w-t0ken-value")).unwrap();
    for format in ["text", "markdown", "json"] {
        let output = upgrade_in(
            dir.path(),
            &["diff", "old.yaml", "new.yaml", "--format", format],
        );
        let text = format!("{}{}", stdout(&output), stderr(&output));
        assert!(!text.contains("t0ken-value"), "{format}: {text}");
        assert!(
            text.contains("user:***@index.example.invalid"),
            "{format}: {text}"
        );
        assert!(
            text.contains("only the credentials in the URL changed"),
            "{format}: {text}"
        );
    }
    let bad = manifest("0ld-t0ken-value")
        .replace("rev: v0.5.9", "rev: \"-x\"")
        .replace("https://user", "ftp://user");
    std::fs::write(dir.path().join("bad.yaml"), bad).unwrap();
    let output = upgrade_in(dir.path(), &["validate", "--format", "json", "bad.yaml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        !stdout(&output).contains("t0ken-value"),
        "{}",
        stdout(&output)
    );
    assert!(
        stdout(&output).contains("ftp://user:***@"),
        "{}",
        stdout(&output)
    );
}

/// See: issue 20: completion scripts for bash, zsh and fish name every verb; the man
/// page is roff naming them too; `--version` names the embedded snapshot and rules.
#[test]
fn completion_man_page_and_version() {
    let verbs = ["validate", "init", "plan", "apply", "completion", "man"];
    for (shell, marker) in [
        ("bash", "complete -F _upgrade"),
        ("zsh", "#compdef upgrade"),
        ("fish", "complete -c upgrade"),
    ] {
        let output = upgrade(&["completion", shell]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let script = stdout(&output);
        assert!(script.contains(marker), "{shell}: {script}");
        for verb in verbs {
            assert!(script.contains(verb), "{shell} lacks `{verb}`");
        }
    }
    // bash itself parses the script.
    let output = upgrade(&["completion", "bash"]);
    let check = Command::new("bash")
        .arg("-n")
        .arg("-c")
        .arg(stdout(&output))
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );

    let output = upgrade(&["man"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let page = stdout(&output);
    assert!(page.contains(".TH upgrade 1"), "{page}");
    assert!(page.contains(".SH NAME"), "{page}");
    for verb in verbs {
        assert!(page.contains(verb), "the man page lacks `{verb}`");
    }

    let output = upgrade(&["--version"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let version = stdout(&output);
    let sum = Command::new("sha256sum")
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("manifests/snapshots/sglang-0.5.9-cu130.json"),
        )
        .output()
        .unwrap();
    let digest = String::from_utf8(sum.stdout).unwrap();
    let digest = digest.split_whitespace().next().unwrap().to_string();
    assert!(
        version.starts_with(&format!("upgrade {}", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    assert!(version.contains(&format!("sha256:{digest}")), "{version}");
    assert!(version.contains("(2026-12-02)"), "{version}");
    assert!(version.contains("rules: sha256:"), "{version}");
}

/// See: issue 20: the flags a fleet operator gives every time come from `UPGRADE_*`
/// variables, and `--help` names them.
#[test]
fn snapshot_and_ssh_config_come_from_the_environment() {
    let help = stdout(&upgrade(&["plan", "--help"]));
    for name in [
        "UPGRADE_SNAPSHOT",
        "UPGRADE_SSH_CONFIG",
        "UPGRADE_CACHE_DIR",
    ] {
        assert!(help.contains(&format!("env: {name}")), "{help}");
    }
    let output = upgrade_with(
        &[
            "plan",
            "manifests/sglang-0.5.9-cu130.yaml",
            "--facts",
            "tests/fixtures/facts/h200.facts.json",
        ],
        &[("UPGRADE_SNAPSHOT", "/nonexistent/snapshot-from-env.json")],
    );
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("/nonexistent/snapshot-from-env.json"),
        "{}",
        stderr(&output)
    );
}

fn upgrade_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = command();
    command
        .args(args)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("UPGRADE_INVENTORY");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("run upgrade")
}

/// See: issue 20: `-q` keeps only errors and the result, `-v` is one flag for every
/// verb, before or after it.
#[test]
fn quiet_and_verbose_mean_the_same_for_every_verb() {
    let dir = tempfile::tempdir().unwrap();
    let facts = "tests/fixtures/facts/h200.facts.json";
    let written = dir.path().join("node.yaml");
    let written = written.to_str().unwrap();
    let normal = upgrade_with(&["init", "--facts", facts, "-o", written], &[]);
    assert_eq!(normal.status.code(), Some(0), "{}", stderr(&normal));
    assert!(stderr(&normal).starts_with("wrote "), "{}", stderr(&normal));
    let quiet = upgrade_with(
        &["-q", "init", "--facts", facts, "-o", written, "--force"],
        &[],
    );
    assert_eq!(quiet.status.code(), Some(0), "{}", stderr(&quiet));
    assert_eq!(stderr(&quiet), "", "-q: no notes");
    // An error is still said with `-q`, after the verb too.
    let failed = upgrade_with(
        &["plan", "/nonexistent/m.yaml", "--facts", facts, "-q"],
        &[],
    );
    assert_eq!(failed.status.code(), Some(2));
    assert!(
        stderr(&failed).starts_with("error: "),
        "{}",
        stderr(&failed)
    );
    let both = upgrade_with(
        &["-q", "-v", "validate", "manifests/sglang-0.5.9-cu130.yaml"],
        &[],
    );
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));

    let plan = [
        "plan",
        "manifests/sglang-0.5.9-cu130.yaml",
        "--facts",
        facts,
    ];
    let short = stdout(&upgrade_with(&plan, &[]));
    let before = stdout(&upgrade_with(&[&["-v"], &plan[..]].concat(), &[]));
    let after = stdout(&upgrade_with(&[&plan[..], &["--verbose"]].concat(), &[]));
    assert_eq!(before, after);
    assert!(
        before.lines().count() > short.lines().count() + 100,
        "-v lists every package:\n{before}"
    );
}

/// See: issue 20: `--color auto|always|never`, `NO_COLOR` and `CLICOLOR_FORCE`, for
/// the tool's own `error:` and for clap's usage errors alike.
#[test]
fn color_follows_the_flag_and_the_environment() {
    const RED: &str = "\u{1b}[1;31merror:\u{1b}[0m ";
    let failing = ["plan", "/nonexistent/m.yaml", "--facts", "x.json"];
    let colored = |args: &[&str], env: &[(&str, &str)]| {
        let text = stderr(&upgrade_with(args, env));
        assert!(text.contains("error:"), "{text}");
        text.contains('\u{1b}')
    };
    // Into a pipe, `auto` is plain unless forced.
    assert!(!colored(&failing, &[]));
    assert!(stderr(&upgrade_with(&failing, &[("CLICOLOR_FORCE", "1")])).starts_with(RED));
    assert!(!colored(
        &failing,
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]
    ));
    assert!(!colored(&failing, &[("CLICOLOR_FORCE", "0")]));
    let always = [&["--color", "always"], &failing[..]].concat();
    assert!(stderr(&upgrade_with(&always, &[("NO_COLOR", "1")])).starts_with(RED));
    let never = [&failing[..], &["--color=never"]].concat();
    assert!(!colored(&never, &[("CLICOLOR_FORCE", "1")]));
    // clap's usage errors take the same choice.
    assert!(colored(&["--color", "always", "plan"], &[]));
    assert!(!colored(
        &["--color", "never", "plan"],
        &[("CLICOLOR_FORCE", "1")]
    ));
    let bad = upgrade_with(&["--color", "sometimes", "validate", "x.yaml"], &[]);
    assert_eq!(bad.status.code(), Some(2));
}

/// See: issue 20: `UPGRADE_INVENTORY` stands for `-i`, and gives way to `--local` or
/// `--host` on the command line (no conflict); `-i` with `--host` still conflicts.
#[test]
fn inventory_comes_from_the_environment() {
    let help = stdout(&upgrade_with(&["apply", "--help"], &[]));
    assert!(help.contains("env: UPGRADE_INVENTORY"), "{help}");
    let manifest = "manifests/sglang-0.5.9-cu130.yaml";
    let from_env = upgrade_with(
        &["status", manifest],
        &[("UPGRADE_INVENTORY", "/nonexistent/inventory-from-env.yaml")],
    );
    assert_eq!(from_env.status.code(), Some(2));
    assert!(
        stderr(&from_env).contains("/nonexistent/inventory-from-env.yaml"),
        "{}",
        stderr(&from_env)
    );
    // `--local` names the node: the variable steps aside (the missing snapshot fails
    // the run before the probe).
    let host = upgrade_with(
        &[
            "status",
            manifest,
            "--local",
            "--snapshot",
            "/nonexistent/snap.json",
        ],
        &[("UPGRADE_INVENTORY", "/nonexistent/inventory-from-env.yaml")],
    );
    assert!(
        stderr(&host).contains("/nonexistent/snap.json")
            && !stderr(&host).contains("cannot be used with"),
        "{}",
        stderr(&host)
    );
    let both = upgrade_with(
        &["status", manifest, "--host", "node0", "-i", "x.yaml"],
        &[],
    );
    assert!(
        stderr(&both).contains("cannot be used with"),
        "{}",
        stderr(&both)
    );
}

/// See: issue 18, item 5: `--list-hosts` on every verb that takes `-i` prints the hosts
/// the inventory and `--limit` select, in order, with their batch under `apply --batch`,
/// and connects to none (the inventory's addresses answer nothing).
#[test]
fn list_hosts_prints_the_selection_in_order_with_batches_and_connects_to_none() {
    let dir = tempfile::tempdir().unwrap();
    let inventory = dir.path().join("inventory.ini");
    std::fs::write(
        &inventory,
        "[gpu]\nnode[0:4] ansible_host=192.0.2.1 ansible_port=9\n[login]\nlogin1\n",
    )
    .unwrap();
    let inventory = inventory.to_str().unwrap();
    let manifest = "manifests/sglang-0.5.9-cu130.yaml";
    let output = upgrade(&[
        "apply",
        manifest,
        "-i",
        inventory,
        "--limit",
        "gpu",
        "--batch",
        "1,50%,100%",
        "--list-hosts",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "node0  batch 1\nnode1  batch 2\nnode2  batch 2\nnode3  batch 2\nnode4  batch 3\n"
    );
    let output = upgrade(&[
        "apply",
        manifest,
        "-i",
        inventory,
        "--batch",
        "2",
        "--list-hosts",
        "--format",
        "json",
    ]);
    let listed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let batches: Vec<(String, u64)> = listed["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|host| {
            (
                host["host"].as_str().unwrap().to_string(),
                host["batch"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        batches,
        [
            ("node0", 1),
            ("node1", 1),
            ("node2", 2),
            ("node3", 2),
            ("node4", 3),
            ("login1", 3)
        ]
        .map(|(host, batch)| (host.to_string(), batch))
    );
    // plan, status and rollback take it too, without batches.
    for verb in [
        vec!["plan", manifest],
        vec!["status", manifest],
        vec!["rollback"],
    ] {
        let mut args = verb.clone();
        args.extend(["-i", inventory, "--limit", "gpu:!node1", "--list-hosts"]);
        let output = upgrade(&args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{verb:?}: {}",
            stderr(&output)
        );
        assert_eq!(stdout(&output), "node0\nnode2\nnode3\nnode4\n", "{verb:?}");
    }
    // A pattern that matches nothing is invalid input, as for a run.
    let output = upgrade(&[
        "status",
        manifest,
        "-i",
        inventory,
        "--limit",
        "rack9",
        "--list-hosts",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("rack9"), "{}", stderr(&output));
    // Without an inventory there is nothing to list: refused, never a run on `--host`.
    let output = upgrade(&[
        "apply",
        manifest,
        "--host",
        "node0",
        "--list-hosts",
        "--yes",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--list-hosts"),
        "{}",
        stderr(&output)
    );
}

/// See: issue 18, item 2: `--batch` takes a count, a percentage or Ansible's `serial`
/// list; a batch of none, a percentage over 100 and a list with a hole are refused with
/// the entry named, and `--pause-after-canary` needs batches.
#[test]
fn batch_lists_are_parsed_and_bad_entries_named() {
    let dir = tempfile::tempdir().unwrap();
    let inventory = dir.path().join("inventory.yml");
    std::fs::write(&inventory, "all:\n  hosts:\n    node[0:9]:\n").unwrap();
    let inventory = inventory.to_str().unwrap();
    let list = |batch: &str| {
        let output = upgrade(&[
            "apply",
            "manifests/sglang-0.5.9-cu130.yaml",
            "-i",
            inventory,
            "--batch",
            batch,
            "--list-hosts",
        ]);
        let batches: Vec<String> = stdout(&output)
            .lines()
            .map(|line| line.rsplit(' ').next().unwrap().to_string())
            .collect();
        (output, batches.join(""))
    };
    for (batch, wanted) in [
        ("1,10%,100%", "1233333333"),
        ("3", "1112223334"),
        ("25%", "1112223334"),
        ("1,2", "1223344556"),
        ("100%", "1111111111"),
    ] {
        let (output, batches) = list(batch);
        assert!(output.status.success(), "{batch}: {}", stderr(&output));
        assert_eq!(batches, wanted, "{batch}");
    }
    for (batch, named) in [
        ("1,0,100%", "`0`"),
        ("150%", "`150%`"),
        ("1,,2", "``"),
        ("x", "`x`"),
    ] {
        let (output, _) = list(batch);
        assert_eq!(output.status.code(), Some(2), "{batch}");
        assert!(
            stderr(&output).contains(named),
            "{batch}: {}",
            stderr(&output)
        );
    }
    let output = upgrade(&[
        "apply",
        "manifests/sglang-0.5.9-cu130.yaml",
        "-i",
        inventory,
        "--pause-after-canary",
        "--yes",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--batch"), "{}", stderr(&output));
}

/// See: issue 33 — `--drain-name` is one node: `ALL`, a Slurm hostlist or a nodeset
/// (which drain the whole cluster, or several nodes, and leave them drained) are refused
/// before anything connects, and the flag cannot give every host of an inventory one name.
#[test]
fn a_drain_name_for_many_nodes_is_refused_before_anything_runs() {
    for name in ["ALL", "all", "node[1-4]", "node1,node2", "@gpu", "-x"] {
        let output = upgrade(&[
            "apply",
            "manifests/sglang-0.5.9-cu130.yaml",
            "--host",
            "node0",
            "--drain",
            "slurm",
            &format!("--drain-name={name}"),
            "--yes",
        ]);
        assert_eq!(output.status.code(), Some(2), "{name}: {}", stderr(&output));
        assert!(
            stderr(&output).contains("--drain-name"),
            "{name}: {}",
            stderr(&output)
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let inventory = dir.path().join("inventory.yml");
    std::fs::write(&inventory, "all:\n  hosts:\n    node0:\n    node1:\n").unwrap();
    let output = upgrade(&[
        "apply",
        "manifests/sglang-0.5.9-cu130.yaml",
        "-i",
        inventory.to_str().unwrap(),
        "--drain",
        "slurm",
        "--drain-name",
        "gpu1",
        "--yes",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("cannot be used with"),
        "{}",
        stderr(&output)
    );
}
