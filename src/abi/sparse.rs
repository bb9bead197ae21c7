//! A file known only in parts: the byte ranges the dynamic tables live in, read from a
//! file, a wheel's zip entry or a node's answer, and handed to the ELF reader as if it
//! were the whole file. A read outside the known ranges fails (the reader reports the
//! file as unreadable), so a 1 GiB library costs only its tables.

use std::ops::Range;

/// Some byte ranges of a file of `size` bytes, e.g. the header, the section headers,
/// `.dynsym` and `.dynstr` of `libtorch_cpu.so`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sparse {
    size: u64,
    chunks: Vec<(u64, Vec<u8>)>,
}

impl Sparse {
    /// Nothing known yet of a file of `size` bytes.
    pub fn new(size: u64) -> Self {
        Self {
            size,
            chunks: Vec::new(),
        }
    }

    /// The file's size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether `offset..offset + length` is known.
    pub fn has(&self, offset: u64, length: u64) -> bool {
        self.chunk(offset, length).is_some()
    }

    /// Record the bytes at `offset`.
    pub fn insert(&mut self, offset: u64, bytes: Vec<u8>) {
        if !self.has(offset, bytes.len() as u64) {
            self.chunks.push((offset, bytes));
        }
    }

    /// The known ranges, e.g. for tests and for what a node sends.
    pub fn ranges(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        self.chunks
            .iter()
            .map(|(offset, bytes)| *offset..offset + bytes.len() as u64)
    }

    /// How many bytes are known.
    pub fn known_bytes(&self) -> u64 {
        self.chunks
            .iter()
            .map(|(_, bytes)| bytes.len() as u64)
            .sum()
    }

    fn chunk(&self, offset: u64, length: u64) -> Option<&[u8]> {
        let end = offset.checked_add(length)?;
        self.chunks.iter().find_map(|(start, bytes)| {
            let chunk_end = start + bytes.len() as u64;
            (*start <= offset && end <= chunk_end).then(|| {
                let from = usize::try_from(offset - start).unwrap_or(usize::MAX);
                let to = usize::try_from(end - start).unwrap_or(usize::MAX);
                bytes.get(from..to).unwrap_or_default()
            })
        })
    }
}

impl<'a> object::ReadRef<'a> for &'a Sparse {
    fn len(self) -> Result<u64, ()> {
        Ok(self.size)
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> Result<&'a [u8], ()> {
        self.chunk(offset, size).ok_or(())
    }

    fn read_bytes_at_until(self, range: Range<u64>, delimiter: u8) -> Result<&'a [u8], ()> {
        let (start, bytes) = self
            .chunks
            .iter()
            .find(|(start, bytes)| {
                *start <= range.start && range.start < start + bytes.len() as u64
            })
            .ok_or(())?;
        let from = usize::try_from(range.start - start).map_err(|_| ())?;
        let to =
            usize::try_from(range.end.min(start + bytes.len() as u64) - start).map_err(|_| ())?;
        let window = bytes.get(from..to).ok_or(())?;
        let length = window
            .iter()
            .position(|byte| *byte == delimiter)
            .ok_or(())?;
        window.get(..length).ok_or(())
    }
}

#[cfg(test)]
mod tests {
    use object::ReadRef;

    use super::*;

    #[test]
    fn reads_inside_known_ranges_only() {
        let mut sparse = Sparse::new(100);
        sparse.insert(10, b"abc\0def\0".to_vec());
        sparse.insert(12, b"c\0".to_vec());
        assert_eq!(sparse.ranges().count(), 1);
        assert_eq!((&sparse).read_bytes_at(11, 2), Ok(&b"bc"[..]));
        assert_eq!((&sparse).read_bytes_at(9, 2), Err(()));
        assert_eq!((&sparse).read_bytes_at_until(14..100, 0), Ok(&b"def"[..]));
        assert_eq!((&sparse).read_bytes_at_until(50..100, 0), Err(()));
        assert_eq!((&sparse).len(), Ok(100));
    }
}
