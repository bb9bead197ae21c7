//! The managed block: the lines `upgrade apply` owns inside a file it shares with others
//! (a `sitecustomize.py`), between `# >>> MARKER >>>` and `# <<< MARKER <<<`.
//!
//! One grammar for reading the block (the probe's facts) and for replacing it (the env
//! step), over the file's bytes, so every byte outside the block is kept exactly, text
//! that is not UTF-8 included. A file whose markers do not pair up is malformed: that is
//! an error naming the line, never a guess (taking a lone begin marker to the end of the
//! file would drop everything after it).

use std::ops::Range;

use sha2::{Digest, Sha256};

/// What is wrong with a file's markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MalformedBlock {
    /// A begin marker with no end marker after it.
    #[error("line {line}: the managed block's begin marker has no end marker")]
    Unterminated {
        /// 1-based, e.g. `12`.
        line: usize,
    },
    /// An end marker with no begin marker before it.
    #[error("line {line}: an end marker without a begin marker")]
    StrayEnd {
        /// 1-based.
        line: usize,
    },
    /// A second begin marker.
    #[error("line {line}: a second managed block (only one is allowed)")]
    Duplicate {
        /// 1-based.
        line: usize,
    },
}

impl MalformedBlock {
    /// The 1-based line the problem is on.
    pub fn line(&self) -> usize {
        match self {
            Self::Unterminated { line } | Self::StrayEnd { line } | Self::Duplicate { line } => {
                *line
            }
        }
    }
}

/// Where the block lies in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The bytes from the begin marker's first byte to the end marker's line end.
    pub whole: Range<usize>,
    /// The bytes between the markers' lines.
    pub content: Range<usize>,
}

/// The begin marker line, e.g. `# >>> cuda-upgrade managed block >>>`.
pub fn begin_marker(marker: &str) -> String {
    format!("# >>> {marker} >>>")
}

/// The end marker line, e.g. `# <<< cuda-upgrade managed block <<<`.
pub fn end_marker(marker: &str) -> String {
    format!("# <<< {marker} <<<")
}

/// Finds the block named `marker` in `bytes`; `Ok(None)` when the file has none.
pub fn find(bytes: &[u8], marker: &str) -> Result<Option<Located>, MalformedBlock> {
    let begin = begin_marker(marker);
    let end = end_marker(marker);
    let mut open: Option<(usize, usize, usize)> = None; // (line, start, content start)
    let mut found: Option<Located> = None;
    let mut offset = 0;
    for (index, line) in bytes.split_inclusive(|byte| *byte == b'\n').enumerate() {
        let number = index + 1;
        let text = line.trim_ascii();
        let next = offset + line.len();
        if text == begin.as_bytes() {
            if open.is_some() || found.is_some() {
                return Err(MalformedBlock::Duplicate { line: number });
            }
            open = Some((number, offset, next));
        } else if text == end.as_bytes() {
            let Some((_, start, content_start)) = open.take() else {
                return Err(MalformedBlock::StrayEnd { line: number });
            };
            found = Some(Located {
                whole: start..next,
                content: content_start..offset,
            });
        }
        offset = next;
    }
    if let Some((line, _, _)) = open {
        return Err(MalformedBlock::Unterminated { line });
    }
    Ok(found)
}

/// The block's content and its digest, as the facts carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockContent {
    /// The lines between the markers.
    pub content: Vec<u8>,
    /// Their SHA-256 in hex.
    pub sha256: String,
}

/// The content of the block named `marker`, e.g. to compare it with the wanted one.
pub fn content(bytes: &[u8], marker: &str) -> Result<Option<BlockContent>, MalformedBlock> {
    Ok(find(bytes, marker)?.map(|located| {
        let content = bytes[located.content].to_vec();
        BlockContent {
            sha256: hex::encode(Sha256::digest(&content)),
            content,
        }
    }))
}

/// `bytes` with the block named `marker` holding `block` (which ends with a newline):
/// replaced where it is, appended when the file has none. Every other byte is kept.
pub fn splice(bytes: &[u8], marker: &str, block: &str) -> Result<Vec<u8>, MalformedBlock> {
    let new_block = format!("{}\n{block}{}\n", begin_marker(marker), end_marker(marker));
    let mut out = Vec::with_capacity(bytes.len() + new_block.len() + 1);
    match find(bytes, marker)? {
        Some(located) => {
            out.extend_from_slice(&bytes[..located.whole.start]);
            out.extend_from_slice(new_block.as_bytes());
            out.extend_from_slice(&bytes[located.whole.end..]);
        }
        None => {
            out.extend_from_slice(bytes);
            if !out.is_empty() && !out.ends_with(b"\n") {
                out.push(b'\n');
            }
            out.extend_from_slice(new_block.as_bytes());
        }
    }
    Ok(out)
}

/// `bytes` without the block named `marker` (markers included); unchanged when it has
/// none. Every other byte is kept.
pub fn remove(bytes: &[u8], marker: &str) -> Result<Vec<u8>, MalformedBlock> {
    Ok(match find(bytes, marker)? {
        Some(located) => {
            let mut out = bytes[..located.whole.start].to_vec();
            out.extend_from_slice(&bytes[located.whole.end..]);
            out
        }
        None => bytes.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: &str = "m";

    #[test]
    fn splice_keeps_every_other_byte_and_is_idempotent() {
        let original: &[u8] = b"# apport\xff\xfe hook\r\ntry:\n    pass\nexcept: pass";
        let once = splice(original, M, "x = 1\n").unwrap();
        assert!(once.starts_with(original));
        assert_eq!(
            &once[original.len()..],
            b"\n# >>> m >>>\nx = 1\n# <<< m <<<\n"
        );
        let twice = splice(&once, M, "x = 1\n").unwrap();
        assert_eq!(once, twice);
        let changed = splice(&once, M, "y = 2\n").unwrap();
        assert!(changed.starts_with(original));
        assert_eq!(content(&changed, M).unwrap().unwrap().content, b"y = 2\n");
    }

    #[test]
    fn text_after_the_block_is_kept() {
        let text = b"a\n# >>> m >>>\nold\n# <<< m <<<\nb\n";
        assert_eq!(
            splice(text, M, "new\n").unwrap(),
            b"a\n# >>> m >>>\nnew\n# <<< m <<<\nb\n"
        );
    }

    #[test]
    fn markers_that_do_not_pair_up_name_their_line() {
        assert_eq!(
            splice(b"a\n# >>> m >>>\nkept?\n", M, "x\n"),
            Err(MalformedBlock::Unterminated { line: 2 })
        );
        assert_eq!(
            find(b"# <<< m <<<\n", M),
            Err(MalformedBlock::StrayEnd { line: 1 })
        );
        assert_eq!(
            find(b"# >>> m >>>\n# <<< m <<<\n\n# >>> m >>>\n# <<< m <<<\n", M),
            Err(MalformedBlock::Duplicate { line: 4 })
        );
        assert_eq!(find(b"nothing here", M), Ok(None));
    }
}
