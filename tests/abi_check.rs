//! `upgrade abi-check` on shared objects built here with the system `g++`: a provider
//! exporting `c10::cuda::c10_cuda_check_implementation(…, unsigned int, bool)` and an
//! extension needing the `int` form fail with the side-by-side report, in a
//! site-packages directory, in a directory of wheels (before install) and in a real
//! virtual environment (read in place and streamed as a node sends it); the matching
//! pair passes; weak, interpreter and C/C++ runtime symbols are never reported; symbol
//! versions are honoured.
//!
//! See: issue 11 (ELF-level ABI check).
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly at the first surprise"
)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cuda_upgrade::abi;
use cuda_upgrade::transport::{LocalTransport, Transport};

const PROVIDER_UNSIGNED: &str = r#"
namespace c10 { namespace cuda {
void c10_cuda_check_implementation(int err, const char* file, const char* func, unsigned int line, bool include) {
    (void)err; (void)file; (void)func; (void)line; (void)include;
}
} }
"#;

const EXTENSION_INT: &str = r#"
namespace c10 { namespace cuda {
void c10_cuda_check_implementation(int err, const char* file, const char* func, int line, bool include);
} }
extern "C" int PyInit_common_ops() {
    c10::cuda::c10_cuda_check_implementation(0, __FILE__, "f", __LINE__, true);
    return 0;
}
"#;

const EXTENSION_UNSIGNED: &str = r#"
namespace c10 { namespace cuda {
void c10_cuda_check_implementation(int err, const char* file, const char* func, unsigned int line, bool include);
} }
extern "C" int PyInit_common_ops() {
    c10::cuda::c10_cuda_check_implementation(0, __FILE__, "f", __LINE__, true);
    return 0;
}
"#;

const WANTED: &str = "    wanted    c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)\n";
const EXPORTED: &str = "    exported  c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, unsigned int, bool)   in torch/lib/libc10_cuda.so\n              parameter 4: `int` wanted, `unsigned int` exported\n";
const HINT: &str = "    hint: sgl-kernel 0.3.21 was built against a different torch than the torch 2.10.0 installed here";

fn upgrade(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_upgrade"))
        .args(args)
        .output()
        .expect("run upgrade")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Build a shared object with the system `g++`.
fn gxx(dir: &Path, output: &Path, source: &str, extra: &[&str]) {
    let file = dir.join(format!(
        "{}.cpp",
        output.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&file, source).unwrap();
    std::fs::create_dir_all(output.parent().unwrap()).unwrap();
    let result = Command::new("g++")
        .args(["-shared", "-fPIC", "-o"])
        .arg(output)
        .arg(&file)
        .args(extra)
        .output()
        .expect("g++ (tests/run installs it)");
    assert!(
        result.status.success(),
        "g++ failed: {}",
        String::from_utf8_lossy(&result.stderr)
    );
}

fn dist_info(site: &Path, dir: &str, name: &str, version: &str, files: &[&str]) {
    let info = site.join(dir);
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(
        info.join("METADATA"),
        format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nA description.\n"),
    )
    .unwrap();
    let mut record: String = files.iter().map(|file| format!("{file},,\n")).collect();
    record.push_str(&format!("{dir}/METADATA,,\n{dir}/RECORD,,\n"));
    std::fs::write(info.join("RECORD"), record).unwrap();
}

/// torch 2.10.0 with `torch/lib/libc10_cuda.so` and sgl-kernel 0.3.21 with an extension
/// built from `extension` against it, laid out as a site-packages directory.
fn site(dir: &Path, site: &Path, extension: &str) {
    let provider = site.join("torch/lib/libc10_cuda.so");
    gxx(
        dir,
        &provider,
        PROVIDER_UNSIGNED,
        &["-Wl,-soname,libc10_cuda.so"],
    );
    let lib = site.join("torch/lib");
    gxx(
        dir,
        &site.join("sgl_kernel/common_ops.abi3.so"),
        extension,
        &[
            &format!("-L{}", lib.display()),
            "-lc10_cuda",
            "-Wl,-rpath,$ORIGIN/../torch/lib",
        ],
    );
    dist_info(
        site,
        "torch-2.10.0.dist-info",
        "torch",
        "2.10.0",
        &["torch/lib/libc10_cuda.so"],
    );
    dist_info(
        site,
        "sgl_kernel-0.3.21.dist-info",
        "sgl-kernel",
        "0.3.21",
        &["sgl_kernel/common_ops.abi3.so"],
    );
}

fn wheel(path: &Path, site: &Path, dist_info_dir: &str, files: &[&str]) {
    let mut writer = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut entries: Vec<String> = files.iter().map(|file| (*file).to_string()).collect();
    entries.push(format!("{dist_info_dir}/METADATA"));
    entries.push(format!("{dist_info_dir}/RECORD"));
    for entry in entries {
        writer.start_file(entry.as_str(), options).unwrap();
        writer
            .write_all(&std::fs::read(site.join(&entry)).unwrap())
            .unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn an_int_extension_against_an_unsigned_provider_fails_with_the_overloads_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let site_dir = dir.path().join("site-packages");
    site(dir.path(), &site_dir, EXTENSION_INT);
    let output = upgrade(&["abi-check", site_dir.to_str().unwrap()]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("missing symbol: sgl-kernel 0.3.21 `sgl_kernel/common_ops.abi3.so` needs from torch 2.10.0:\n"), "{text}");
    assert!(text.contains(&format!("{WANTED}{EXPORTED}")), "{text}");
    assert!(
        text.contains("    symbol    _ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib\n"),
        "{text}"
    );
    assert!(text.contains(HINT), "{text}");
    assert!(
        text.contains("abi-check FAILED: 1 missing symbol"),
        "{text}"
    );

    let output = upgrade(&["abi-check", site_dir.to_str().unwrap(), "--format", "json"]);
    assert_eq!(output.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["ok"], false);
    let missing = &json["missing"][0];
    assert_eq!(missing["needed_by"]["package"], "sgl-kernel");
    assert_eq!(missing["provider"]["version"], "2.10.0");
    assert_eq!(
        missing["wanted"],
        "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)"
    );
    assert_eq!(
        missing["nearest"][0]["exported"],
        "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, unsigned int, bool)"
    );
    assert_eq!(
        missing["nearest"][0]["symbol"],
        "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_jb"
    );
}

#[test]
fn the_matching_pair_passes() {
    let dir = tempfile::tempdir().unwrap();
    let site_dir = dir.path().join("site-packages");
    site(dir.path(), &site_dir, EXTENSION_UNSIGNED);
    let output = upgrade(&["abi-check", site_dir.to_str().unwrap()]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("abi-check passed: no missing symbols (2 packages, 2 shared objects, 1 use another package's libraries, 1 symbols looked up across packages"), "{text}");
}

#[test]
fn a_directory_of_wheels_fails_before_it_is_installed() {
    let dir = tempfile::tempdir().unwrap();
    let site_dir = dir.path().join("build");
    site(dir.path(), &site_dir, EXTENSION_INT);
    let wheels = dir.path().join("wheels");
    std::fs::create_dir_all(&wheels).unwrap();
    wheel(
        &wheels.join("torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl"),
        &site_dir,
        "torch-2.10.0.dist-info",
        &["torch/lib/libc10_cuda.so"],
    );
    wheel(
        &wheels.join("sgl_kernel-0.3.21-cp310-abi3-manylinux2014_x86_64.whl"),
        &site_dir,
        "sgl_kernel-0.3.21.dist-info",
        &["sgl_kernel/common_ops.abi3.so"],
    );
    let output = upgrade(&["abi-check", wheels.to_str().unwrap()]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("{WANTED}{EXPORTED}")), "{text}");
    assert!(text.contains(HINT), "{text}");
}

fn venv(dir: &Path) -> (PathBuf, PathBuf) {
    let status = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(dir.join("venv"))
        .status()
        .unwrap();
    assert!(status.success());
    let python = dir.join("venv/bin/python3");
    let output = Command::new(&python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['platlib'])",
        ])
        .output()
        .unwrap();
    let site = PathBuf::from(String::from_utf8(output.stdout).unwrap().trim());
    (python, site)
}

#[test]
fn a_virtual_environment_fails_alike_read_in_place_and_streamed_as_from_a_node() {
    let dir = tempfile::tempdir().unwrap();
    let (python, site_dir) = venv(dir.path());
    site(dir.path(), &site_dir, EXTENSION_INT);
    let output = upgrade(&["abi-check", "--local", "--python", python.to_str().unwrap()]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.starts_with("local: missing symbol: sgl-kernel 0.3.21"),
        "{text}"
    );
    assert!(text.contains(&format!("{WANTED}{EXPORTED}")), "{text}");

    // probe: a finding names the file, the symbol and the nearest export.
    let output = upgrade(&["probe", "--local", "--python", python.to_str().unwrap()]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("warning: `sgl_kernel/common_ops.abi3.so` of sgl-kernel 0.3.21 needs `c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)`, which torch 2.10.0 does not export; it exports `c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, unsigned int, bool)`\n"), "{text}");
    let output = upgrade(&[
        "probe",
        "--local",
        "--python",
        python.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|finding| finding["code"] == "abi-symbol-missing"),
        "{json:#}"
    );

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let transport = Transport::Local(LocalTransport::new());
    let (in_place, streamed) = runtime.block_on(async {
        (
            abi::node::environment(&transport, &python).await.unwrap(),
            abi::node::streamed(&transport, &python).await.unwrap(),
        )
    });
    let report = |environment: &abi::Environment| {
        let mut report = abi::Report::new(environment, &abi::check(environment), 0.0);
        report.seconds = 0.0;
        report
    };
    assert_eq!(in_place.objects.len(), 2);

    // apply's check step before the verification launch stops the node with the report.
    let step = runtime.block_on(cuda_upgrade::converge::abi_check_step(&transport, &python));
    assert_eq!((step.kind.as_str(), step.outcome), ("abi-check", "failed"));
    let output = step.output.unwrap();
    assert!(output.contains(&format!("{WANTED}{EXPORTED}")), "{output}");
    let missing_form = site_dir.join("sgl_kernel/common_ops.abi3.so");
    gxx(
        dir.path(),
        &missing_form,
        EXTENSION_UNSIGNED,
        &[
            &format!("-L{}", site_dir.join("torch/lib").display()),
            "-lc10_cuda",
            "-Wl,-rpath,$ORIGIN/../torch/lib",
        ],
    );
    let step = runtime.block_on(cuda_upgrade::converge::abi_check_step(&transport, &python));
    assert_eq!(step.outcome, "checked", "{step:?}");
    assert!(step.reason.contains("0 missing"), "{}", step.reason);
    gxx(
        dir.path(),
        &missing_form,
        EXTENSION_INT,
        &[
            &format!("-L{}", site_dir.join("torch/lib").display()),
            "-lc10_cuda",
            "-Wl,-rpath,$ORIGIN/../torch/lib",
        ],
    );
    assert_eq!(report(&in_place), report(&streamed));
    assert_eq!(report(&streamed).missing.len(), 1);
}

#[test]
fn weak_interpreter_and_runtime_symbols_are_never_reported() {
    let dir = tempfile::tempdir().unwrap();
    let site_dir = dir.path().join("site-packages");
    site(dir.path(), &site_dir, EXTENSION_UNSIGNED);
    // An extension that loads torch's library and needs, besides a symbol torch
    // exports: a weak c10 symbol nobody
    // defines, the interpreter's `PyLong_FromLong`, glibc's `memcpy` and libstdc++'s
    // `std::string` (both versioned).
    let source = r#"
#include <cstring>
#include <string>
namespace c10 { __attribute__((weak)) void optional_hook(int); }
namespace c10 { namespace cuda {
void c10_cuda_check_implementation(int err, const char* file, const char* func, unsigned int line, bool include);
} }
extern "C" void* PyLong_FromLong(long);
extern "C" int entry(char* out, const char* in, unsigned long n) {
    if (c10::optional_hook) c10::optional_hook(1);
    c10::cuda::c10_cuda_check_implementation(0, __FILE__, "entry", __LINE__, true);
    std::memcpy(out, in, n);
    std::string text(in, n);
    PyLong_FromLong(static_cast<long>(text.size()));
    return 0;
}
"#;
    let lib = site_dir.join("torch/lib");
    gxx(
        dir.path(),
        &site_dir.join("other/_ext.so"),
        source,
        &[
            &format!("-L{}", lib.display()),
            "-lc10_cuda",
            "-Wl,-rpath,$ORIGIN/../torch/lib",
        ],
    );
    dist_info(
        &site_dir,
        "other-1.0.dist-info",
        "other",
        "1.0",
        &["other/_ext.so"],
    );
    let output = upgrade(&["abi-check", site_dir.to_str().unwrap()]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("3 packages, 3 shared objects, 2 use another package's libraries"),
        "{text}"
    );
}

#[test]
fn symbol_versions_are_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let site_dir = dir.path().join("site-packages");
    let script = |version: &str| {
        let path = dir.path().join(format!("{version}.map"));
        std::fs::write(
            &path,
            format!("{version} {{ global: x_func; local: *; }};\n"),
        )
        .unwrap();
        format!("-Wl,--version-script={}", path.display())
    };
    let provider = "extern \"C\" int x_func(int a) { return a + 1; }\n";
    let lib = site_dir.join("libx/lib/libx.so.1");
    gxx(
        dir.path(),
        &lib,
        provider,
        &["-Wl,-soname,libx.so.1", &script("LIBX_1")],
    );
    std::os::unix::fs::symlink("libx.so.1", site_dir.join("libx/lib/libx.so")).unwrap();
    let user =
        "extern \"C\" int x_func(int);\nextern \"C\" int user(int a) { return x_func(a); }\n";
    gxx(
        dir.path(),
        &site_dir.join("user/_user.so"),
        user,
        &[
            &format!("-L{}", site_dir.join("libx/lib").display()),
            "-lx",
            "-Wl,-rpath,$ORIGIN/../libx/lib",
        ],
    );
    dist_info(
        &site_dir,
        "libx-1.0.dist-info",
        "libx",
        "1.0",
        &["libx/lib/libx.so.1"],
    );
    dist_info(
        &site_dir,
        "user-2.0.dist-info",
        "user",
        "2.0",
        &["user/_user.so"],
    );
    let output = upgrade(&["abi-check", site_dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    // The provider moves its symbol to a new version: the old requirement is unmet.
    gxx(
        dir.path(),
        &lib,
        provider,
        &["-Wl,-soname,libx.so.1", &script("LIBX_2")],
    );
    let output = upgrade(&["abi-check", site_dir.to_str().unwrap()]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("missing symbol: user 2.0 `user/_user.so` needs from libx 1.0:\n    wanted    x_func @LIBX_1\n    exported  x_func @LIBX_2   in libx/lib/libx.so.1\n              version: `LIBX_1` wanted, `LIBX_2` exported\n"), "{text}");
}

#[test]
fn a_directory_that_is_no_environment_is_invalid_input() {
    let dir = tempfile::tempdir().unwrap();
    let output = upgrade(&["abi-check", dir.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("is neither a site-packages directory")
    );
    let output = upgrade(&["abi-check"]);
    assert_eq!(output.status.code(), Some(2));
}

/// `plan --wheels DIR`: the lock's wheels found in DIR are checked before anything is
/// installed; the int/unsigned pair blocks the pip step with the report, the matching
/// pair plans unblocked. The lock pins torch 2.9.1 with sgl-kernel 0.3.21, a pair no
/// rule refuses: the binaries alone say they do not fit.
#[test]
fn plan_checks_the_locked_wheels_before_install() {
    let dir = tempfile::tempdir().unwrap();
    let torch_file = "torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl";
    let kernel_file = "sgl_kernel-0.3.21-cp310-abi3-manylinux2014_x86_64.whl";
    let snapshot = dir.path().join("snapshot.json");
    std::fs::write(
        &snapshot,
        format!(
            r#"{{"schema": 1, "recorded": "2026-12-03", "how": "by hand, for a test",
  "universe": {{"indexes": [{{"name": "local", "packages": {{
    "torch": [{{"version": "2.9.1", "requires_dist": [], "files": [{{"filename": "{torch_file}", "sha256": null}}]}}],
    "sgl-kernel": [{{"version": "0.3.21", "requires_dist": [], "files": [{{"filename": "{kernel_file}", "sha256": null}}]}}]
  }}}}]}}}}"#
        ),
    )
    .unwrap();
    let manifest = dir.path().join("pair.yaml");
    std::fs::write(
        &manifest,
        "schema: 1\nname: abi-pair\nupgrade: \">=0.1\"\ntarget:\n  python: /opt/torch/.venv/bin/python3\n  python_version: \"3.12\"\n  glibc: \"2.39\"\nindexes:\n  - name: local\n    url: http://127.0.0.1:9/simple/\npackages:\n  torch: \"==2.9.1\"\n  sgl-kernel: \"==0.3.21\"\n",
    )
    .unwrap();
    let facts = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/facts/h200.facts.json"
    );
    let build = |name: &str, extension: &str| {
        let site_dir = dir.path().join(format!("build-{name}"));
        site(dir.path(), &site_dir, extension);
        let wheels = dir.path().join(format!("wheels-{name}"));
        std::fs::create_dir_all(&wheels).unwrap();
        // The wheels carry torch 2.10.0's library, as a rebuilt or mislabelled file would.
        wheel(
            &wheels.join(torch_file),
            &site_dir,
            "torch-2.10.0.dist-info",
            &["torch/lib/libc10_cuda.so"],
        );
        wheel(
            &wheels.join(kernel_file),
            &site_dir,
            "sgl_kernel-0.3.21.dist-info",
            &["sgl_kernel/common_ops.abi3.so"],
        );
        wheels
    };
    let plan = |wheels: &Path, format: &str| {
        upgrade(&[
            "plan",
            manifest.to_str().unwrap(),
            "--facts",
            facts,
            "--snapshot",
            snapshot.to_str().unwrap(),
            "--wheels",
            wheels.to_str().unwrap(),
            "--format",
            format,
        ])
    };

    let broken = build("int", EXTENSION_INT);
    let output = plan(&broken, "text");
    let text = stdout(&output);
    // A failed ABI check blocks the pip step, and a blocked step fails the plan.
    assert_eq!(
        output.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        text.contains("! blocked: the locked wheels fail the ABI check: 1 missing symbol"),
        "{text}"
    );
    assert!(
        text.contains("abi-check of the locked wheels before install: 2 of 2 found in"),
        "{text}"
    );
    assert!(text.contains(&format!("{WANTED}{EXPORTED}")), "{text}");
    let json: serde_json::Value = serde_json::from_slice(&plan(&broken, "json").stdout).unwrap();
    assert_eq!(json["abi_check"]["report"]["ok"], false, "{json}");
    assert_eq!(json["abi_check"]["wheels_found"], 2, "{json}");
    let pip = json["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["kind"] == "pip_pins")
        .unwrap();
    assert!(
        pip["blocked"].as_str().unwrap().contains("ABI check"),
        "{pip}"
    );

    let matching = build("unsigned", EXTENSION_UNSIGNED);
    let text = stdout(&plan(&matching, "text"));
    assert!(!text.contains("fail the ABI check"), "{text}");
    assert!(
        text.contains("wheels: abi-check passed: no missing symbols"),
        "{text}"
    );

    // See: issue 19 — a directory holding none of the lock's wheels checked nothing: it
    // says so, blocks the pip step and fails the plan instead of "passed (0 packages)".
    let empty = dir.path().join("wheels-none");
    std::fs::create_dir_all(&empty).unwrap();
    let output = plan(&empty, "text");
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(!text.contains("abi-check passed"), "{text}");
    assert!(
        text.contains("none of the lock's 2 wheels is in") && text.contains("NOT RUN"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_slice(&plan(&empty, "json").stdout).unwrap();
    assert_eq!(json["abi_check"]["checked"], false, "{json}");
}

/// The outputs of `run-on-h200.sh` on the real H200 node (torch 2.11.0, CUDA 13.0),
/// committed under `tests/fixtures/real-h200-device/abi/`: the node's own environment
/// passed in under 2 s, the `int` extension built there failed with the side-by-side
/// report (and the dynamic loader agreed), the `unsigned int` one passed.
#[test]
fn the_real_h200_outputs_show_a_clean_environment_and_the_int_break() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real-h200-device/abi");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let json = |name: &str| serde_json::from_str::<serde_json::Value>(&read(name)).unwrap();
    assert_eq!(read("healthy-1.rc").trim(), "0");
    let healthy = json("healthy-json.txt");
    assert_eq!(healthy["ok"], true);
    assert!(healthy["packages"].as_u64().unwrap() > 150, "{healthy:#}");
    assert!(healthy["seconds"].as_f64().unwrap() < 2.0, "{healthy:#}");
    for line in read("timing.txt")
        .lines()
        .filter(|line| line.starts_with("run "))
    {
        let ms: u64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert!(ms < 2000, "{line}");
    }

    assert_eq!(read("extension-int.rc").trim(), "1");
    let broken = json("extension-int-json.txt");
    let missing = broken["missing"].as_array().unwrap();
    assert_eq!(missing.len(), 1, "{broken:#}");
    assert_eq!(
        missing[0]["wanted"],
        "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)"
    );
    assert_eq!(
        missing[0]["nearest"][0]["exported"],
        "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, unsigned int, bool)"
    );
    assert_eq!(missing[0]["provider"]["package"], "torch");
    assert!(
        read("extension-int-dlopen.stderr")
            .contains("undefined symbol: _ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib")
    );
    assert!(read("probe-int.txt").contains("which torch 2.11.0 does not export"));

    assert_eq!(read("extension-unsigned.rc").trim(), "0");
    assert_eq!(json("extension-unsigned-json.txt")["ok"], true);
}

/// `probe -v`'s timings line, run with `cache` as the cache directory.
fn probe_timings(python: &Path, cache: &Path) -> (Output, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_upgrade"))
        .env("XDG_CACHE_HOME", cache)
        .args(["-v", "probe", "--local", "--python"])
        .arg(python)
        .output()
        .expect("run upgrade");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let timings = stderr
        .lines()
        .find(|line| line.starts_with("timings: "))
        .map(str::to_string);
    assert!(timings.is_some(), "no timings line: {stderr}");
    let timings = timings.unwrap_or_default();
    (output, timings)
}

#[test]
fn a_probe_reuses_the_report_of_an_unchanged_environment_and_rereads_a_changed_one() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let (python, site_dir) = venv(dir.path());
    site(dir.path(), &site_dir, EXTENSION_INT);
    let finding = "needs `c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)`, which torch 2.10.0 does not export";

    let (first, timings) = probe_timings(&python, &cache);
    assert!(timings.contains("tables of 2 shared objects"), "{timings}");
    assert!(stdout(&first).contains(finding), "{}", stdout(&first));
    let (second, timings) = probe_timings(&python, &cache);
    assert!(
        timings.contains("the report kept for these 2 shared objects"),
        "{timings}"
    );
    assert_eq!(stdout(&second), stdout(&first));

    // The extension rebuilt against the provider: read again, and the break is gone.
    gxx(
        dir.path(),
        &site_dir.join("sgl_kernel/common_ops.abi3.so"),
        EXTENSION_UNSIGNED,
        &[
            &format!("-L{}", site_dir.join("torch/lib").display()),
            "-lc10_cuda",
            "-Wl,-rpath,$ORIGIN/../torch/lib",
        ],
    );
    let (third, timings) = probe_timings(&python, &cache);
    assert!(timings.contains("tables of 2 shared objects"), "{timings}");
    assert!(!stdout(&third).contains(finding), "{}", stdout(&third));
    let (_, timings) = probe_timings(&python, &cache);
    assert!(timings.contains("the report kept"), "{timings}");
}
