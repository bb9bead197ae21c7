//! PEP 751's `pylock.toml`: `lock-version`, `created-by`, `requires-python`, the
//! node's environment, and one `[[packages]]` table per locked package with its index
//! and its one file (`wheels` or `sdist`, with `url` and `hashes`).
//!
//! See: <https://packaging.python.org/en/latest/specifications/pylock-toml/>

use std::collections::BTreeMap;

use crate::manifest::{Masking, mask_url};
use crate::text::{is_unsafe_in_line, text_value};

use super::{ExportError, Lock, LockedFileUrl, git_note, split};

/// The lock as `pylock.toml`. `urls` gives each locked file's download URL, its
/// index's URL and the release's other files (from [`super::file_urls`]),
/// credentials still in them: they are written without.
pub fn pylock(lock: &Lock, urls: &BTreeMap<String, LockedFileUrl>) -> Result<String, ExportError> {
    let (indexed, git) = split(lock)?;
    let mut out = format!(
        "# Exported by cuda-upgrade {} from the lock of `{}`.\n",
        env!("CARGO_PKG_VERSION"),
        text_value(&lock.manifest)
    );
    for package in &git {
        out.push_str(&format!("# {}\n", text_value(&git_note(package))));
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
            .get(locked.name.as_ref())
            .ok_or_else(|| ExportError::UnknownIndex {
                package: locked.name.to_string(),
                index: package.index.to_string(),
            })?;
        out.push_str("\n[[packages]]\n");
        out.push_str(&format!("name = {}\n", string(locked.name.as_ref())));
        out.push_str(&format!(
            "version = {}\n",
            string(&locked.version.to_string())
        ));
        out.push_str(&format!(
            "index = {}\n",
            string(&mask_url(&url.index_url, &Masking::Strip))
        ));
        let mut files = vec![(package.file, url.file_url.as_str(), package.sha256)];
        files.extend(url.others.iter().map(|other| {
            (
                other.name.as_str(),
                other.url.as_str(),
                other.sha256.as_str(),
            )
        }));
        let table = |(name, file_url, sha256): (&str, &str, &str)| {
            format!(
                "{{ name = {}, url = {}, hashes = {{ sha256 = {} }} }}",
                string(name),
                string(&mask_url(file_url, &Masking::Strip)),
                string(sha256)
            )
        };
        let (wheels, sdists): (Vec<_>, Vec<_>) = files
            .into_iter()
            .partition(|(name, _, _)| name.ends_with(".whl"));
        // One sdist: the locked one, else the first the index lists.
        if let Some(sdist) = sdists.into_iter().next() {
            out.push_str(&format!("sdist = {}\n", table(sdist)));
        }
        match wheels.as_slice() {
            [] => {}
            [wheel] => out.push_str(&format!("wheels = [{}]\n", table(*wheel))),
            many => {
                out.push_str("wheels = [\n");
                for wheel in many {
                    out.push_str(&format!("    {},\n", table(*wheel)));
                }
                out.push_str("]\n");
            }
        }
    }
    Ok(out)
}

/// A TOML basic string, e.g. `"a \"b\""`; every character that could break or hide a
/// line (controls, U+2028, U+2029, bidirectional controls) is a `\u` escape.
fn string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            ch if is_unsafe_in_line(ch) => out.push_str(&format!("\\u{:04X}", u32::from(ch))),
            ch => out.push(ch),
        }
    }
    out.push('"');
    out
}
