//! The two formats on a lock with an index package, an sdist, a git package and an index URL with credentials.

use std::collections::BTreeMap;

use super::*;

const TORCH_SHA: &str = "aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11";
const APP_SHA: &str = "bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22";

fn lock() -> Lock {
    serde_json::from_value(serde_json::json!({
        "schema": 1,
        "manifest": "stack",
        "assumed": { "python": "3.12.3", "implementation": "cpython", "glibc": "2.35",
                     "arch": "x86_64", "gpu_arch": [] },
        "packages": [
            { "name": "torch", "version": "2.9.1+cu130", "source": "index",
              "index": "private", "file": "torch-2.9.1+cu130-py3-none-any.whl",
              "sha256": TORCH_SHA },
            { "name": "app", "version": "1.0", "source": "index", "index": "default",
              "file": "app-1.0.tar.gz", "sha256": APP_SHA },
            { "name": "sglang", "version": "0.5.9", "source": "git",
              "url": "https://user:s3cr3t@git.example/sglang", "rev": "v0.5.9",
              "subdirectory": "python" }
        ]
    }))
    .unwrap()
}

fn indexes() -> Vec<ExportIndex> {
    vec![
        ExportIndex {
            name: "private".to_string(),
            url: Some("https://user:s3cr3t@mirror.example/cu130?token=t0k".to_string()),
            explicit: true,
        },
        ExportIndex {
            name: "default".to_string(),
            url: None,
            explicit: false,
        },
    ]
}

#[test]
fn requirements_pin_every_file_with_its_hash_and_mask_credentials() {
    let text = requirements_txt(&lock(), &indexes(), &BTreeMap::new()).unwrap();
    assert!(!text.contains("s3cr3t") && !text.contains("t0k"), "{text}");
    assert!(
        text.contains(
            "--extra-index-url https://user:${UPGRADE_INDEX_PRIVATE_PASSWORD}@mirror.example/cu130?token=${UPGRADE_INDEX_PRIVATE_TOKEN}\n"
        ),
        "{text}"
    );
    assert!(
        !text.contains("--index-url "),
        "pip's own index stays: {text}"
    );
    assert!(
        text.contains(&format!(
            "# index `private`\ntorch==2.9.1+cu130 \\\n    --hash=sha256:{TORCH_SHA}\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("app==1.0 \\\n    --hash=sha256:{APP_SHA}\n")),
        "{text}"
    );
    assert!(
        text.contains("# sglang==0.5.9 comes from git and is left out")
            && text.contains("git+https://user:***@git.example/sglang@v0.5.9#subdirectory=python"),
        "{text}"
    );
}

#[test]
fn other_files_of_a_release_add_their_hashes() {
    let others = BTreeMap::from([("app".to_string(), vec!["cc".repeat(32)])]);
    let text = requirements_txt(&lock(), &indexes(), &others).unwrap();
    assert!(
        text.contains(&format!(
            "app==1.0 \\\n    --hash=sha256:{APP_SHA} \\\n    --hash=sha256:{}\n",
            "cc".repeat(32)
        )),
        "{text}"
    );
}

#[test]
fn a_missing_hash_or_index_is_an_error() {
    let mut unhashed = lock();
    if let LockedSource::Index { sha256, .. } = &mut unhashed.packages[0].source {
        *sha256 = None;
    }
    assert!(matches!(
        requirements_txt(&unhashed, &indexes(), &BTreeMap::new()),
        Err(ExportError::MissingHash { .. })
    ));
    assert!(matches!(
        requirements_txt(&lock(), &indexes()[..1], &BTreeMap::new()),
        Err(ExportError::UnknownIndex { index, .. }) if index == "default"
    ));
}

#[test]
fn pylock_has_the_fields_of_pep_751() {
    let urls: BTreeMap<String, LockedFileUrl> = [
        (
            "torch".to_string(),
            LockedFileUrl {
                index_url: "https://user:s3cr3t@mirror.example/cu130/".to_string(),
                file_url:
                    "https://user:s3cr3t@mirror.example/files/torch-2.9.1+cu130-py3-none-any.whl"
                        .to_string(),
                others: Vec::new(),
            },
        ),
        (
            "app".to_string(),
            LockedFileUrl {
                index_url: "https://index.example/simple/".to_string(),
                file_url: "https://files.example/app-1.0.tar.gz".to_string(),
                others: vec![OtherFile {
                    name: "app-1.0-py3-none-any.whl".to_string(),
                    url: "https://files.example/app-1.0-py3-none-any.whl".to_string(),
                    sha256: "cc".repeat(32),
                }],
            },
        ),
    ]
    .into_iter()
    .collect();
    let text = pylock(&lock(), &urls).unwrap();
    assert!(!text.contains("s3cr3t"), "{text}");
    for expected in [
        "lock-version = \"1.0\"\n",
        "environments = [\"sys_platform == 'linux' and platform_machine == 'x86_64' and python_version == '3.12'\"]\n",
        "requires-python = \"==3.12.*\"\n",
        "created-by = \"cuda-upgrade\"\n",
        "[[packages]]\nname = \"torch\"\nversion = \"2.9.1+cu130\"\nindex = \"https://mirror.example/cu130/\"\n",
        &format!(
            "wheels = [{{ name = \"torch-2.9.1+cu130-py3-none-any.whl\", url = \"https://mirror.example/files/torch-2.9.1+cu130-py3-none-any.whl\", hashes = {{ sha256 = \"{TORCH_SHA}\" }} }}]\n"
        ),
        &format!(
            "sdist = {{ name = \"app-1.0.tar.gz\", url = \"https://files.example/app-1.0.tar.gz\", hashes = {{ sha256 = \"{APP_SHA}\" }} }}\n"
        ),
        &format!(
            "wheels = [{{ name = \"app-1.0-py3-none-any.whl\", url = \"https://files.example/app-1.0-py3-none-any.whl\", hashes = {{ sha256 = \"{}\" }} }}]\n",
            "cc".repeat(32)
        ),
        "# sglang==0.5.9 comes from git and is left out",
    ] {
        assert!(text.contains(expected), "{expected}\nnot in\n{text}");
    }
}
