//! PEP 751's `pylock.toml`: `lock-version`, `created-by`, `requires-python`, the
//! node's environment, and one `[[packages]]` table per locked package with its index
//! and its one file (`wheels` or `sdist`, with `url` and `hashes`).
//!
//! See: <https://packaging.python.org/en/latest/specifications/pylock-toml/>

use std::collections::BTreeMap;

use crate::manifest::{Masking, mask_url};

use super::{ExportError, Lock, LockedFileUrl, git_note, split};

/// The lock as `pylock.toml`. `urls` gives each locked file's download URL and its
/// index's URL (from [`super::file_urls`]), credentials still in them: they are
/// written without.
pub fn pylock(lock: &Lock, urls: &BTreeMap<String, LockedFileUrl>) -> Result<String, ExportError> {
    let (indexed, git) = split(lock)?;
    let mut out = format!(
        "# Exported by cuda-upgrade {} from the lock of `{}`.\n",
        env!("CARGO_PKG_VERSION"),
        lock.manifest
    );
    for package in &git {
        out.push_str(&format!("# {}\n", git_note(package)));
    }
    out.push_str("lock-version = \"1.0\"\n");
    out.push_str(&format!(
        "environments = [{}]\n",
        string(&super::environment_marker(&lock.assumed))
    ));
    out.push_str(&format!(
        "requires-python = {}\n",
        string(&format!("=={}.*", super::python_minor(&lock.assumed)))
    ));
    out.push_str("created-by = \"cuda-upgrade\"\n");
    for package in indexed {
        let locked = package.package;
        let url = urls
            .get(&locked.name)
            .ok_or_else(|| ExportError::UnknownIndex {
                package: locked.name.clone(),
                index: package.index.to_string(),
            })?;
        out.push_str("\n[[packages]]\n");
        out.push_str(&format!("name = {}\n", string(&locked.name)));
        out.push_str(&format!("version = {}\n", string(&locked.version)));
        out.push_str(&format!(
            "index = {}\n",
            string(&mask_url(&url.index_url, &Masking::Strip))
        ));
        let file = format!(
            "{{ name = {}, url = {}, hashes = {{ sha256 = {} }} }}",
            string(package.file),
            string(&mask_url(&url.file_url, &Masking::Strip)),
            string(package.sha256)
        );
        if package.file.ends_with(".whl") {
            out.push_str(&format!("wheels = [{file}]\n"));
        } else {
            out.push_str(&format!("sdist = {file}\n"));
        }
    }
    Ok(out)
}

/// A TOML basic string, e.g. `"a \"b\""`.
fn string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            ch if ch.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(ch))),
            ch => out.push(ch),
        }
    }
    out.push('"');
    out
}
