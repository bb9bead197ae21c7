//! How resolution cost grows on a generated universe: N packages × V versions with
//! forced backtracking, resolved offline through the library (no index, no I/O).
//!
//! Package `p{i}` version `v` requires `p{i+1}=={v}`; the last package exists at every
//! version but only version 1 is installable (the others need a package no index has),
//! so every chain from a newer `p0` fails at its end and the solver must backtrack
//! through all of them before it finds `p0 1`. Prints one JSON line per size:
//! `{"packages": N, "versions": V, "seconds": S, "resolved": true}`.
//!
//! `cargo run --release --example generated_universe -- 1000 20` (sizes default to
//! 100×20, 250×20, 500×20 and 1000×20).

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Instant;

use cuda_upgrade::index::{DistFile, IndexContents, Release, Universe};
use cuda_upgrade::resolve::{Origin, Request, ResolveOptions, RootRequirement, TargetEnvironment};
use cuda_upgrade::rules::RuleSet;
use pep440_rs::Version;
use pep508_rs::{PackageName, Requirement};

type Failure = Box<dyn std::error::Error>;

fn release(name: &str, version: u32, requires: Vec<Requirement>) -> Result<Release, Failure> {
    Ok(Release {
        provides_extra: Vec::new(),
        version: Version::from_str(&version.to_string())?,
        requires_dist: requires,
        requires_python: None,
        files: vec![DistFile {
            filename: format!("{name}-{version}-py3-none-any.whl"),
            sha256: None,
            yanked: None,
            requires_python: None,
            size: None,
        }],
        provenance: None,
    })
}

fn universe(packages: usize, versions: u32) -> Result<Universe, Failure> {
    let mut contents = BTreeMap::new();
    for index in 0..packages {
        let name = format!("p{index}");
        let mut releases = Vec::new();
        for version in 1..=versions {
            let requires = if index + 1 < packages {
                vec![Requirement::from_str(&format!(
                    "p{}=={version}",
                    index + 1
                ))?]
            } else if version > 1 {
                vec![Requirement::from_str("missing-package")?]
            } else {
                Vec::new()
            };
            releases.push(release(&name, version, requires)?);
        }
        contents.insert(PackageName::from_str(&name)?, releases);
    }
    Ok(Universe {
        indexes: vec![IndexContents {
            name: "generated".to_string(),
            packages: contents,
            unusable: Default::default(),
        }],
        snapshot: None,
    })
}

fn request() -> Result<Request, Failure> {
    Ok(Request {
        name: "generated".to_string(),
        file: "generated".to_string(),
        requirements: vec![RootRequirement {
            requirement: Requirement::from_str("p0")?,
            index: None,
            git: None,
            origin: Origin {
                file: "generated".to_string(),
                span: None,
            },
        }],
        overrides: Vec::new(),
        constraints: Vec::new(),
        indexes: Vec::new(),
        requires_python: None,
        options: ResolveOptions::default(),
    })
}

/// A CPU-only CPython 3.12 node: no driver, GPU or toolkit, so no CUDA rule applies.
fn environment() -> Result<TargetEnvironment, Failure> {
    let facts = r#"{"python": "3.12", "implementation": "cpython", "glibc": "2.35", "arch": "x86_64", "gpu_arch": []}"#;
    Ok(TargetEnvironment::parse_facts(facts, "generated")?)
}

fn main() -> Result<(), Failure> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let sizes: Vec<(usize, u32)> = match arguments.as_slice() {
        [packages, versions] => vec![(packages.parse()?, versions.parse()?)],
        _ => vec![(100, 20), (250, 20), (500, 20), (1000, 20)],
    };
    let rules = RuleSet::embedded()?;
    let environment = environment()?;
    let request = request()?;
    for (packages, versions) in sizes {
        let universe = universe(packages, versions)?;
        let started = Instant::now();
        let outcome = cuda_upgrade::resolve::resolve(&request, &universe, &environment, &rules);
        let seconds = started.elapsed().as_secs_f64();
        let resolved = match &outcome {
            Ok(lock) => {
                lock.package("p0")
                    .map(|locked| locked.version.to_string())
                    .as_deref()
                    == Some("1")
            }
            Err(_) => false,
        };
        println!(
            "{{\"packages\": {packages}, \"versions\": {versions}, \"seconds\": {seconds:.4}, \"resolved\": {resolved}}}"
        );
    }
    Ok(())
}
