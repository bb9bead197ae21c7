//! pip's requirements file in hash-checking mode: `name==version \` then one
//! `--hash=sha256:…` line per file the lock records, grouped by index, with the
//! `--index-url` / `--extra-index-url` lines pip needs.

use std::collections::BTreeMap;

use crate::manifest::{Masking, mask_url};
use crate::text::text_value;

use super::{ExportError, ExportIndex, IndexedPackage, Lock, git_note, split};

/// The prefix of the variables that stand for an index URL's credentials, e.g.
/// `UPGRADE_INDEX_PRIVATE_PASSWORD` for index `private`.
const CREDENTIAL_PREFIX: &str = "UPGRADE_INDEX";

/// The lock as a requirements file for `pip install --require-hashes -r FILE`, e.g.
///
/// ```text
/// --extra-index-url https://mirror.example/whl/cu130
///
/// # index `pytorch-cu130`
/// torch==2.9.1+cu130 \
///     --hash=sha256:…
/// ```
///
/// An index without a URL is pip's configured index, so it gets no line; otherwise the
/// first index that is not explicit (else the first) is `--index-url` and the others
/// `--extra-index-url`. A credential in a URL becomes a `${UPGRADE_INDEX_NAME_…}`
/// reference that pip expands from the environment. `others` adds, by package name, the
/// sha256 of the release's other files (`--all-files`), so pip on another platform
/// picks its own.
pub fn requirements_txt(
    lock: &Lock,
    indexes: &[ExportIndex],
    others: &BTreeMap<String, Vec<String>>,
) -> Result<String, ExportError> {
    let (indexed, git) = split(lock)?;
    let mut by_index: BTreeMap<&str, Vec<IndexedPackage<'_>>> = BTreeMap::new();
    for package in &indexed {
        super::find_index(indexes, package.package.name.as_ref(), package.index)?;
        by_index.entry(package.index).or_default().push(*package);
    }
    // The manifest's order decides which index is pip's first.
    let used: Vec<&ExportIndex> = indexes
        .iter()
        .filter(|index| by_index.contains_key(index.name.as_str()))
        .collect();
    let configured = used.iter().any(|index| index.url.is_none());
    let primary = if configured {
        None
    } else {
        used.iter()
            .find(|index| !index.explicit)
            .or(used.first())
            .map(|index| index.name.as_str())
    };
    let mut out = format!(
        "# Exported by cuda-upgrade {} from the lock of `{}`, for {}.\n",
        env!("CARGO_PKG_VERSION"),
        text_value(&lock.manifest),
        super::environment_marker(&lock.assumed)
    );
    out.push_str("# Install with: pip install --no-deps --require-hashes -r THIS_FILE\n");
    let mut variables = Vec::new();
    // `--index-url` first: pip replaces the whole list of indexes when it reads one.
    let mut ordered = used.clone();
    ordered.sort_by_key(|index| primary != Some(index.name.as_str()));
    for index in &ordered {
        let Some(url) = &index.url else {
            out.push_str(&format!(
                "# index `{}`: the index pip is configured with\n",
                index.name
            ));
            continue;
        };
        let prefix = crate::manifest::placeholder_name(CREDENTIAL_PREFIX, &index.name);
        let written = mask_url(url, &Masking::Placeholders(&prefix));
        if written != *url {
            variables.push(index.name.as_str());
        }
        let option = if primary == Some(index.name.as_str()) {
            "--index-url"
        } else {
            "--extra-index-url"
        };
        out.push_str(&format!("{option} {written}\n"));
    }
    for name in variables {
        out.push_str(&format!(
            "# index `{name}` needs its credentials in the environment: the `${{{CREDENTIAL_PREFIX}_…}}` variables above\n"
        ));
    }
    for index in &used {
        let Some(packages) = by_index.get(index.name.as_str()) else {
            continue;
        };
        out.push_str(&format!("\n# index `{}`\n", index.name));
        for package in packages {
            let locked = package.package;
            out.push_str(&format!("{}=={}", locked.name, locked.version));
            let extra = others
                .get(locked.name.as_ref())
                .map(Vec::as_slice)
                .unwrap_or_default();
            for sha256 in std::iter::once(&package.sha256.to_string()).chain(extra) {
                out.push_str(&format!(" \\\n    --hash=sha256:{sha256}"));
            }
            out.push('\n');
        }
    }
    if !git.is_empty() {
        out.push('\n');
        for package in git {
            out.push_str(&format!("# {}\n", text_value(&git_note(package))));
        }
    }
    Ok(out)
}
