//! `upgrade export MANIFEST --format requirements-txt|pylock [-o FILE]`: the run's lock
//! (the lock beside the manifest when fresh, else resolved, as every verb gets it; or a
//! lock file with `--manifest`) as other installers read it (`crate::resolve::export`).
//! The manifest names the indexes' URLs; `pylock` also reads each locked package's
//! project page for its file's URL.

use std::collections::BTreeMap;

use crate::cli::{ExportArgs, ExportFormat};
use crate::commands::{CommandError, ExitStatus, runtime};
use crate::converge;
use crate::manifest;
use crate::printer::Printer;
use crate::resolve::Lock;
use crate::resolve::export::{self, ExportIndex};

/// Run `upgrade export`.
pub fn run(args: &ExportArgs, printer: &mut Printer) -> Result<ExitStatus, CommandError> {
    let settings = super::resolution(&args.resolution)?;
    let (manifest, lock) = match &args.manifest {
        // A lock file and the manifest it was made from.
        Some(manifest) => (manifest::load_file(manifest)?, read_lock(&args.target)?),
        None => {
            let prepared = converge::load(&args.target, settings.clone())?;
            let environment = super::node::environment(&prepared.manifest, args.facts.as_deref())?;
            let (lock, origin) = converge::lock_for(&prepared, &environment, "target")?;
            if let Some(note) = origin.note() {
                printer
                    .err(&format!("{}\n", crate::text::text_value(&note)))
                    .map_err(CommandError::Output)?;
            }
            (prepared.manifest.clone(), lock)
        }
    };
    // The project pages, only where the format or `--all-files` needs them.
    let urls = if args.format == ExportFormat::Pylock || args.all_files {
        let index_urls = converge::manifest_index_urls(&manifest, &settings.live)?;
        let client = crate::index::client::IndexClient::new(settings.live.client.clone())
            .map_err(|error| export::ExportError::ClientSetup(Box::new(error)))?;
        runtime()?.block_on(export::file_urls(
            &client,
            &lock,
            &index_urls,
            args.all_files,
        ))?
    } else {
        BTreeMap::new()
    };
    let text = match args.format {
        ExportFormat::RequirementsTxt => {
            let indexes: Vec<ExportIndex> = manifest
                .indexes
                .iter()
                .map(|index| ExportIndex {
                    name: index.name.clone(),
                    url: index.url.clone(),
                    explicit: index.explicit,
                })
                .collect();
            let others: BTreeMap<String, Vec<String>> = urls
                .iter()
                .map(|(name, url)| {
                    let hashes = url.others.iter().map(|other| other.sha256.clone());
                    (name.clone(), hashes.collect())
                })
                .collect();
            export::requirements_txt(&lock, &indexes, &others)?
        }
        ExportFormat::Pylock => export::pylock(&lock, &urls)?,
    };
    printer
        .out_to(args.output.as_deref(), &text)
        .map_err(CommandError::Output)?;
    if let Some(path) = &args.output {
        printer
            .err(&format!(
                "wrote {} ({} packages of `{}`)\n",
                path.display(),
                lock.packages.len(),
                lock.manifest
            ))
            .map_err(CommandError::Output)?;
    }
    Ok(ExitStatus::Success)
}

/// The lock in `path` (`upgrade lock --format json`).
fn read_lock(path: &std::path::Path) -> Result<Lock, CommandError> {
    let lock_error = |message: String| CommandError::LockFile {
        path: path.to_path_buf(),
        message,
    };
    Lock::read(path).map_err(|error| lock_error(crate::text::error_chain(&error)))
}
