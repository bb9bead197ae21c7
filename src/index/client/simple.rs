//! Project pages of the simple repository API: PEP 691 JSON and PEP 503 HTML, both
//! read into one list of [`ProjectFile`]s.
//!
//! HTML is read with a small tolerant scanner for `<a …>…</a>` and `<base href>`:
//! attribute values are HTML-unescaped (`data-requires-python="&gt;=3.10"`), `href`s
//! are resolved against the page's final URL, and the `#sha256=` fragment becomes the
//! file's hash. PEP 592 `data-yanked`, PEP 658 `data-dist-info-metadata` and PEP 714
//! `data-core-metadata` are read; the JSON form carries the same facts as keys.
//!
//! A page that lists one file name more than once (a wheel re-uploaded under the same
//! URL, each upload with its own `#sha256=`) is read as its **last** listing: the URL
//! serves only the latest upload, which such pages list last, so only that digest can
//! match what an installer downloads; the earlier ones are stale.
//! See: https://packaging.python.org/en/latest/specifications/simple-repository-api/

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::str::FromStr;

use pep440_rs::{Version, VersionSpecifiers};
use url::Url;

use super::raw_page::{RawFile, RawMetadata, RawPage};
use crate::index::filename::DistFilename;
use crate::index::model::UnusableFiles;
use crate::manifest::Sha256;

/// The `Accept` header of a project page request: JSON first, HTML as a fallback.
pub const ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01";

/// The JSON media type of PEP 691.
const JSON_MEDIA_TYPE: &str = "application/vnd.pypi.simple.v1+json";

/// Whether and how an index offers a file's core metadata as `<file URL>.metadata`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum MetadataOffer {
    /// No PEP 658 file: read the metadata out of the distribution.
    #[default]
    Absent,
    /// Offered, with the sha256 of the metadata file when the index gives it.
    Offered(Option<Sha256>),
}

/// One file listed on a project page, e.g. `six-1.17.0-py2.py3-none-any.whl`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectFile {
    /// The file name, e.g. `torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl`.
    pub filename: String,
    /// The parsed file name.
    pub dist: DistFilename,
    /// Where to download it (fragment removed). May carry the index's credentials:
    /// render it only through [`super::types::redact`].
    pub url: Url,
    /// The file's sha256, e.g. from `#sha256=…`.
    pub sha256: Option<Sha256>,
    /// `data-requires-python` / `requires-python`, e.g. `>=3.10`.
    pub requires_python: Option<VersionSpecifiers>,
    /// `Some(reason)` when yanked; `Some("")` when yanked without a reason.
    pub yanked: Option<String>,
    /// PEP 658 / PEP 714 metadata file.
    pub metadata: MetadataOffer,
    /// Size in bytes, when the JSON form gives it.
    pub size: Option<u64>,
}

/// Parse a project page. `content_type` is the response's `Content-Type`;
/// `page_url` the URL the page came from (after redirects); `index_url` the index
/// base, whose credentials are carried to files on the same origin.
pub fn parse_page(
    body: &[u8],
    content_type: Option<&str>,
    page_url: &Url,
    index_url: &Url,
) -> Result<Vec<ProjectFile>, String> {
    parse_page_where(body, content_type, page_url, index_url, &|_, _| true).map(|page| page.files)
}

/// Which listed files a caller wants, from the parsed file name and the file's
/// `Requires-Python`, e.g. only those that can install on the target.
pub type Keep<'keep> = &'keep (dyn Fn(&DistFilename, Option<&VersionSpecifiers>) -> bool + Sync);

/// A page read with a [`Keep`] filter.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedPage {
    /// The files kept, each its last listing, in page order.
    pub files: Vec<ProjectFile>,
    /// Whether the page lists any distribution at all, kept or not.
    pub lists_any: bool,
    /// The files left out, by version, e.g. `tensorflow 2.9.1`'s wheels for `cp37`–`cp310`.
    pub left_out: BTreeMap<Version, LeftOut>,
}

/// The files of one release that the filter left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LeftOut {
    /// What they are, for a report.
    pub files: UnusableFiles,
    /// One of its wheels, one with a PEP 658 file first. Every wheel of a release
    /// carries the release's dependencies, so its metadata stands for the release's
    /// where only an sdist can install here: uv reads it the same way rather than
    /// building the sdist (`numba 0.58.1` has wheels up to `cp311` and an sdist).
    pub stand_in: Option<ProjectFile>,
}

/// [`parse_page`] keeping only the files `keep` wants: the same files as filtering its
/// answer, without resolving the URLs of the files left out.
pub fn parse_page_where(
    body: &[u8],
    content_type: Option<&str>,
    page_url: &Url,
    index_url: &Url,
    keep: Keep<'_>,
) -> Result<ListedPage, String> {
    let media = content_type
        .map(|value| {
            value
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    // PEP 691's media type; a server that labels the same JSON `application/json` is
    // read the same way.
    let is_json = media == JSON_MEDIA_TYPE
        || (media.ends_with("json")
            && body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{'));
    let html;
    let raw = if is_json {
        super::page_json::parse(body)?
    } else {
        html = String::from_utf8_lossy(body);
        parse_html(&html)
    };
    let base = raw
        .base
        .as_deref()
        .and_then(|base| page_url.join(base).ok());
    let base = base.as_ref().unwrap_or(page_url);
    Ok(Reader {
        base,
        remote: matches!(page_url.scheme(), "http" | "https"),
        index_url,
        keep,
        requires_pythons: HashMap::new(),
    }
    .read(&raw.files))
}

/// Reads a page's raw files into [`ProjectFile`]s.
struct Reader<'page, 'keep> {
    base: &'page Url,
    /// The page came over HTTP: its files must too (a `file:` link, or a `<base>` that
    /// points at one, would have the controller read its own files).
    remote: bool,
    index_url: &'page Url,
    keep: Keep<'keep>,
    /// Most files of a project share a few `requires-python` values: each is parsed once.
    requires_pythons: HashMap<&'page str, Option<VersionSpecifiers>>,
}

impl<'page> Reader<'page, '_> {
    /// `href` resolved against the page, when it is a URL the page may list: over
    /// HTTP(S) from a page that came over HTTP(S).
    fn join(&self, href: &str) -> Option<Url> {
        let url = self.base.join(href).ok()?;
        (!self.remote || matches!(url.scheme(), "http" | "https")).then_some(url)
    }

    /// One entry per file name, the last listing of each (a listing counts when its URL
    /// resolves and it names a distribution), kept ones only, in page order. Read from
    /// the end, so a name already met is an earlier, stale listing; a later listing left
    /// out is checked to resolve only when an earlier one of its name turns up.
    fn read(mut self, raw: &'page [RawFile<'page>]) -> ListedPage {
        let mut files = Vec::new();
        let mut seen: HashSet<Cow<'page, str>> = HashSet::new();
        let mut unchecked: HashMap<Cow<'page, str>, &'page RawFile<'page>> = HashMap::new();
        let mut lists_any = false;
        let mut left_out: BTreeMap<Version, LeftOut> = BTreeMap::new();
        for file in raw.iter().rev() {
            let Some((name, dist, resolved)) = self.name(file) else {
                continue;
            };
            if seen.contains(&name) {
                continue;
            }
            if let Some(later) = unchecked.remove(&name)
                && self.join(&later.href).is_some()
            {
                lists_any = true;
                seen.insert(name);
                continue;
            }
            let requires_python = self.requires_python(file.requires_python.as_deref());
            if !(self.keep)(&dist, requires_python.as_ref()) {
                let release = left_out.entry(dist.version().clone()).or_default();
                release
                    .files
                    .add(&dist, file.requires_python.as_deref().map(str::trim));
                if Self::better_stand_in(release.stand_in.as_ref(), file, &dist)
                    && let Some(url) = resolved.clone().or_else(|| self.join(&file.href))
                {
                    release.stand_in = Some(self.file(
                        file,
                        name.clone().into_owned(),
                        dist.clone(),
                        url,
                        requires_python.clone(),
                    ));
                }
                if resolved.is_some() {
                    lists_any = true;
                    seen.insert(name);
                } else {
                    unchecked.insert(name, file);
                }
                continue;
            }
            let Some(url) = resolved.or_else(|| self.join(&file.href)) else {
                continue;
            };
            lists_any = true;
            seen.insert(name.clone());
            files.push(self.file(file, name.into_owned(), dist, url, requires_python));
        }
        files.reverse();
        lists_any = lists_any
            || unchecked
                .values()
                .any(|file| self.join(&file.href).is_some());
        ListedPage {
            files,
            lists_any,
            left_out,
        }
    }

    /// Whether `file` (left out) stands for its release better than `chosen`: a wheel
    /// does; then one with a PEP 658 file, then one for Linux (the nodes' system: a
    /// wheel for another Python on Linux is likelier to carry the same requirements as
    /// the sdist builds there than one for Windows or macOS).
    fn better_stand_in(
        chosen: Option<&ProjectFile>,
        file: &RawFile<'_>,
        dist: &DistFilename,
    ) -> bool {
        let DistFilename::Wheel(wheel) = dist else {
            return false;
        };
        let rank = |offered: bool, linux: bool| (offered, linux);
        let linux = |tags: &[crate::index::filename::WheelTag]| {
            tags.iter()
                .any(|tag| tag.platform.contains("linux") || tag.platform == "any")
        };
        let candidate = rank(
            matches!(file.metadata, RawMetadata::Offered(_)),
            linux(&wheel.tags),
        );
        match chosen {
            None => true,
            Some(chosen) => {
                let current = rank(
                    matches!(chosen.metadata, MetadataOffer::Offered(_)),
                    matches!(&chosen.dist, DistFilename::Wheel(wheel) if linux(&wheel.tags)),
                );
                candidate > current
            }
        }
    }

    /// The file's name and parsed name, from the page's name when it is a distribution's,
    /// else from its URL (then resolved here and returned).
    fn name(
        &self,
        file: &'page RawFile<'page>,
    ) -> Option<(Cow<'page, str>, DistFilename, Option<Url>)> {
        if let Some(name) = &file.filename
            && let Ok(dist) = DistFilename::parse(name)
        {
            return Some((Cow::Borrowed(name.as_ref()), dist, None));
        }
        let url = self.join(&file.href)?;
        let name = url
            .path_segments()
            .and_then(|mut segments| segments.next_back().map(percent_decode))?;
        // Pages list files that are not distributions (signatures, checksums): skip them.
        let dist = DistFilename::parse(&name).ok()?;
        Some((Cow::Owned(name), dist, Some(url)))
    }

    fn requires_python(&mut self, value: Option<&'page str>) -> Option<VersionSpecifiers> {
        let value = value.map(str::trim).filter(|value| !value.is_empty())?;
        self.requires_pythons
            .entry(value)
            .or_insert_with(|| VersionSpecifiers::from_str(value).ok())
            .clone()
    }

    fn file(
        &self,
        file: &RawFile<'_>,
        filename: String,
        dist: DistFilename,
        mut url: Url,
        requires_python: Option<VersionSpecifiers>,
    ) -> ProjectFile {
        let sha256 = parse_sha256(file.sha256.as_deref());
        // The fragment's digest is read only when the page gave none of its own.
        let fragment_hash = url
            .fragment()
            .filter(|_| sha256.is_none())
            .and_then(|fragment| parse_sha256(fragment.strip_prefix("sha256=")));
        url.set_fragment(None);
        carry_credentials(&mut url, self.index_url);
        ProjectFile {
            filename,
            dist,
            url,
            sha256: sha256.or(fragment_hash),
            requires_python,
            yanked: file.yanked.as_deref().map(str::to_string),
            metadata: match &file.metadata {
                RawMetadata::Absent => MetadataOffer::Absent,
                RawMetadata::Offered(digits) => {
                    MetadataOffer::Offered(parse_sha256(digits.as_deref()))
                }
            },
            size: file.size,
        }
    }
}

fn parse_sha256(digits: Option<&str>) -> Option<Sha256> {
    digits.and_then(|digits| Sha256::from_str(digits).ok())
}

fn parse_html(html: &str) -> RawPage<'static> {
    let mut page = RawPage::default();
    let lower = html.to_ascii_lowercase();
    let mut position = 0;
    // Each iteration consumes at least one byte, so the loop ends.
    while let Some(offset) = lower[position..].find('<') {
        let start = position + offset;
        position = start + 1;
        let tag_name_end = lower[position..]
            .find(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/')
            .map_or(lower.len(), |end| position + end);
        let tag = &lower[position..tag_name_end];
        if tag != "a" && tag != "base" {
            continue;
        }
        let Some(close) = find_tag_end(html, tag_name_end) else {
            break;
        };
        let attributes = parse_attributes(&html[tag_name_end..close]);
        position = close + 1;
        if tag == "base" {
            if let Some(href) = attribute(&attributes, "href") {
                page.base = Some(href.to_string());
            }
            continue;
        }
        let text_end = lower[position..]
            .find("</a")
            .map_or(html.len(), |end| position + end);
        let text = unescape(html[position..text_end].trim());
        position = text_end;
        let Some(href) = attribute(&attributes, "href") else {
            continue;
        };
        let metadata = attribute(&attributes, "data-core-metadata")
            .or_else(|| attribute(&attributes, "data-dist-info-metadata"))
            .map_or(RawMetadata::Absent, |value| {
                if value.eq_ignore_ascii_case("false") {
                    RawMetadata::Absent
                } else {
                    RawMetadata::Offered(value.strip_prefix("sha256=").map(owned))
                }
            });
        page.files.push(RawFile {
            href: owned(href),
            filename: (!text.is_empty()).then_some(Cow::Owned(text)),
            sha256: None,
            requires_python: attribute(&attributes, "data-requires-python").map(owned),
            yanked: attribute(&attributes, "data-yanked").map(owned),
            metadata,
            size: None,
        });
    }
    page
}

fn owned(text: &str) -> Cow<'static, str> {
    Cow::Owned(text.to_string())
}

/// The index of the `>` that closes a tag whose attributes start at `from`, skipping
/// `>` inside quoted values.
fn find_tag_end(html: &str, from: usize) -> Option<usize> {
    let mut quote = None;
    for (index, ch) in html[from..].char_indices() {
        match (quote, ch) {
            (Some(open), c) if c == open => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(ch),
            (None, '>') => return Some(from + index),
            (None, _) => {}
        }
    }
    None
}

/// `name="value" name='value' name=value name` → lowercase names, unescaped values.
fn parse_attributes(text: &str) -> Vec<(String, String)> {
    let mut attributes = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        while index < chars.len() && (chars[index].is_whitespace() || chars[index] == '/') {
            index += 1;
        }
        let name_start = index;
        while index < chars.len()
            && !chars[index].is_whitespace()
            && chars[index] != '='
            && chars[index] != '/'
        {
            index += 1;
        }
        if index == name_start {
            index += 1;
            continue;
        }
        let name: String = chars[name_start..index].iter().collect();
        while index < chars.len() && chars[index].is_whitespace() {
            index += 1;
        }
        let mut value = String::new();
        if index < chars.len() && chars[index] == '=' {
            index += 1;
            while index < chars.len() && chars[index].is_whitespace() {
                index += 1;
            }
            if index < chars.len() && (chars[index] == '"' || chars[index] == '\'') {
                let quote = chars[index];
                index += 1;
                let value_start = index;
                while index < chars.len() && chars[index] != quote {
                    index += 1;
                }
                value = chars[value_start..index].iter().collect();
                index += 1;
            } else {
                let value_start = index;
                while index < chars.len() && !chars[index].is_whitespace() {
                    index += 1;
                }
                value = chars[value_start..index].iter().collect();
            }
        }
        attributes.push((name.to_ascii_lowercase(), unescape(&value)));
    }
    attributes
}

fn attribute<'a>(attributes: &'a [(String, String)], name: &str) -> Option<&'a str> {
    attributes
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

/// Decode HTML character references: `&gt;=3.10` → `>=3.10`, `&#60;` → `<`.
pub fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let decoded = rest.find(';').filter(|end| *end <= 10).and_then(|end| {
            let entity = &rest[1..end];
            let ch = match entity {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                _ => entity
                    .strip_prefix("#x")
                    .or_else(|| entity.strip_prefix("#X"))
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .or_else(|| {
                        entity
                            .strip_prefix('#')
                            .and_then(|decimal| decimal.parse::<u32>().ok())
                    })
                    .and_then(char::from_u32),
            };
            ch.map(|ch| (ch, end))
        });
        match decoded {
            Some((ch, end)) => {
                out.push(ch);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Decode `%XX` escapes of a URL path segment, e.g. `torch-2.9.1%2Bcu130-…` → `torch-2.9.1+cu130-…`.
fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && let Some(byte) = segment
                .get(index + 1..index + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            index += 3;
            continue;
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Give a file URL on the index's own origin the index's credentials, as pip does.
fn carry_credentials(url: &mut Url, index_url: &Url) {
    if !url.username().is_empty() || index_url.username().is_empty() {
        return;
    }
    if url.origin() != index_url.origin() {
        return;
    }
    let _ = url.set_username(index_url.username());
    let _ = url.set_password(index_url.password());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn html_page() {
        let html = r#"<!DOCTYPE html><html><body><h1>Links for a</h1>
<a href="../../files/a-1.0-py3-none-any.whl#sha256=8b2f6a5e2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f" data-requires-python="&gt;=3.10" data-core-metadata="sha256=1111111111111111111111111111111111111111111111111111111111111111">a-1.0-py3-none-any.whl</a><br/>
<A HREF='/files/a-0.9.tar.gz' data-yanked>a-0.9.tar.gz</A>
<a href="a-0.9.tar.gz.asc">a-0.9.tar.gz.asc</a>
</body></html>"#;
        let page = url("http://127.0.0.1:1/simple/a/");
        let files = parse_page(html.as_bytes(), Some("text/html"), &page, &page).unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(
            files[0].url.as_str(),
            "http://127.0.0.1:1/files/a-1.0-py3-none-any.whl"
        );
        assert!(files[0].sha256.is_some());
        assert_eq!(
            files[0].requires_python.as_ref().unwrap().to_string(),
            ">=3.10"
        );
        assert!(matches!(files[0].metadata, MetadataOffer::Offered(Some(_))));
        assert_eq!(files[1].yanked.as_deref(), Some(""));
        assert_eq!(files[1].metadata, MetadataOffer::Absent);
    }

    /// The files a filter leaves out are summed up per version, and one Linux wheel
    /// with a PEP 658 file stands for a release whose only file kept is its sdist.
    /// See: issue 33. A page served over HTTP lists only HTTP(S) files: a `file:` link,
    /// or a `<base>` that points at one, would have the controller read and hash its own
    /// files; a name that is no distribution's (`../`, a line break) is left out.
    #[test]
    fn a_remote_page_lists_no_local_file_and_no_hostile_name() {
        let html = r#"<a href="file:///root/.ssh/a-1.0-py3-none-any.whl">a-1.0-py3-none-any.whl</a>
<a href="/f/a-0.9.tar.gz">a-0.9.tar.gz</a>
<a href="/f/x">../../a-0.8.tar.gz</a>
<a href="/f/a-0.7.tar.gz%0A--extra-index-url%20x">a</a>"#;
        let page = url("http://127.0.0.1:1/simple/a/");
        let files = parse_page(html.as_bytes(), Some("text/html"), &page, &page).unwrap();
        let names: Vec<&str> = files.iter().map(|file| file.filename.as_str()).collect();
        assert_eq!(names, ["a-0.9.tar.gz"]);
        let based = r#"<base href="file:///root/"><a href="a-1.0.tar.gz">a-1.0.tar.gz</a>"#;
        let files = parse_page(based.as_bytes(), Some("text/html"), &page, &page).unwrap();
        assert!(files.is_empty(), "{files:?}");
        // A local index (a `file:` page) lists its local files.
        let local = url("file:///srv/simple/a/");
        let files = parse_page(html.as_bytes(), Some("text/html"), &local, &local).unwrap();
        assert_eq!(files.len(), 2, "{files:?}");
    }

    #[test]
    fn files_left_out_and_a_stand_in() {
        let html = r#"<a href="/f/n-1.0-cp311-cp311-win_amd64.whl" data-core-metadata="true">n-1.0-cp311-cp311-win_amd64.whl</a>
<a href="/f/n-1.0-cp311-cp311-manylinux_2_17_x86_64.whl">n-1.0-cp311-cp311-manylinux_2_17_x86_64.whl</a>
<a href="/f/n-1.0-cp310-cp310-manylinux_2_17_x86_64.whl" data-core-metadata="true">n-1.0-cp310-cp310-manylinux_2_17_x86_64.whl</a>
<a href="/f/n-1.0.tar.gz">n-1.0.tar.gz</a>
<a href="/f/n-0.9-cp39-cp39-macosx_11_0_arm64.whl" data-requires-python="&gt;=3.9">n-0.9-cp39-cp39-macosx_11_0_arm64.whl</a>"#;
        let page = url("http://127.0.0.1:1/simple/n/");
        let sdists_only = |dist: &DistFilename, _: Option<&VersionSpecifiers>| {
            matches!(dist, DistFilename::Sdist(_))
        };
        let listed = parse_page_where(
            html.as_bytes(),
            Some("text/html"),
            &page,
            &page,
            &sdists_only,
        )
        .unwrap();
        assert_eq!(listed.files.len(), 1);
        let one = &listed.left_out[&Version::from_str("1.0").unwrap()];
        assert_eq!(
            one.stand_in.as_ref().unwrap().filename,
            "n-1.0-cp310-cp310-manylinux_2_17_x86_64.whl"
        );
        assert_eq!(one.files.pythons.len(), 2);
        let old = &listed.left_out[&Version::from_str("0.9").unwrap()];
        assert_eq!(
            old.files.requires_python.iter().collect::<Vec<_>>(),
            [">=3.9"]
        );
        assert!(old.files.platforms.contains("macosx_11_0_arm64"));
    }

    #[test]
    fn json_page() {
        let json = r#"{"meta":{"api-version":"1.1"},"name":"b","files":[
{"filename":"b-2.0-py3-none-any.whl","url":"https://files.example/b-2.0-py3-none-any.whl","hashes":{"sha256":"8b2f6a5e2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f"},"requires-python":">=3.9","yanked":"broken","core-metadata":true,"size":12}]}"#;
        let page = url("https://user:secret@index.example/simple/b/");
        let files = parse_page(
            json.as_bytes(),
            Some("application/vnd.pypi.simple.v1+json"),
            &page,
            &page,
        )
        .unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].yanked.as_deref(), Some("broken"));
        assert_eq!(files[0].metadata, MetadataOffer::Offered(None));
        // Another origin: the index's credentials stay home.
        assert_eq!(files[0].url.username(), "");
    }

    /// sgl-kernel's CUDA 13 page lists `sgl_kernel-0.3.21+cu130-cp310-abi3-manylinux2014_x86_64.whl`
    /// five times under one URL with five digests (re-uploads). The URL serves the last
    /// upload, so the last listing's digest is the one that stays.
    #[test]
    fn a_file_listed_again_is_its_last_listing() {
        let html =
            include_str!("../../../solver-tests/snapshot/reference/sgl-kernel-cu130-index.html");
        let wanted = "sgl_kernel-0.3.21+cu130-cp310-abi3-manylinux2014_x86_64.whl";
        let listed: Vec<&str> = html
            .match_indices(&format!("{wanted}#sha256="))
            .map(|(at, found)| &html[at + found.len()..at + found.len() + 64])
            .collect();
        assert_eq!(listed.len(), 5, "the copied page lists the file five times");
        let page = url("https://docs.sglang.ai/whl/cu130/sgl-kernel/");
        let files = parse_page(html.as_bytes(), Some("text/html"), &page, &page).unwrap();
        let matching: Vec<&ProjectFile> = files
            .iter()
            .filter(|file| file.filename == wanted)
            .collect();
        assert_eq!(matching.len(), 1);
        assert_eq!(
            matching[0].sha256.as_ref().unwrap().as_str(),
            "4be1313f82808f0fb6df8107e79f6b6cea07a4aa2b20139e0342eafe31eb28bd"
        );
        assert_eq!(matching[0].sha256.as_ref().unwrap().as_str(), listed[4]);
        assert_eq!(
            matching[0].url.as_str(),
            "https://github.com/sgl-project/whl/releases/download/v0.3.21/sgl_kernel-0.3.21+cu130-cp310-abi3-manylinux2014_x86_64.whl"
        );
        // Every name once.
        let names: std::collections::BTreeSet<&str> =
            files.iter().map(|file| file.filename.as_str()).collect();
        assert_eq!(names.len(), files.len());
    }

    /// Filtering while reading gives what filtering the whole answer gives: the last
    /// listing of each name decides, even when it is left out; a page whose files are
    /// all left out still lists some.
    #[test]
    fn keeping_some_files_is_filtering_the_whole_page() {
        let html = r#"<a href="/f/a-1.0-py3-none-any.whl#sha256=1111111111111111111111111111111111111111111111111111111111111111" data-requires-python="&gt;=3.9">a-1.0-py3-none-any.whl</a>
<a href="/f/a-1.0-py3-none-any.whl#sha256=2222222222222222222222222222222222222222222222222222222222222222" data-requires-python="&gt;=3.13">a-1.0-py3-none-any.whl</a>
<a href="/f/a-0.9-py3-none-any.whl" data-requires-python="&gt;=3.13">a-0.9-py3-none-any.whl</a>
<a href="/f/a-0.9-py3-none-any.whl" data-requires-python="&gt;=3.9">a-0.9-py3-none-any.whl</a>
<a href="/f/a-0.8.tar.gz">a-0.8.tar.gz</a>"#;
        let page = url("http://127.0.0.1:1/simple/a/");
        let python = pep440_rs::Version::from_str("3.12").unwrap();
        let on_312 = |_: &DistFilename, requires: Option<&VersionSpecifiers>| {
            requires.is_none_or(|requires| requires.contains(&python))
        };
        let all = parse_page(html.as_bytes(), None, &page, &page).unwrap();
        let expected: Vec<ProjectFile> = all
            .into_iter()
            .filter(|file| on_312(&file.dist, file.requires_python.as_ref()))
            .collect();
        let listed = parse_page_where(html.as_bytes(), None, &page, &page, &on_312).unwrap();
        assert_eq!(listed.files, expected);
        let names: Vec<&str> = listed.files.iter().map(|f| f.filename.as_str()).collect();
        assert_eq!(names, ["a-0.9-py3-none-any.whl", "a-0.8.tar.gz"]);
        assert!(listed.lists_any);
        let none = parse_page_where(html.as_bytes(), None, &page, &page, &|_, _| false).unwrap();
        assert!(none.files.is_empty() && none.lists_any);
        let empty = parse_page_where(b"<a href=x.asc>x.asc</a>", None, &page, &page, &|_, _| true);
        assert!(!empty.unwrap().lists_any);
    }

    #[test]
    fn entities() {
        assert_eq!(
            unescape("&gt;=3.8,&lt;4&amp;&#33;&#x21;&bogus"),
            ">=3.8,<4&!!&bogus"
        );
        assert_eq!(
            percent_decode("torch-2.9.1%2Bcu130.whl"),
            "torch-2.9.1+cu130.whl"
        );
    }
}
