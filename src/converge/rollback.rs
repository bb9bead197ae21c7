//! Rollback: undo a node's runs from its journal, newest first, under the node's lock.
//! Every file a run wrote gets its before-image back (a file the run created is removed),
//! but only while it still holds what the run wrote: a file changed since is kept and
//! named. The Python environment returns to the packages it had before the oldest undone
//! run (`pip freeze --all` then), installed `--no-deps` from the indexes recorded with
//! it, or from the wheels the run kept on the node (`--fetch controller`, see
//! `keep`). `ldconfig` runs when a linker file changed. Toolkits stay (they live side by side
//! in their own prefixes). Each undone run is journaled as rolled back, so the next
//! rollback goes one run further.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::exec::environment;
use crate::exec::journal::{self, JournalEntry, JournalEvent};
use crate::exec::node_lock::{LockHolder, NodeLock};
use crate::steps::{SECRETS_DIR, STAGING_DIR};
use crate::transport::{
    BEFORE_IMAGES_DIR, Expected, FileContent, INSTALL_BOUND, NodeCommand, Stdin, Transport,
    WriteSpec,
};

use super::ConvergeError;

/// What a rollback is given.
pub struct RollbackOptions<'a> {
    /// Undo back to (and including) this run; `None`: the last run not yet undone.
    pub to: Option<&'a str>,
    /// Who takes the node's lock.
    pub holder: LockHolder,
    /// Remove a stale lock first.
    pub break_lock: bool,
}

/// How a node's rollback ended.
#[derive(Debug, Clone, Serialize)]
pub struct RollbackOutcome {
    /// e.g. `node0`.
    pub node: String,
    /// Everything undone as recorded.
    pub ok: bool,
    /// The runs undone, newest first.
    pub runs: Vec<String>,
    /// Files given their before-image back.
    pub restored: Vec<PathBuf>,
    /// Files the runs had created, removed.
    pub removed: Vec<PathBuf>,
    /// Packages installed again at their earlier versions.
    pub installed: Vec<String>,
    /// Packages the runs had added, removed.
    pub uninstalled: Vec<String>,
    /// What could not be undone, and why (e.g. a file changed since).
    pub kept: Vec<String>,
    /// Commands run on the node.
    pub round_trips: u64,
    /// The whole rollback.
    pub seconds: f64,
}

/// Roll the node back (see the module's documentation).
pub async fn rollback_node(
    transport: &Transport,
    options: &RollbackOptions<'_>,
) -> Result<RollbackOutcome, ConvergeError> {
    let lock = NodeLock::acquire(transport, &options.holder, options.break_lock).await?;
    let result = undo(transport, options).await;
    let released = lock.release(transport).await;
    let outcome = result?;
    released?;
    Ok(outcome)
}

/// Undo the one run `run` while its apply still holds the node's lock
/// (`--rollback-on-failure`): the same undo as [`rollback_node`], without taking the lock.
pub(super) async fn undo_held(
    transport: &Transport,
    run: &str,
    holder: &LockHolder,
) -> Result<RollbackOutcome, ConvergeError> {
    let options = RollbackOptions {
        to: Some(run),
        holder: holder.clone(),
        break_lock: false,
    };
    undo(transport, &options).await
}

fn refused(transport: &Transport, reason: String) -> ConvergeError {
    ConvergeError::Rollback {
        node: transport.name().to_string(),
        reason,
    }
}

async fn undo(
    transport: &Transport,
    options: &RollbackOptions<'_>,
) -> Result<RollbackOutcome, ConvergeError> {
    let started = Instant::now();
    let entries = journal::read_last(transport).await?;
    let undone: Vec<&str> = entries
        .iter()
        .filter_map(|entry| entry.undoes.as_deref())
        .collect();
    // Runs that changed something, oldest first, each once.
    let mut runs: Vec<&str> = Vec::new();
    for entry in &entries {
        let changed = matches!(entry.event, JournalEvent::Step | JournalEvent::Environment);
        if changed && !runs.contains(&entry.run.as_str()) {
            runs.push(&entry.run);
        }
    }
    runs.retain(|run| !undone.contains(run));
    let first = match options.to {
        Some(to) => runs.iter().position(|run| *run == to).ok_or_else(|| {
            refused(
                transport,
                format!(
                    "no run `{to}` left to undo in its journal (runs: {})",
                    if runs.is_empty() {
                        "none".to_string()
                    } else {
                        runs.join(", ")
                    }
                ),
            )
        })?,
        None => runs.len().checked_sub(1).ok_or_else(|| {
            refused(
                transport,
                "its journal holds no run left to undo".to_string(),
            )
        })?,
    };
    let targets: Vec<&str> = runs[first..].iter().rev().copied().collect();
    let mut outcome = RollbackOutcome {
        node: transport.name().to_string(),
        ok: true,
        runs: targets.iter().map(|run| run.to_string()).collect(),
        restored: Vec::new(),
        removed: Vec::new(),
        installed: Vec::new(),
        uninstalled: Vec::new(),
        kept: Vec::new(),
        round_trips: 0,
        seconds: 0.0,
    };
    for run in &targets {
        let written = entries
            .iter()
            .filter(|entry| entry.run == *run && entry.event == JournalEvent::Step)
            .flat_map(|entry| entry.written.iter())
            .rev();
        for file in written {
            if file.real_path.starts_with(STAGING_DIR)
                || file.real_path.starts_with(BEFORE_IMAGES_DIR)
            {
                continue;
            }
            restore_file(transport, file, &mut outcome).await?;
        }
    }
    // The environment before the oldest undone run changed it.
    let image = entries.iter().find_map(|entry| {
        (entry.event == JournalEvent::Environment && targets.contains(&entry.run.as_str()))
            .then_some(entry.environment.as_ref())
            .flatten()
    });
    if let Some(image) = image {
        restore_environment(transport, image, &mut outcome).await?;
    }
    if outcome
        .restored
        .iter()
        .chain(&outcome.removed)
        .any(|path| path.starts_with("/etc/ld.so.conf") || path.starts_with("/etc/ld.so.conf.d"))
    {
        let output = transport.run(&NodeCommand::new("ldconfig"), None).await?;
        if !output.success() {
            outcome.ok = false;
            outcome
                .kept
                .push(format!("ldconfig failed: {}", output.tail(3)));
        }
    }
    for run in &targets {
        let entry = JournalEntry {
            run: format!("{}-{}", options.holder.started, options.holder.pid),
            at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_secs()),
            event: JournalEvent::RolledBack,
            manifest: String::new(),
            manifest_sha256: String::new(),
            holder: format!("{} on {}", options.holder.user, options.holder.controller),
            step: None,
            written: Vec::new(),
            ok: Some(outcome.ok),
            environment: None,
            undoes: Some(run.to_string()),
            benchmark: None,
        };
        journal::append(transport, &entry).await?;
    }
    outcome.round_trips = transport.round_trips();
    outcome.seconds = started.elapsed().as_secs_f64();
    Ok(outcome)
}

/// Give one written file its before-image back, or remove it when the run created it;
/// a file that changed since the run wrote it is kept and named.
async fn restore_file(
    transport: &Transport,
    file: &journal::WrittenFile,
    outcome: &mut RollbackOutcome,
) -> Result<(), ConvergeError> {
    let expected = file.after.clone().map_or(Expected::Any, Expected::Sha256);
    let path = &file.real_path;
    let result = match &file.before {
        None => transport.remove_file(path, &expected).await.map(|()| false),
        Some(digest) => {
            let image = Path::new(BEFORE_IMAGES_DIR).join(digest);
            let bytes = match transport.read_file(&image).await? {
                FileContent::Present(bytes) => bytes,
                FileContent::Absent => {
                    outcome.ok = false;
                    outcome.kept.push(format!(
                        "{}: its before-image `{}` is gone",
                        path.display(),
                        image.display()
                    ));
                    return Ok(());
                }
            };
            let spec = WriteSpec {
                secret: path.starts_with(SECRETS_DIR),
                expected,
                before_images: None,
                ..WriteSpec::new(path.clone(), 0o644)
            };
            transport
                .write_file(Stdin::Bytes(&bytes), &spec)
                .await
                .map(|_| true)
        }
    };
    match result {
        Ok(true) => outcome.restored.push(path.clone()),
        Ok(false) => outcome.removed.push(path.clone()),
        Err(error) => {
            outcome.ok = false;
            outcome
                .kept
                .push(crate::text::error_chain(&error).replace('\n', " "));
        }
    }
    Ok(())
}

/// Return the environment to the packages of `image`.
async fn restore_environment(
    transport: &Transport,
    image: &journal::EnvironmentImage,
    outcome: &mut RollbackOutcome,
) -> Result<(), ConvergeError> {
    let path = environment::image_path(Path::new(BEFORE_IMAGES_DIR), image);
    let FileContent::Present(before) = transport.read_file(&path).await? else {
        outcome.ok = false;
        outcome.kept.push(format!(
            "the environment's before-image `{}` is gone",
            path.display()
        ));
        return Ok(());
    };
    let current = environment::installed(transport, &image.python).await?;
    let (install, remove) = environment::difference(
        &environment::parse_freeze(&String::from_utf8_lossy(&before)),
        &environment::parse_freeze(&String::from_utf8_lossy(&current)),
    );
    let python = image.python.display().to_string();
    if !remove.is_empty() {
        let command = crate::steps::Installer::Pip
            .uninstall(&python, &remove)
            .bounded(INSTALL_BOUND);
        let output = transport.run(&command, None).await?;
        if output.success() {
            outcome.uninstalled = remove;
        } else {
            outcome.ok = false;
            outcome
                .kept
                .push(format!("pip uninstall failed: {}", output.tail(3)));
        }
    }
    if !install.is_empty() {
        let requirements = Path::new(STAGING_DIR).join("rollback-requirements.txt");
        let mut text = install.join("\n");
        text.push('\n');
        let spec = WriteSpec {
            private_directory: true,
            before_images: None,
            ..WriteSpec::new(requirements.clone(), 0o600)
        };
        transport
            .write_file(Stdin::Bytes(text.as_bytes()), &spec)
            .await?;
        let mut command = NodeCommand::new(python).args([
            "-m",
            "pip",
            "install",
            "--no-deps",
            // A package now installed from elsewhere at the same version (a source
            // build of `sglang 0.5.9`) is replaced too.
            "--force-reinstall",
            "--no-input",
            "--disable-pip-version-check",
        ]);
        // The wheels kept on the node (`--fetch controller`) first; the indexes only for
        // what was not kept (indexes whose credentials were masked are left to pip's own
        // configuration).
        if let Some(wheels) = &image.wheels {
            command = command
                .arg("--find-links")
                .arg(wheels.display().to_string());
            if super::keep::covers(&image.not_kept, &install) {
                command = command.arg("--no-index");
            }
        }
        let urls: Vec<&String> = image
            .index_urls
            .iter()
            .filter(|url| !url.contains(crate::manifest::MASK))
            .collect();
        for (index, url) in urls.iter().enumerate() {
            command = command
                .arg(if index == 0 {
                    "--index-url"
                } else {
                    "--extra-index-url"
                })
                .arg((*url).clone());
        }
        let command = command
            .arg("-r")
            .arg(requirements.display().to_string())
            .bounded(INSTALL_BOUND);
        let output = transport.run(&command, None).await?;
        if output.success() {
            outcome.installed = install;
        } else {
            outcome.ok = false;
            let not_kept = if image.not_kept.is_empty() {
                String::new()
            } else {
                format!(" (not kept on the node: {})", image.not_kept.join("; "))
            };
            outcome.kept.push(format!(
                "pip install of the earlier packages failed{not_kept}: {}",
                output.tail(5)
            ));
        }
    }
    Ok(())
}
