//! The probe's own `toolkit_packages` function against a real rpm database: two tiny
//! NVIDIA-named rpm packages (`cuda-nvcc-13-0` `13.0.88-1` owning files under a temporary
//! `…/usr/local/cuda-13.0`, and the meta package `cuda-compiler-13-0` `13.0.2-1`) built with
//! `rpmbuild` and installed with `rpm --dbpath` into a temporary database; its output then
//! parsed into facts. Skipped, with the reason printed, where `rpm` or `rpmbuild` is missing
//! (Debian's `rpm` package has both; `tests/run` installs it).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::facts::test_support::fixture;
use crate::facts::{NodeFacts, PROBE_SCRIPT};
use crate::rules::UpdateTable;

use super::{PackageManager, ToolkitVersionSource, parse_toolkit_package_listing};

/// `tool`'s path on `PATH`, if any.
fn on_path(tool: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(tool))
        .find(|path| path.is_file())
}

/// The probe's shell functions that `toolkit_packages` needs: `have` and everything from
/// `toolkit_series` to the line that reads the prefixes.
fn probe_functions() -> String {
    let have_start = PROBE_SCRIPT.find("have() {").unwrap();
    let have_end = have_start + PROBE_SCRIPT[have_start..].find("\n}\n").unwrap() + 3;
    let start = PROBE_SCRIPT.find("toolkit_series() {").unwrap();
    let end = PROBE_SCRIPT.find("cut -f 2 \"$scratch/out\"").unwrap();
    format!(
        "LC_ALL=C\nexport LC_ALL\n{}{}",
        &PROBE_SCRIPT[have_start..have_end],
        &PROBE_SCRIPT[start..end]
    )
}

/// Builds one noarch rpm with `rpmbuild`: `name` `version-1`, owning `files` (paths
/// under the root, each written with one byte). Returns the package file.
fn build_rpm(work: &Path, name: &str, version: &str, files: &[PathBuf]) -> PathBuf {
    let install: String = files
        .iter()
        .map(|file| {
            let dir = file.parent().unwrap().display();
            format!(
                "mkdir -p %{{buildroot}}{dir}\nprintf x > %{{buildroot}}{}\n",
                file.display()
            )
        })
        .collect();
    let listed: String = files
        .iter()
        .map(|file| format!("{}\n", file.display()))
        .collect();
    let spec = work.join(format!("{name}.spec"));
    fs_err::write(
        &spec,
        format!(
            "Name: {name}\nVersion: {version}\nRelease: 1\nSummary: fixture\nLicense: none\n\
             BuildArch: noarch\n%description\nfixture\n%install\n{install}\n\
             %files\n%defattr(-,root,root,-)\n{listed}"
        ),
    )
    .unwrap();
    let rpms = work.join("rpms");
    let output = Command::new("rpmbuild")
        .env("HOME", work)
        .arg("--define")
        .arg(format!("_topdir {}", work.join("top").display()))
        .arg("--define")
        .arg(format!("_rpmdir {}", rpms.display()))
        .arg("--define")
        .arg("_build_id_links none")
        .arg("--define")
        .arg("__os_install_post %{nil}")
        .arg("-bb")
        .arg(&spec)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "rpmbuild {name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    rpms.join("noarch")
        .join(format!("{name}-{version}-1.noarch.rpm"))
}

/// Runs the probe's `toolkit_packages PREFIX` with `bin` first on `PATH`.
fn toolkit_packages(bin: &Path, prefix: &Path) -> String {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("sh")
        .env("PATH", path)
        .arg("-c")
        .arg(format!("{}toolkit_packages \"$1\"", probe_functions()))
        .arg("toolkit-rpm-db-test")
        .arg(prefix)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_probe_reads_nvidias_rpm_packages_from_a_real_rpm_database() {
    let (Some(rpm), Some(_)) = (on_path("rpm"), on_path("rpmbuild")) else {
        eprintln!(
            "skipped: rpm and rpmbuild are needed (Debian's `rpm` package; tests/run installs it)"
        );
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let prefix = work.join("usr/local/cuda-13.0");
    let nvcc = build_rpm(
        work,
        "cuda-nvcc-13-0",
        "13.0.88",
        &[prefix.join("bin/nvcc"), prefix.join("nvvm/bin/cicc")],
    );
    let compiler = build_rpm(work, "cuda-compiler-13-0", "13.0.2", &[]);
    let db = work.join("rpmdb");
    fs_err::create_dir_all(&db).unwrap();
    let output = Command::new(&rpm)
        .arg("--dbpath")
        .arg(&db)
        .args(["--nodeps", "--noscripts", "-i"])
        .arg(&nvcc)
        .arg(&compiler)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "rpm -i: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(prefix.join("bin/nvcc").is_file());
    // `rpm` on the probe's PATH is the real one, reading the temporary database.
    let bin = work.join("bin");
    fs_err::create_dir_all(&bin).unwrap();
    let wrapper = bin.join("rpm");
    fs_err::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec '{}' --dbpath '{}' \"$@\"\n",
            rpm.display(),
            db.display()
        ),
    )
    .unwrap();
    let status = Command::new("chmod")
        .arg("755")
        .arg(&wrapper)
        .status()
        .unwrap();
    assert!(status.success());

    let text = toolkit_packages(&bin, &prefix);
    // dpkg (where there is one) owns nothing there: rpm answers. Packages come in rpm's
    // database order.
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..2],
        ["manager\trpm", "owner\tcuda-nvcc-13-0"],
        "{text}"
    );
    let mut packages = lines[2..].to_vec();
    packages.sort_unstable();
    assert_eq!(
        packages,
        [
            "package\tcuda-compiler-13-0\t13.0.2-1\tinstalled",
            "package\tcuda-nvcc-13-0\t13.0.88-1\tinstalled"
        ],
        "{text}"
    );
    let listing = parse_toolkit_package_listing(&text).unwrap();
    assert_eq!(listing.manager, Some(PackageManager::Rpm));
    let names: Vec<(&str, &str, bool, bool)> = listing
        .packages
        .iter()
        .map(|p| {
            (
                p.name.as_str(),
                p.version.as_str(),
                p.installed,
                p.owns_prefix,
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("cuda-compiler-13-0", "13.0.2-1", true, false),
            ("cuda-nvcc-13-0", "13.0.88-1", true, true)
        ]
    );

    // The same text as the probe's section: the update, identified by rpm.
    let probe = fixture("h200.probe.txt").replace(
        "@@begin python ",
        &format!(
            "@@begin toolkit-packages /usr/local/cuda-13.0@@\n{text}@@end status=0@@\n@@begin python "
        ),
    );
    let facts = NodeFacts::parse(&probe).unwrap();
    let toolkit = facts.toolkits.default_toolkit().unwrap();
    assert_eq!(toolkit.version_source, Some(ToolkitVersionSource::Rpm));
    assert_eq!(toolkit.package_manager, Some(PackageManager::Rpm));
    let rules = UpdateTable::embedded().unwrap();
    assert_eq!(
        toolkit.describe(rules.apt()),
        "CUDA 13.0.2 (identified by its rpm meta package: cuda-compiler-13-0 13.0.2-1)"
    );

    // A prefix rpm owns nothing under: dpkg's answer where dpkg is there, else rpm's, empty.
    let other = work.join("usr/local/cuda-12.8");
    fs_err::create_dir_all(&other).unwrap();
    let expected = if on_path("dpkg-query").is_some() {
        "manager\tdpkg\n"
    } else {
        "manager\trpm\n"
    };
    let text = toolkit_packages(&bin, &other);
    assert!(text.starts_with(expected), "{text}");
    assert!(!text.contains("owner\t"), "{text}");
}
