//! A YAML document as a tree of nodes that remember where they were written.
//!
//! The manifest loader walks this tree instead of deserializing with serde, so that it
//! can report every problem of a file at once, each with its `file:line:column`, and
//! reject duplicate keys (which YAML parsers silently resolve to the last one).
//! This module owns syntax only; what the keys mean is `manifest::load`'s job.

use std::collections::HashMap;
use std::fmt;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// A position in a source file, 1-based, e.g. `12:5`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span {
    /// Line, starting at 1.
    pub line: usize,
    /// Column, starting at 1.
    pub column: usize,
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

impl From<Marker> for Span {
    fn from(marker: Marker) -> Self {
        // yaml-rust2 counts lines from 1 and columns from 0.
        Self {
            line: marker.line(),
            column: marker.col() + 1,
        }
    }
}

/// A scalar as written: its text and whether it was quoted (quoted scalars are strings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scalar {
    /// The text after YAML unescaping, e.g. `==2.9.1+cu130`.
    pub text: String,
    /// `true` for `'…'`, `"…"`, `|` and `>` scalars.
    pub quoted: bool,
}

/// One node of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeKind {
    /// A plain or quoted scalar.
    Scalar(Scalar),
    /// A sequence of nodes.
    Sequence(Vec<Node>),
    /// A mapping; keys keep their own spans and their order.
    Mapping(Vec<(Key, Node)>),
}

/// A mapping key, e.g. `torch` at `14:3`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// The key's text.
    pub text: String,
    /// Where the key was written.
    pub span: Span,
}

/// A node with the position of its first character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// What the node holds.
    pub kind: NodeKind,
    /// Where the node starts.
    pub span: Span,
}

impl Node {
    /// The YAML type name as an error message would say it, e.g. `a mapping`.
    pub fn type_name(&self) -> &'static str {
        match &self.kind {
            NodeKind::Scalar(scalar) if !scalar.quoted && is_null(&scalar.text) => "null",
            NodeKind::Scalar(_) => "a scalar",
            NodeKind::Sequence(_) => "a sequence",
            NodeKind::Mapping(_) => "a mapping",
        }
    }

    /// `true` for an unquoted `~`, `null` or empty scalar.
    pub fn is_null(&self) -> bool {
        matches!(&self.kind, NodeKind::Scalar(scalar) if !scalar.quoted && is_null(&scalar.text))
    }
}

fn is_null(text: &str) -> bool {
    matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

/// A problem found while reading YAML syntax, e.g. a duplicate key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxProblem {
    /// Where it is.
    pub span: Span,
    /// What is wrong, e.g. ``duplicate key `torch` (first defined at 12:3)``.
    pub message: String,
}

/// How deeply sequences and mappings may nest, e.g. `[[[…]]]`. Schema 1 needs four
/// levels; the limit keeps a hostile file from costing stack or time.
pub const MAX_DEPTH: usize = 64;

/// How many nodes (scalars, sequences, mappings) a document may hold. Schema 1 manifests
/// hold hundreds; the limit bounds the tree's memory (about 100 bytes a node) whatever
/// the file holds, e.g. a 16 MiB flow sequence `[1,1,1,…]` of 8 million items.
pub const MAX_NODES: usize = 200_000;

/// Parse one YAML document. Returns the root (`None` for an empty document) and the
/// problems found; a scanner error stops parsing, duplicate keys and aliases do not.
/// A second document is a problem (it would otherwise be ignored), and so is nesting
/// deeper than [`MAX_DEPTH`]. A leading UTF-8 byte order mark is skipped. A raw NUL
/// byte is refused at its position: the parser reads it as the end of the input, so a
/// value holding one (`a<NUL>b`) would silently become `a` and the rest of the file
/// would be dropped.
///
/// Cost: linear in the size of `source` (duplicate keys are found through a hash map).
pub fn parse(source: &str) -> (Option<Node>, Vec<SyntaxProblem>) {
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    if let Some(span) = nul_position(source) {
        return (
            None,
            vec![SyntaxProblem {
                span,
                message: "invalid YAML: a raw NUL byte (U+0000) is not allowed in YAML text"
                    .to_string(),
            }],
        );
    }
    let mut builder = TreeBuilder {
        source: source.as_bytes(),
        ..TreeBuilder::default()
    };
    let mut parser = Parser::new_from_str(source);
    // Events are pulled one by one (not `Parser::load`) so that parsing stops as soon
    // as the rest of the file cannot change the outcome.
    loop {
        match parser.next_token() {
            Ok((Event::StreamEnd, _)) => break,
            Ok((event, marker)) => builder.on_event(event, marker),
            Err(error) => {
                builder.problems.push(SyntaxProblem {
                    span: Span::from(*error.marker()),
                    message: format!("invalid YAML: {}", error.info()),
                });
                return (None, builder.problems);
            }
        }
        if builder.skipping {
            break;
        }
    }
    if builder.too_deep || builder.nodes > MAX_NODES {
        return (None, builder.problems);
    }
    (builder.root, builder.problems)
}

/// Where the first raw NUL byte is, e.g. `7:11`, counting columns in characters as the
/// parser does.
fn nul_position(source: &str) -> Option<Span> {
    let at = source.find('\0')?;
    let before = &source[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    let column = before[line_start..].chars().count() + 1;
    Some(Span { line, column })
}

/// A mapping being built: its span, its entries, the key waiting for its value, the
/// keys seen so far (text → where first written) and whether it is a flow mapping.
struct MappingFrame {
    span: Span,
    entries: Vec<(Key, Node)>,
    pending: Option<Key>,
    seen: HashMap<String, Span>,
    flow: bool,
}

enum Frame {
    Sequence(Span, Vec<Node>),
    Mapping(MappingFrame),
}

#[derive(Default)]
struct TreeBuilder<'a> {
    source: &'a [u8],
    stack: Vec<Frame>,
    root: Option<Node>,
    problems: Vec<SyntaxProblem>,
    documents: usize,
    /// Events past the end of the first document, or nested too deeply, are skipped.
    skipping: bool,
    /// Nesting went past [`MAX_DEPTH`]; the tree is dropped.
    too_deep: bool,
    /// Nesting depth beyond the stack while skipping a too-deep part.
    skipped_depth: usize,
    /// Nodes seen so far; past [`MAX_NODES`] the rest of the file is skipped.
    nodes: usize,
}

impl TreeBuilder<'_> {
    fn push_node(&mut self, node: Node) {
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
            Some(Frame::Sequence(_, items)) => items.push(node),
            Some(Frame::Mapping(frame)) => match frame.pending.take() {
                None => {
                    let text = match &node.kind {
                        NodeKind::Scalar(scalar) => scalar.text.clone(),
                        _ => {
                            self.problems.push(SyntaxProblem {
                                span: node.span,
                                message: "expected a plain key, found a complex key".to_string(),
                            });
                            String::new()
                        }
                    };
                    match frame.seen.get(&text) {
                        Some(first) => self.problems.push(SyntaxProblem {
                            span: node.span,
                            message: format!("duplicate key `{text}` (first defined at {first})"),
                        }),
                        None => {
                            frame.seen.insert(text.clone(), node.span);
                        }
                    }
                    frame.pending = Some(Key {
                        text,
                        span: node.span,
                    });
                }
                Some(key) => frame.entries.push((key, node)),
            },
        }
    }
}

impl MarkedEventReceiver for TreeBuilder<'_> {
    fn on_event(&mut self, event: Event, marker: Marker) {
        let span = Span::from(marker);
        if let Event::DocumentStart = event {
            self.documents += 1;
            if self.documents == 2 {
                self.problems.push(SyntaxProblem {
                    span,
                    message: "expected one YAML document, found a second one (after `---`)"
                        .to_string(),
                });
                self.skipping = true;
            }
            return;
        }
        if self.skipping {
            return;
        }
        if matches!(
            event,
            Event::Scalar(..)
                | Event::Alias(_)
                | Event::SequenceStart(..)
                | Event::MappingStart(..)
        ) {
            self.nodes += 1;
            if self.nodes > MAX_NODES {
                self.problems.push(SyntaxProblem {
                    span,
                    message: format!(
                        "expected at most {MAX_NODES} values (scalars, sequences and mappings) in a manifest"
                    ),
                });
                self.skipping = true;
                return;
            }
        }
        if self.skipped_depth > 0 {
            match event {
                Event::SequenceStart(..) | Event::MappingStart(..) => self.skipped_depth += 1,
                Event::SequenceEnd | Event::MappingEnd => self.skipped_depth -= 1,
                _ => {}
            }
            return;
        }
        if matches!(event, Event::SequenceStart(..) | Event::MappingStart(..))
            && self.stack.len() >= MAX_DEPTH
        {
            self.problems.push(SyntaxProblem {
                span,
                message: format!(
                    "expected at most {MAX_DEPTH} levels of nested sequences and mappings"
                ),
            });
            self.too_deep = true;
            self.skipped_depth = 1;
            return;
        }
        match event {
            Event::DocumentStart => {}
            Event::Scalar(text, style, _, _) => self.push_node(Node {
                kind: NodeKind::Scalar(Scalar {
                    text,
                    quoted: style != TScalarStyle::Plain,
                }),
                span,
            }),
            Event::Alias(_) => {
                self.problems.push(SyntaxProblem {
                    span,
                    message: "YAML aliases are not supported in manifests; write the value out"
                        .to_string(),
                });
                self.push_node(Node {
                    kind: NodeKind::Scalar(Scalar {
                        text: String::new(),
                        quoted: false,
                    }),
                    span,
                });
            }
            Event::SequenceStart(_, _) => self.stack.push(Frame::Sequence(span, Vec::new())),
            Event::MappingStart(_, _) => {
                // A flow mapping is located at its `{`; a block mapping at its first key
                // (the parser marks a block mapping at its first value indicator).
                let flow = self.source.get(marker.index()) == Some(&b'{');
                self.stack.push(Frame::Mapping(MappingFrame {
                    span,
                    entries: Vec::new(),
                    pending: None,
                    seen: HashMap::new(),
                    flow,
                }));
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let node = match self.stack.pop() {
                    Some(Frame::Sequence(span, items)) => Node {
                        kind: NodeKind::Sequence(items),
                        span,
                    },
                    // A mapping is located at its first key: the parser's own mark for a
                    // block mapping is the first value indicator, which reads oddly in errors.
                    Some(Frame::Mapping(frame)) => Node {
                        span: if frame.flow {
                            frame.span
                        } else {
                            frame
                                .entries
                                .first()
                                .map_or(frame.span, |(key, _)| key.span)
                        },
                        kind: NodeKind::Mapping(frame.entries),
                    },
                    None => return,
                };
                self.push_node(node);
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_one_based() {
        let (root, problems) = parse("a: 1\nb:\n  c: 'x'\n");
        assert!(problems.is_empty());
        let NodeKind::Mapping(entries) = root.unwrap().kind else {
            panic!("not a mapping")
        };
        assert_eq!(entries[0].0.span, Span { line: 1, column: 1 });
        assert_eq!(entries[0].1.span, Span { line: 1, column: 4 });
        let NodeKind::Mapping(inner) = &entries[1].1.kind else {
            panic!("not a mapping")
        };
        assert_eq!(inner[0].0.span, Span { line: 3, column: 3 });
        assert!(matches!(&inner[0].1.kind, NodeKind::Scalar(s) if s.quoted && s.text == "x"));
    }

    #[test]
    fn duplicate_keys_are_reported_where_repeated() {
        let (_, problems) = parse("a: 1\nb: 2\na: 3\n");
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].span, Span { line: 3, column: 1 });
        assert!(problems[0].message.contains("first defined at 1:1"));
    }

    /// See: issue 9 — YAML edges.
    #[test]
    fn second_documents_are_refused_and_a_byte_order_mark_is_skipped() {
        let (_, problems) = parse("a: 1\n---\nb: 2\n");
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].span, Span { line: 2, column: 1 });
        let (root, problems) = parse("\u{feff}a: 1\n");
        assert!(problems.is_empty(), "{problems:?}");
        let NodeKind::Mapping(entries) = root.unwrap().kind else {
            panic!("not a mapping")
        };
        assert_eq!(entries[0].0.span, Span { line: 1, column: 1 });
    }

    /// See: issue 9 — nesting is bounded, and duplicate keys are found in linear time.
    #[test]
    fn nesting_is_bounded_and_many_keys_are_cheap() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let (root, problems) = parse(&deep);
        assert!(root.is_none());
        assert_eq!(problems.len(), 1);
        let keys: String = (0..MAX_NODES / 2 - 1)
            .map(|i| format!("k{i}: 1\n"))
            .collect();
        let started = std::time::Instant::now();
        let (_, problems) = parse(&keys);
        assert!(problems.is_empty());
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        let too_many = format!("[{}1]", "1,".repeat(MAX_NODES));
        let (root, problems) = parse(&too_many);
        assert!(root.is_none());
        assert_eq!(problems.len(), 1);
        assert!(problems[0].message.contains("at most 200000 values"));
    }

    /// See: issue 16 — the parser reads NUL as the end of input, so `a<NUL>b` was `a`.
    #[test]
    fn raw_nul_bytes_are_refused_where_they_are() {
        let (root, problems) = parse("a: 1\nb: \"x\u{e9}\0y\"\nc: 3\n");
        assert!(root.is_none());
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].span, Span { line: 2, column: 7 });
        assert!(
            problems[0].message.contains("NUL"),
            "{}",
            problems[0].message
        );
        // A plain scalar used to read as `a`, and the rest of the file as absent.
        let (root, problems) = parse("a: a\0b\nc: 3\n");
        assert!(root.is_none());
        assert_eq!(problems[0].span, Span { line: 1, column: 5 });
        let (root, problems) = parse("b: \"a\\0b\"\n");
        assert!(problems.is_empty(), "{problems:?}");
        assert!(root.is_some());
    }

    #[test]
    fn scanner_errors_are_located() {
        let (root, problems) = parse("a: [1, 2\n");
        assert!(root.is_none());
        assert_eq!(problems.len(), 1);
        assert!(problems[0].message.starts_with("invalid YAML"));
    }
}
