//! The PEP 691 JSON form of a project page read into [`RawPage`], its text borrowed
//! from the response wherever it has no escapes: a page such as `torch`'s lists
//! thousands of files, most of which the target never uses.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use super::raw_page::{RawFile, RawMetadata, RawPage};

/// Read a JSON project page.
pub(super) fn parse(body: &[u8]) -> Result<RawPage<'_>, String> {
    let page: JsonPage<'_> = serde_json::from_slice(body).map_err(|error| error.to_string())?;
    let files = page
        .files
        .into_iter()
        .map(|file| RawFile {
            href: file.url.0,
            filename: Some(file.filename.0),
            sha256: file.hashes.0,
            requires_python: file.requires_python.map(|text| text.0),
            yanked: file.yanked.and_then(|yanked| yanked.0),
            metadata: match file.core_metadata.or(file.dist_info_metadata) {
                None | Some(Metadata(None)) => RawMetadata::Absent,
                Some(Metadata(Some(digits))) => RawMetadata::Offered(digits.0),
            },
            size: file.size,
        })
        .collect();
    Ok(RawPage { base: None, files })
}

#[derive(Deserialize)]
struct JsonPage<'page> {
    #[serde(borrow)]
    files: Vec<JsonFile<'page>>,
}

#[derive(Deserialize)]
struct JsonFile<'page> {
    #[serde(borrow)]
    filename: Text<'page>,
    #[serde(borrow)]
    url: Text<'page>,
    #[serde(default, borrow)]
    hashes: Hashes<'page>,
    #[serde(default, borrow, rename = "requires-python")]
    requires_python: Option<Text<'page>>,
    #[serde(default, borrow)]
    yanked: Option<Yanked<'page>>,
    #[serde(default, borrow, rename = "core-metadata")]
    core_metadata: Option<Metadata<'page>>,
    #[serde(default, borrow, rename = "dist-info-metadata")]
    dist_info_metadata: Option<Metadata<'page>>,
    #[serde(default)]
    size: Option<u64>,
}

/// A string, borrowed when the JSON has no escapes in it.
struct Text<'page>(Cow<'page, str>);

/// A `hashes` object: its `sha256` value (the last, if repeated); every value a string.
#[derive(Default)]
struct Hashes<'page>(Option<Cow<'page, str>>);

/// PEP 592 `yanked`: `false`, `true` (`Some("")`) or the reason.
struct Yanked<'page>(Option<Cow<'page, str>>);

/// PEP 714 `core-metadata`: `false` (`None`), `true` (no digest) or a `hashes` object.
struct Metadata<'page>(Option<Hashes<'page>>);

/// Visits the JSON values the types above accept, producing `T`.
struct Expect<'page, T>(&'static str, PhantomData<(&'page (), T)>);

impl<'page, T> Expect<'page, T> {
    fn new(what: &'static str) -> Self {
        Self(what, PhantomData)
    }
}

/// How a visited bool, string or map becomes each type.
trait FromJson<'page>: Sized {
    fn from_bool<E: de::Error>(value: bool) -> Result<Self, E> {
        Err(E::invalid_type(
            de::Unexpected::Bool(value),
            &"another type",
        ))
    }
    fn from_text<E: de::Error>(value: Cow<'page, str>) -> Result<Self, E> {
        Err(E::invalid_type(
            de::Unexpected::Str(&value),
            &"another type",
        ))
    }
    fn from_hashes(hashes: Hashes<'page>) -> Result<Self, &'static str> {
        let _ = hashes;
        Err("a map")
    }
}

impl<'page> FromJson<'page> for Text<'page> {
    fn from_text<E: de::Error>(value: Cow<'page, str>) -> Result<Self, E> {
        Ok(Self(value))
    }
}

impl<'page> FromJson<'page> for Hashes<'page> {
    fn from_hashes(hashes: Hashes<'page>) -> Result<Self, &'static str> {
        Ok(hashes)
    }
}

impl<'page> FromJson<'page> for Yanked<'page> {
    fn from_bool<E: de::Error>(value: bool) -> Result<Self, E> {
        Ok(Self(value.then_some(Cow::Borrowed(""))))
    }
    fn from_text<E: de::Error>(value: Cow<'page, str>) -> Result<Self, E> {
        Ok(Self(Some(value)))
    }
}

impl<'page> FromJson<'page> for Metadata<'page> {
    fn from_bool<E: de::Error>(value: bool) -> Result<Self, E> {
        Ok(Self(value.then(Hashes::default)))
    }
    fn from_hashes(hashes: Hashes<'page>) -> Result<Self, &'static str> {
        Ok(Self(Some(hashes)))
    }
}

impl<'de: 'page, 'page, T: FromJson<'page>> Visitor<'de> for Expect<'page, T> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.0)
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<T, E> {
        T::from_bool(value)
    }

    fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<T, E> {
        T::from_text(Cow::Borrowed(value))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<T, E> {
        T::from_text(Cow::Owned(value.to_string()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<T, E> {
        T::from_text(Cow::Owned(value))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut sha256 = None;
        while let Some((key, value)) = map.next_entry::<Text<'page>, Text<'page>>()? {
            if key.0 == "sha256" {
                sha256 = Some(value.0);
            }
        }
        T::from_hashes(Hashes(sha256))
            .map_err(|what| de::Error::invalid_type(de::Unexpected::Other(what), &self.0))
    }
}

macro_rules! deserialize_with {
    ($type:ident, $method:ident, $what:literal) => {
        impl<'de: 'page, 'page> Deserialize<'de> for $type<'page> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.$method(Expect::new($what))
            }
        }
    };
}

deserialize_with!(Text, deserialize_str, "a string");
deserialize_with!(Hashes, deserialize_map, "a map of strings");
deserialize_with!(Yanked, deserialize_any, "a bool or a string");
deserialize_with!(Metadata, deserialize_any, "a bool or a map of strings");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrowed_and_escaped_text() {
        let json = br#"{"files":[{"filename":"a-1.0.tar.gz","url":"a-1.0.tar.gz","hashes":{"md5":"x","sha256":"ab"},
"requires-python":"\u003e=3.9","yanked":true,"dist-info-metadata":{"sha256":"cd"},"core-metadata":false}]}"#;
        let page = parse(json).unwrap();
        let file = &page.files[0];
        assert!(matches!(file.href, Cow::Borrowed("a-1.0.tar.gz")));
        assert_eq!(file.sha256.as_deref(), Some("ab"));
        assert_eq!(file.requires_python.as_deref(), Some(">=3.9"));
        assert_eq!(file.yanked.as_deref(), Some(""));
        // `core-metadata` wins over the older key, even when `false`.
        assert!(matches!(file.metadata, RawMetadata::Absent));
        let bad = br#"{"files":[{"filename":"a","url":"a","yanked":1}]}"#;
        assert!(parse(bad).is_err());
    }
}
