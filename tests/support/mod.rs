//! Test fixtures for the index sources: real wheels built in memory, and a small
//! HTTP/1.1 index server on 127.0.0.1 that serves them, honours `Range: bytes=`,
//! `If-None-Match`, scripted failures and delays, and logs every request.

use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::Digest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A wheel built in memory: its name, bytes and sha256.
#[derive(Debug, Clone)]
pub struct Wheel {
    pub filename: String,
    pub bytes: Vec<u8>,
    pub sha256: String,
    pub metadata: String,
}

/// Build `{name}-{version}-py3-none-any.whl` whose METADATA lists `requires`;
/// `padding` bytes of incompressible data sit before and after the metadata entry, so
/// reading it with ranges needs more than the file's tail.
pub fn wheel(
    name: &str,
    version: &str,
    requires: &[&str],
    requires_python: Option<&str>,
    extras: &[&str],
    padding: usize,
) -> Wheel {
    wheel_with_tag(
        name,
        version,
        "py3-none-any",
        requires,
        requires_python,
        extras,
        padding,
    )
}

/// [`wheel`] with an explicit tag triple, e.g. `cp312-cp312-manylinux_2_28_x86_64`.
pub fn wheel_with_tag(
    name: &str,
    version: &str,
    tag: &str,
    requires: &[&str],
    requires_python: Option<&str>,
    extras: &[&str],
    padding: usize,
) -> Wheel {
    let distribution = name.replace('-', "_");
    let filename = format!("{distribution}-{version}-{tag}.whl");
    let dist_info = format!("{distribution}-{version}.dist-info");
    let mut metadata = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n");
    if let Some(requires_python) = requires_python {
        metadata.push_str(&format!("Requires-Python: {requires_python}\n"));
    }
    for extra in extras {
        metadata.push_str(&format!("Provides-Extra: {extra}\n"));
    }
    for requirement in requires {
        metadata.push_str(&format!("Requires-Dist: {requirement}\n"));
    }
    metadata.push_str("\nA test package.\n");
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    writer
        .start_file(format!("{distribution}/__init__.py"), stored)
        .unwrap();
    writer.write_all(&noise(padding, 1)).unwrap();
    writer
        .start_file(format!("{dist_info}/METADATA"), deflated)
        .unwrap();
    writer.write_all(metadata.as_bytes()).unwrap();
    writer
        .start_file(format!("{distribution}/data.bin"), stored)
        .unwrap();
    writer.write_all(&noise(padding, 2)).unwrap();
    writer
        .start_file(format!("{dist_info}/WHEEL"), deflated)
        .unwrap();
    writer
        .write_all(
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        .unwrap();
    writer
        .start_file(format!("{dist_info}/RECORD"), deflated)
        .unwrap();
    writer
        .write_all(format!("{dist_info}/METADATA,,\n{dist_info}/RECORD,,\n").as_bytes())
        .unwrap();
    let bytes = writer.finish().unwrap().into_inner();
    let sha256 = hex::encode(sha2::Sha256::digest(&bytes));
    Wheel {
        filename,
        bytes,
        sha256,
        metadata,
    }
}

/// A wheel with `entries` small files listed before its METADATA, so its central
/// directory alone is larger than the 64 KiB tail the client reads first.
pub fn wheel_with_many_entries(name: &str, version: &str, entries: usize) -> Wheel {
    let distribution = name.replace('-', "_");
    let filename = format!("{distribution}-{version}-py3-none-any.whl");
    let dist_info = format!("{distribution}-{version}.dist-info");
    let metadata =
        format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Dist: alpha\n");
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    writer
        .start_file(format!("{dist_info}/METADATA"), stored)
        .unwrap();
    writer.write_all(metadata.as_bytes()).unwrap();
    for entry in 0..entries {
        writer
            .start_file(
                format!("{distribution}/a/rather/deep/package/path/module_number_{entry:05}.py"),
                stored,
            )
            .unwrap();
        writer.write_all(b"x = 1\n").unwrap();
    }
    let bytes = writer.finish().unwrap().into_inner();
    let sha256 = hex::encode(sha2::Sha256::digest(&bytes));
    Wheel {
        filename,
        bytes,
        sha256,
        metadata,
    }
}

/// Deterministic incompressible bytes.
fn noise(length: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..length)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state & 0xff) as u8
        })
        .collect()
}

pub fn sha256(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// What the server answers on one path.
#[derive(Debug, Clone, Default)]
pub struct Route {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    /// Answer `Range: bytes=` with `206`.
    pub ranges: bool,
    /// Send this `ETag` and answer a matching `If-None-Match` with `304`.
    pub etag: Option<String>,
    /// Answer the first N requests with `503`.
    pub fail_first: usize,
    /// Wait this long before answering.
    pub delay: Option<Duration>,
}

impl Route {
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            content_type: Some(content_type.to_string()),
            body: body.into(),
            ..Self::default()
        }
    }

    pub fn file(body: impl Into<Vec<u8>>) -> Self {
        Self {
            ranges: true,
            ..Self::ok("application/octet-stream", body)
        }
    }

    pub fn status(status: u16) -> Self {
        Self {
            status,
            ..Self::default()
        }
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Logged {
    pub path: String,
    pub range: Option<String>,
    pub if_none_match: Option<String>,
    pub authorization: bool,
    pub status: u16,
    pub body_bytes: usize,
}

#[derive(Debug, Default)]
struct State {
    routes: HashMap<String, Route>,
    served: HashMap<String, usize>,
    log: Vec<Logged>,
}

/// The fixture server; it runs on its own thread until the process ends.
#[derive(Debug, Clone)]
pub struct Server {
    pub address: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl Server {
    pub fn start() -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let (sender, receiver) = std::sync::mpsc::channel();
        let thread_state = Arc::clone(&state);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                sender.send(listener.local_addr().unwrap()).unwrap();
                // Bounded: a test process opens far fewer connections than this.
                for _ in 0..10_000 {
                    let Ok((stream, _)) = listener.accept().await else {
                        break;
                    };
                    let state = Arc::clone(&thread_state);
                    tokio::spawn(serve_connection(stream, state));
                }
            });
        });
        let address = receiver.recv_timeout(Duration::from_secs(10)).unwrap();
        Self { address, state }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    pub fn route(&self, path: &str, route: Route) {
        self.state
            .lock()
            .unwrap()
            .routes
            .insert(path.to_string(), route);
    }

    pub fn log(&self) -> Vec<Logged> {
        self.state.lock().unwrap().log.clone()
    }

    pub fn clear_log(&self) {
        self.state.lock().unwrap().log.clear();
    }

    pub fn requests_to(&self, path: &str) -> Vec<Logged> {
        self.log()
            .into_iter()
            .filter(|logged| logged.path == path)
            .collect()
    }
}

async fn serve_connection(mut stream: TcpStream, state: Arc<Mutex<State>>) {
    let mut buffer = Vec::new();
    // Bounded: keep-alive connections serve at most this many requests.
    for _ in 0..1000 {
        let head = loop {
            if let Some(end) = find(&buffer, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
                buffer.drain(..end + 4);
                break head;
            }
            if buffer.len() > 64 * 1024 {
                return;
            }
            let mut chunk = [0u8; 4096];
            match tokio::time::timeout(Duration::from_secs(30), stream.read(&mut chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return,
                Ok(Ok(count)) => buffer.extend_from_slice(&chunk[..count]),
            }
        };
        let mut lines = head.lines();
        let request_line = lines.next().unwrap_or_default();
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or("/")
            .to_string();
        let headers: HashMap<String, String> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
            .collect();
        let (response, delay) = respond(&state, &path, &headers);
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        if stream.write_all(&response).await.is_err() {
            return;
        }
    }
}

fn respond(
    state: &Arc<Mutex<State>>,
    path: &str,
    headers: &HashMap<String, String>,
) -> (Vec<u8>, Option<Duration>) {
    let mut state = state.lock().unwrap();
    let route = state.routes.get(path).cloned();
    let served = {
        let count = state.served.entry(path.to_string()).or_default();
        *count += 1;
        *count
    };
    let range = headers.get("range").cloned();
    let if_none_match = headers.get("if-none-match").cloned();
    let (status, extra_headers, body, delay) = match route {
        None => (404, Vec::new(), Vec::new(), None),
        Some(route) if served <= route.fail_first => (503, Vec::new(), Vec::new(), None),
        Some(route) => {
            let mut extra = Vec::new();
            if let Some(content_type) = &route.content_type {
                extra.push(format!("Content-Type: {content_type}"));
            }
            if let Some(etag) = &route.etag {
                extra.push(format!("ETag: {etag}"));
            }
            if route.etag.is_some() && if_none_match == route.etag {
                (304, extra, Vec::new(), route.delay)
            } else if let (true, Some(range)) = (route.ranges, range.as_deref()) {
                let length = route.body.len();
                let (start, end) = parse_range(range, length);
                extra.push(format!("Content-Range: bytes {start}-{end}/{length}"));
                (206, extra, route.body[start..=end].to_vec(), route.delay)
            } else {
                (route.status, extra, route.body, route.delay)
            }
        }
    };
    state.log.push(Logged {
        path: path.to_string(),
        range,
        if_none_match,
        authorization: headers.contains_key("authorization"),
        status,
        body_bytes: body.len(),
    });
    let reason = match status {
        200 => "OK",
        206 => "Partial Content",
        304 => "Not Modified",
        404 => "Not Found",
        503 => "Service Unavailable",
        _ => "Other",
    };
    let mut response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for header in extra_headers {
        response.push_str(&header);
        response.push_str("\r\n");
    }
    response.push_str("\r\n");
    let mut bytes = response.into_bytes();
    bytes.extend_from_slice(&body);
    (bytes, delay)
}

/// `bytes=-N` or `bytes=A-B` / `bytes=A-` → inclusive `(start, end)` within `length`.
fn parse_range(range: &str, length: usize) -> (usize, usize) {
    let spec = range.trim().trim_start_matches("bytes=");
    let (start, end) = spec.split_once('-').unwrap();
    if start.is_empty() {
        let suffix: usize = end.parse().unwrap();
        (length.saturating_sub(suffix), length - 1)
    } else {
        let start: usize = start.parse().unwrap();
        let end = end
            .parse::<usize>()
            .map_or(length - 1, |end| end.min(length - 1));
        (start, end)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// A PEP 691 JSON page listing `files`: `(wheel, yanked, offer PEP 658 with hash)`.
pub fn json_page(name: &str, files: &[(&Wheel, Option<&str>, bool)]) -> String {
    let entries: Vec<serde_json::Value> = files
        .iter()
        .map(|(wheel, yanked, metadata)| {
            let mut entry = serde_json::json!({
                "filename": wheel.filename,
                "url": format!("../../files/{}", wheel.filename),
                "hashes": {"sha256": wheel.sha256},
                "requires-python": null,
                "size": wheel.bytes.len(),
            });
            if let Some(reason) = yanked {
                entry["yanked"] = serde_json::Value::String((*reason).to_string());
            }
            if *metadata {
                entry["core-metadata"] =
                    serde_json::json!({"sha256": sha256(wheel.metadata.as_bytes())});
            }
            entry
        })
        .collect();
    serde_json::json!({
        "meta": {"api-version": "1.1"},
        "name": name,
        "files": entries,
    })
    .to_string()
}

/// Serve `wheel` at `/files/NAME`, and its PEP 658 file when `metadata` is set.
pub fn serve_wheel(server: &Server, wheel: &Wheel, metadata: bool) {
    server.route(
        &format!("/files/{}", wheel.filename),
        Route::file(wheel.bytes.clone()),
    );
    if metadata {
        server.route(
            &format!("/files/{}.metadata", wheel.filename),
            Route::ok("application/octet-stream", wheel.metadata.clone()),
        );
    }
}

/// A `.tar.gz` sdist of these files (ustar headers, gzip).
pub fn sdist(files: &[(&str, &str)]) -> Vec<u8> {
    let mut tar = Vec::new();
    for (name, text) in files {
        let mut header = [0u8; 512];
        header[..name.len()].copy_from_slice(name.as_bytes());
        header[100..108].copy_from_slice(b"0000644\0");
        header[124..136].copy_from_slice(format!("{:011o}\0", text.len()).as_bytes());
        header[156] = b'0';
        header[257..263].copy_from_slice(b"ustar\0");
        header[148..156].copy_from_slice(b"        ");
        let checksum: u32 = header.iter().map(|byte| u32::from(*byte)).sum();
        header[148..156].copy_from_slice(format!("{checksum:06o}\0 ").as_bytes());
        tar.extend_from_slice(&header);
        tar.extend_from_slice(text.as_bytes());
        tar.resize(tar.len().div_ceil(512) * 512, 0);
    }
    tar.extend_from_slice(&[0u8; 1024]);
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(&tar).unwrap();
    encoder.finish().unwrap()
}
