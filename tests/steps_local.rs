//! Steps and the one file-write primitive applied for real through the local transport,
//! in temporary directories: a Debian-style symlinked `sitecustomize.py` stays a link to
//! a file of the same owner and mode, secret values land only in a root-only file, bytes
//! outside the managed block are kept exactly, and every refusal writes nothing.
//!
//! See: issue 8 ("Real nodes, first time").
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use cuda_upgrade::exec::verify;
use cuda_upgrade::exec::{ApplyContext, ExecError, StepOutcome, apply_step, gather_facts};
use cuda_upgrade::facts::ProbeRequest;
use cuda_upgrade::manifest::EnvScope;
use cuda_upgrade::steps::{Action, Operation, Placement, Step, StepKind, env};
use cuda_upgrade::transport::{
    Expected, FileContent, LocalTransport, Stdin, Transport, TransportError, WriteSpec, Written,
};

fn venv(dir: &Path) -> PathBuf {
    let status = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(dir.join("venv"))
        .status()
        .unwrap();
    assert!(status.success());
    dir.join("venv/bin/python3")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.trim_ascii() == b"0")
}

fn context(dir: &Path, secrets: Vec<String>) -> ApplyContext {
    ApplyContext {
        cache_dir: dir.join("cache"),
        before_images: Some(dir.join("before-images")),
        secrets,
    }
}

fn spec(dir: &Path, path: &Path) -> WriteSpec {
    WriteSpec {
        before_images: Some(dir.join("before-images")),
        ..WriteSpec::new(path, 0o644)
    }
}

/// Write a small script at `path`, staged private (0700), with no before-image.
async fn stage_script(transport: &Transport, path: &Path) -> Result<Written, TransportError> {
    transport
        .write_file(
            Stdin::Bytes(b"#!/bin/sh\n"),
            &WriteSpec {
                before_images: None,
                ..Placement::Staged { mode: 0o700 }.spec(path)
            },
        )
        .await
}

/// The environment's `sitecustomize.py` is a symlink into an `etc` directory, as
/// Debian's `/usr/lib/python3.X/sitecustomize.py` → `/etc/python3.X/sitecustomize.py`.
#[tokio::test]
async fn env_block_through_a_symlink_keeps_the_link_and_mode_and_no_secret_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let python = venv(dir.path());
    let transport = Transport::Local(LocalTransport::new());
    let mut request = ProbeRequest::new(&python, Vec::new());
    request.secrets_dir = Some(dir.path().join("secrets"));
    let site_packages = gather_facts(&transport, &request)
        .await
        .unwrap()
        .python
        .unwrap()
        .site_packages[0]
        .clone();
    let etc = dir.path().join("etc/python3");
    std::fs::create_dir_all(&etc).unwrap();
    let real = etc.join("sitecustomize.py");
    let apport = "# install the apport exception handler if available\ntry:\n    import apport_python_hook\nexcept ImportError:\n    pass\n";
    std::fs::write(&real, apport).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = site_packages.join("sitecustomize.py");
    std::os::unix::fs::symlink(&real, &link).unwrap();

    let secret = "hf_'$(touch pwned)'\"x";
    let vars = vec![
        env::ResolvedVar {
            name: "CUDA_HOME".into(),
            value: "/usr/local/cuda-13.0".into(),
            secret: false,
            override_existing: false,
        },
        env::ResolvedVar {
            name: "HF_TOKEN".into(),
            value: secret.into(),
            secret: true,
            override_existing: false,
        },
    ];

    let facts = gather_facts(&transport, &request).await.unwrap();
    let site = facts.sitecustomize.as_ref().unwrap();
    assert_eq!(site.origin.as_deref(), Some(link.as_path()));
    assert_eq!(
        site.real_path.as_deref(),
        Some(real.canonicalize().unwrap().as_path())
    );
    assert_eq!(site.mode, Some(0o644));
    let step = env::plan(&vars, "test", &python, &facts, EnvScope::Interpreter);
    assert_eq!(step.action, Action::Change, "{}", step.reason);
    let shown: String = step.operations.iter().map(Operation::describe).collect();
    assert!(!shown.contains("hf_"), "a secret reached the plan: {shown}");
    assert!(
        step.reason.contains("secret values go to"),
        "{}",
        step.reason
    );

    let context = context(dir.path(), vec![secret.to_string()]);
    let outcome = apply_step(&transport, &step, &context).await.unwrap();
    assert_eq!(outcome, StepOutcome::Applied);
    assert!(!Path::new("pwned").exists() && !dir.path().join("pwned").exists());

    // The link is still a link, to a file of the same mode, with the block but no secret.
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_link(&link).unwrap(), real);
    assert_eq!(mode(&real), 0o644);
    let text = std::fs::read_to_string(&real).unwrap();
    assert!(text.starts_with(apport), "{text}");
    assert!(
        text.contains("CUDA_HOME") && !text.contains("hf_"),
        "{text}"
    );
    // The secret lives in a 0600 file in a 0700 directory.
    let secrets_dir = dir.path().join("secrets");
    assert_eq!(mode(&secrets_dir), 0o700);
    let files: Vec<PathBuf> = std::fs::read_dir(&secrets_dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(mode(&files[0]), 0o600);
    assert!(std::fs::read_to_string(&files[0]).unwrap().contains("hf_"));
    // The previous content was kept.
    assert_eq!(mode(&dir.path().join("before-images")), 0o700);
    assert_eq!(
        std::fs::read_dir(dir.path().join("before-images"))
            .unwrap()
            .count(),
        1
    );

    let again = gather_facts(&transport, &request).await.unwrap();
    let step = env::plan(&vars, "test", &python, &again, EnvScope::Interpreter);
    assert_eq!(step.action, Action::NoOp, "{}", step.reason);
    assert_eq!(
        apply_step(&transport, &step, &context).await.unwrap(),
        StepOutcome::Unchanged
    );
}

/// Owner, group, mode and every byte outside the block survive; a failed read or a
/// malformed block writes nothing.
#[tokio::test]
async fn block_rewrite_keeps_bytes_owner_and_mode_and_refuses_malformed_files() {
    let dir = tempfile::tempdir().unwrap();
    let transport = Transport::Local(LocalTransport::new());
    let file = dir.path().join("conf.py");
    let original: &[u8] = b"# caf\xe9 latin-1\r\nx = 1\n\xff\xfe";
    std::fs::write(&file, original).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&file, Some(1), Some(2)).unwrap();
    }
    // An extended attribute (where the file system has them) survives the rewrite too.
    let xattr = |program: &str| {
        Command::new("python3")
            .args(["-c", program])
            .arg(&file)
            .output()
            .unwrap()
    };
    let has_xattr =
        xattr("import os, sys; os.setxattr(sys.argv[1], 'user.cuda_upgrade_test', b'kept')")
            .status
            .success();
    let owner = std::fs::metadata(&file).unwrap();
    let step = |path: &Path| Step {
        kind: StepKind::EnvInjection,
        subject: "test".into(),
        action: Action::Change,
        reason: "test".into(),
        operations: vec![Operation::ReplaceBlock {
            path: path.to_path_buf(),
            marker: "m".into(),
            block: "y = 2\n".into(),
        }],
        verification: None,
        blocked: None,
    };
    let context = context(dir.path(), Vec::new());
    assert_eq!(
        apply_step(&transport, &step(&file), &context)
            .await
            .unwrap(),
        StepOutcome::Applied
    );
    let written = std::fs::read(&file).unwrap();
    assert_eq!(&written[..original.len()], original);
    assert_eq!(
        &written[original.len()..],
        b"\n# >>> m >>>\ny = 2\n# <<< m <<<\n"
    );
    let after = std::fs::metadata(&file).unwrap();
    assert_eq!(mode(&file), 0o640);
    assert_eq!((after.uid(), after.gid()), (owner.uid(), owner.gid()));
    if has_xattr {
        let read = xattr(
            "import os, sys; print(os.getxattr(sys.argv[1], 'user.cuda_upgrade_test').decode())",
        );
        assert_eq!(String::from_utf8_lossy(&read.stdout).trim(), "kept");
    }

    // A begin marker without its end: refused with the line, the file untouched.
    let broken = dir.path().join("broken.py");
    let text = b"a = 1\n# >>> m >>>\nkept = True\n";
    std::fs::write(&broken, text).unwrap();
    let error = apply_step(&transport, &step(&broken), &context)
        .await
        .unwrap_err();
    assert!(
        matches!(error, ExecError::MalformedBlock { source, .. } if source.line() == 2),
        "{error:?}"
    );
    assert_eq!(std::fs::read(&broken).unwrap(), text);

    // A path that cannot be read as a file is an error, never an empty file.
    let directory = dir.path().join("a-directory");
    std::fs::create_dir(&directory).unwrap();
    let error = apply_step(&transport, &step(&directory), &context)
        .await
        .unwrap_err();
    assert!(
        matches!(error, ExecError::Transport(TransportError::ReadFile { .. })),
        "{error:?}"
    );
    assert!(directory.is_dir());
}

/// The primitive's own refusals: a file changed since it was read, a private directory
/// that others may write to or that another user owns.
#[tokio::test]
async fn writes_refuse_changed_files_and_unsafe_private_directories() {
    let dir = tempfile::tempdir().unwrap();
    let transport = Transport::Local(LocalTransport::new());
    let file = dir.path().join("f");
    std::fs::write(&file, "old").unwrap();
    assert_eq!(
        transport.read_file(&file).await.unwrap(),
        FileContent::Present(b"old".to_vec())
    );
    assert_eq!(
        transport
            .read_file(&dir.path().join("missing"))
            .await
            .unwrap(),
        FileContent::Absent
    );
    let stale = WriteSpec {
        expected: Expected::Sha256("0".repeat(64)),
        ..spec(dir.path(), &file)
    };
    let error = transport
        .write_file(Stdin::Bytes(b"new"), &stale)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("Failed to write"), "{error}");
    assert_eq!(std::fs::read(&file).unwrap(), b"old");

    // A staging directory others may write to is refused, and nothing lands in it.
    let staging = dir.path().join("staging");
    std::fs::create_dir(&staging).unwrap();
    std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o777)).unwrap();
    let staged = staging.join("runfile.run");
    let error = stage_script(&transport, &staged).await.unwrap_err();
    let TransportError::WriteFile { message, .. } = &error else {
        panic!("{error:?}");
    };
    assert!(message.contains("lets other users write"), "{message}");
    assert!(!staged.exists());
    if is_root() {
        // Owned by another user (nobody): refused even at 0700.
        std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&staging, Some(65534), Some(65534)).unwrap();
        let error = stage_script(&transport, &staged).await.unwrap_err();
        assert!(error.to_string().contains("Failed to write"), "{error}");
        assert!(!staged.exists());
        // A symlink planted where the staging directory goes leads to another user's
        // directory: judged by its real path, refused.
        let planted = dir.path().join("planted");
        std::os::unix::fs::symlink(&staging, &planted).unwrap();
        let error = stage_script(&transport, &planted.join("sub/runfile.run"))
            .await
            .unwrap_err();
        let TransportError::WriteFile { message, .. } = &error else {
            panic!("{error:?}");
        };
        assert!(message.contains("owned by uid 65534"), "{message}");
        assert!(!staging.join("sub").exists());
    }
    // A missing private directory is created 0700 and the file gets its new mode.
    let fresh = dir.path().join("new-staging/runfile.run");
    stage_script(&transport, &fresh).await.unwrap();
    assert_eq!(mode(fresh.parent().unwrap()), 0o700);
    assert_eq!(mode(&fresh), 0o700);
    // A secret written over an existing world-readable file loses group and other bits.
    let secret = dir.path().join("new-staging/secret.json");
    std::fs::write(&secret, "{}").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    transport
        .write_file(
            Stdin::Bytes(b"{\"HF_TOKEN\": \"x\"}"),
            &WriteSpec {
                before_images: None,
                ..Placement::Secret.spec(&secret)
            },
        )
        .await
        .unwrap();
    assert_eq!(mode(&secret), 0o600);
}

/// Several files in one write: each lands whole, in order, through links, keeping an
/// existing file's mode, with before-images; an empty and a large file frame correctly;
/// a file that is refused stops the batch there and the files before it are reported.
#[tokio::test]
async fn a_batch_of_writes_is_one_command_with_the_same_guarantees() {
    let dir = tempfile::tempdir().unwrap();
    let transport = Transport::Local(LocalTransport::new());
    let real = dir.path().join("etc/real.conf");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    std::fs::write(&real, "old").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.path().join("link.conf");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let large: Vec<u8> = (0..3_000_001u32).map(|i| (i % 251) as u8).collect();
    let large_file = dir.path().join("large.bin");
    std::fs::write(&large_file, &large).unwrap();
    let staged = |name: &str| WriteSpec {
        before_images: None,
        ..Placement::Staged { mode: 0o644 }.spec(&dir.path().join("staging").join(name))
    };
    let (empty, big, linked, last) = (
        staged("empty"),
        staged("large.bin"),
        spec(dir.path(), &link),
        staged("last"),
    );
    let before = transport.round_trips();
    let (written, result) = transport
        .write_files(&[
            (Stdin::Bytes(b""), &empty),
            (Stdin::File(&large_file), &big),
            (Stdin::Bytes(b"new"), &linked),
            (Stdin::Bytes(b"last\n"), &last),
        ])
        .await;
    result.unwrap();
    assert_eq!(
        transport.round_trips() - before,
        1,
        "one command for the batch"
    );
    assert_eq!(written.len(), 4);
    assert_eq!(
        std::fs::read(dir.path().join("staging/empty")).unwrap(),
        b""
    );
    assert_eq!(
        std::fs::read(dir.path().join("staging/large.bin")).unwrap(),
        large
    );
    assert_eq!(
        std::fs::read(dir.path().join("staging/last")).unwrap(),
        b"last\n"
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(&real).unwrap(), b"new");
    assert_eq!(mode(&real), 0o640);
    assert_eq!(written[2].real_path, real);
    let image = written[2].before_image.as_ref().unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("before-images").join(image)).unwrap(),
        b"old"
    );
    assert_eq!(mode(&dir.path().join("staging")), 0o700);

    // Files of one directory: a link among them is still followed, and a directory
    // reached through a link is written in its real place.
    let conf = dir.path().join("conf");
    std::fs::create_dir(&conf).unwrap();
    std::fs::write(conf.join("a.conf"), "a").unwrap();
    std::os::unix::fs::symlink(dir.path().join("etc/b-real.conf"), conf.join("b.conf")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("etc"), dir.path().join("via")).unwrap();
    let names = [
        conf.join("a.conf"),
        conf.join("b.conf"),
        conf.join("c.conf"),
        dir.path().join("via/d.conf"),
        dir.path().join("via/e.conf"),
    ];
    let specs: Vec<WriteSpec> = names.iter().map(|name| spec(dir.path(), name)).collect();
    let batch: Vec<(Stdin<'_>, &WriteSpec)> = specs
        .iter()
        .map(|spec| (Stdin::Bytes(b"x"), spec))
        .collect();
    let (written, result) = transport.write_files(&batch).await;
    result.unwrap();
    let real_paths: Vec<PathBuf> = written.into_iter().map(|w| w.real_path).collect();
    let real_dir = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(
        real_paths,
        [
            real_dir.join("conf/a.conf"),
            real_dir.join("etc/b-real.conf"),
            real_dir.join("conf/c.conf"),
            real_dir.join("etc/d.conf"),
            real_dir.join("etc/e.conf"),
        ]
    );
    assert!(
        std::fs::symlink_metadata(conf.join("b.conf"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(dir.path().join("etc/e.conf")).unwrap(), b"x");

    // The second file's private directory is open to others: the first is written, the
    // second and third are not, and the error names the second.
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let refused = WriteSpec {
        before_images: None,
        ..Placement::Staged { mode: 0o644 }.spec(&open.join("x"))
    };
    let (first, after) = (staged("first"), staged("after"));
    let (written, result) = transport
        .write_files(&[
            (Stdin::Bytes(b"1"), &first),
            (Stdin::Bytes(b"2"), &refused),
            (Stdin::Bytes(b"3"), &after),
        ])
        .await;
    assert_eq!(written.len(), 1);
    let Err(TransportError::WriteFile { path, message, .. }) = result else {
        panic!("{result:?}");
    };
    assert_eq!(path, open.join("x").display().to_string());
    assert!(message.contains("lets other users write"), "{message}");
    assert_eq!(
        std::fs::read(dir.path().join("staging/first")).unwrap(),
        b"1"
    );
    assert!(!open.join("x").exists() && !dir.path().join("staging/after").exists());
}

/// A hung command fails its step within its bound, and nothing it started survives.
#[tokio::test]
async fn a_hung_command_fails_within_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let transport = Transport::Local(LocalTransport::new());
    let marker = dir.path().join("still-running");
    let step = Step {
        kind: StepKind::PipPins,
        subject: "test".into(),
        action: Action::Change,
        reason: "test".into(),
        operations: vec![Operation::Run(
            cuda_upgrade::transport::NodeCommand::new("sh")
                .arg("-c")
                .arg("(sleep 5; touch \"$1\") & sleep 60")
                .arg("hung")
                .arg(marker.display().to_string())
                .bounded(std::time::Duration::from_secs(1)),
        )],
        verification: None,
        blocked: None,
    };
    let started = std::time::Instant::now();
    let outcome = apply_step(&transport, &step, &context(dir.path(), Vec::new()))
        .await
        .unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    let StepOutcome::Failed(failure) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(failure.status, Some(124));
    assert!(
        failure.detail.contains("ran past its bound of 1 s"),
        "{}",
        failure.detail
    );
    // The background child was in the killed process group: it never touches the file.
    tokio::time::sleep(std::time::Duration::from_secs(6)).await;
    assert!(!marker.exists());
}

/// What a fresh start of `python` sees of `names`, with `set` in its environment and
/// the names otherwise removed, e.g. `CUDA_HOME=/usr/local/cuda-13.0 NCCL_DEBUG=-`.
fn seen(python: &Path, names: &[&str], set: &[(&str, &str)]) -> String {
    let mut command = Command::new(python);
    command.arg("-c").arg(
        "import os, sys; print(' '.join('%s=%s' % (n, os.environ.get(n, '-')) for n in sys.argv[1:]))",
    );
    command.args(names);
    for name in names {
        command.env_remove(name);
    }
    command.envs(set.iter().copied());
    let output = command.output().unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// See: issue 19 — the env step reached every interpreter of the node and overrode what
/// a run set. On real venvs: the target sees every variable (a value it was started
/// with wins unless `override`), the base interpreter and another venv see none, and a
/// block an earlier build left in the `sitecustomize.py` the target imports is removed.
#[tokio::test]
async fn env_reaches_only_the_target_environment() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("target")).unwrap();
    std::fs::create_dir_all(dir.path().join("other")).unwrap();
    let target = venv(&dir.path().join("target"));
    let other = venv(&dir.path().join("other"));
    let base = Command::new(&target)
        .args(["-c", "import sys; print(sys._base_executable)"])
        .output()
        .unwrap();
    let base = PathBuf::from(String::from_utf8(base.stdout).unwrap().trim());
    let transport = Transport::Local(LocalTransport::new());
    let mut request = ProbeRequest::new(&target, Vec::new());
    request.secrets_dir = Some(dir.path().join("secrets"));
    let facts = gather_facts(&transport, &request).await.unwrap();
    let site_packages = facts.python.as_ref().unwrap().site_packages[0].clone();
    // The block where an earlier build put it: the sitecustomize the target imports.
    let legacy = site_packages.join("sitecustomize.py");
    let legacy_text = "# the user's own line\n";
    std::fs::write(
        &legacy,
        format!(
            "{legacy_text}# >>> cuda-upgrade managed block >>>\nimport os as _o\n_o.environ[\"CUDA_HOME\"] = \"/legacy\"\n# <<< cuda-upgrade managed block <<<\n"
        ),
    )
    .unwrap();
    let names = ["CUDA_HOME", "NCCL_DEBUG"];
    let vars = vec![
        env::ResolvedVar {
            name: "CUDA_HOME".into(),
            value: "/usr/local/cuda-13.0".into(),
            secret: false,
            override_existing: false,
        },
        env::ResolvedVar {
            name: "NCCL_DEBUG".into(),
            value: "WARN".into(),
            secret: false,
            override_existing: true,
        },
    ];
    let facts = gather_facts(&transport, &request).await.unwrap();
    let step = env::plan(&vars, "test", &target, &facts, EnvScope::Environment);
    let paths: Vec<String> = step
        .operations
        .iter()
        .map(|operation| match operation {
            Operation::ReplaceBlock { path, .. } => format!("write {}", path.display()),
            Operation::RemoveBlock { path, .. } => format!("remove {}", path.display()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        paths,
        [
            format!(
                "write {}",
                site_packages.join("cuda_upgrade_env.pth").display()
            ),
            format!("remove {}", legacy.display()),
        ]
    );
    let context = context(dir.path(), Vec::new());
    let outcome = apply_step(&transport, &step, &context).await.unwrap();
    assert_eq!(outcome, StepOutcome::Applied);
    let failure = verify(&transport, step.verification.as_ref().unwrap(), &[])
        .await
        .unwrap();
    assert_eq!(failure, None);

    assert_eq!(std::fs::read_to_string(&legacy).unwrap(), legacy_text);
    assert_eq!(
        seen(&target, &names, &[]),
        "CUDA_HOME=/usr/local/cuda-13.0 NCCL_DEBUG=WARN"
    );
    assert_eq!(
        seen(
            &target,
            &names,
            &[("CUDA_HOME", "/custom"), ("NCCL_DEBUG", "INFO")]
        ),
        "CUDA_HOME=/custom NCCL_DEBUG=WARN",
        "a value the process has wins, except an override"
    );
    assert_eq!(seen(&other, &names, &[]), "CUDA_HOME=- NCCL_DEBUG=-");
    assert_eq!(seen(&base, &names, &[]), "CUDA_HOME=- NCCL_DEBUG=-");

    let facts = gather_facts(&transport, &request).await.unwrap();
    let again = env::plan(&vars, "test", &target, &facts, EnvScope::Environment);
    assert_eq!(again.action, Action::NoOp, "{}", again.reason);
}
