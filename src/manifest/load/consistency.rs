//! Checks across sections: values that are each valid but contradict one another.
//!
//! `toolkit.version` against the release its runfile URL names (`cuda_13.0.1_…run`)
//! or its apt package names (`cuda-toolkit-13-0`), and `target.driver` against the
//! minimum driver of the toolkit, from the same rules table the resolver reads
//! (`cuda-driver.yaml`, embedded and from the manifest's `rules:` directory), the latter
//! at `upgrade validate` only. Each error is located at the key to change.

use super::toolkit::url_path;
use super::*;

/// The release a runfile's name carries, e.g. `13.0.1` for
/// `cuda_13.0.1_580.82.07_linux.run`; `None` for a file not named that way.
pub(super) fn runfile_release(url: &str) -> Option<CudaVersion> {
    let name = url_path(url).rsplit('/').next()?;
    let rest = name.strip_prefix("cuda_")?;
    if !name.ends_with(".run") {
        return None;
    }
    let (version, _) = rest.split_once('_')?;
    version.parse().ok()
}

/// The release line an apt package names, e.g. `13.0` for `cuda-toolkit-13-0`.
fn apt_release(package: &str) -> Option<CudaVersion> {
    let rest = package.strip_prefix("cuda-toolkit-")?;
    let (major, minor) = rest.split_once('-')?;
    Some(CudaVersion::new(
        major.parse().ok()?,
        minor.parse().ok()?,
        None,
    ))
}

impl Checker {
    /// How to resolve a `toolkit.version` and `toolkit.package` that name two release
    /// lines, naming only what the tables know: a listed update of the package's line,
    /// and the package of the version's line when a listed update has that line (no
    /// `cuda-toolkit-12-7`: CUDA 12.7 was never released).
    fn apt_hint(&mut self, version: &CudaVersion, line: &CudaVersion) -> String {
        let Some(rules) = self.rule_set() else {
            return format!("write a {line} version");
        };
        let newest = |release: &CudaVersion| {
            rules
                .updates
                .rows()
                .iter()
                .rev()
                .find(|row| row.update.release() == *release)
                .map(|row| row.update.clone())
        };
        let mut hint = match newest(line) {
            Some(update) => format!("write a {line} version, e.g. `{update}`"),
            None => format!("write a {line} version"),
        };
        let package = newest(&version.release()).and_then(|update| {
            rules
                .updates
                .apt()
                .meta_packages_for(&update)
                .into_iter()
                .next()
        });
        if let Some(package) = package {
            hint.push_str(&format!(", or the package `{package}`"));
        }
        hint
    }

    pub(super) fn check_toolkit_consistency(
        &mut self,
        target: Option<&Target>,
        toolkit: Option<&Toolkit>,
    ) {
        let Some(toolkit) = toolkit else {
            return;
        };
        let version = &toolkit.version;
        let at_version = self
            .spans
            .get("toolkit.version")
            .copied()
            .unwrap_or(Span { line: 1, column: 1 });
        if let Some(source) = &toolkit.source
            && let Some(named) = runfile_release(&source.url)
            && named != *version
        {
            let file = url_path(&source.url).rsplit('/').next().unwrap_or_default();
            self.error_with_hint(
                at_version,
                format!(
                    "`toolkit.version` `{version}` contradicts `toolkit.source.url`: the runfile `{file}` installs CUDA {named}"
                ),
                format!(
                    "write `version: \"{named}\"`, or point `source.url` (and `sha256`) at the {version} runfile"
                ),
            );
        }
        if let Some(package) = &toolkit.package
            && let Some(line) = apt_release(package)
            && line != version.release()
        {
            let hint = self.apt_hint(version, &line);
            self.error_with_hint(
                at_version,
                format!(
                    "`toolkit.version` `{version}` contradicts `toolkit.package` `{package}`, which installs CUDA {line}"
                ),
                hint,
            );
        }
        // `target.driver` describes the node only where no facts replace it: an error
        // of `validate`, which plans (on facts) and locks (the resolver explains it) skip.
        if !self.validate {
            return;
        }
        let Some(driver) = target.and_then(|target| target.driver.as_ref()) else {
            return;
        };
        let Some(requirement) = self
            .rule_set()
            .and_then(|rules| rules.drivers.minimum_for(version))
        else {
            return;
        };
        if *driver < requirement.rule.driver {
            let at_driver = self
                .spans
                .get("target.driver")
                .copied()
                .unwrap_or(at_version);
            self.error_with_hint(
                at_driver,
                format!(
                    "`target.driver` `{driver}` is below the driver CUDA {version} (`toolkit.version`) needs: {} ({}: {})",
                    requirement.rule.driver,
                    crate::rules::CUDA_DRIVER_FILE,
                    requirement.rule.source
                ),
                format!(
                    "raise `target.driver` to {} or newer, or choose a toolkit this driver runs",
                    requirement.rule.driver
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runfile_names_carry_their_release() {
        assert_eq!(
            runfile_release(
                "https://h/compute/cuda/13.0.1/local_installers/cuda_13.0.1_580.82.07_linux.run?x=1"
            ),
            "13.0.1".parse().ok()
        );
        assert_eq!(runfile_release("file:///srv/cuda-fixture.run"), None);
        assert_eq!(
            runfile_release("https://h/cuda_13.0.1_580.82.07_linux.tar"),
            None
        );
        assert_eq!(apt_release("cuda-toolkit-13-0"), "13.0".parse().ok());
        assert_eq!(apt_release("cuda-toolkit"), None);
    }
}
