//! `init`'s rendering on the real H200 capture and on surveys shaped like the testbed's.

use super::*;
use crate::facts::NodeFacts;

fn h200() -> NodeFacts {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/facts/h200.facts.json");
    match NodeFacts::read(&path) {
        Ok(facts) => facts,
        Err(error) => panic!("{error}"),
    }
}

fn dist(name: &str, version: &str, requires: &[&str]) -> SurveyDistribution {
    SurveyDistribution {
        name: name.to_string(),
        version: version.to_string(),
        requires: requires.iter().map(|name| (*name).to_string()).collect(),
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
