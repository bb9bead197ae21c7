//! A running testbed of real sshd "GPU nodes" for integration tests.
//!
//! [`Testbed::up`] starts nodes with `tests/testbed/up` in a fresh temporary
//! directory (so tests run in parallel) and `Drop` always runs
//! `tests/testbed/down`, also when a test fails. The fixtures (wheels, runfiles,
//! persona stacks) are built once into `$CARGO_TARGET_TMPDIR/testbed-fixtures`
//! and shared by every testbed. This module does not know the `upgrade` tool;
//! it only runs `ssh`, like an operator would. See `tests/testbed/README.md`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The repository root, e.g. `/work/main`.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/testbed/` in the repository.
pub fn testbed_scripts() -> PathBuf {
    repo_root().join("tests").join("testbed")
}

/// Where the shared fixture build lives, e.g. `target/tmp/testbed-fixtures`.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("testbed-fixtures")
}

/// Why the testbed cannot run here (`None` when it can): it needs root for
/// network and mount namespaces, plus `ip`, `unshare` and `nsenter`.
pub fn skip_reason() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("the testbed needs root (network and mount namespaces)".to_owned());
    }
    for tool in [
        "/usr/sbin/ip",
        "/usr/bin/unshare",
        "/usr/bin/nsenter",
        "/usr/bin/ssh",
    ] {
        if !Path::new(tool).exists() {
            return Some(format!(
                "the testbed needs `{tool}` (see tests/testbed/README.md)"
            ));
        }
    }
    None
}

/// Prints why a test is skipped and returns true when it must be. Written to
/// stderr directly, so that the test harness does not capture it.
pub fn skip(test: &str) -> bool {
    match skip_reason() {
        Some(reason) => {
            let _ = writeln!(std::io::stderr(), "skipping {test}: {reason}");
            true
        }
        None => false,
    }
}

/// Output of a command as text, for assertions and failure messages.
#[derive(Debug)]
pub struct Run {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// True when the command exited with 0.
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }

    /// stdout and stderr together.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// Describes the run for a failure message.
    pub fn describe(&self) -> String {
        format!(
            "exit status {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// How long one command of a test may take before it is killed.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(180);

/// Runs `command` to completion, killing it after [`COMMAND_TIMEOUT`].
fn command_output(command: &mut Command) -> Result<Run, String> {
    command_output_within(command, COMMAND_TIMEOUT)
}

/// Runs `command` to completion, killing it after `timeout`.
pub fn command_output_within(command: &mut Command, timeout: Duration) -> Result<Run, String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("Failed to run `{command:?}`: {error}"))?;
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out = std::thread::spawn(move || read_all(stdout.as_mut()));
    let err = std::thread::spawn(move || read_all(stderr.as_mut()));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("`{command:?}` ran longer than {timeout:?}; killed"));
            }
            Err(error) => return Err(format!("Failed to wait for `{command:?}`: {error}")),
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    Ok(Run {
        status,
        stdout,
        stderr,
    })
}

fn read_all(pipe: Option<&mut impl Read>) -> String {
    let mut bytes = Vec::new();
    if let Some(pipe) = pipe {
        let _ = pipe.read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A running testbed; torn down on drop.
pub struct Testbed {
    dir: tempfile::TempDir,
    state: serde_json::Value,
}

impl Testbed {
    /// Starts one node per persona (`node0` gets the first), e.g.
    /// `Testbed::up(&["cuda12.8", "fresh"])`.
    pub fn up(personas: &[&str]) -> Result<Testbed, String> {
        Self::up_with(personas, &[])
    }

    /// As [`Testbed::up`], with more arguments to `up`, e.g. `&["--slurm"]` (real
    /// Slurm: the host the controller, each node a Slurm node).
    pub fn up_with(personas: &[&str], extra: &[&str]) -> Result<Testbed, String> {
        let dir = tempfile::Builder::new()
            .prefix("cuda-upgrade-testbed-")
            .tempdir()
            .map_err(|error| format!("Failed to create a testbed directory: {error}"))?;
        let run = command_output(
            Command::new(testbed_scripts().join("up"))
                .arg(personas.len().to_string())
                .arg("--personas")
                .arg(personas.join(","))
                .arg("--dir")
                .arg(dir.path())
                .arg("--fixtures")
                .arg(fixtures_dir())
                .arg("--owner-pid")
                .arg(std::process::id().to_string())
                .args(extra),
        )?;
        if !run.success() {
            return Err(format!("Failed to start the testbed\n{}", run.describe()));
        }
        eprintln!("{}", run.stdout.trim_end());
        let text = std::fs::read_to_string(dir.path().join("testbed.json"))
            .map_err(|error| format!("Failed to read testbed.json: {error}"))?;
        let state = serde_json::from_str(&text)
            .map_err(|error| format!("Failed to parse testbed.json: {error}"))?;
        Ok(Testbed { dir, state })
    }

    /// The testbed directory, e.g. `/tmp/cuda-upgrade-testbed-AbC123`.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The parsed `testbed.json`.
    pub fn state(&self) -> &serde_json::Value {
        &self.state
    }

    fn text(&self, pointer: &str) -> Result<String, String> {
        self.state
            .pointer(pointer)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("testbed.json has no `{pointer}`"))
    }

    /// The `slurm.conf` of a testbed started with `--slurm`, for `SLURM_CONF`.
    pub fn slurm_conf(&self) -> Result<String, String> {
        self.text("/slurm/conf")
    }

    /// The `ssh_config` to pass with `ssh -F`.
    pub fn ssh_config(&self) -> Result<String, String> {
        self.text("/ssh_config")
    }

    /// An index URL: `default` or `cu130`, e.g. `http://10.200.1.1:8080/cu130/simple/`.
    pub fn index(&self, name: &str) -> Result<String, String> {
        self.text(&format!("/indexes/{name}"))
    }

    fn node(&self, name: &str) -> Result<&serde_json::Value, String> {
        self.state
            .get("nodes")
            .and_then(serde_json::Value::as_array)
            .and_then(|nodes| {
                nodes
                    .iter()
                    .find(|node| node.get("name").and_then(|n| n.as_str()) == Some(name))
            })
            .ok_or_else(|| format!("testbed has no node `{name}`"))
    }

    /// The text `field` of node `name` in the testbed's state.
    fn node_text(&self, name: &str, field: &str) -> Result<String, String> {
        self.node(name)?
            .get(field)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("node `{name}` has no {field}"))
    }

    /// A node's address, e.g. `10.200.1.10` for `node0`.
    pub fn node_ip(&self, name: &str) -> Result<String, String> {
        self.node_text(name, "ip")
    }

    /// A node's network namespace, e.g. `cutb1n0`.
    pub fn netns(&self, name: &str) -> Result<String, String> {
        self.node_text(name, "netns")
    }

    /// A node's host-side veth, e.g. `cutb1v0`.
    pub fn veth(&self, name: &str) -> Result<String, String> {
        self.node_text(name, "veth")
    }

    /// The testbed's bridge on the host, e.g. `cutb1br`.
    pub fn bridge(&self) -> Result<String, String> {
        self.text("/bridge")
    }

    /// URL and sha256 of a runfile, e.g. `cuda_13.0.1_580.82.07_linux.run`.
    pub fn runfile(&self, file: &str) -> Result<(String, String), String> {
        let entries = self
            .state
            .get("runfiles")
            .and_then(serde_json::Value::as_array)
            .ok_or("testbed.json has no runfiles")?;
        for entry in entries {
            if entry.get("file").and_then(|f| f.as_str()) == Some(file) {
                let url = entry
                    .get("url")
                    .and_then(|u| u.as_str())
                    .unwrap_or_default();
                let sha = entry
                    .get("sha256")
                    .and_then(|s| s.as_str())
                    .unwrap_or_default();
                return Ok((url.to_owned(), sha.to_owned()));
            }
        }
        Err(format!("testbed has no runfile `{file}`"))
    }

    /// Runs `script` on `node` with plain `ssh -F ssh_config node -- script`.
    pub fn ssh(&self, node: &str, script: &str) -> Result<Run, String> {
        command_output(
            Command::new("ssh")
                .arg("-F")
                .arg(self.ssh_config()?)
                .arg(node)
                .arg("--")
                .arg(script),
        )
    }

    /// Runs `script` on `node` through a loopback [`Proxy`] in front of its sshd,
    /// keeping strict host-key checking (`HostKeyAlias`).
    pub fn ssh_via(&self, proxy: &Proxy, node: &str, script: &str) -> Result<Run, String> {
        command_output(
            Command::new("ssh")
                .arg("-F")
                .arg(self.ssh_config()?)
                .args(["-o", "HostName=127.0.0.1", "-o"])
                .arg(format!("Port={}", proxy.port))
                .arg("-o")
                .arg(format!("HostKeyAlias={node}"))
                .arg(node)
                .arg("--")
                .arg(script),
        )
    }

    /// Like [`Testbed::ssh`], but a non-zero exit is an error; returns stdout.
    pub fn ssh_ok(&self, node: &str, script: &str) -> Result<String, String> {
        let run = self.ssh(node, script)?;
        if run.success() {
            Ok(run.stdout)
        } else {
            Err(format!("`{script}` failed on {node}\n{}", run.describe()))
        }
    }

    /// `tests/testbed/testbed.py stage NODE ARGS...`, e.g. `["busy", "--gpus", "0,1"]`.
    pub fn stage(&self, node: &str, args: &[&str]) -> Result<(), String> {
        let run = command_output(
            Command::new(testbed_scripts().join("up").with_file_name("stage"))
                .arg("--dir")
                .arg(self.dir())
                .arg(node)
                .args(args),
        )?;
        if run.success() {
            Ok(())
        } else {
            Err(format!(
                "Failed to stage {args:?} on {node}\n{}",
                run.describe()
            ))
        }
    }

    /// Stops every process and removes every namespace, link and mount of
    /// this testbed; idempotent.
    pub fn down(&self) -> Result<(), String> {
        let run = command_output(
            Command::new(testbed_scripts().join("down"))
                .arg("--dir")
                .arg(self.dir()),
        )?;
        if run.success() {
            Ok(())
        } else {
            Err(format!(
                "Failed to tear the testbed down\n{}",
                run.describe()
            ))
        }
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if let Err(error) = self.down() {
            eprintln!("{error}");
        }
    }
}

/// A plain HTTP/1.0 GET from the host, returning the status code, e.g. 200.
pub fn http_status(host: &str, port: u16, path: &str) -> Result<u16, String> {
    http_get(host, port, path, None).map(|response| response.status)
}

/// A response of [`http_get`].
#[derive(Debug)]
pub struct HttpResponse {
    /// e.g. `200`
    pub status: u16,
    /// Header lines as sent, e.g. `Content-Type: text/html`.
    pub headers: Vec<String>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// A header's value, by case-insensitive name, e.g. `content-type`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A plain HTTP/1.0 GET (std only), with an optional `Accept` header.
pub fn http_get(
    host: &str,
    port: u16,
    path: &str,
    accept: Option<&str>,
) -> Result<HttpResponse, String> {
    let mut stream = TcpStream::connect((host, port))
        .map_err(|error| format!("Failed to connect to {host}:{port}: {error}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|error| format!("Failed to set a timeout: {error}"))?;
    let accept = accept
        .map(|value| format!("Accept: {value}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {host}\r\n{accept}\r\n"
    )
    .map_err(|error| format!("Failed to send to {host}:{port}: {error}"))?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .map_err(|error| format!("Failed to read from {host}:{port}: {error}"))?;
    let split = response
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .ok_or_else(|| format!("Failed to find the end of the headers from {host}:{port}"))?;
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("Failed to parse the status line from {host}:{port}: {head:?}"))?;
    Ok(HttpResponse {
        status,
        headers: lines.map(str::to_owned).collect(),
        body: response[split + 4..].to_vec(),
    })
}

/// Builds the fixtures into [`fixtures_dir`] (no root needed) and returns
/// their `fixtures.json`.
pub fn build_fixtures() -> Result<serde_json::Value, String> {
    let run = command_output(
        Command::new(testbed_scripts().join("testbed.py"))
            .arg("fixtures")
            .arg("--fixtures")
            .arg(fixtures_dir()),
    )?;
    if !run.success() {
        return Err(format!("Failed to build the fixtures\n{}", run.describe()));
    }
    let text = std::fs::read_to_string(fixtures_dir().join("fixtures.json"))
        .map_err(|error| format!("Failed to read fixtures.json: {error}"))?;
    serde_json::from_str(&text).map_err(|error| format!("Failed to parse fixtures.json: {error}"))
}

/// The port a helper process writes into `port_file` once it listens, waited for at
/// most 10 s; `what` names the process in the error.
fn reported_port(port_file: &Path, what: &str) -> Result<u16, String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let text = std::fs::read_to_string(port_file).unwrap_or_default();
        if let Ok(port) = text.trim().parse() {
            return Ok(port);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("{what} did not report its port within 10 s"))
}

/// `tests/testbed/index_server.py` on loopback, without a testbed; killed on drop.
pub struct IndexServer {
    child: std::process::Child,
    /// e.g. `40123`
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl IndexServer {
    /// Serves [`fixtures_dir`] on `127.0.0.1` at a free port.
    pub fn start() -> Result<IndexServer, String> {
        let dir = tempfile::tempdir()
            .map_err(|error| format!("Failed to create a directory: {error}"))?;
        let port_file = dir.path().join("port");
        let child = Command::new(testbed_scripts().join("index_server.py"))
            .arg("--root")
            .arg(fixtures_dir())
            .args(["--bind", "127.0.0.1", "--port", "0", "--port-file"])
            .arg(&port_file)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| format!("Failed to start the index server: {error}"))?;
        let mut server = IndexServer {
            child,
            port: 0,
            _dir: dir,
        };
        server.port = reported_port(&port_file, "the index server")?;
        Ok(server)
    }

    /// GET `path` from the server.
    pub fn get(&self, path: &str, accept: Option<&str>) -> Result<HttpResponse, String> {
        http_get("127.0.0.1", self.port, path, accept)
    }
}

impl Drop for IndexServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Names of the host's network namespaces and links, for leak checks,
/// e.g. `["cutb1n0", "lo", "eth0", "cutb1br"]`.
pub fn host_network_names() -> Result<Vec<String>, String> {
    let netns = command_output(Command::new("ip").args(["netns", "list"]))?;
    let mut names: Vec<String> = netns
        .stdout
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    let links = command_output(Command::new("ip").args(["-o", "link", "show"]))?;
    names.extend(links.stdout.lines().filter_map(|line| {
        let name = line.split(':').nth(1)?.trim();
        Some(name.split('@').next().unwrap_or(name).to_owned())
    }));
    Ok(names)
}

/// A running `tests/testbed/proxy.py`; killed on drop.
pub struct Proxy {
    child: std::process::Child,
    /// The loopback port it listens on, e.g. `40123`.
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Proxy {
    /// Starts a proxy to `target` (e.g. `10.200.1.10:22`) with extra flags,
    /// e.g. `&["--drop-after-bytes", "3000"]`.
    pub fn start(target: &str, flags: &[&str]) -> Result<Proxy, String> {
        let dir = tempfile::tempdir()
            .map_err(|error| format!("Failed to create a proxy directory: {error}"))?;
        let port_file = dir.path().join("port");
        let child = Command::new(testbed_scripts().join("proxy.py"))
            .args([
                "--target",
                target,
                "--lifetime",
                "120",
                "--quiet",
                "--port-file",
            ])
            .arg(&port_file)
            .args(flags)
            .stdin(Stdio::null())
            .spawn()
            .map_err(|error| format!("Failed to start the proxy: {error}"))?;
        let mut proxy = Proxy {
            child,
            port: 0,
            _dir: dir,
        };
        proxy.port = reported_port(&port_file, "the proxy")?;
        Ok(proxy)
    }

    /// Sends a signal by name to the proxy, e.g. `"USR1"` (drop every connection).
    pub fn signal(&self, name: &str) -> Result<(), String> {
        let run = command_output(
            Command::new("kill")
                .arg(format!("-{name}"))
                .arg(self.child.id().to_string()),
        )?;
        if run.success() {
            Ok(())
        } else {
            Err(format!("Failed to signal the proxy\n{}", run.describe()))
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
