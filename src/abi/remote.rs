//! A node's tables without its libraries: the target interpreter runs [`SCRIPT`], which
//! lists its site-packages directories, reads each `*.dist-info`'s METADATA and RECORD,
//! and for each shared object a RECORD lists sends only the byte ranges [`super::elf`]
//! reads (header, section headers, dynamic tables), zlib-compressed. A torch
//! environment of several GiB travels as a few MiB in one round trip; the controller
//! reads the ranges with the same ELF reader as local files.

use std::io::Read;

use super::Dist;
use super::sparse::Sparse;
use super::tree::{Pending, Source};

/// The node-side script: `sites` prints the site-packages directories one per line;
/// `tables` streams frames `KIND LENGTH\n PAYLOAD` (S: a site directory, D: a
/// dist-info directory, M: its METADATA headers, R: its RECORD, E: a shared object's
/// path, size and ranges), zlib-compressed.
pub const SCRIPT: &str = r#"import os, sys
def sites():
    found = []
    candidates = []
    try:
        import site
        # Started with `-S`: no `.pth` file runs, so `site` sets nothing up. What its
        # start-up does first, `venv`, makes `sys.prefix` the virtual environment's;
        # it also reads the environment's `.pth` files and runs their `import` lines
        # (60 ms of a torch environment's start), which nothing here needs.
        if sys.flags.no_site:
            site.addsitepackages = lambda known_paths, prefixes=None: known_paths
            site.venv(set())
        candidates += site.getsitepackages()
    except Exception:
        pass
    import sysconfig
    paths = sysconfig.get_paths()
    candidates += [paths.get("purelib"), paths.get("platlib")]
    for directory in candidates:
        if directory and os.path.isdir(directory):
            directory = os.path.abspath(directory)
            if directory not in found:
                found.append(directory)
    return found
def library(path):
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".so") or ".so." in name
def ranges(handle, size):
    if size < 64:
        return None
    handle.seek(0)
    header = handle.read(64)
    if header[:4] != b"\x7fELF" or header[4] != 2:
        return None
    end = "<" if header[5] == 1 else ">"
    shoff = struct.unpack_from(end + "Q", header, 0x28)[0]
    shnum, shstrndx = struct.unpack_from(end + "HH", header, 0x3c)
    want = [(0, 64)]
    if shoff == 0:
        return want
    if shnum == 0 or shstrndx == 0xffff:
        handle.seek(shoff)
        first = handle.read(64)
        if shnum == 0:
            shnum = struct.unpack_from(end + "Q", first, 0x20)[0]
        if shstrndx == 0xffff:
            shstrndx = struct.unpack_from(end + "I", first, 0x28)[0]
        want.append((shoff, 64))
    want.append((shoff, shnum * 64))
    handle.seek(shoff)
    table = handle.read(shnum * 64)
    sections = []
    for index in range(len(table) // 64):
        kind, offset, length, link = struct.unpack_from(end + "4xI16xQQI", table, index * 64)
        sections.append((kind, offset, length, link))
    def add(index):
        if 0 <= index < len(sections) and sections[index][0] != 8:
            want.append((sections[index][1], sections[index][2]))
    add(shstrndx)
    for index, (kind, offset, length, link) in enumerate(sections):
        if kind in (6, 11, 0x6ffffffd, 0x6ffffffe, 0x6fffffff):
            add(index)
            add(link)
            if 0 <= link < len(sections):
                add(sections[link][3])
    return want
def tables():
    out = sys.stdout.buffer
    packer = zlib.compressobj(1)
    def frame(kind, payload):
        out.write(packer.compress(kind + b" %d\n" % len(payload) + payload))
    for directory in sites():
        frame(b"S", os.fsencode(directory))
        for name in sorted(os.listdir(directory)):
            if not name.endswith(".dist-info"):
                continue
            try:
                with open(os.path.join(directory, name, "RECORD"), "rb") as handle:
                    record = handle.read()
            except OSError:
                continue
            metadata = b""
            try:
                with open(os.path.join(directory, name, "METADATA"), "rb") as handle:
                    metadata = handle.read().split(b"\n\n", 1)[0]
            except OSError:
                pass
            frame(b"D", os.fsencode(name))
            frame(b"M", metadata)
            frame(b"R", record)
            for row in csv.reader(io.StringIO(record.decode("utf-8", "surrogateescape"))):
                if not row or not library(row[0]):
                    continue
                path = os.path.normpath(os.path.join(directory, row[0]))
                try:
                    with open(path, "rb") as handle:
                        size = os.fstat(handle.fileno()).st_size
                        want = ranges(handle, size)
                        if want is None:
                            continue
                        parts = []
                        for offset, length in want:
                            handle.seek(offset)
                            parts.append(handle.read(length))
                except (OSError, struct.error):
                    continue
                head = b"%d %d\n" % (size, len(want)) + b"".join(
                    b"%d %d\n" % (offset, len(part)) for (offset, _), part in zip(want, parts))
                frame(b"E", os.fsencode(path) + b"\0" + head + b"".join(parts))
    out.write(packer.flush())
if sys.argv[1] == "sites":
    print("\n".join(sites()))
else:
    import csv, io, struct, zlib
    tables()
"#;

/// What a node sent: site directories, distributions and shared objects with ranges.
#[derive(Debug, Default)]
pub struct Tables {
    /// The site-packages directories.
    pub roots: Vec<String>,
    /// The distributions.
    pub dists: Vec<Dist>,
    /// The shared objects, ranges read.
    pub pending: Vec<Pending>,
}

fn line<'a>(bytes: &mut &'a [u8]) -> Option<&'a str> {
    let end = bytes.iter().position(|byte| *byte == b'\n')?;
    let text = std::str::from_utf8(&bytes[..end]).ok()?;
    *bytes = &bytes[end + 1..];
    Some(text)
}

fn object(payload: &[u8], root: &str, dist: usize) -> Option<Pending> {
    let zero = payload.iter().position(|byte| *byte == 0)?;
    let path = String::from_utf8_lossy(&payload[..zero]).into_owned();
    let mut rest = &payload[zero + 1..];
    let head = line(&mut rest)?;
    let (size, count) = head.split_once(' ')?;
    let (size, count): (u64, usize) = (size.parse().ok()?, count.parse().ok()?);
    let mut ranges = Vec::with_capacity(count);
    for _ in 0..count {
        let (offset, length) = line(&mut rest)?.split_once(' ')?;
        ranges.push((offset.parse::<u64>().ok()?, length.parse::<usize>().ok()?));
    }
    let mut sparse = Sparse::new(size);
    for (offset, length) in ranges {
        let bytes = rest.get(..length)?;
        sparse.insert(offset, bytes.to_vec());
        rest = &rest[length..];
    }
    Some(Pending {
        path: super::ownership::normalize(&path),
        root: root.to_string(),
        dist,
        source: Source::Ranges(sparse),
    })
}

/// Read what [`SCRIPT`] `tables` printed.
pub fn parse(compressed: &[u8]) -> Result<Tables, String> {
    let mut bytes = Vec::new();
    flate2::read::ZlibDecoder::new(compressed)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("the answer is not zlib data: {error}"))?;
    let mut rest: &[u8] = &bytes;
    let mut tables = Tables::default();
    let mut dist_name = String::new();
    let mut metadata: Vec<u8> = Vec::new();
    while !rest.is_empty() {
        let head = line(&mut rest).ok_or("a frame has no header")?;
        let (kind, length) = head.split_once(' ').ok_or("a frame header has no length")?;
        let length: usize = length
            .parse()
            .map_err(|_| format!("bad frame length `{length}`"))?;
        let payload = rest.get(..length).ok_or("a frame is cut short")?;
        rest = &rest[length..];
        match kind {
            "S" => tables
                .roots
                .push(super::ownership::normalize(&String::from_utf8_lossy(
                    payload,
                ))),
            "D" => dist_name = String::from_utf8_lossy(payload).into_owned(),
            "M" => metadata = payload.to_vec(),
            "R" => {
                let (name, version) = super::ownership::metadata(&metadata);
                tables.dists.push(Dist {
                    name: name.unwrap_or_else(|| {
                        dist_name.split('-').next().unwrap_or_default().to_string()
                    }),
                    version: version.unwrap_or_else(|| "?".to_string()),
                });
            }
            "E" => {
                let root = tables.roots.last().cloned().unwrap_or_default();
                let dist = tables
                    .dists
                    .len()
                    .checked_sub(1)
                    .ok_or("a library before any distribution")?;
                let pending = object(payload, &root, dist).ok_or("a library frame is malformed")?;
                tables.pending.push(pending);
            }
            other => return Err(format!("unknown frame `{other}`")),
        }
    }
    Ok(tables)
}
