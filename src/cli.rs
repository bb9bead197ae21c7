//! Command-line definitions (clap derive): flags and their `--help` text only.
//!
//! Nothing here acts on a flag; `commands` turns these into work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Moves GPU nodes from one CUDA software stack to another, from a pinned manifest.
#[derive(Debug, Parser)]
#[command(name = "upgrade", version, about, long_about = None)]
#[command(
    after_help = "Exit status: 0 success; 1 a node or a verification failed; 2 invalid input; 3 the manifest cannot be resolved; 4 (`lock --check`) the lock no longer matches."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Print only errors and the result: no progress, no notes on stderr.
    #[arg(short = 'q', long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more: every package a plan changes (not the first 20), and, when a
    /// manifest cannot be resolved, every fact of every conflict and every interval of
    /// every range (the default report is short).
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,
    /// When to colour the output: `auto` colours a terminal unless `NO_COLOR` is set
    /// (`CLICOLOR_FORCE` colours even a pipe).
    #[arg(long, value_name = "WHEN", value_enum, global = true, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// The command line's definition for these arguments (without the program name):
/// `UPGRADE_INVENTORY` stands for `-i` only where no `--local` or `--host` names the
/// node (a variable set for the fleet must not make `--local` a conflict), and clap's
/// help and usage errors take their colours from `--color`.
pub fn command_for(args: &[std::ffi::OsString]) -> clap::Command {
    let mut color = clap::ColorChoice::Auto;
    let mut names_node = false;
    let mut words = args.iter().map(|arg| arg.to_str());
    while let Some(word) = words.next() {
        let value = match word {
            Some("--") => break,
            Some("--local" | "--host") => {
                names_node = true;
                continue;
            }
            Some("--color") => words.next().flatten(),
            Some(text) if text.starts_with("--host=") => {
                names_node = true;
                continue;
            }
            Some(text) => match text.strip_prefix("--color=") {
                Some(value) => Some(value),
                None => continue,
            },
            None => continue,
        };
        color = match value {
            Some("always") => clap::ColorChoice::Always,
            Some("never") => clap::ColorChoice::Never,
            _ => clap::ColorChoice::Auto,
        };
    }
    let mut command = <Cli as clap::CommandFactory>::command().color(color);
    if names_node {
        for verb in ["apply", "status", "rollback"] {
            command = command.mut_subcommand(verb, |sub| {
                sub.mut_arg("inventory", |arg| arg.env(None::<&str>))
            });
        }
    }
    command
}

/// When to colour the output (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set; `CLICOLOR_FORCE` forces it.
    Auto,
    /// Always, even into a pipe or a file.
    Always,
    /// Never.
    Never,
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check manifests: schema, specifiers, paths, references. Exit 2 with every located error.
    Validate(ValidateArgs),
    /// Semantic diff of two manifests for a pull-request reviewer.
    Diff(DiffArgs),
    /// Write a first manifest from a node as it is: driver, GPU architectures, toolkit, interpreter, top-level packages with their indexes, the managed env block; `decide:` comments where a person must choose.
    Init(InitArgs),
    /// Gather a node's facts in one round trip: GPUs, driver, toolkits, Python, packages, ldconfig, sitecustomize, disk.
    Probe(ProbeArgs),
    /// Resolve a manifest for a node: exact versions, indexes, files and hashes. Exit 3 when it cannot be resolved.
    Lock(LockArgs),
    /// What `apply` would do on a node: ordered steps with `+ ~ -`, reasons and exact commands (secrets masked). Changes nothing.
    Plan(PlanArgs),
    /// Converge a node to a manifest (or a saved plan), then run the verification launch.
    Apply(ApplyArgs),
    /// Run only the manifest's verification launch on a node: idle GPUs, detached start, log watched to ready or failure, health, stop.
    Verify(VerifyArgs),
    /// Whether a node matches a manifest now, and what its last apply did (from the node's journal). Exit 1 when it differs. Who fetches the files (`--fetch`, `cuda_upgrade_fetch`) does not change what it shows.
    Status(StatusArgs),
    /// Undo a node's last apply (or every apply back to `--to RUN`) from its journal: files get their before-images back, the Python environment its earlier packages; toolkits stay. Then probe.
    Rollback(RollbackArgs),
    /// Check native extensions against the libraries they load: every undefined symbol another package of the environment should provide must be exported by it (symbol versions honoured). Exit 1 with a report when one is missing.
    AbiCheck(AbiCheckArgs),
    /// Export a lock for other installers: pip's requirements file with `--hash=sha256:` lines (`pip install --require-hashes -r`, `pip download`) or PEP 751's `pylock.toml`.
    Export(ExportArgs),
    /// Print a shell completion script: `upgrade completion bash > /etc/bash_completion.d/upgrade`.
    Completion(CompletionArgs),
    /// Print the manifest's JSON Schema (also `manifests/schema.json`), for editors: `# yaml-language-server: $schema=…`.
    Schema,
    /// Print the man page (roff): `upgrade man > /usr/local/share/man/man1/upgrade.1`.
    Man,
    /// Package indexes: record what resolving a manifest needs, record the sha256 of locked files, show pip's default index.
    #[command(subcommand)]
    Index(IndexCommand),
}

/// Which node to work on: this machine or a host over SSH.
#[derive(Debug, Args)]
#[group(required = false, multiple = false, id = "node")]
pub struct NodeArgs {
    /// Work on this machine.
    #[arg(long)]
    pub local: bool,
    /// Work on this host over SSH (a name `ssh` understands, e.g. `node0`).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
}

/// How to reach hosts over SSH.
#[derive(Debug, Args)]
pub struct SshArgs {
    /// An `ssh_config` file to use, e.g. a testbed's.
    #[arg(long, value_name = "FILE", env = crate::settings::env::UPGRADE_SSH_CONFIG)]
    pub ssh_config: Option<PathBuf>,
    /// A known_hosts file to use instead of the user's.
    #[arg(long, value_name = "FILE")]
    pub known_hosts: Option<PathBuf>,
    /// Accept and record host keys never seen before (a changed key is still refused).
    /// Without it, host keys must already be known (strict checking).
    #[arg(long)]
    pub accept_new_host_keys: bool,
    /// The longest any one command on a node may run, e.g. `90s` or `20m` (plain seconds
    /// too; also with `--local`); past it the command's process group is killed and the
    /// node fails with a timeout. Default: 10 min, 1 h for installs.
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    pub command_timeout: Option<std::time::Duration>,
}

fn parse_parallel(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n @ 1..=1024) => Ok(n),
        _ => Err(format!("`{text}`: between 1 and 1024 nodes at once")),
    }
}

/// Every timeout flag's value: a duration as a manifest writes it (`90s`, `5m`,
/// `1h30m`, `500ms`) or plain seconds (`90`, `2.5`), longer than zero and at most 7 days.
pub fn parse_timeout(text: &str) -> Result<std::time::Duration, String> {
    let duration = match text.trim().parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 => {
            std::time::Duration::try_from_secs_f64(seconds).map_err(|error| error.to_string())?
        }
        Ok(_) => return Err("a timeout is longer than zero, e.g. `90s` or `5m`".to_string()),
        Err(_) => crate::manifest::parse_duration(text)?,
    };
    if duration > crate::manifest::MAX_DURATION {
        return Err("a duration is at most 7 days (`168h`)".to_string());
    }
    Ok(duration)
}

/// [`parse_timeout`] in seconds, for the index client's flags.
fn parse_timeout_seconds(text: &str) -> Result<f64, String> {
    parse_timeout(text).map(|duration| duration.as_secs_f64())
}

/// `upgrade probe (--local | --host H)`
#[derive(Debug, Args)]
#[group(id = "probe_node", required = true, multiple = false, args = ["local", "host"])]
pub struct ProbeArgs {
    /// The node.
    #[command(flatten)]
    pub node: NodeArgs,
    /// SSH settings for `--host`.
    #[command(flatten)]
    pub ssh: SshArgs,
    /// Take the interpreter and the expected libraries from this manifest.
    #[arg(long, value_name = "MANIFEST")]
    pub manifest: Option<PathBuf>,
    /// The target interpreter (default: the manifest's `target.python`, else `python3`).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// A library that must resolve through the dynamic linker (repeatable).
    #[arg(long = "library", value_name = "SONAME")]
    pub libraries: Vec<String>,
    /// Output format; the JSON is what `--facts` accepts in `lock` and `plan`.
    #[arg(long, value_enum, default_value_t = FactsFormat::Text)]
    pub format: FactsFormat,
}

/// `upgrade completion SHELL`
#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell whose completion script to print.
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

/// Shells `upgrade completion` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    /// Bash (`complete -F`).
    Bash,
    /// Zsh (`#compdef upgrade`).
    Zsh,
    /// Fish (`complete -c upgrade`).
    Fish,
}

/// `upgrade init (--local | --host H | --facts F) -o FILE`
#[derive(Debug, Args)]
#[group(id = "init_node", required = true, multiple = false, args = ["local", "host", "facts"])]
pub struct InitArgs {
    /// The node.
    #[command(flatten)]
    pub node: NodeArgs,
    /// Saved facts (`upgrade probe --format json`) instead of probing; they carry no
    /// dependency data, so every installed distribution is listed.
    #[arg(long, value_name = "FILE")]
    pub facts: Option<PathBuf>,
    /// SSH settings for `--host`.
    #[command(flatten)]
    pub ssh: SshArgs,
    /// The interpreter of the environment to describe, e.g. `/opt/ml-env/bin/python3`.
    #[arg(long, value_name = "PATH", default_value = "python3")]
    pub python: PathBuf,
    /// Where to write the manifest (`-` for standard output); an existing file is kept
    /// unless `--force`.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Replace an existing output file.
    #[arg(long)]
    pub force: bool,
}

/// `upgrade abi-check (--local | --host H | DIR)`
#[derive(Debug, Args)]
#[group(id = "abi_node", required = true, multiple = false, args = ["local", "host", "directory"])]
pub struct AbiCheckArgs {
    /// A site-packages directory, or a directory of wheels (checked as if installed
    /// together, before they are).
    #[arg(value_name = "DIR")]
    pub directory: Option<PathBuf>,
    /// The node.
    #[command(flatten)]
    pub node: NodeArgs,
    /// SSH settings for `--host`.
    #[command(flatten)]
    pub ssh: SshArgs,
    /// The interpreter whose environment to check on the node, e.g. `/opt/venv/bin/python3`.
    #[arg(long, value_name = "PATH", default_value = "python3")]
    pub python: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ApplyFormat::Text)]
    pub format: ApplyFormat,
}

/// `upgrade plan MANIFEST (--local | --host H | --facts FILE | -i INVENTORY)`
#[derive(Debug, Args)]
#[group(id = "plan_node", required = true, multiple = false, args = ["local", "host", "facts", "inventory"])]
pub struct PlanArgs {
    /// The manifest, e.g. `manifests/sglang-0.5.9-cu130.yaml`.
    #[arg(value_name = "MANIFEST")]
    pub manifest: PathBuf,
    /// The node.
    #[command(flatten)]
    pub node: NodeArgs,
    /// Plan from saved facts (`upgrade probe --format json`) instead of probing.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["list_hosts", "limit"])]
    pub facts: Option<PathBuf>,
    /// SSH settings for `--host`.
    #[command(flatten)]
    pub ssh: SshArgs,
    /// Where the resolution comes from: the lock beside the manifest, a snapshot, live.
    #[command(flatten)]
    pub resolution: ResolutionArgs,
    /// Save the plan here; `upgrade apply PLAN` replays it and refuses it if the node changed.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "PLAN",
        conflicts_with = "inventory"
    )]
    pub output: Option<PathBuf>,
    /// A directory holding the lock's wheels (e.g. from `pip download`), repeatable: the
    /// ABI check runs on them before anything is installed, and a missing symbol blocks
    /// the pip step.
    #[arg(long = "wheels", value_name = "DIR", conflicts_with = "inventory")]
    pub wheels: Vec<PathBuf>,
    /// Who downloads the locked files: the plan shows what is sent to the node.
    #[command(flatten)]
    pub fetch: FetchArgs,
    /// Exit 0 when there is nothing to do, 2 when the plan has changes, 1 on an error or
    /// a blocked step (Terraform's `-detailed-exitcode`, for CI). With `-i`: 0 when every
    /// node is converged, 2 when some have changes and none is blocked or unreachable, 1
    /// otherwise.
    #[arg(long)]
    pub detailed_exitcode: bool,
    /// The inventory's nodes, each probed and planned at once: one line a node
    /// (converged, N changes, blocked with why, unreachable).
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    pub format: PlanFormat,
}

/// Output of `plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// `+ ~ -` lines with commands.
    Text,
    /// For machines.
    Json,
}

/// Which nodes of an inventory a fleet verb works on.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// An inventory: the project's YAML (Ansible's YAML inventory format) or an Ansible
    /// INI inventory, read unchanged. Host names may be `ssh_config` aliases.
    #[arg(short = 'i', long, value_name = "FILE", env = crate::settings::env::UPGRADE_INVENTORY)]
    pub inventory: Option<PathBuf>,
    /// Only these hosts or groups, as Ansible's `--limit`: `node1,node2`, `gpu`,
    /// `node*`, `gpu:!node7`, `gpu:&rack1`, `~node[0-3]$`.
    #[arg(long, value_name = "PATTERN", requires = "inventory", conflicts_with_all = ["local", "host"])]
    pub limit: Option<String>,
    /// How many nodes are worked on at once (each node is probed as soon as it is
    /// reached and converged right after, waiting for no other node).
    #[arg(long, value_name = "N", default_value_t = crate::fleet::DEFAULT_PARALLEL, value_parser = parse_parallel)]
    pub parallel: usize,
    /// Print the hosts the inventory and `--limit` select, in the order a run takes them
    /// (with `apply --batch`, each with its batch), and exit without connecting to any.
    // `requires` is met by any member of the inventory's group (clap issue 4707), so the
    // other members are named as conflicts.
    #[arg(long, requires = "inventory", conflicts_with_all = ["local", "host"])]
    pub list_hosts: bool,
}

/// Out of service while changed: `apply`'s drain and rollback flags.
#[derive(Debug, Args)]
pub struct RolloutArgs {
    /// Take each node out of service before its first change and put it back once it is
    /// verified (and its `service` is up): `slurm` (scontrol drain, wait for its jobs,
    /// resume), `kubernetes` (kubectl cordon, drain, uncordon), `command` (--drain-pre,
    /// --drain-post) or `none`. A node that fails stays out, named. A converged node is
    /// neither drained nor launched. A host's `cuda_upgrade_drain` variable overrides it.
    #[arg(long, value_name = "slurm|kubernetes|command|none", default_value_t = crate::fleet::drain::DrainKind::None)]
    pub drain: crate::fleet::drain::DrainKind,
    /// How long a node may take to drain (its jobs to end, its pods to leave), and each
    /// pre or post command to run; past it the node fails, left out of service.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::manifest::parse_duration)]
    pub drain_timeout: std::time::Duration,
    /// The node's Slurm or Kubernetes name with `--host`/`--local` (default: the host
    /// name); with `-i`, each host's `cuda_upgrade_drain_name`, else its inventory name.
    /// One node: `ALL`, a hostlist (`node[1-4]`, `a,b`) or a nodeset (`@gpu`) is refused.
    #[arg(long, value_name = "NAME", conflicts_with = "inventory")]
    pub drain_name: Option<crate::fleet::drain::DrainNodeName>,
    /// `--drain command`: run before the node's first change (`sh -c`), with
    /// `CUDA_UPGRADE_NODE`, `CUDA_UPGRADE_RUN_ID` and `CUDA_UPGRADE_PHASE` set.
    #[arg(long, value_name = "COMMAND")]
    pub drain_pre: Option<String>,
    /// `--drain command`: run once the node is verified and its service is up.
    #[arg(long, value_name = "COMMAND")]
    pub drain_post: Option<String>,
    /// Where `--drain-pre` and `--drain-post` run: on the `controller` or the `node`.
    #[arg(long, value_name = "controller|node", default_value_t = crate::fleet::drain::CommandSide::Controller)]
    pub drain_on: crate::fleet::drain::CommandSide,
    /// When a node's step or verification fails, undo its run from the journal (as
    /// `upgrade rollback` does) before it is left out of service.
    #[arg(long)]
    pub rollback_on_failure: bool,
}

impl RolloutArgs {
    /// The drain settings these flags make.
    pub fn drain_settings(&self) -> crate::fleet::drain::DrainSettings {
        crate::fleet::drain::DrainSettings {
            kind: self.drain,
            name: self.drain_name.clone(),
            timeout: self.drain_timeout,
            pre: self.drain_pre.clone(),
            post: self.drain_post.clone(),
            on: self.drain_on,
        }
    }
}

/// `upgrade apply MANIFEST|PLAN (--local | --host H | -i INVENTORY)`
#[derive(Debug, Args)]
#[group(id = "apply_node", required = true, multiple = false, args = ["local", "host", "inventory"])]
pub struct ApplyArgs {
    /// A manifest, or a plan saved by `upgrade plan -o`.
    #[arg(value_name = "MANIFEST|PLAN")]
    pub target: PathBuf,
    /// The node.
    #[command(flatten)]
    pub node: NodeArgs,
    /// SSH settings for `--host`.
    #[command(flatten)]
    pub ssh: SshArgs,
    /// Where the resolution comes from: the lock beside the manifest, a snapshot, live.
    #[command(flatten)]
    pub resolution: ResolutionArgs,
    /// Skip the verification launch.
    #[arg(long)]
    pub no_verify: bool,
    /// Drain and rollback.
    #[command(flatten)]
    pub rollout: RolloutArgs,
    /// Remove the node's lock left by an earlier apply (e.g. one whose controller died)
    /// before taking it. Only when that apply is known to be gone.
    #[arg(long)]
    pub break_lock: bool,
    /// Who downloads the locked files.
    #[command(flatten)]
    pub fetch: FetchArgs,
    /// Apply without asking (scripts, CI, recipes). Without it, `apply` shows the plan
    /// on a terminal and asks; with no terminal to ask on, it refuses.
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ApplyFormat::Text)]
    pub format: ApplyFormat,
    /// The inventory's nodes.
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// With `-i`: once more than this many nodes have failed while being changed (`2`, or
    /// a share of the selected nodes: `10%`), no further node starts and the rest are
    /// reported skipped. Unreachable nodes (no connection, or no answer to the probe) and
    /// nodes refused before any change do not count. Default: every node runs.
    #[arg(long, value_name = "N|P%", requires = "inventory", conflicts_with_all = ["local", "host"])]
    pub max_fail: Option<crate::fleet::Threshold>,
    /// With `--max-fail`: unreachable nodes count as failed too.
    #[arg(long, requires = "max_fail")]
    pub unreachable_fails: bool,
    /// With `-i`: the batches, in inventory order, each finished before the next starts
    /// (a rolling upgrade): one size (`4`, `25%`) or Ansible's `serial` list, e.g.
    /// `1,10%,100%` (a canary, a tenth of the fleet, then the rest); the last size repeats
    /// until every node is taken. Default: one batch.
    #[arg(long, value_name = "N|P%[,...]", requires = "inventory", conflicts_with_all = ["local", "host"])]
    pub batch: Option<crate::fleet::BatchList>,
    /// With `--batch`: after the first batch (the canary) ends, ask on the terminal
    /// whether to go on. With no terminal to ask on, the run stops there and the rest are
    /// reported not started (run again without it to go on); `--yes` does not answer it.
    #[arg(long, requires = "batch")]
    pub pause_after_canary: bool,
    /// With `-i`: where the run's per-node logs and summary go. Default:
    /// `$XDG_STATE_HOME/cuda-upgrade/runs/RUN` (else `~/.local/state/…`).
    #[arg(long, value_name = "DIR", requires = "inventory")]
    pub run_dir: Option<PathBuf>,
}

/// `upgrade rollback (--local | --host H | -i INVENTORY) [--to RUN]`
#[derive(Debug, Args)]
#[group(id = "rollback_node", required = true, multiple = false, args = ["local", "host", "inventory"])]
pub struct RollbackArgs {
    /// The node.
    #[command(flatten)]
    pub node: NodeArgs,
    /// SSH settings for `--host` and `-i`.
    #[command(flatten)]
    pub ssh: SshArgs,
    /// The inventory's nodes.
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// Undo every run back to this one, included (a run id from `upgrade status` or an
    /// apply's summary, e.g. `1796241671-4242`). Default: the last run not yet undone.
    #[arg(long, value_name = "RUN")]
    pub to: Option<String>,
    /// Remove a stale lock of the node first.
    #[arg(long)]
    pub break_lock: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ApplyFormat::Text)]
    pub format: ApplyFormat,
}

/// Who downloads the locked files (`plan`, `apply`).
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// Who downloads the locked files: `node` (each node from the indexes) or
    /// `controller` (this machine, once per file, sending each node what it lacks, and
    /// before a change the wheels of the versions it replaces, kept on the node for a
    /// rollback; nodes need no route to any index). With `-i`, a host's
    /// `cuda_upgrade_fetch` variable overrides it.
    #[arg(long, value_name = "controller|node", default_value_t = crate::steps::FetchMode::Node)]
    pub fetch: crate::steps::FetchMode,
    /// What installs, removes and checks the packages on the node: `pip` (the
    /// environment's own) or `uv` (this machine's uv, sent to each node that lacks it,
    /// kept root-only in /var/lib/cuda-upgrade/tools: the same pins and hashes, a
    /// fraction of pip's CPU time per node).
    #[arg(long, value_name = "pip|uv", default_value_t = crate::steps::installer::InstallerKind::Pip)]
    pub installer: crate::steps::installer::InstallerKind,
    /// The uv binary `--installer uv` sends (default: the first `uv` on PATH).
    #[arg(long, value_name = "PATH", requires = "installer")]
    pub uv: Option<std::path::PathBuf>,
}

impl FetchArgs {
    /// What the flags name, the uv of `--installer uv` found and read.
    pub fn delivery(
        &self,
    ) -> Result<crate::steps::Delivery, crate::steps::installer::InstallerError> {
        use crate::steps::installer::{InstallerKind, UvBinary};
        let installer = match self.installer {
            InstallerKind::Pip => crate::steps::Installer::Pip,
            InstallerKind::Uv => crate::steps::Installer::Uv(UvBinary::find(self.uv.as_deref())?),
        };
        Ok(crate::steps::Delivery {
            fetch: self.fetch,
            installer,
        })
    }
}

/// `upgrade status MANIFEST (--local | --host H | -i INVENTORY)`
#[derive(Debug, Args)]
#[group(id = "status_node", required = true, multiple = false, args = ["local", "host", "inventory"])]
pub struct StatusArgs {
    /// The manifest the node should match.
    #[arg(value_name = "MANIFEST")]
    pub manifest: PathBuf,
    /// The node.
    #[command(flatten)]
    pub node: NodeArgs,
    /// SSH settings for `--host` and `-i`.
    #[command(flatten)]
    pub ssh: SshArgs,
    /// The inventory's nodes.
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// Where the resolution comes from: the lock beside the manifest, a snapshot, live.
    #[command(flatten)]
    pub resolution: ResolutionArgs,
    /// Exit 0 when the node matches, 2 when it differs, 1 on an error (as `plan`'s).
    #[arg(long)]
    pub detailed_exitcode: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ApplyFormat::Text)]
    pub format: ApplyFormat,
}

/// `upgrade verify MANIFEST (--local | --host H)`
#[derive(Debug, Args)]
#[group(id = "verify_node", required = true, multiple = false, args = ["local", "host"])]
pub struct VerifyArgs {
    /// The manifest whose `verify` section to run.
    #[arg(value_name = "MANIFEST")]
    pub manifest: PathBuf,
    /// The node.
    #[command(flatten)]
    pub node: NodeArgs,
    /// SSH settings for `--host`.
    #[command(flatten)]
    pub ssh: SshArgs,
    /// Where the resolution comes from: before the launch, the node's packages are
    /// compared with the lock (a node that differs is named; `--locked` fails it).
    #[command(flatten)]
    pub resolution: ResolutionArgs,
    /// Run the manifest's `benchmark` alone instead of the launch, and compare its figure
    /// with the last baseline an apply recorded in the node's journal.
    #[arg(long)]
    pub benchmark: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ApplyFormat::Text)]
    pub format: ApplyFormat,
}

/// Output of `apply`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApplyFormat {
    /// One line per step, failures with their command and output.
    Text,
    /// The outcome for machines.
    Json,
}

/// Output of `probe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FactsFormat {
    /// A summary with findings.
    Text,
    /// The full facts.
    Json,
}

/// `upgrade lock MANIFEST`
#[derive(Debug, Args)]
pub struct LockArgs {
    /// The manifest, e.g. `manifests/sglang-0.5.9-cu130.yaml`.
    #[arg(value_name = "MANIFEST")]
    pub manifest: PathBuf,
    /// The node's facts as JSON (python, implementation, glibc, arch, driver, gpu_arch, toolkit, cuda_runtime); without it, the manifest's `target` and `toolkit`.
    #[arg(long, value_name = "FILE")]
    pub facts: Option<PathBuf>,
    /// A directory of wheels and sdists (pip's `--find-links`), read as one more open index
    /// named `find-links` (`find-links-2`, … when repeated), after the manifest's indexes.
    #[arg(long = "find-links", value_name = "DIR", conflicts_with = "live")]
    pub find_links: Vec<PathBuf>,
    /// Where the resolution comes from. `lock` resolves (on the embedded snapshot when
    /// it records every package the manifest names, else live) and writes the lock
    /// beside the manifest; `--locked` only checks that lock is fresh for the manifest
    /// (no network; exit 4 naming what changed); `--frozen` prints it as it is.
    #[command(flatten)]
    pub resolution: ResolutionArgs,
    /// Write the lock here instead of beside the manifest (`-` for standard output only).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "LOCK",
        conflicts_with = "check"
    )]
    pub output: Option<PathBuf>,
    /// Resolve again and compare with the lock file (beside the manifest, or `--lock`):
    /// exit 0 when it matches, 4 when the manifest or the indexes no longer give it,
    /// printing each difference.
    #[arg(long, conflicts_with_all = ["locked", "frozen"])]
    pub check: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = LockFormat::Text)]
    pub format: LockFormat,
}

/// Output of `lock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LockFormat {
    /// `name==version  # index: file sha256:…` lines.
    Text,
    /// The lock as JSON (`schema: 1`).
    Json,
}

/// `upgrade export MANIFEST --format requirements-txt|pylock [-o FILE]`
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The manifest whose lock to export (the lock beside it when fresh, else resolved
    /// as `lock` does), e.g. `manifests/x.yaml`; or a lock file (`.json`) with
    /// `--manifest`.
    #[arg(value_name = "MANIFEST|LOCK")]
    pub target: PathBuf,
    /// With a lock file: the manifest it was made from (it names the indexes' URLs; an
    /// index without one is the index pip is configured with).
    #[arg(long, value_name = "MANIFEST")]
    pub manifest: Option<PathBuf>,
    /// What to write.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Write here instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Every file of each locked release that its index lists with a sha256, not only
    /// the one the lock chose for its node: pip or uv on another platform picks its own
    /// (reads the project pages, also for `requirements-txt`).
    #[arg(long)]
    pub all_files: bool,
    /// The node the lock is for, as `lock --facts` [default: the manifest's `target`].
    #[arg(long, value_name = "FILE")]
    pub facts: Option<PathBuf>,
    /// Where the resolution comes from; with `pylock` or `--all-files` the indexes'
    /// project pages are read too (the lock records file names and hashes, not URLs).
    #[command(flatten)]
    pub resolution: ResolutionArgs,
}

/// Formats of `export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// pip's requirements file in hash-checking mode, grouped by index; offline.
    RequirementsTxt,
    /// PEP 751 `pylock.toml` (`uv pip install -r pylock.toml`); reads the project pages.
    Pylock,
}

/// `upgrade validate MANIFEST...`
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Manifest files, e.g. `manifests/*.yaml`.
    #[arg(required = true, value_name = "MANIFEST")]
    pub manifests: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ValidateFormat::Text)]
    pub format: ValidateFormat,
    /// A rules directory laid over the embedded rule tables and each manifest's `rules:`
    /// (any of abi-pins.yaml, cuda-arch.yaml, cuda-driver.yaml, cuda-runtime.yaml,
    /// cuda-updates.yaml): the toolkit releases and GPU architectures it adds are known.
    #[arg(long, value_name = "DIR")]
    pub rules: Option<PathBuf>,
}

/// Output of `validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ValidateFormat {
    /// `file:line:column: message` lines.
    Text,
    /// One JSON document with every diagnostic.
    Json,
}

/// `upgrade diff OLD NEW`
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The old manifest: a path, or `REV:PATH` read from git (e.g. `origin/main:manifests/x.yaml`).
    #[arg(value_name = "OLD")]
    pub old: String,
    /// The new manifest: a path, or `REV:PATH`.
    #[arg(value_name = "NEW")]
    pub new: String,
    /// Output format; markdown is ready to paste into a pull-request comment.
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Exit 1 when the manifests differ (like `git diff --exit-code`).
    #[arg(long)]
    pub exit_code: bool,
    /// Where each side's resolution comes from: the lock beside it (from the same
    /// revision for `REV:PATH`), else the embedded snapshot when it records the
    /// manifest's packages (`--snapshot` another); a diff never reaches an index.
    /// `--locked`: each side must have a lock fresh for it; `--frozen`: a lock.
    #[command(flatten)]
    pub resolution: ResolutionArgs,
}

/// Output of `diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// For a terminal.
    Text,
    /// For a pull-request comment.
    Markdown,
    /// For machines.
    Json,
}

/// `upgrade index …`
#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Record, from the live indexes, exactly what resolving MANIFEST needs into a snapshot
    /// file (index names, file names and sha256; never a URL).
    Snapshot(Box<IndexSnapshotArgs>),
    /// Print the URL of the index a manifest means by an index without `url`, and where
    /// it was found (`PIP_INDEX_URL`, pip's configuration, or pip's built-in default).
    DefaultUrl(IndexDefaultUrlArgs),
    /// Download each locked file that has no sha256 from its index and record its digest
    /// in `NAME.hashes.json` beside the manifest, where `lock`, `plan` and `apply` find it.
    Hash(Box<IndexHashArgs>),
}

/// `upgrade index hash MANIFEST [--package NAME]... [--facts FILE | --local | --host H]`
#[derive(Debug, Args)]
#[group(id = "hash_node", required = false, multiple = false, args = ["local", "host", "facts"])]
pub struct IndexHashArgs {
    /// The manifest, e.g. `manifests/sglang-0.5.9-cu130.yaml`.
    #[arg(value_name = "MANIFEST")]
    pub manifest: PathBuf,
    /// Only the locked file of this package (repeatable), e.g. `--package torchaudio`
    /// [default: every locked file without a sha256].
    #[arg(long = "package", value_name = "NAME")]
    pub packages: Vec<String>,
    /// The node the lock is for, as `plan` takes it: saved facts (`upgrade probe --format
    /// json`, or the facts file `lock` reads) [default: the manifest's `target`].
    #[arg(long, value_name = "FILE")]
    pub facts: Option<PathBuf>,
    /// Or probe the node.
    #[command(flatten)]
    pub node: NodeArgs,
    /// SSH settings for `--host`.
    #[command(flatten)]
    pub ssh: SshArgs,
    /// A snapshot of the indexes; without it, the snapshot embedded in the binary.
    #[arg(long, value_name = "FILE", env = crate::settings::env::UPGRADE_SNAPSHOT)]
    pub snapshot: Option<PathBuf>,
    /// Timeouts, retries and concurrency of the index client (the files are never cached).
    #[command(flatten)]
    pub network: NetworkArgs,
    /// The interpreter asked for pip's default index.
    #[command(flatten)]
    pub pip: PipPythonArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = IndexFormat::Text)]
    pub format: IndexFormat,
}

/// `upgrade index snapshot MANIFEST -o FILE`
#[derive(Debug, Args)]
pub struct IndexSnapshotArgs {
    /// The manifest whose packages, overrides and constraints are recorded, e.g.
    /// `manifests/sglang-0.5.9-cu130.yaml`.
    #[arg(value_name = "MANIFEST")]
    pub manifest: PathBuf,
    /// Where to write the snapshot, e.g. `manifests/snapshots/sglang-0.5.9.json`.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// The target interpreter's version for markers and `Requires-Python`, e.g. `3.12`
    /// [default: the manifest's `target.python_version`].
    #[arg(long, value_name = "VERSION")]
    pub python_version: Option<String>,
    /// The target platform tag, e.g. `manylinux_2_35_x86_64` [default: from the
    /// manifest's `target.glibc`, on x86_64]. Wheels for other platforms are not recorded.
    #[arg(long, value_name = "TAG")]
    pub platform: Option<String>,
    /// Record only from these manifest indexes, e.g. `--only-index default`; packages
    /// pinned to other indexes are skipped with a note.
    #[arg(long, value_name = "NAME")]
    pub only_index: Vec<String>,
    /// Also record this requirement and its closure, from the first non-explicit index
    /// that has it, e.g. `--with 'nvidia-nccl-cu13==2.28.9'` for the dependencies of a
    /// release transcribed from an index this machine cannot reach.
    #[arg(long = "with", value_name = "REQUIREMENT")]
    pub with: Vec<String>,
    /// Record only the manifest's own packages, not their dependencies.
    #[arg(long)]
    pub no_deps: bool,
    /// Record exactly what resolving the manifest live visits (the releases whose
    /// dependencies the resolver read) instead of exploring the whole closure; a
    /// snapshot made this way resolves offline to the same lock.
    #[arg(
        long,
        conflicts_with_all = ["python_version", "platform", "only_index", "with", "no_deps", "max_versions"]
    )]
    pub live: bool,
    /// With `--live`: the node's facts as JSON (as `lock --facts`); without it, the
    /// manifest's `target` and `toolkit`.
    #[arg(long, value_name = "FILE", requires = "live")]
    pub facts: Option<PathBuf>,
    /// Fail after looking up this many projects.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub max_projects: usize,
    /// Keep at most this many versions per package and specifier, newest first.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub max_versions: usize,
    /// Fail after fetching the metadata of this many releases.
    #[arg(long, value_name = "N", default_value_t = 5000)]
    pub max_releases: usize,
    /// Cache, timeouts, retries and concurrency of the index client.
    #[command(flatten)]
    pub network: NetworkArgs,
    /// The interpreter asked for pip's default index.
    #[command(flatten)]
    pub pip: PipPythonArgs,
    /// Output format of the summary.
    #[arg(long, value_enum, default_value_t = IndexFormat::Text)]
    pub format: IndexFormat,
}

/// How a verb gets the resolution of its manifest: the same flags, meaning the same, in
/// every verb that needs one (`lock`, `plan`, `apply`, `status`, `diff`, `export`,
/// `verify`). Without them: the lock beside the manifest (`NAME.lock.json`) when it is
/// fresh for the manifest and holds on the node, else a resolution (on the embedded
/// snapshot when it records every package the manifest names, else live against the
/// manifest's indexes through the cache).
#[derive(Debug, Args, Clone)]
pub struct ResolutionArgs {
    /// The lock must be there and fresh for the manifest (error when it is missing or
    /// stale, naming what changed); nothing is resolved (uv's `--locked`).
    #[arg(long, conflicts_with_all = ["frozen", "live"])]
    pub locked: bool,
    /// Use the lock as it is, without checking it against the manifest (it must still
    /// hold on the node) (uv's `--frozen`).
    #[arg(long, conflicts_with = "live")]
    pub frozen: bool,
    /// The lock file to read (and, for `lock`, to write) [default: `NAME.lock.json`
    /// beside the manifest]. Given, it must be fresh (as `--locked`) unless `--frozen`.
    #[arg(long = "lock", value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Resolve against the manifest's indexes (through the cache), never on a snapshot.
    #[arg(long, conflicts_with = "snapshot")]
    pub live: bool,
    /// Resolve on this snapshot of the indexes (`upgrade index snapshot`).
    #[arg(long, value_name = "FILE", env = crate::settings::env::UPGRADE_SNAPSHOT)]
    pub snapshot: Option<PathBuf>,
    /// Rules laid over the embedded tables, after the manifest's own `rules:` directory:
    /// each row of its `cuda-driver.yaml`, `cuda-arch.yaml`, `cuda-runtime.yaml`,
    /// `abi-pins.yaml` or `cuda-updates.yaml` is added, replacing a row of the same key.
    #[arg(long = "rules", value_name = "DIR", env = crate::settings::env::UPGRADE_RULES)]
    pub rules: Option<PathBuf>,
    /// The interpreter asked for pip's default index (an index without `url`), and whose
    /// pip prepares the metadata of a release that offers only an sdist with dynamic
    /// dependencies, e.g. `/usr/bin/python3`.
    #[arg(long = "pip-python", value_name = "PYTHON", default_value = "python3")]
    pub pip_python: PathBuf,
    /// Cache, offline, timeouts, retries and concurrency of the index client.
    #[command(flatten)]
    pub network: NetworkArgs,
    /// Live: fail after looking up this many projects.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub max_projects: usize,
    /// Live: fail after reading the metadata of this many releases.
    #[arg(long, value_name = "N", default_value_t = 5000)]
    pub max_releases: usize,
}

/// The interpreter asked for pip's default index (the `index` verbs).
#[derive(Debug, Args)]
pub struct PipPythonArgs {
    /// The interpreter asked for pip's default index, e.g. `/usr/bin/python3` (`--python` is its old, deprecated name).
    #[arg(
        long = "pip-python",
        alias = "python",
        value_name = "PYTHON",
        default_value = "python3"
    )]
    pub python: PathBuf,
}

/// How the index client talks to the network.
#[derive(Debug, Args, Clone)]
pub struct NetworkArgs {
    /// The cache of index responses [default: `$XDG_CACHE_HOME/cuda-upgrade`, else
    /// `~/.cache/cuda-upgrade`].
    #[arg(long, value_name = "DIR", env = crate::settings::env::UPGRADE_CACHE_DIR)]
    pub cache_dir: Option<PathBuf>,
    /// Use no cache at all (also over `--cache-dir` and `UPGRADE_CACHE_DIR`).
    #[arg(long)]
    pub no_cache: bool,
    /// Never touch the network: the lock, the snapshots and what the cache holds;
    /// fail on anything that is not in them.
    #[arg(long, conflicts_with = "no_cache")]
    pub offline: bool,
    /// The longest a connection may take to establish, e.g. `10s` (plain seconds too).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_timeout_seconds)]
    pub connect_timeout: f64,
    /// The longest a whole request may take, e.g. `90s` or `5m` (plain seconds too).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_timeout_seconds)]
    pub timeout: f64,
    /// Retries on connection failures, 5xx and 429 (exponential backoff).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub retries: u32,
    /// Requests in flight at once.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub concurrency: usize,
}

/// `upgrade index default-url`
#[derive(Debug, Args)]
pub struct IndexDefaultUrlArgs {
    /// The interpreter whose pip is asked.
    #[command(flatten)]
    pub pip: PipPythonArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = IndexFormat::Text)]
    pub format: IndexFormat,
}

/// Output of the `index` verbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IndexFormat {
    /// For a terminal.
    Text,
    /// For machines.
    Json,
}
