//! A partial view of a remote file for reading a wheel's `METADATA` with HTTP range
//! requests instead of a full download.
//!
//! The zip reader runs over a [`SparseReader`]: reads inside the ranges fetched so far
//! succeed; a read elsewhere fails and records its offset, so the caller fetches that
//! range and tries again (the first try has the file's last 64 KiB, which holds the
//! central directory of all but the largest wheels). The zip format itself stays the
//! `zip` crate's business.

use std::cell::Cell;
use std::io::{self, Read, Seek, SeekFrom};

/// The end of central directory record's signature, `PK\x05\x06`.
const END_OF_DIRECTORY: [u8; 4] = [0x50, 0x4b, 0x05, 0x06];

/// Where the central directory starts, read from the end of central directory record
/// in `tail` (a file's last bytes); `None` when there is none or it points to a zip64
/// record (then the zip reader finds its way in windows).
pub fn central_directory_start(tail: &[u8]) -> Option<u64> {
    // The record is 22 bytes plus a comment of at most 65 535 bytes, at the very end.
    let position = tail
        .windows(END_OF_DIRECTORY.len())
        .rposition(|window| window == END_OF_DIRECTORY)?;
    let field = tail.get(position + 16..position + 20)?;
    let offset = u32::from_le_bytes([field[0], field[1], field[2], field[3]]);
    (offset != u32::MAX).then_some(u64::from(offset))
}

/// The bytes of a remote file known so far, e.g. its last 64 KiB of 2.1 GiB.
#[derive(Debug, Clone, Default)]
pub struct SparseFile {
    length: u64,
    chunks: Vec<(u64, Vec<u8>)>,
}

impl SparseFile {
    /// An empty view of a file of `length` bytes.
    pub fn new(length: u64) -> Self {
        Self {
            length,
            chunks: Vec::new(),
        }
    }

    /// Record `bytes` found at `offset`.
    pub fn add(&mut self, offset: u64, bytes: Vec<u8>) {
        self.chunks.push((offset, bytes));
        self.chunks.sort_by_key(|(start, _)| *start);
    }

    /// The start of the first known range after `offset`, or the file's end: a fetch
    /// at `offset` need not go past it.
    pub fn next_known_after(&self, offset: u64) -> u64 {
        self.chunks
            .iter()
            .map(|(start, _)| *start)
            .find(|start| *start > offset)
            .unwrap_or(self.length)
    }

    fn chunk_at(&self, position: u64) -> Option<(&[u8], usize)> {
        self.chunks.iter().rev().find_map(|(start, bytes)| {
            let end = start + bytes.len() as u64;
            (*start <= position && position < end).then(|| {
                let skip = usize::try_from(position - start).unwrap_or(usize::MAX);
                (bytes.as_slice(), skip)
            })
        })
    }
}

/// A `Read + Seek` cursor over a [`SparseFile`]; the first read outside the known
/// ranges is recorded in `missing`.
#[derive(Debug)]
pub struct SparseReader<'a> {
    file: &'a SparseFile,
    position: u64,
    missing: &'a Cell<Option<u64>>,
}

impl<'a> SparseReader<'a> {
    /// A cursor at offset 0.
    pub fn new(file: &'a SparseFile, missing: &'a Cell<Option<u64>>) -> Self {
        Self {
            file,
            position: 0,
            missing,
        }
    }
}

impl Read for SparseReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() || self.position >= self.file.length {
            return Ok(0);
        }
        match self.file.chunk_at(self.position) {
            Some((bytes, skip)) => {
                let available = &bytes[skip..];
                let count = available.len().min(buf.len());
                buf[..count].copy_from_slice(&available[..count]);
                self.position += count as u64;
                Ok(count)
            }
            None => {
                if self.missing.get().is_none() {
                    self.missing.set(Some(self.position));
                }
                Err(io::Error::other(format!(
                    "byte {} has not been fetched",
                    self.position
                )))
            }
        }
    }
}

impl Seek for SparseReader<'_> {
    fn seek(&mut self, position: SeekFrom) -> io::Result<u64> {
        let target = match position {
            SeekFrom::Start(offset) => Some(offset),
            SeekFrom::End(delta) => self.file.length.checked_add_signed(delta),
            SeekFrom::Current(delta) => self.position.checked_add_signed(delta),
        };
        let target = target.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the file",
            )
        })?;
        self.position = target;
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_known_ranges_and_records_the_first_gap() {
        let mut file = SparseFile::new(10);
        file.add(6, vec![6, 7, 8, 9]);
        let missing = Cell::new(None);
        let mut reader = SparseReader::new(&file, &missing);
        reader.seek(SeekFrom::End(-3)).unwrap();
        let mut buf = [0; 3];
        reader.read_exact(&mut buf).unwrap();
        assert_eq!(buf, [7, 8, 9]);
        reader.seek(SeekFrom::Start(2)).unwrap();
        assert!(reader.read(&mut buf).is_err());
        assert_eq!(missing.get(), Some(2));
        assert_eq!(file.next_known_after(2), 6);
    }

    #[test]
    fn central_directory_start_from_the_end_record() {
        let mut tail = b"....central directory....".to_vec();
        tail.extend_from_slice(&END_OF_DIRECTORY);
        // Disk numbers, entry counts, the directory's size, then its offset: 1234.
        tail.extend_from_slice(&[0, 0, 0, 0, 2, 0, 2, 0, 25, 0, 0, 0]);
        tail.extend_from_slice(&1234_u32.to_le_bytes());
        tail.extend_from_slice(&[0, 0]);
        assert_eq!(central_directory_start(&tail), Some(1234));
        let zip64 = [&END_OF_DIRECTORY[..], &[0; 12], &[0xff; 4], &[0, 0]].concat();
        assert_eq!(central_directory_start(&zip64), None);
        assert_eq!(central_directory_start(b"no record here"), None);
    }
}
