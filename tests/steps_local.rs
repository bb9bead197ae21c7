//! Steps applied for real through the local transport, on a throw-away virtual
//! environment: plan from probed facts, apply, verify, then plan again and find nothing
//! to do.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly at the first surprise"
)]

use std::path::Path;
use std::process::Command;

use cuda_upgrade::exec::{ApplyContext, StepOutcome, apply_step, gather_facts};
use cuda_upgrade::facts::ProbeRequest;
use cuda_upgrade::steps::{Action, env};
use cuda_upgrade::transport::{LocalTransport, Transport};

fn venv(dir: &Path) -> std::path::PathBuf {
    let status = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(dir.join("venv"))
        .status()
        .unwrap();
    assert!(status.success());
    dir.join("venv/bin/python3")
}

#[tokio::test]
async fn env_block_is_injected_visible_and_then_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let python = venv(dir.path());
    let transport = Transport::Local(LocalTransport::new());
    let request = ProbeRequest::new(&python, Vec::new());
    let vars = vec![
        env::ResolvedVar {
            name: "CUDA_HOME".into(),
            value: "/usr/local/cuda-13.0".into(),
            secret: false,
        },
        env::ResolvedVar {
            name: "HF_TOKEN".into(),
            value: "hf_'$(touch pwned)'".into(),
            secret: true,
        },
    ];
    let fallback = dir.path().join("unused-sitecustomize.py");

    let facts = gather_facts(&transport, &request).await.unwrap();
    let step = env::plan(&vars, "test", &python, &facts, fallback.clone());
    assert_ne!(step.action, Action::NoOp, "{}", step.reason);
    let shown: Vec<String> = step
        .operations
        .iter()
        .map(|operation| operation.describe())
        .collect();
    assert!(
        !shown.join("\n").contains("hf_"),
        "a secret reached the plan: {shown:?}"
    );

    let context = ApplyContext {
        cache_dir: dir.path().join("cache"),
        secrets: vec!["hf_'$(touch pwned)'".to_string()],
    };
    let outcome = apply_step(&transport, &step, &context).await.unwrap();
    assert_eq!(outcome, StepOutcome::Applied);
    assert!(!Path::new("pwned").exists() && !dir.path().join("pwned").exists());

    let again = gather_facts(&transport, &request).await.unwrap();
    let step = env::plan(&vars, "test", &python, &again, fallback);
    assert_eq!(step.action, Action::NoOp, "{}", step.reason);
    assert!(step.operations.is_empty());
    assert_eq!(
        apply_step(&transport, &step, &context).await.unwrap(),
        StepOutcome::Unchanged
    );
}
