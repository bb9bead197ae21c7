//! Whole-probe tests: the synthetic H200 probe output assembled from the real captures
//! (`tests/fixtures/facts/h200.probe.txt`), and the real probe script run on this machine.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::test_support::fixture;
use super::*;

fn h200() -> NodeFacts {
    NodeFacts::parse(&fixture("h200.probe.txt")).unwrap()
}

#[test]
fn h200_probe_reads_every_fact() {
    let facts = h200();
    assert_eq!(facts.schema, 1);
    assert_eq!(
        facts.probe,
        ProbeRequest::new(
            "/opt/torch/.venv/bin/python3",
            vec!["libnvrtc.so.13".to_string()]
        )
    );

    let os = facts.os.as_ref().unwrap();
    assert_eq!(
        (os.id.as_str(), os.version_id.as_deref()),
        ("ubuntu", Some("24.04"))
    );
    assert_eq!(facts.kernel.as_ref().unwrap().machine, "x86_64");

    let driver = facts.driver.as_ref().unwrap();
    assert_eq!(driver.version.to_string(), "580.159.04");
    assert_eq!(driver.kernel_module, Some(KernelModule::Open));
    assert_eq!(
        driver.source,
        DriverVersionSource::File {
            path: PathBuf::from("/proc/driver/nvidia/version")
        }
    );

    assert_eq!(facts.gpus.len(), 1);
    let gpu = &facts.gpus[0];
    assert_eq!(gpu.name, "NVIDIA H200");
    assert_eq!(gpu.compute_capability.unwrap().sm_name(), "sm_90");
    assert_eq!(gpu.memory_total_mib, 143771);
    assert_eq!(
        gpu.uuid.as_deref(),
        Some("GPU-baa74861-c356-a191-cf64-45e0da8ff8c1")
    );
    assert!(gpu.processes.is_empty());
    assert!(facts.unattributed_gpu_processes.is_empty());

    assert_eq!(
        facts.toolkits.default_prefix.as_deref(),
        Some(Path::new("/usr/local/cuda-13.0"))
    );
    let toolkit = facts.toolkits.default_toolkit().unwrap();
    assert_eq!(toolkit.version.as_ref().unwrap().to_string(), "13.0");
    assert_eq!(toolkit.version_source, Some(ToolkitVersionSource::Nvcc));
    assert_eq!(
        toolkit.nvcc_version.as_ref().unwrap().to_string(),
        "13.0.88"
    );
    assert_eq!(
        toolkit.aliases,
        vec![
            PathBuf::from("/usr/local/cuda"),
            PathBuf::from("/usr/local/cuda-13")
        ]
    );
    assert_eq!(
        facts.toolkits.find(Path::new("/usr/local/cuda-13")),
        Some(toolkit)
    );

    let python = facts.python.as_ref().unwrap();
    assert_eq!(python.version.to_string(), "3.12.3");
    assert_eq!(python.prefix, Path::new("/opt/torch/.venv"));
    assert_eq!(python.base_prefix, Path::new("/usr"));
    assert_eq!(python.glibc.unwrap().to_string(), "2.39");
    assert_eq!(python.tags_source, TagsSource::Packaging);
    assert!(
        python
            .tags
            .contains(&"cp312-cp312-manylinux_2_39_x86_64".to_string())
    );

    let sitecustomize = facts.sitecustomize.as_ref().unwrap();
    assert_eq!(
        sitecustomize.origin.as_deref(),
        Some(Path::new("/usr/lib/python3.12/sitecustomize.py"))
    );
    assert_eq!(sitecustomize.managed_block, None);
    assert!(sitecustomize.imported);

    assert_eq!(facts.packages_source, Some(PackagesSource::PipFreeze));
    assert_eq!(facts.packages.len(), 196);
    let torch = facts.torch.as_ref().unwrap();
    assert_eq!(torch.version.as_ref().unwrap().to_string(), "2.11.0");
    assert_eq!(
        torch.build.variant,
        TorchVariant::Cuda {
            version: "13.0".parse().unwrap()
        }
    );
    assert_eq!(
        torch.build.required_cudnn.as_ref().unwrap().to_string(),
        "9.19.0.56"
    );

    assert_eq!(
        facts.ldconfig.resolve("libnvrtc.so.13"),
        Some(Path::new(
            "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13"
        ))
    );
    let cudnn = facts.ldconfig.cudnn_libraries();
    assert_eq!(cudnn.len(), 1);
    assert_eq!(cudnn[0].version.to_string(), "9.14.0");
    let conf_names: Vec<&Path> = facts
        .ldconfig
        .conf_files
        .iter()
        .map(|file| file.path.as_path())
        .collect();
    assert!(conf_names.contains(&Path::new("/etc/ld.so.conf.d/987_cuda-13.conf")));
    assert!(conf_names.contains(&Path::new("/etc/ld.so.conf.d/gds-13-0.conf")));
    assert_eq!(facts.ldconfig.conf_files.len(), 8);
    assert!(facts.disk.is_empty(), "the captures hold no df output");
}

#[test]
fn h200_findings_name_the_cudnn_and_sitecustomize_traps() {
    let findings = h200().findings();
    let codes: Vec<FindingCode> = findings.iter().map(|finding| finding.code).collect();
    assert_eq!(
        codes,
        vec![
            FindingCode::SystemCudnnOlderThanWheel,
            FindingCode::SitecustomizeOutsideEnvironment,
            FindingCode::TorchLabelMissing,
        ]
    );
    assert_eq!(
        findings[0].message,
        "System cuDNN `9.14.0` in `/usr/lib/x86_64-linux-gnu` is on the loader path and older \
         than the `9.19.0.56` torch's wheel requires"
    );
    assert_eq!(findings[0].severity, Severity::Warning);
    assert!(
        findings[1]
            .message
            .contains("`/usr/lib/python3.12/sitecustomize.py`")
    );
    assert!(
        findings[1]
            .hint
            .as_deref()
            .unwrap()
            .contains("`/opt/torch/.venv/lib/python3.12/site-packages`")
    );
    assert_eq!(
        findings[2].message,
        "torch `2.11.0` carries no local label; its build is CUDA `13.0` (read from `torch/version.py`)"
    );
}

#[test]
fn h200_busy_gpu_is_a_finding_naming_the_process() {
    let text = fixture("h200.probe.txt").replace(
        "gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n",
        "gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n\
         GPU-baa74861-c356-a191-cf64-45e0da8ff8c1, 433, python3, 8710 MiB\n",
    );
    let facts = NodeFacts::parse(&text).unwrap();
    assert_eq!(facts.gpus[0].processes[0].pid, 433);
    let busy = facts
        .findings()
        .into_iter()
        .find(|finding| finding.code == FindingCode::GpusBusy)
        .unwrap();
    assert_eq!(
        busy.message,
        "GPU `0` (`NVIDIA H200`) is held by `python3` (pid `433`, `8710` MiB)"
    );
    // GPU memory and processes are volatile: the digest does not move.
    assert_eq!(facts.digest().unwrap(), h200().digest().unwrap());
}

#[test]
fn torch_label_disagreeing_with_build_is_a_finding() {
    let text = fixture("h200.probe.txt").replace("\ntorch==2.11.0\n", "\ntorch==2.11.0+cu128\n");
    let findings = NodeFacts::parse(&text).unwrap().findings();
    let disagreement = findings
        .iter()
        .find(|finding| finding.code == FindingCode::TorchVariantDisagreesWithLabel)
        .unwrap();
    assert_eq!(
        disagreement.message,
        "torch `2.11.0+cu128` is labelled CUDA `12.8` but was built for CUDA `13.0`"
    );
    assert!(
        !findings
            .iter()
            .any(|finding| finding.code == FindingCode::TorchLabelMissing)
    );
}

#[test]
fn missing_expected_library_is_a_finding() {
    let text =
        fixture("h200.probe.txt").replace("library\tlibnvrtc.so.13\n", "library\tlibnvrtc.so.14\n");
    let findings = NodeFacts::parse(&text).unwrap().findings();
    assert!(findings.iter().any(
        |finding| finding.code == FindingCode::ExpectedLibraryMissing
            && finding.message == "`libnvrtc.so.14` is not in the loader cache (`ldconfig -p`)"
    ));
}

#[test]
fn h200_facts_round_trip_through_json() {
    let facts = h200();
    let json = facts.to_json().unwrap();
    let back = NodeFacts::from_json(&json).unwrap();
    assert_eq!(back, facts);
    assert_eq!(back.digest().unwrap(), facts.digest().unwrap());
    // A probe report printed with its findings beside the facts reads back too.
    let mut report: serde_json::Value = serde_json::from_str(&json).unwrap();
    report["findings"] = serde_json::to_value(facts.findings()).unwrap();
    assert_eq!(NodeFacts::from_json(&report.to_string()).unwrap(), facts);
    let mut future = report.clone();
    future["schema"] = 2.into();
    assert!(matches!(
        NodeFacts::from_json(&future.to_string()),
        Err(FactsError::UnsupportedSchema { found: 2 })
    ));
}

#[test]
fn h200_facts_json_matches_the_committed_snapshot() {
    let json = h200().to_json().unwrap() + "\n";
    assert_eq!(
        json,
        fixture("h200.facts.json"),
        "regenerate with: cargo test --lib facts -- --ignored write_h200_facts_json"
    );
}

#[test]
#[ignore = "writes tests/fixtures/facts/h200.facts.json"]
fn write_h200_facts_json() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/facts/h200.facts.json");
    fs_err::write(path, h200().to_json().unwrap() + "\n").unwrap();
}

#[test]
fn digest_changes_with_planning_facts_only() {
    let facts = h200();
    let digest = facts.digest().unwrap();
    assert!(digest.as_str().starts_with("sha256:"));
    assert_eq!(digest.as_str().len(), "sha256:".len() + 64);
    let mut upgraded = facts.clone();
    upgraded
        .packages
        .retain(|package| package.name.to_string() != "torch");
    assert_ne!(upgraded.digest().unwrap(), digest);
    let mut noisy = facts.clone();
    noisy.gpus[0].memory_used_mib = Some(8719);
    noisy.sections.clear();
    assert_eq!(noisy.digest().unwrap(), digest);
}

#[test]
fn section_errors_name_the_section() {
    let text = fixture("h200.probe.txt").replace(
        "0, NVIDIA H200, 580.159.04, 9.0,",
        "0, NVIDIA H200, 580.159.04, nine,",
    );
    let error = NodeFacts::parse(&text).unwrap_err();
    assert_eq!(
        error.to_string(),
        "Failed to parse section `nvidia-smi-gpus` of the probe output"
    );
    let cause = std::error::Error::source(&error).unwrap();
    assert!(
        cause
            .to_string()
            .starts_with("Failed to parse line 1: `0, NVIDIA H200, 580.159.04, nine,")
    );
}

/// Runs the real probe script with `sh` on this machine, as the local transport would.
fn run_probe(request: &ProbeRequest) -> String {
    run_probe_with_path(request, &std::env::var("PATH").unwrap())
}

/// [`run_probe`] with `PATH` set to `path`.
fn run_probe_with_path(request: &ProbeRequest, path: &str) -> String {
    use std::io::Write as _;
    let (program, arguments) = request.command();
    let mut child = Command::new(program)
        .args(&arguments)
        .env("PATH", path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(PROBE_SCRIPT.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// This machine's `python3`, resolved through `PATH`.
fn local_python() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|directory| directory.join("python3"))
        .find(|candidate| candidate.is_file())
}

#[test]
fn real_probe_runs_on_this_machine() {
    let python = local_python().expect("a python3 on PATH");
    let request = ProbeRequest::new(
        &python,
        vec!["libc.so.6".to_string(), "libnvrtc.so.99".to_string()],
    );
    let facts = NodeFacts::parse(&run_probe(&request)).unwrap();
    assert_eq!(facts.probe, request);
    let python_facts = facts.python.as_ref().expect("the interpreter answered");
    assert!(!python_facts.tags.is_empty());
    assert!(python_facts.version.release()[0] >= 3);
    assert!(!facts.packages.is_empty() || facts.packages_source.is_some());
    assert!(facts.ldconfig.resolve("libc.so.6").is_some());
    assert!(facts.os.is_some());
    assert!(!facts.disk.is_empty());
    let findings = facts.findings();
    assert!(findings.iter().any(
        |finding| finding.code == FindingCode::ExpectedLibraryMissing
            && finding.message.contains("`libnvrtc.so.99`")
    ));
    if !Path::new("/proc/driver/nvidia/version").exists() {
        assert!(facts.driver.is_none(), "no driver: {:?}", facts.driver);
        assert!(facts.gpus.is_empty());
        assert!(
            findings
                .iter()
                .any(|finding| finding.code == FindingCode::NoGpus)
        );
    }
    facts.digest().unwrap();
}

#[test]
fn real_probe_reports_a_missing_interpreter_and_shell_metacharacters_stay_data() {
    let request = ProbeRequest {
        python: Some(PathBuf::from(
            "/nonexistent/$(touch /tmp/cuda-upgrade-pwned)/bin/python3",
        )),
        libraries: vec!["lib'x\".so; echo hi".to_string()],
        paths: vec![PathBuf::from(
            "/nonexistent/$(touch /tmp/cuda-upgrade-pwned)",
        )],
        secrets_dir: Some(PathBuf::from("/nonexistent/'secrets'")),
        marker: "a `marker` $HOME".to_string(),
        driver_version_file: Some(PathBuf::from("/nonexistent/driver-version")),
        scope: ProbeScope::Plan,
    };
    let facts = NodeFacts::parse(&run_probe(&request)).unwrap();
    assert_eq!(facts.probe, request);
    assert!(facts.python.is_none());
    assert!(facts.packages.is_empty());
    assert!(facts.driver.is_none());
    assert!(!Path::new("/tmp/cuda-upgrade-pwned").exists());
    assert!(
        facts
            .findings()
            .iter()
            .any(|finding| finding.code == FindingCode::InterpreterMissing)
    );
}

#[test]
fn real_probe_falls_back_to_its_own_tags_and_metadata_without_pip() {
    // `-S`-free interpreter run with pip and packaging hidden: point PYTHONPATH at a
    // directory whose `pip` and `packaging` modules fail to import.
    let python = local_python().expect("a python3 on PATH");
    let blockers = tempfile::tempdir().unwrap();
    for name in ["pip", "packaging"] {
        let package = blockers.path().join(name);
        fs_err::create_dir(&package).unwrap();
        fs_err::write(package.join("__init__.py"), "raise ImportError('hidden')\n").unwrap();
    }
    let request = ProbeRequest::new(&python, Vec::new());
    let (program, arguments) = request.command();
    let mut child = Command::new(program)
        .args(&arguments)
        .env("PYTHONPATH", blockers.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(PROBE_SCRIPT.as_bytes())
            .unwrap();
    }
    let output = child.wait_with_output().unwrap();
    let facts = NodeFacts::parse(&String::from_utf8(output.stdout).unwrap()).unwrap();
    let python_facts = facts.python.as_ref().unwrap();
    assert_eq!(python_facts.tags_source, TagsSource::Fallback);
    let glibc = python_facts.glibc.unwrap();
    let machine = &python_facts.machine;
    let interpreter = format!(
        "cp{}{}",
        python_facts.version.release()[0],
        python_facts.version.release()[1]
    );
    assert_eq!(
        python_facts.tags[0],
        format!(
            "{interpreter}-{interpreter}-manylinux_{}_{}_{machine}",
            glibc.major(),
            glibc.minor()
        )
    );
    assert!(
        python_facts
            .tags
            .contains(&format!("{interpreter}-abi3-manylinux2014_{machine}"))
    );
    assert!(python_facts.tags.contains(&"py3-none-any".to_string()));
    assert_eq!(
        facts.packages_source,
        Some(PackagesSource::ImportlibMetadata)
    );
    assert!(!facts.packages.is_empty());
    assert!(
        !facts
            .findings()
            .iter()
            .any(|finding| finding.code == FindingCode::ProbeSectionFailed)
    );
}

#[test]
fn broken_nvidia_smi_is_one_finding_and_no_gpus() {
    let failure = "@@stderr@@\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n@@end status=9@@\n";
    let text = "@@cuda-upgrade-probe 1@@\n".to_string()
        + "@@begin nvidia-smi-gpus@@\n"
        + failure
        + "@@begin nvidia-smi-gpus-without-capability@@\n"
        + failure
        + "@@begin nvidia-smi-compute-apps@@\n"
        + failure;
    let facts = NodeFacts::parse(&text).unwrap();
    assert!(facts.gpus.is_empty());
    assert!(facts.driver.is_none());
    let findings = facts.findings();
    assert_eq!(findings.len(), 1);
    assert_eq!(
        findings[0].message,
        "Probe section `nvidia-smi-gpus` exited with status `9`: NVIDIA-SMI has failed because \
         it couldn't communicate with the NVIDIA driver."
    );
}

#[test]
fn old_driver_gpus_come_from_the_query_without_capability() {
    let text = "@@cuda-upgrade-probe 1@@\n\
        @@begin nvidia-smi-gpus@@\n\
        @@stderr@@\n\
        Field \"compute_cap\" is not a valid field to query.\n\
        @@end status=2@@\n\
        @@begin nvidia-smi-gpus-without-capability@@\n\
        0, Tesla V100-SXM2-32GB, 470.57.02, 32510, 0, GPU-1\n\
        @@end status=0@@\n";
    let facts = NodeFacts::parse(text).unwrap();
    assert_eq!(facts.gpus[0].compute_capability, None);
    assert_eq!(
        facts.driver.as_ref().unwrap().version.to_string(),
        "470.57.02"
    );
    assert_eq!(
        facts.driver.as_ref().unwrap().source,
        DriverVersionSource::NvidiaSmi
    );
    assert!(facts.findings().is_empty());
}

#[test]
fn real_probe_runs_as_a_command_string_too() {
    let python = local_python().expect("a python3 on PATH");
    let request = ProbeRequest::new(&python, vec!["libc.so.6".to_string()]);
    let output = Command::new("sh")
        .arg("-c")
        .arg(PROBE_SCRIPT)
        .arg("cuda-upgrade-probe")
        .args(request.arguments())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let facts = NodeFacts::parse(&String::from_utf8(output.stdout).unwrap()).unwrap();
    assert_eq!(facts.probe, request);
    assert!(facts.python.is_some());
}

/// The probe script's own output on the real H200 node, idle and while a python process
/// held 8 GiB (`tests/fixtures/facts/h200-node-*.probe.txt`).
fn h200_node(state: &str) -> NodeFacts {
    NodeFacts::parse(&fixture(&format!("h200-node-{state}.probe.txt"))).unwrap()
}

#[test]
fn real_h200_probe_output_parses() {
    let facts = h200_node("idle");
    assert_eq!(
        facts.driver.as_ref().unwrap().version.to_string(),
        "580.159.04"
    );
    assert_eq!(facts.gpus.len(), 1);
    assert_eq!(facts.gpus[0].name, "NVIDIA H200");
    assert_eq!(facts.gpus[0].compute_capability.unwrap().sm_name(), "sm_90");
    assert_eq!(
        facts.gpus[0].uuid.as_deref(),
        Some("GPU-0bb4dec4-9b99-e4e3-4fd7-06ed5ffc42a9")
    );
    assert!(facts.gpus[0].processes.is_empty());
    let toolkit = facts.toolkits.default_toolkit().unwrap();
    assert_eq!(toolkit.prefix, Path::new("/usr/local/cuda-13.0"));
    assert_eq!(toolkit.version.as_ref().unwrap().to_string(), "13.0");
    let python = facts.python.as_ref().unwrap();
    assert_eq!(python.version.to_string(), "3.12.3");
    assert_eq!(python.tags_source, TagsSource::Packaging);
    assert_eq!(python.tags.len(), 1068);
    assert_eq!(
        facts.sitecustomize.as_ref().unwrap().origin.as_deref(),
        Some(Path::new("/usr/lib/python3.12/sitecustomize.py"))
    );
    let torch = facts.torch.as_ref().unwrap();
    assert_eq!(torch.version.as_ref().unwrap().to_string(), "2.11.0");
    assert_eq!(torch.build.cuda.as_ref().unwrap().to_string(), "13.0");
    assert_eq!(
        torch.build.reported_version.as_deref(),
        Some("2.11.0+cu130")
    );
    // The captured `pip-freeze.txt` (196 lines) left pip out; `--all` keeps it.
    assert_eq!(facts.packages.len(), 197);
    assert_eq!(
        facts
            .package("pip")
            .unwrap()
            .version
            .as_ref()
            .unwrap()
            .to_string(),
        "24.0"
    );
    assert_eq!(
        facts.ldconfig.resolve("libnvrtc.so.13"),
        Some(Path::new(
            "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13"
        ))
    );
    assert_eq!(
        facts
            .ldconfig
            .real_path(Path::new("/lib/x86_64-linux-gnu/libcudnn.so.9")),
        Some(Path::new("/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0"))
    );
    assert_eq!(facts.disk.len(), 4);
    assert_eq!(facts.disk[2].path, Path::new("/opt/torch/.venv"));

    let codes: Vec<FindingCode> = facts
        .findings()
        .iter()
        .map(|finding| finding.code)
        .collect();
    assert_eq!(
        codes,
        vec![
            FindingCode::SystemCudnnOlderThanWheel,
            FindingCode::SitecustomizeOutsideEnvironment,
            FindingCode::TorchLabelMissing,
        ]
    );
}

#[test]
fn real_h200_busy_probe_names_the_holder_and_keeps_the_digest() {
    let busy = h200_node("busy");
    let process = &busy.gpus[0].processes[0];
    assert_eq!(process.pid, 738);
    assert_eq!(process.process_name, "/opt/torch/.venv/bin/python3");
    assert_eq!(process.used_memory_mib, Some(8710));
    let finding = busy
        .findings()
        .into_iter()
        .find(|finding| finding.code == FindingCode::GpusBusy)
        .unwrap();
    assert_eq!(
        finding.message,
        "GPU `0` (`NVIDIA H200`) is held by `/opt/torch/.venv/bin/python3` (pid `738`, `8710` MiB)"
    );
    // Seconds apart, memory in use, processes and free disk differ; the digest does not.
    let idle = h200_node("idle");
    assert_ne!(busy.gpus[0].memory_used_mib, idle.gpus[0].memory_used_mib);
    assert_eq!(busy.digest().unwrap(), idle.digest().unwrap());
}

/// See: issue 8: the real H200 after the earlier env step (the link replaced by a
/// regular file of mode 0777) is flagged; a 0644 root file is not.
#[test]
fn a_sitecustomize_others_can_write_is_a_warning() {
    let mut facts = h200();
    let site = facts.sitecustomize.as_mut().unwrap();
    site.real_path = Some(PathBuf::from("/usr/lib/python3.12/sitecustomize.py"));
    site.uid = Some(0);
    site.mode = Some(0o644);
    assert!(
        !facts
            .findings()
            .iter()
            .any(|finding| finding.code == FindingCode::SitecustomizeWritableByOthers)
    );
    facts.sitecustomize.as_mut().unwrap().mode = Some(0o777);
    let findings = facts.findings();
    let finding = findings
        .iter()
        .find(|finding| finding.code == FindingCode::SitecustomizeWritableByOthers)
        .unwrap();
    assert!(
        finding.message.contains("mode `777`"),
        "{}",
        finding.message
    );
    assert_eq!(finding.severity, Severity::Warning);
}

/// See: issue 8: the probe's own output on the real H200 (Ubuntu 24.04, CUDA 13.0 from
/// NVIDIA's apt packages), captured with `device` before any apply. The toolkit is
/// identified by its apt meta package, the stdlib `sitecustomize.py` is a link to a
/// root-owned 0644 file, and `libnvrtc.so.13` (found through `/usr/local/cuda/…`)
/// resolves into `/usr/local/cuda-13.0/…` by real path.
#[test]
fn real_h200_probe_identifies_the_apt_toolkit_the_symlink_and_the_library() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/real-h200-device/h200-after.probe.txt"),
    )
    .unwrap();
    let facts = NodeFacts::parse(&text).unwrap();
    let toolkit = facts
        .toolkits
        .find(Path::new("/usr/local/cuda-13.0"))
        .unwrap();
    assert_eq!(toolkit.version.as_ref().unwrap().to_string(), "13.0.2");
    let site = facts.sitecustomize.as_ref().unwrap();
    assert_eq!(
        site.origin.as_deref(),
        Some(Path::new("/usr/lib/python3.12/sitecustomize.py"))
    );
    assert_eq!(
        site.real_path.as_deref(),
        Some(Path::new("/etc/python3.12/sitecustomize.py"))
    );
    assert_eq!((site.mode, site.uid), (Some(0o644), Some(0)));
    assert_eq!(
        facts
            .ldconfig
            .resolve("libnvrtc.so.13")
            .unwrap()
            .parent()
            .unwrap(),
        Path::new("/usr/local/cuda/targets/x86_64-linux/lib")
    );
    let expected = vec!["libnvrtc.so.13".to_string()];
    assert!(
        facts
            .ldconfig
            .unresolved(
                &expected,
                &[PathBuf::from(
                    "/usr/local/cuda-13.0/targets/x86_64-linux/lib"
                )]
            )
            .is_empty()
    );
    assert!(
        !facts
            .findings()
            .iter()
            .any(|finding| finding.code == FindingCode::SitecustomizeWritableByOthers)
    );
}

#[test]
fn the_journal_tail_names_a_run_left_open() {
    use super::open_journal_run;
    assert_eq!(open_journal_run(""), None);
    assert_eq!(
        open_journal_run("{\"run\":\"7-1\",\"at\":1,\"event\":\"end\",\"ok\":true}\n"),
        None
    );
    assert_eq!(
        open_journal_run("{\"run\":\"7-2\",\"at\":1,\"event\":\"rolled_back\"}"),
        None
    );
    assert_eq!(
        open_journal_run("{\"run\":\"7-3\",\"at\":1,\"event\":\"step\"}").as_deref(),
        Some("7-3")
    );
    assert_eq!(
        open_journal_run("{\"run\":\"7-4\",\"at\":1,\"ev").as_deref(),
        Some("unreadable")
    );
}

#[test]
fn a_step_probe_starts_no_nvidia_smi_and_a_plan_probe_does() {
    use std::os::unix::fs::PermissionsExt as _;
    let bin = tempfile::tempdir().unwrap();
    let started = bin.path().join("started");
    let smi = bin.path().join("nvidia-smi");
    fs_err::write(
        &smi,
        format!(
            "#!/bin/sh\necho run >> '{}'\necho '0, NVIDIA H200, 580.82.07, 9.0, 143771, 0, GPU-1'\n",
            started.display()
        ),
    )
    .unwrap();
    fs_err::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    let probe = |scope: ProbeScope| {
        let request = ProbeRequest {
            python: None,
            scope,
            ..ProbeRequest::default()
        };
        NodeFacts::parse(&run_probe_with_path(&request, &path)).unwrap()
    };
    let step = probe(ProbeScope::Step);
    assert_eq!(step.probe.scope, ProbeScope::Step);
    assert!(step.gpus.is_empty() && !started.exists());
    assert!(
        !step
            .sections
            .iter()
            .any(|section| section.name.starts_with("nvidia-smi"))
    );
    let plan = probe(ProbeScope::Plan);
    assert_eq!(plan.gpus.len(), 1);
    assert_eq!(fs_err::read_to_string(&started).unwrap(), "run\n");
}
