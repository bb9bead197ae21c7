//! Integration tests of the SSH testbed (issue 4): the seed's incidents happen
//! for real on testbed nodes, with plain `ssh`, `pip` and the fixture runfile
//! and server; nodes are isolated from the host and from each other.
//!
//! Needs root (network and mount namespaces); without it every test prints
//! why it is skipped and passes. See `tests/testbed/README.md`.

mod common;

use common::testbed::{
    IndexServer, Proxy, Testbed, build_fixtures, host_network_names, http_status, skip,
};
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

const VENV_PIP: &str = "/opt/ml-env/bin/pip";
const VENV_PYTHON: &str = "/opt/ml-env/bin/python";
const RUNFILE_13: &str = "cuda_13.0.1_580.82.07_linux.run";
const UNDEFINED_SYMBOL: &str =
    "undefined symbol: _ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib";
const READY: &str = "The server is fired up and ready to roll!";

/// `pip freeze` of the persona venv on `node`.
fn freeze(testbed: &Testbed, node: &str) -> Result<String, String> {
    testbed.ssh_ok(node, &format!("{VENV_PIP} freeze"))
}

fn require(condition: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(message()) }
}

fn require_line(text: &str, line: &str) -> Result<(), String> {
    require(text.lines().any(|l| l.trim() == line), || {
        format!("expected the line `{line}` in:\n{text}")
    })
}

/// The default-torch swap. pip keeps an installed torch that satisfies an
/// unpinned `torch` requirement, but as soon as torch is re-resolved
/// (`--force-reinstall`, `-U --upgrade-strategy eager`) without the cu130 index,
/// the newest torch of the default index wins: a default build that pulls in
/// the `nvidia-*-cu12` runtime.
#[test]
fn default_torch_swap_when_torch_is_not_pinned_to_the_cu130_index() -> Result<(), String> {
    if skip("default_torch_swap_when_torch_is_not_pinned_to_the_cu130_index") {
        return Ok(());
    }
    let testbed = Testbed::up(&["cuda12.8"])?;
    let (default, cu130) = (testbed.index("default")?, testbed.index("cu130")?);
    testbed.ssh_ok(
        "node0",
        &format!("{VENV_PIP} install -q torch==2.9.1+cu130 --index-url {cu130}"),
    )?;
    require_line(&freeze(&testbed, "node0")?, "torch==2.9.1+cu130")?;

    // Default index first, cu130 as extra index, no pin: pip keeps the +cu130 torch.
    testbed.ssh_ok(
        "node0",
        &format!(
            "{VENV_PIP} install -q flashinfer-python==0.6.4 --index-url {default} \
             --extra-index-url {cu130}"
        ),
    )?;
    let kept = freeze(&testbed, "node0")?;
    require_line(&kept, "flashinfer-python==0.6.4")?;
    require_line(&kept, "torch==2.9.1+cu130")?;

    // Reinstalled without an explicit torch index: swapped for a default build.
    testbed.ssh_ok(
        "node0",
        &format!("{VENV_PIP} install -q --force-reinstall flashinfer-python==0.6.4"),
    )?;
    let swapped = freeze(&testbed, "node0")?;
    require_line(&swapped, "torch==2.10.0")?;
    require_line(&swapped, "nvidia-cuda-runtime-cu12==12.8.90")?;
    require(!swapped.contains("+cu130"), || {
        format!("a +cu130 build survived:\n{swapped}")
    })?;
    let cuda = testbed.ssh_ok(
        "node0",
        &format!("{VENV_PYTHON} -c 'import torch; print(torch.__version__, torch.version.cuda)'"),
    )?;
    require(cuda.trim() == "2.10.0 12.8", || {
        format!("torch reports `{}`", cuda.trim())
    })
}

/// sgl-kernel 0.3.21+cu130 is built against torch 2.9's c10 ABI: once a
/// dependency upgrade brings torch 2.10.0+cu130 (pip ranks the `+cu130` local
/// version above the default build of the same version), its import fails
/// with the real loader error.
#[test]
fn sgl_kernel_import_fails_on_torch_2_10_cu130() -> Result<(), String> {
    if skip("sgl_kernel_import_fails_on_torch_2_10_cu130") {
        return Ok(());
    }
    let testbed = Testbed::up(&["cuda12.8"])?;
    let (default, cu130) = (testbed.index("default")?, testbed.index("cu130")?);
    testbed.ssh_ok(
        "node0",
        &format!(
            "{VENV_PIP} install -q torch==2.9.1+cu130 sgl-kernel==0.3.21+cu130 --index-url {cu130}"
        ),
    )?;
    let good = testbed.ssh_ok(
        "node0",
        &format!("{VENV_PYTHON} -c 'import sgl_kernel; print(sgl_kernel.__version__)'"),
    )?;
    require(good.trim() == "0.3.21+cu130", || {
        format!("sgl_kernel reports `{good}`")
    })?;

    testbed.ssh_ok(
        "node0",
        &format!(
            "{VENV_PIP} install -q --force-reinstall flashinfer-python==0.6.4 \
             --index-url {default} --extra-index-url {cu130}"
        ),
    )?;
    require_line(&freeze(&testbed, "node0")?, "torch==2.10.0+cu130")?;
    let broken = testbed.ssh("node0", &format!("{VENV_PYTHON} -c 'import sgl_kernel'"))?;
    require(!broken.success(), || {
        format!("import succeeded\n{}", broken.describe())
    })?;
    require(
        broken.stderr.contains(
            "ImportError: /opt/ml-env/lib/python3.11/site-packages/sgl_kernel/common_ops.abi3.so",
        ) && broken.stderr.contains(UNDEFINED_SYMBOL),
        || format!("unexpected failure\n{}", broken.describe()),
    )
}

/// The CUDA 13 runfile installs the toolkit but registers nothing with
/// ldconfig: the launch fails to load libnvrtc.so.13 until the lib directory
/// is in /etc/ld.so.conf.d and ldconfig has run.
#[test]
fn launch_needs_the_ldconfig_entry_for_the_cuda_13_libs() -> Result<(), String> {
    if skip("launch_needs_the_ldconfig_entry_for_the_cuda_13_libs") {
        return Ok(());
    }
    let testbed = Testbed::up(&["cuda12.8"])?;
    let cu130 = testbed.index("cu130")?;
    let (url, sha256) = testbed.runfile(RUNFILE_13)?;
    let nvcc = testbed.ssh_ok(
        "node0",
        &format!(
            "set -e; python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(*sys.argv[1:])' \
             {url} /tmp/{RUNFILE_13}; \
             echo '{sha256}  /tmp/{RUNFILE_13}' | sha256sum -c --quiet -; \
             sh /tmp/{RUNFILE_13} --silent --toolkit --installpath=/usr/local/cuda-13.0 --override; \
             /usr/local/cuda-13.0/bin/nvcc --version; \
             {VENV_PIP} install -q torch==2.9.1+cu130 sgl-kernel==0.3.21+cu130 --index-url {cu130}"
        ),
    )?;
    require(
        nvcc.contains("Cuda compilation tools, release 13.0, V13.0.88"),
        || format!("unexpected nvcc --version:\n{nvcc}"),
    )?;

    let launch = format!(
        "{VENV_PYTHON} -m sglang.launch_server --model-path /models/test --tp 8 \
         --cuda-graph-max-bs 16 --disable-custom-all-reduce --host 0.0.0.0 --port 30000"
    );
    let failed = testbed.ssh("node0", &format!("cd /tmp && {launch}"))?;
    require(!failed.success(), || {
        format!("launch succeeded\n{}", failed.describe())
    })?;
    let log = failed.all();
    require(
        log.contains("Traceback (most recent call last):")
            && log.contains("OSError: libnvrtc.so.13: cannot open shared object file"),
        || format!("unexpected launch failure\n{}", failed.describe()),
    )?;

    let registered = testbed.ssh_ok(
        "node0",
        "echo /usr/local/cuda-13.0/targets/x86_64-linux/lib > /etc/ld.so.conf.d/cuda-13-0.conf \
         && ldconfig && ldconfig -p",
    )?;
    require(
        registered.contains(
            "libnvrtc.so.13 (libc6,x86-64) => /usr/local/cuda-13.0/targets/x86_64-linux/lib/libnvrtc.so.13",
        ),
        || format!("libnvrtc.so.13 is not in the ld.so cache:\n{registered}"),
    )?;
    let pid = testbed.ssh_ok(
        "node0",
        &format!(
            "cd /tmp; nohup {launch} --testbed-ready-delay 0.3 > /tmp/launch.log 2>&1 < /dev/null & echo $!"
        ),
    )?;
    let pid = pid.trim().to_owned();
    let waited = testbed.ssh(
        "node0",
        &format!(
            "for i in $(seq 1 100); do grep -qF '{READY}' /tmp/launch.log && exit 0; \
             grep -q Traceback /tmp/launch.log && break; sleep 0.1; done; cat /tmp/launch.log; exit 1"
        ),
    )?;
    let health = http_status(&testbed.node_ip("node0")?, 30000, "/health");
    testbed.ssh_ok("node0", &format!("kill {pid}"))?;
    require(waited.success(), || {
        format!("the server did not get ready\n{}", waited.describe())
    })?;
    require(health == Ok(200), || format!("GET /health: {health:?}"))
}

/// A file, an ldconfig registration and a pip install on node0 are invisible
/// on the host and on node1; `down` leaves no namespace, link or process.
#[test]
fn nodes_are_isolated_from_the_host_and_from_each_other() -> Result<(), String> {
    if skip("nodes_are_isolated_from_the_host_and_from_each_other") {
        return Ok(());
    }
    let testbed = Testbed::up(&["cuda12.8", "cuda12.8"])?;
    let markers = [
        "/etc/testbed-isolation-marker",
        "/usr/local/testbed-isolation-marker",
        "/opt/testbed-isolation-marker",
        "/root/testbed-isolation-marker",
        "/var/testbed-isolation-marker",
        "/tmp/testbed-isolation-marker",
        "/usr/lib/x86_64-linux-gnu/testbed-isolation-marker",
    ];
    let write_markers: Vec<String> = markers
        .iter()
        .map(|path| format!("echo node0 > {path}"))
        .collect();
    testbed.ssh_ok(
        "node0",
        &format!(
            "set -e; {}; mkdir -p /opt/testbed-isolation/lib; \
             cp /usr/local/cuda-12.8/targets/x86_64-linux/lib/libcudart.so.12.8.90 /opt/testbed-isolation/lib/; \
             echo /opt/testbed-isolation/lib > /etc/ld.so.conf.d/zz-testbed-isolation.conf; ldconfig; \
             ldconfig -p | grep -q /opt/testbed-isolation/lib; \
             python3 -m pip install -q flashinfer-cubin==0.6.4; python3 -m pip show -q flashinfer-cubin",
            write_markers.join("; ")
        ),
    )?;
    let absent: Vec<String> = markers
        .iter()
        .map(|path| format!("test ! -e {path}"))
        .collect();
    let check = format!(
        "set -e; {}; test ! -e /opt/testbed-isolation; ! ldconfig -p | grep -q /opt/testbed-isolation; \
         ! /root/.pyenv/versions/3.11.7/bin/python3 -m pip show -q flashinfer-cubin 2>/dev/null",
        absent.join("; ")
    );
    testbed.ssh_ok("node1", &check)?;
    let host = std::process::Command::new("bash")
        .arg("-c")
        .arg(&check)
        .output()
        .map_err(|error| format!("Failed to run the host check: {error}"))?;
    require(host.status.success(), || {
        format!(
            "node0's changes are visible on the host: {}",
            String::from_utf8_lossy(&host.stderr)
        )
    })?;
    let names = testbed.ssh_ok("node1", "hostname")? + &testbed.ssh_ok("node0", "hostname")?;
    require(names == "node1\nnode0\n", || {
        format!("hostnames: {names:?}")
    })?;

    let mut ours = vec![testbed.bridge()?];
    for node in ["node0", "node1"] {
        ours.push(testbed.netns(node)?);
        ours.push(testbed.veth(node)?);
    }
    let pids: Vec<u64> = testbed
        .state()
        .get("nodes")
        .and_then(|nodes| nodes.as_array())
        .map(|nodes| {
            nodes
                .iter()
                .filter_map(|node| {
                    node.pointer("/sshd/pid")
                        .and_then(serde_json::Value::as_u64)
                })
                .collect()
        })
        .unwrap_or_default();
    require(pids.len() == 2, || format!("sshd pids: {pids:?}"))?;
    testbed.down()?;
    testbed.down()?;
    let names = host_network_names()?;
    let leftovers: Vec<&String> = ours.iter().filter(|name| names.contains(name)).collect();
    require(leftovers.is_empty(), || {
        format!("left behind: {leftovers:?}")
    })?;
    for pid in pids {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let running = stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'));
        require(stat.is_empty() || !running, || {
            format!("sshd {pid} still runs: {stat}")
        })?;
    }
    Ok(())
}

/// The personas' GPU facts through the nvidia-smi stand-in, GPUs staged busy,
/// a staged driver version, and the cuDNN check of the fixture server.
#[test]
fn personas_nvidia_smi_and_staging() -> Result<(), String> {
    if skip("personas_nvidia_smi_and_staging") {
        return Ok(());
    }
    let testbed = Testbed::up(&["cuda12.8", "fresh", "old-driver", "volta", "h200"])?;
    let query = "nvidia-smi --query-gpu=index,name,driver_version,compute_cap,memory.total,memory.used \
                 --format=csv,noheader,nounits";
    let expected = [
        (
            "node0",
            8,
            "0, NVIDIA RTX PRO 6000 Blackwell Server Edition, 580.82.07, 12.0, 97887, 0",
        ),
        (
            "node1",
            8,
            "0, NVIDIA RTX PRO 6000 Blackwell Server Edition, 580.82.07, 12.0, 97887, 0",
        ),
        (
            "node2",
            8,
            "0, NVIDIA H100 80GB HBM3, 570.172.08, 9.0, 81559, 0",
        ),
        (
            "node3",
            8,
            "0, Tesla V100-SXM2-32GB, 580.82.07, 7.0, 32768, 0",
        ),
        ("node4", 1, "0, NVIDIA H200, 580.159.04, 9.0, 143771, 0"),
    ];
    for (node, count, first) in expected {
        let out = testbed.ssh_ok(node, query)?;
        require(
            out.lines().count() == count && out.lines().next() == Some(first),
            || format!("{node}: unexpected GPUs:\n{out}"),
        )?;
    }
    testbed.ssh_ok(
        "node1",
        "test ! -e /opt/ml-env && test ! -e /usr/local/cuda-12.8",
    )?;
    let h200 = testbed.ssh_ok(
        "node4",
        "cat /proc/driver/nvidia/version; /usr/local/cuda/bin/nvcc --version; ldconfig -p | grep libnvrtc.so.13",
    )?;
    require(
        h200.contains("Open Kernel Module for x86_64  580.159.04") && h200.contains("V13.0.88"),
        || format!("node4 (h200):\n{h200}"),
    )?;

    let apps = "nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv";
    testbed.stage("node4", &["busy"])?;
    let busy = testbed.ssh_ok("node4", &format!("{apps}; nvidia-smi; {query}"))?;
    require(
        busy.lines().next() == Some("gpu_uuid, pid, process_name, used_gpu_memory [MiB]")
            && busy.lines().nth(1).is_some_and(|line| line.ends_with(", 433, python3, 8710 MiB"))
            && busy.contains("|    0   N/A  N/A             433      C   python3                                8710MiB |")
            && busy.contains("0, NVIDIA H200, 580.159.04, 9.0, 143771, 8719"),
        || format!("node4 staged busy:\n{busy}"),
    )?;
    testbed.stage("node4", &["idle"])?;
    let idle = testbed.ssh_ok("node4", apps)?;
    require(
        idle == "gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n",
        || format!("node4 staged idle:\n{idle}"),
    )?;
    testbed.stage("node0", &["driver", "570.172.08"])?;
    let driver = testbed.ssh_ok(
        "node0",
        "nvidia-smi --query-gpu=driver_version --format=csv,noheader | sort -u",
    )?;
    require(driver == "570.172.08\n", || {
        format!("node0 staged driver: {driver}")
    })?;

    testbed.stage("node0", &["cudnn-mismatch"])?;
    let launch = format!(
        "cd /tmp && timeout 3 {VENV_PYTHON} -m sglang.launch_server --model-path /models/test --tp 8 \
         --port 30000 --testbed-ready-delay 0"
    );
    let refused = testbed.ssh("node0", &launch)?;
    require(
        refused
            .stderr
            .contains("Traceback (most recent call last):")
            && refused.stderr.contains("RuntimeError: cuDNN 9.10.2")
            && refused.stderr.contains("SGLANG_DISABLE_CUDNN_CHECK=1"),
        || format!("cuDNN check did not refuse\n{}", refused.describe()),
    )?;
    let allowed = testbed.ssh(
        "node0",
        &format!("export SGLANG_DISABLE_CUDNN_CHECK=1; {launch}"),
    )?;
    require(allowed.stdout.contains(READY), || {
        format!(
            "launch with SGLANG_DISABLE_CUDNN_CHECK=1\n{}",
            allowed.describe()
        )
    })
}

/// `ubuntu` and `fresh` are shaped like the real H200 nodes: the interpreter's
/// `sitecustomize.py` is Debian's/Ubuntu's symlink into `/etc/python3.11/`
/// (root-owned, 0644); `ubuntu` has CUDA 13.0.2 from the fixture apt packages in
/// `/usr/local/cuda-13.0` without `version.json`, `/usr/local/cuda` through
/// update-alternatives listed first by `000_cuda.conf`, apt's cuDNN in
/// `/usr/lib/x86_64-linux-gnu` (not on the host), torch 2.10.0+cu130 in
/// `/opt/torch/.venv` and one H200; apt on the nodes sees only the testbed's repository.
#[test]
fn ubuntu_and_fresh_personas_look_like_real_nodes() -> Result<(), String> {
    if skip("ubuntu_and_fresh_personas_look_like_real_nodes") {
        return Ok(());
    }
    let testbed = Testbed::up(&["ubuntu", "fresh"])?;
    let link = "/root/.pyenv/versions/3.11.7/lib/python3.11/sitecustomize.py";
    let sitecustomize = format!(
        "stat -c '%F %U %a' {link} /etc/python3.11/sitecustomize.py; readlink {link}; \
         python3 -c 'import sitecustomize; print(sitecustomize.__file__)'; \
         head -n 1 /etc/python3.11/sitecustomize.py"
    );
    let expected = format!(
        "symbolic link root 777\nregular file root 644\n/etc/python3.11/sitecustomize.py\n{link}\n\
         # install the apport exception handler if available\n"
    );
    for node in ["node0", "node1"] {
        let out = testbed.ssh_ok(node, &sitecustomize)?;
        require(out == expected, || format!("{node} sitecustomize:\n{out}"))?;
    }
    testbed.ssh_ok(
        "node1",
        "test ! -e /usr/local/cuda && test ! -e /usr/local/cuda-13.0 && test ! -e /opt/torch",
    )?;
    let ubuntu = testbed.ssh_ok(
        "node0",
        "readlink /usr/local/cuda /etc/alternatives/cuda /usr/local/cuda-13; \
         test ! -e /usr/local/cuda-13.0/version.json && echo no-version.json; \
         /usr/local/cuda/bin/nvcc --version | tail -n 2; \
         head -n 1 /etc/ld.so.conf.d/000_cuda.conf; \
         ldconfig -p | grep -E 'libnvrtc.so.13 |libcudnn.so.9 '; \
         dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\\n' \
             cuda-toolkit-13-0 cuda-cudart-13-0 libcudnn9-cuda-13; \
         dpkg-query -S /usr/local/cuda-13.0/bin/nvcc /etc/ld.so.conf.d/000_cuda.conf; \
         update-alternatives --query cuda | grep -E '^(Status|Value):'; \
         cat /etc/apt/sources.list.d/*.list | grep -v '^#'; \
         /opt/torch/.venv/bin/python -c 'import torch; print(torch.__version__, torch.version.cuda)'; \
         nvidia-smi --query-gpu=name,driver_version --format=csv,noheader",
    )?;
    let apt = testbed.index("apt")?;
    for line in [
        "/etc/alternatives/cuda",
        "/usr/local/cuda-13.0",
        "/etc/alternatives/cuda-13",
        "no-version.json",
        "Cuda compilation tools, release 13.0, V13.0.88",
        "/usr/local/cuda/targets/x86_64-linux/lib",
        "libnvrtc.so.13 (libc6,x86-64) => /usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13",
        "libcudnn.so.9 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn.so.9",
        "cuda-toolkit-13-0 13.0.2-1 ii",
        "cuda-cudart-13-0 13.0.96-1 ii",
        "libcudnn9-cuda-13 9.14.0.64-1 ii",
        "cuda-nvcc-13-0: /usr/local/cuda-13.0/bin/nvcc",
        "cuda-toolkit-config-common: /etc/ld.so.conf.d/000_cuda.conf",
        "Status: auto",
        "Value: /usr/local/cuda-13.0",
        &format!("deb [trusted=yes] {apt} ./"),
        "2.10.0+cu130 13.0",
        "NVIDIA H200, 580.159.04",
    ] {
        require_line(&ubuntu, line)?;
    }
    // The host has neither the packages nor cuDNN.
    let host = std::process::Command::new("sh")
        .arg("-c")
        .arg("ls /usr/lib/x86_64-linux-gnu/libcudnn.so.9 || dpkg-query -W cuda-toolkit-13-0")
        .output()
        .map_err(|error| format!("Failed to run the host check: {error}"))?;
    require(!host.status.success(), || {
        "the ubuntu persona's packages leaked onto the host".to_string()
    })
}

/// Sixteen nodes start well under a minute and all answer over ssh.
#[test]
fn sixteen_nodes_start_well_under_a_minute() -> Result<(), String> {
    if skip("sixteen_nodes_start_well_under_a_minute") {
        return Ok(());
    }
    let started = Instant::now();
    let testbed = Testbed::up(&["fresh"; 16])?;
    let elapsed = started.elapsed();
    require(elapsed < Duration::from_secs(30), || {
        format!("startup took {elapsed:?}")
    })?;
    let names = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let testbed = &testbed;
                scope.spawn(move || testbed.ssh_ok(&format!("node{i}"), "hostname"))
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|_| Err("ssh thread panicked".to_owned()))
            })
            .collect::<Result<Vec<String>, String>>()
    })?;
    for (i, name) in names.iter().enumerate() {
        require(name.trim() == format!("node{i}"), || {
            format!("node{i} says {name:?}")
        })?;
    }
    Ok(())
}

/// The proxy in front of a node's sshd drops a connection after N bytes or
/// on SIGUSR1, and adds latency, while strict host-key checking still works.
#[test]
fn proxy_injects_faults_into_ssh() -> Result<(), String> {
    if skip("proxy_injects_faults_into_ssh") {
        return Ok(());
    }
    let testbed = Testbed::up(&["fresh"])?;
    let target = format!("{}:22", testbed.node_ip("node0")?);

    let slow = Proxy::start(&target, &["--latency-ms", "40"])?;
    let started = Instant::now();
    let echoed = testbed.ssh_via(&slow, "node0", "echo through")?;
    require(echoed.success() && echoed.stdout == "through\n", || {
        echoed.describe()
    })?;
    // An ssh session takes several round trips: each forwarded chunk waits 40 ms.
    require(started.elapsed() >= Duration::from_millis(200), || {
        format!("no latency: {:?}", started.elapsed())
    })?;

    let dropping = Proxy::start(&target, &["--drop-after-bytes", "3000"])?;
    let dropped = testbed.ssh_via(&dropping, "node0", "echo never")?;
    require(
        dropped.status == Some(255) && !dropped.stdout.contains("never"),
        || dropped.describe(),
    )?;

    let signalled = Proxy::start(&target, &[])?;
    std::thread::scope(|scope| {
        let session = scope.spawn(|| testbed.ssh_via(&signalled, "node0", "sleep 20; echo never"));
        std::thread::sleep(Duration::from_millis(1500));
        let sent = signalled.signal("USR1");
        let cut = session
            .join()
            .unwrap_or_else(|_| Err("ssh thread panicked".to_owned()))?;
        sent?;
        require(
            cut.status == Some(255) && !cut.stdout.contains("never"),
            || cut.describe(),
        )
    })
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The index server speaks PEP 503 HTML and PEP 691 JSON by content
/// negotiation, serves PEP 658/714 metadata and hashes that match the files,
/// and serves the runfiles' sha256. Needs no root: it runs on loopback.
#[test]
fn index_speaks_pep503_pep691_and_pep658() -> Result<(), String> {
    let fixtures = build_fixtures()?;
    let server = IndexServer::start()?;
    let json_type = "application/vnd.pypi.simple.v1+json";
    let pip_accept = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01";

    let page = server.get("/cu130/simple/torch/", Some(pip_accept))?;
    require(
        page.status == 200 && page.header("content-type") == Some(json_type),
        || format!("{page:?}"),
    )?;
    let project: serde_json::Value =
        serde_json::from_slice(&page.body).map_err(|error| format!("bad JSON: {error}"))?;
    require(
        project
            .pointer("/meta/api-version")
            .and_then(|v| v.as_str())
            == Some("1.1"),
        || page.text(),
    )?;
    let wheel = "torch-2.10.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl";
    let file = project
        .get("files")
        .and_then(|files| files.as_array())
        .and_then(|files| {
            files
                .iter()
                .find(|f| f.get("filename").and_then(|n| n.as_str()) == Some(wheel))
        })
        .ok_or_else(|| format!("no {wheel} in {}", page.text()))?;
    let field = |pointer: &str| {
        file.pointer(pointer)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .ok_or_else(|| format!("no {pointer} in {file}"))
    };
    let (url, sha256, metadata_sha256) = (
        field("/url")?,
        field("/hashes/sha256")?,
        field("/core-metadata/sha256")?,
    );
    require(
        url == "../../files/torch-2.10.0%2Bcu130-cp311-cp311-manylinux_2_28_x86_64.whl",
        || url.clone(),
    )?;
    let path = format!("/cu130/files/{}", url.trim_start_matches("../../files/"));
    let body = server.get(&path, None)?;
    require(
        body.status == 200 && sha256_hex(&body.body) == sha256,
        || format!("wheel hash mismatch for {path}"),
    )?;
    let metadata = server.get(&format!("{path}.metadata"), None)?;
    let text = metadata.text();
    require(
        sha256_hex(&metadata.body) == metadata_sha256
            && text.contains("Version: 2.10.0+cu130")
            && text.contains("Requires-Dist: nvidia-cudnn-cu13==9.15.1.9"),
        || format!("metadata:\n{text}"),
    )?;

    let html = server.get("/default/simple/torch/", Some("text/html"))?;
    let text = html.text();
    require(
        html.header("content-type") == Some("text/html")
            && text.contains("torch-2.10.0-cp311-cp311-manylinux_2_28_x86_64.whl#sha256=")
            && text.contains("data-core-metadata=\"sha256=")
            && text.contains("data-dist-info-metadata=\"sha256=")
            && !text.contains("+cu130"),
        || format!("default torch page:\n{text}"),
    )?;
    let root = server.get("/default/simple/", Some(pip_accept))?;
    require(
        root.text().contains("{\"name\": \"flashinfer-python\"}"),
        || root.text(),
    )?;
    let redirect = server.get("/default/simple/Flashinfer_Python/", None)?;
    require(
        redirect.status == 301
            && redirect.header("location") == Some("/default/simple/flashinfer-python/"),
        || format!("{redirect:?}"),
    )?;
    let refused = server.get("/default/simple/", Some("application/xml"))?;
    require(refused.status == 406, || format!("{refused:?}"))?;

    let runfile = fixtures
        .get("runfiles")
        .and_then(|entries| entries.as_array())
        .and_then(|entries| entries.first())
        .ok_or("fixtures.json has no runfile")?;
    let name = runfile
        .get("file")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let expected = runfile
        .get("sha256")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let sidecar = server.get(&format!("/files/{name}.sha256"), None)?;
    require(sidecar.text() == format!("{expected}  {name}\n"), || {
        sidecar.text()
    })?;
    let payload = server.get(&format!("/files/{name}"), None)?;
    require(sha256_hex(&payload.body) == expected, || {
        format!("{name} hash mismatch")
    })
}
