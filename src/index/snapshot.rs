//! The snapshot file: a recorded universe, so `lock` and `plan` work offline.
//!
//! Format (JSON, `schema: 1`): a header saying when and how it was recorded, then the
//! [`Universe`]: indexes by manifest name, packages, releases, files. Only index
//! names, file names and hashes are kept — never a URL — so a snapshot can be shared
//! and committed without leaking where a mirror lives. Documented in
//! `manifests/snapshots/README.md`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::model::Universe;

/// The snapshot shipped in the binary, so `lock` works offline on the shipped manifests.
pub const EMBEDDED_SNAPSHOT_FILE: &str = "manifests/snapshots/sglang-0.5.9-cu130.json";
const EMBEDDED_SNAPSHOT_JSON: &str =
    include_str!("../../manifests/snapshots/sglang-0.5.9-cu130.json");

/// The embedded snapshot's date and the SHA-256 of its bytes in hex, e.g.
/// `("2026-12-02", "9c1e…")`; the date is `unknown` when the file has none.
pub fn embedded_identity() -> (String, String) {
    use sha2::{Digest, Sha256};
    let digest = hex::encode(Sha256::digest(EMBEDDED_SNAPSHOT_JSON.as_bytes()));
    let recorded = serde_json::from_str::<serde_json::Value>(EMBEDDED_SNAPSHOT_JSON)
        .ok()
        .and_then(|value| value.get("recorded")?.as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string());
    (recorded, digest)
}

/// The only snapshot schema this build reads.
pub const SNAPSHOT_SCHEMA: u32 = 1;

/// A recorded universe with its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Always [`SNAPSHOT_SCHEMA`].
    pub schema: u32,
    /// When it was recorded, e.g. `2026-12-02`.
    pub recorded: String,
    /// How it was recorded, e.g. `upgrade index snapshot manifests/x.yaml`.
    pub how: String,
    /// The recorded packages.
    pub universe: Universe,
}

/// Failed to read or write a snapshot file.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The file could not be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The JSON is not a snapshot.
    #[error("Failed to parse snapshot `{file}`")]
    Parse {
        /// e.g. `manifests/snapshots/sglang-0.5.9.json`.
        file: String,
        /// Located serde error (line and column).
        #[source]
        source: serde_json::Error,
    },
    /// The snapshot's schema is not one this build reads.
    #[error(
        "Failed to read snapshot `{file}`: schema `{schema}` is not supported (this build reads {SNAPSHOT_SCHEMA})"
    )]
    Schema {
        /// e.g. `snapshot.json`.
        file: String,
        /// The schema found.
        schema: u32,
    },
}

impl Snapshot {
    /// Parse a snapshot's text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, SnapshotError> {
        let mut snapshot: Snapshot =
            serde_json::from_str(text).map_err(|source| SnapshotError::Parse {
                file: file.to_string(),
                source,
            })?;
        if snapshot.schema != SNAPSHOT_SCHEMA {
            return Err(SnapshotError::Schema {
                file: file.to_string(),
                schema: snapshot.schema,
            });
        }
        snapshot.universe.snapshot = Some(file.to_string());
        Ok(snapshot)
    }

    /// The snapshot embedded in the binary ([`EMBEDDED_SNAPSHOT_FILE`]).
    pub fn embedded() -> Result<Self, SnapshotError> {
        Self::parse(EMBEDDED_SNAPSHOT_JSON, EMBEDDED_SNAPSHOT_FILE)
    }

    /// Read a snapshot file.
    pub fn read(path: &Path) -> Result<Self, SnapshotError> {
        let text = fs_err::read_to_string(path)?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Write a snapshot file atomically (temp file + rename), pretty-printed and stable.
    pub fn write(&self, path: &Path) -> Result<(), SnapshotError> {
        let mut text =
            serde_json::to_string_pretty(self).map_err(|source| SnapshotError::Parse {
                file: path.display().to_string(),
                source,
            })?;
        text.push('\n');
        crate::local_file::write_atomic(path, text.as_bytes())?;
        Ok(())
    }
}

/// Where a universe was read from, for people: `the embedded snapshot`,
/// ``snapshot `FILE` ``, or `the indexes read`.
pub(crate) fn place(universe: &crate::index::Universe) -> String {
    match universe.snapshot.as_deref() {
        Some(EMBEDDED_SNAPSHOT_FILE) => "the embedded snapshot".to_string(),
        Some(file) => format!("snapshot `{file}`"),
        None => "the indexes read".to_string(),
    }
}

/// Whether `universe` records what `manifest` names from an index: `Ok` when every such
/// package has at least one release matching its specifier on the index it comes from
/// (the index it names, else the first open index that has it, as the resolver picks);
/// otherwise the first that is not recorded, e.g. `torch ==2.8.0 is not recorded in the
/// embedded snapshot`. Git packages are not looked up.
pub fn covers(
    universe: &crate::index::Universe,
    manifest: &crate::manifest::Manifest,
) -> Result<(), String> {
    use crate::manifest::PackageOrigin;
    let place = place(universe);
    for package in &manifest.packages {
        let PackageOrigin::Index { specifiers, index } = &package.origin else {
            continue;
        };
        let has = |contents: &&super::IndexContents| contents.packages.contains_key(&package.name);
        let contents = match index {
            Some(name) => universe.index(name),
            None if manifest.indexes.is_empty() => universe.indexes.iter().find(has),
            None => manifest
                .indexes
                .iter()
                .filter(|policy| !policy.explicit)
                .filter_map(|policy| universe.index(&policy.name))
                .find(has),
        };
        let recorded = contents
            .and_then(|contents| contents.packages.get(&package.name))
            .is_some_and(|releases| {
                releases
                    .iter()
                    .any(|release| specifiers.contains(&release.version))
            });
        if !recorded {
            let wanted = if specifiers.is_empty() {
                "(any version)".to_string()
            } else {
                specifiers.to_string()
            };
            return Err(format!(
                "{} {wanted} is not recorded in {place}",
                package.name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use pep508_rs::PackageName;
    use url::Url;

    use super::*;
    use crate::index::client::simple::parse_page;

    fn manifest(packages: &str) -> crate::manifest::Manifest {
        let text = format!(
            "schema: 1\nname: t\ntarget: {{ python: /opt/env/bin/python3 }}\nindexes:\n  - name: pytorch-cu130\n    url: https://example.invalid/cu130\n  - name: default\npackages:\n{packages}"
        );
        crate::manifest::load_str(&text, "t.yaml", None).unwrap()
    }

    /// The embedded snapshot covers the shipped stack and names the first package it
    /// does not record.
    #[test]
    fn covers_names_the_first_package_not_recorded() {
        let universe = Snapshot::embedded().unwrap().universe;
        let shipped = crate::manifest::load_file(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/manifests/sglang-0.5.9-cu130.yaml"
        )))
        .unwrap();
        assert_eq!(covers(&universe, &shipped), Ok(()));
        let pinned = manifest("  torch: { version: \"==2.9.1+cu130\", index: pytorch-cu130 }\n");
        assert_eq!(covers(&universe, &pinned), Ok(()));
        let old = manifest("  torch: { version: \"==2.8.0\", index: pytorch-cu130 }\n");
        assert_eq!(
            covers(&universe, &old),
            Err("torch ==2.8.0 is not recorded in the embedded snapshot".to_string())
        );
        // `sgl-cu130` is not one of this manifest's indexes, so `sgl-kernel` comes from
        // `default`, which has no `+cu130` build.
        let elsewhere = manifest("  sgl-kernel: \"==0.3.21+cu130\"\n");
        assert_eq!(
            covers(&universe, &elsewhere),
            Err("sgl-kernel ==0.3.21+cu130 is not recorded in the embedded snapshot".to_string())
        );
        let unknown = manifest("  no-such-package: \"\"\n");
        assert!(
            covers(&universe, &unknown)
                .unwrap_err()
                .starts_with("no-such-package")
        );
    }

    /// sgl-kernel's page lists the shipped wheel five times under one URL with five
    /// digests (re-uploads). The snapshot records one file with one digest: the page's
    /// last listing, the upload the URL serves — the same digest the index client reads
    /// from the page — never a stale one, never all five.
    #[test]
    fn sgl_kernel_carries_the_digest_of_the_upload_served() {
        let filename = "sgl_kernel-0.3.21+cu130-cp310-abi3-manylinux2014_x86_64.whl";
        let snapshot = Snapshot::embedded().unwrap();
        let releases = &snapshot.universe.index("sgl-cu130").unwrap().packages
            [&PackageName::from_str("sgl-kernel").unwrap()];
        let files: Vec<_> = releases
            .iter()
            .flat_map(|release| &release.files)
            .filter(|file| file.filename == filename)
            .collect();
        assert_eq!(files.len(), 1);
        let recorded = files[0].sha256.as_ref().unwrap().as_str();

        let html =
            include_str!("../../solver-tests/snapshot/reference/sgl-kernel-cu130-index.html");
        let page = Url::parse("https://docs.sglang.ai/whl/cu130/sgl-kernel/").unwrap();
        let listed = parse_page(html.as_bytes(), Some("text/html"), &page, &page).unwrap();
        let served = listed
            .iter()
            .find(|file| file.filename == filename)
            .unwrap();
        assert_eq!(recorded, served.sha256.as_ref().unwrap().as_str());
        assert_eq!(
            recorded,
            "4be1313f82808f0fb6df8107e79f6b6cea07a4aa2b20139e0342eafe31eb28bd"
        );
        // The earlier uploads' digests are on the page, and none is recorded.
        for stale in [
            "c9a389f5eca00675c6e842faafb4c66f01edf49c8a4f58185978fa294f461822",
            "970e10c14f3349b8e0e4a660b8de2c4fb1e82162c115186ebc0ca6e32952532b",
            "3a0b3eb1ac55a0f46ea8f4e006d0b641a36c15a1e9f42ed506c7f3790acf68b1",
            "b1f78776faf645ad82ddedf0e5dbbc5a612d558a7aba5c29956ef68ded479230",
        ] {
            assert!(html.contains(&format!("{filename}#sha256={stale}")));
            assert_ne!(recorded, stale);
        }
    }

    /// The CPython 3.12 files of the shipped snapshot without a sha256: torchaudio's,
    /// which no public source pins (`upgrade index hash` records it), and the cu130
    /// index's triton, which the explicit index never serves to the seed manifest.
    #[test]
    fn cp312_files_without_a_digest() {
        let snapshot = Snapshot::embedded().unwrap();
        let mut missing: Vec<String> = snapshot
            .universe
            .indexes
            .iter()
            .flat_map(|index| {
                index.packages.values().flatten().flat_map(move |release| {
                    release
                        .files
                        .iter()
                        .filter(|file| file.sha256.is_none())
                        .filter(|file| !file.filename.contains("-cp311-"))
                        .map(move |file| format!("{}: {}", index.name, file.filename))
                })
            })
            .collect();
        missing.sort();
        assert_eq!(
            missing,
            [
                "pytorch-cu130: torchaudio-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
                "pytorch-cu130: triton-3.5.1-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
            ]
        );
    }
}
