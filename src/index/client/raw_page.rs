//! A project page's files as listed, before URL resolution: what the JSON and HTML
//! readers give the page reader.

use std::borrow::Cow;

/// A file as a page lists it, before URL resolution; text borrowed from the page
/// where it can be.
#[derive(Debug, Default)]
pub(super) struct RawFile<'page> {
    pub(super) href: Cow<'page, str>,
    pub(super) filename: Option<Cow<'page, str>>,
    /// The hex digest the page gives, e.g. from PEP 691's `hashes`.
    pub(super) sha256: Option<Cow<'page, str>>,
    pub(super) requires_python: Option<Cow<'page, str>>,
    /// `Some("")` when yanked without a reason.
    pub(super) yanked: Option<Cow<'page, str>>,
    pub(super) metadata: RawMetadata<'page>,
    pub(super) size: Option<u64>,
}

/// A PEP 658 / PEP 714 offer as listed, with the hex digest when given.
#[derive(Debug, Default)]
pub(super) enum RawMetadata<'page> {
    #[default]
    Absent,
    Offered(Option<Cow<'page, str>>),
}

#[derive(Debug, Default)]
pub(super) struct RawPage<'page> {
    pub(super) base: Option<String>,
    pub(super) files: Vec<RawFile<'page>>,
}
