//! The resolution flags (`ResolutionArgs`) mean the same on every verb that gets a lock:
//! `lock`, `plan`, `status`, `diff`, `export`, `verify` and `apply`, each run with each
//! flag (or set of flags) against a fresh directory. A missing lock under `--locked` or
//! `--frozen` is named with the command that writes it, a stale one with what changed,
//! `--frozen` takes a stale lock as it is, `--snapshot`, `--rules` and `--pip-python`
//! are accepted everywhere, `--live` and `--offline` fail on the index (never as a usage
//! error; `--no-cache` wins over `UPGRADE_CACHE_DIR`, set for every run here), and the
//! combinations clap forbids are usage errors on every verb.
//!
//! Nothing here reaches the network (the one index is `127.0.0.1:9`) or depends on the
//! machine: the node of `plan` is the H200's facts moved into the test's directory, the
//! `--local` verbs find no interpreter there (so they stop before any change), and
//! `verify`'s launch is refused by an `nvidia-smi` on `PATH` that always fails.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

mod common;

use std::path::Path;
use std::process::Command;

use common::cli::{H200_FACTS, command_in};

/// Each verb that gets a lock, with the arguments that name its node. `{m}` is the
/// manifest, `{facts}` the H200's facts with its venv under the test's directory.
const VERBS: &[(&str, &[&str])] = &[
    ("lock", &["lock", "{m}"]),
    ("plan", &["plan", "{m}", "--facts", "{facts}"]),
    ("status", &["status", "{m}", "--local"]),
    ("diff", &["diff", "{m}", "{m}"]),
    ("export", &["export", "{m}", "--format", "requirements-txt"]),
    ("verify", &["verify", "{m}", "--local"]),
    (
        "apply",
        &["apply", "{m}", "--local", "--yes", "--no-verify"],
    ),
];

/// The lock file beside the manifest before the verb runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Beside {
    /// No lock file.
    None,
    /// `upgrade lock` of the manifest on the test snapshot.
    Fresh,
    /// That lock, then the manifest's `torch` changed from `>=2.9` to `>=2.8`.
    Stale,
}

/// An expected exit code and a text that stdout or stderr holds.
type Expect = (i32, &'static str);

/// A row: the flags, the lock beside the manifest, what every verb does, and the verbs
/// that do otherwise. In flags and texts: `{dir}` the test's directory, `{m}` the
/// manifest, `{snapshot}` a snapshot offering torch 2.9.1, `{rules}` a rules directory
/// pinning torch 2.9.1 to a package no index has.
struct Row {
    flags: &'static [&'static str],
    beside: Beside,
    every: Expect,
    except: &'static [(&'static str, Expect)],
}

/// What `verify` says once it is past the lock: its launch is refused.
const LAUNCH_REFUSED: Expect = (1, "verification refused: `nvidia-smi` failed: no GPU here");
/// What the `--local` verbs say once they have a lock: no interpreter to plan.
const NO_INTERPRETER: Expect = (2, "{dir}/venv/bin/python3` does not exist");
const NO_LOCK: &str =
    "Refusing lock `{dir}/m.lock.json`: there is no lock file; `upgrade lock {m}` writes it";
const STALE: &str =
    "it is stale for `{m}`: package torch: >=2.9 → >=2.8; `upgrade lock {m}` refreshes it";
const LIVE_FAILED: Expect = (1, "Failed to fetch `http://127.0.0.1:9/simple/torch/`");
const DIFF_SAME: Expect = (0, "no semantic changes");

const ROWS: &[Row] = &[
    Row {
        flags: &["--locked"],
        beside: Beside::None,
        every: (2, NO_LOCK),
        except: &[(
            "lock",
            (4, "no lock file for `{m}`; `upgrade lock {m}` writes it"),
        )],
    },
    Row {
        flags: &["--frozen"],
        beside: Beside::None,
        every: (2, NO_LOCK),
        except: &[(
            "lock",
            (4, "no lock file for `{m}`; `upgrade lock {m}` writes it"),
        )],
    },
    Row {
        flags: &["--locked"],
        beside: Beside::Fresh,
        every: (0, "torch==2.9.1"),
        except: &[
            (
                "lock",
                (0, "{dir}/m.lock.json: fresh for `{m}` (1 packages)"),
            ),
            ("plan", (0, "lock: {dir}/m.lock.json (fresh)")),
            ("status", NO_INTERPRETER),
            ("diff", DIFF_SAME),
            ("verify", NO_INTERPRETER),
            ("apply", NO_INTERPRETER),
        ],
    },
    Row {
        flags: &["--locked"],
        beside: Beside::Stale,
        every: (2, STALE),
        except: &[
            (
                "lock",
                (
                    4,
                    "  package torch: >=2.9 → >=2.8\nrefresh it: upgrade lock {m}",
                ),
            ),
            ("diff", (2, STALE)),
        ],
    },
    Row {
        flags: &["--frozen"],
        beside: Beside::Stale,
        every: (
            0,
            "lock: {dir}/m.lock.json (--frozen: used as it is, though stale: package torch: >=2.9 → >=2.8)",
        ),
        except: &[
            ("lock", (0, "torch==2.9.1  # local: torch-2.9.1-")),
            ("status", (2, "--frozen: used as it is, though stale")),
            ("diff", (0, "note: the lock beside `{m}` is stale")),
            ("verify", NO_INTERPRETER),
            ("apply", NO_INTERPRETER),
        ],
    },
    Row {
        flags: &[
            "--lock",
            "{dir}/other.lock.json",
            "--snapshot",
            "{snapshot}",
        ],
        beside: Beside::Fresh,
        every: (
            2,
            "Refusing lock `{dir}/other.lock.json`: there is no lock file; `upgrade lock {m} --lock {dir}/other.lock.json` writes it",
        ),
        except: &[
            ("lock", (0, "wrote {dir}/other.lock.json (1 packages)")),
            ("diff", (2, "`diff` reads the lock beside each manifest")),
        ],
    },
    Row {
        flags: &["--snapshot", "{snapshot}"],
        beside: Beside::None,
        every: (0, "torch==2.9.1"),
        except: &[
            ("plan", (0, "torch 2.11.0 → 2.9.1")),
            ("status", NO_INTERPRETER),
            ("diff", DIFF_SAME),
            ("verify", LAUNCH_REFUSED),
            ("apply", NO_INTERPRETER),
        ],
    },
    Row {
        flags: &["--live"],
        beside: Beside::None,
        every: LIVE_FAILED,
        except: &[("diff", DIFF_SAME), ("verify", LAUNCH_REFUSED)],
    },
    Row {
        flags: &[
            "--live",
            "--no-cache",
            "--connect-timeout",
            "2s",
            "--timeout",
            "5s",
            "--retries",
            "0",
            "--concurrency",
            "1",
            "--max-projects",
            "10",
            "--max-releases",
            "10",
        ],
        beside: Beside::None,
        every: LIVE_FAILED,
        except: &[("diff", DIFF_SAME), ("verify", LAUNCH_REFUSED)],
    },
    Row {
        flags: &["--offline", "--cache-dir", "{dir}/empty-cache"],
        beside: Beside::None,
        every: (
            1,
            "it is not in the cache and the network is off (`--offline`)",
        ),
        except: &[("diff", DIFF_SAME), ("verify", LAUNCH_REFUSED)],
    },
    Row {
        flags: &["--rules", "{rules}", "--snapshot", "{snapshot}"],
        beside: Beside::None,
        every: (3, "(ABI: a pin of this test's own rules)"),
        except: &[("diff", DIFF_SAME), ("verify", LAUNCH_REFUSED)],
    },
    Row {
        flags: &["--rules", "{dir}/no-rules", "--snapshot", "{snapshot}"],
        beside: Beside::None,
        every: (2, "Failed to read rules directory `{dir}/no-rules`"),
        except: &[],
    },
    Row {
        flags: &[
            "--pip-python",
            "{dir}/no-python",
            "--snapshot",
            "{snapshot}",
        ],
        beside: Beside::None,
        every: (0, "torch==2.9.1"),
        except: &[
            ("plan", (0, "torch 2.11.0 → 2.9.1")),
            ("status", NO_INTERPRETER),
            ("diff", DIFF_SAME),
            ("verify", LAUNCH_REFUSED),
            ("apply", NO_INTERPRETER),
        ],
    },
];

/// Combinations clap refuses on every verb (exit 2, a usage error naming both flags).
const USAGE_ERRORS: &[&[&str]] = &[
    &["--locked", "--live"],
    &["--frozen", "--live"],
    &["--locked", "--frozen"],
    &["--live", "--snapshot", "{snapshot}"],
    &["--offline", "--no-cache"],
];

const SNAPSHOT: &str = r#"{"schema": 1, "recorded": "2026-12-03", "how": "by hand, for a test",
  "universe": {"indexes": [{"name": "local", "packages": {"torch": [
    {"version": "2.9.1", "requires_dist": [], "files": [
      {"filename": "torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl", "sha256": "0101010101010101010101010101010101010101010101010101010101010101"}]}]}}]}}
"#;

const RULES: &str = "schema: 1\nabi_pins:\n  - package: torch\n    versions: \"==2.9.1\"\n    requires: torch-abi-probe==1.0\n    reason: a pin of this test's own rules\n    source: this test\nversion_locks: []\n";

/// A directory for one verb of one row: the manifest `m.yaml` (its interpreter
/// `{dir}/venv/bin/python3`, absent here), the snapshot, the rules, the moved H200
/// facts, a failing `nvidia-smi` in `bin/`, and the lock beside the manifest as `beside`
/// says.
fn setup(beside: Beside) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let venv = root.join("venv");
    std::fs::write(
        root.join("m.yaml"),
        format!(
            "schema: 1\nname: m\nupgrade: \">=0.1\"\ntarget:\n  python: {python}\n  python_version: \"3.12\"\n  glibc: \"2.39\"\nindexes:\n  - name: local\n    url: http://127.0.0.1:9/simple/\npackages:\n  torch: \">=2.9\"\nverify:\n  launch: {python} -m http.server 30000\n  log: {log}\n  ready: Serving\n  timeout: 10s\n",
            python = venv.join("bin/python3").display(),
            log = root.join("verify.log").display(),
        ),
    )
    .unwrap();
    std::fs::write(root.join("snapshot.json"), SNAPSHOT).unwrap();
    std::fs::create_dir(root.join("rules")).unwrap();
    std::fs::write(root.join("rules/abi-pins.yaml"), RULES).unwrap();
    let facts = std::fs::read_to_string(H200_FACTS)
        .unwrap()
        .replace("/opt/torch/.venv", &venv.display().to_string());
    std::fs::write(root.join("facts.json"), facts).unwrap();
    let bin = root.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let smi = bin.join("nvidia-smi");
    std::fs::write(&smi, "#!/bin/sh\necho 'no GPU here' >&2\nexit 9\n").unwrap();
    let mut permissions = std::fs::metadata(&smi).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&smi, permissions).unwrap();
    if beside != Beside::None {
        let output = upgrade(root, &["lock", "{m}", "--snapshot", "{snapshot}"]);
        assert_eq!(output.0, Some(0), "{}", output.1);
    }
    if beside == Beside::Stale {
        let manifest = root.join("m.yaml");
        let text = std::fs::read_to_string(&manifest).unwrap();
        std::fs::write(&manifest, text.replace(">=2.9", ">=2.8")).unwrap();
    }
    dir
}

/// `text` with the placeholders of the directory `dir` filled in.
fn fill(text: &str, dir: &Path) -> String {
    let dir = dir.display().to_string();
    text.replace("{m}", &format!("{dir}/m.yaml"))
        .replace("{facts}", &format!("{dir}/facts.json"))
        .replace("{snapshot}", &format!("{dir}/snapshot.json"))
        .replace("{rules}", &format!("{dir}/rules"))
        .replace("{dir}", &dir)
}

/// `upgrade ARGS` (placeholders filled) in `dir`, with nothing of the machine's
/// settings: its own cache, pip's index at `127.0.0.1:9`, the failing `nvidia-smi`
/// first on `PATH`. The exit code and stdout and stderr together.
fn upgrade(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let args: Vec<String> = args.iter().map(|arg| fill(arg, dir)).collect();
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command: Command = command_in(dir);
    for variable in [
        "UPGRADE_SNAPSHOT",
        "UPGRADE_RULES",
        "UPGRADE_INVENTORY",
        "UPGRADE_SSH_CONFIG",
    ] {
        command.env_remove(variable);
    }
    let output = command
        .args(&args)
        .env("PATH", path)
        .env("UPGRADE_CACHE_DIR", dir.join("cache"))
        .env("XDG_CACHE_HOME", dir.join("xdg-cache"))
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_INDEX_URL", "http://127.0.0.1:9/simple/")
        .output()
        .unwrap();
    (
        output.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

/// `verb`'s arguments with `flags` after them.
fn arguments<'a>(verb: &'a [&'a str], flags: &'a [&'a str]) -> Vec<&'a str> {
    verb.iter().chain(flags).copied().collect()
}

#[test]
fn every_resolution_flag_means_the_same_on_every_verb() {
    let mut failures = Vec::new();
    for row in ROWS {
        for (verb, args) in VERBS {
            let dir = setup(row.beside);
            let (code, needle) = row
                .except
                .iter()
                .find(|(name, _)| name == verb)
                .map_or(row.every, |(_, expect)| *expect);
            let needle = fill(needle, dir.path());
            let (status, text) = upgrade(dir.path(), &arguments(args, row.flags));
            if status != Some(code) || !text.contains(&needle) || text.contains("Usage:") {
                failures.push(format!(
                    "{verb} {:?} ({:?} lock): expected exit {code} and {needle:?}, got {status:?}:\n{text}",
                    row.flags, row.beside
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Beyond the exit code: `lock --snapshot` writes the lock beside the manifest, `--lock
/// FILE` writes it there, and `--frozen` and `--locked` leave the lock as it was.
#[test]
fn lock_writes_where_the_flags_say_and_frozen_writes_nothing() {
    let dir = setup(Beside::None);
    let root = dir.path();
    let (status, text) = upgrade(
        root,
        &[
            "lock",
            "{m}",
            "--lock",
            "{dir}/elsewhere.json",
            "--snapshot",
            "{snapshot}",
        ],
    );
    assert_eq!(status, Some(0), "{text}");
    assert!(root.join("elsewhere.json").exists());
    assert!(!root.join("m.lock.json").exists());
    let (status, text) = upgrade(root, &["lock", "{m}", "--snapshot", "{snapshot}"]);
    assert_eq!(status, Some(0), "{text}");
    let written = std::fs::read_to_string(root.join("m.lock.json")).unwrap();
    cuda_upgrade::resolve::Lock::from_json(&written).unwrap();
    for flags in [&["--frozen"][..], &["--locked"][..]] {
        let (status, text) = upgrade(root, &arguments(&["lock", "{m}"], flags));
        assert_eq!(status, Some(0), "{flags:?}: {text}");
        assert_eq!(
            std::fs::read_to_string(root.join("m.lock.json")).unwrap(),
            written,
            "{flags:?}"
        );
    }
}

#[test]
fn forbidden_combinations_are_usage_errors_on_every_verb() {
    let dir = setup(Beside::None);
    let mut failures = Vec::new();
    for flags in USAGE_ERRORS {
        for (verb, args) in VERBS {
            let (status, text) = upgrade(dir.path(), &arguments(args, flags));
            if status != Some(2)
                || !text.contains("cannot be used with")
                || !text.contains("Usage:")
            {
                failures.push(format!("{verb} {flags:?}: {status:?}\n{text}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
