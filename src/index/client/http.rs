//! HTTP requests with the client's policies: bounded concurrency, per-request
//! timeouts, bounded retries with exponential backoff, cache revalidation (a page is
//! reused without a request while its `Cache-Control: max-age` lasts) and `--offline`.
//!
//! Retried: connection failures, `5xx` and `429` (honouring a `Retry-After` in
//! seconds, capped by the backoff ceiling). Not retried: a request that ran past its
//! total timeout (retrying would multiply a long wait), and every other status.
//!
//! A file whose digest is wanted ([`Http::digest`]) is streamed through sha256, never
//! held whole; there the timeout bounds each wait for more data, not the whole
//! download, so a large wheel on a slow link still completes.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{
    ACCEPT, AGE, CACHE_CONTROL, CONTENT_RANGE, CONTENT_TYPE, ETAG, HeaderMap, HeaderValue,
    IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED, RANGE, RETRY_AFTER,
};
use sha2::Digest;
use tokio::sync::Semaphore;
use url::Url;

use super::cache::{Cache, CachedPage};
use super::error::ClientError;
use super::types::{ClientSettings, redact};

/// The longest a streamed download may take in all, e.g. a large wheel on a slow link;
/// each wait for more data is bounded by the client's timeout.
const DOWNLOAD_LIMIT: Duration = Duration::from_secs(6 * 60 * 60);

/// A response read whole, under the concurrency permit and the timeout.
#[derive(Debug)]
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    final_url: Url,
    body: Vec<u8>,
}

/// A project page, or the index's word that it has no such project.
#[derive(Debug)]
pub enum PageResponse {
    /// The page, from the network or the cache.
    Found {
        /// The page's bytes.
        body: Vec<u8>,
        /// Its `Content-Type`, e.g. `text/html`.
        content_type: Option<String>,
        /// The URL it finally came from, for resolving relative links.
        final_url: Url,
    },
    /// `404` or `410`: the index does not have the project.
    NotFound,
}

/// What a range request gave.
#[derive(Debug)]
pub enum RangeResponse {
    /// `206`: `bytes` start at `start` in a file of `total` bytes.
    Partial {
        /// Offset of the first byte.
        start: u64,
        /// The whole file's length.
        total: u64,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// `200`: the server ignored the range and sent the whole file.
    Full(Vec<u8>),
}

/// Which bytes to ask for.
#[derive(Debug, Clone, Copy)]
pub enum ByteRange {
    /// The last N bytes, e.g. `bytes=-65536`.
    Suffix(u64),
    /// From `start` to `end` inclusive, e.g. `bytes=0-1023`.
    Bounded(u64, u64),
}

/// The HTTP side of the index client.
#[derive(Debug)]
pub struct Http {
    client: reqwest::Client,
    semaphore: Arc<Semaphore>,
    settings: ClientSettings,
    cache: Option<Cache>,
}

impl Http {
    /// A client with `settings`' timeouts, concurrency and cache.
    pub fn new(settings: ClientSettings) -> Result<Self, ClientError> {
        let client = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .timeout(settings.timeout)
            .user_agent(concat!("cuda-upgrade/", env!("CARGO_PKG_VERSION")))
            .dns_resolver(super::dns::SharedResolver::default())
            .build()
            .map_err(ClientError::Build)?;
        Ok(Self {
            client,
            semaphore: Arc::new(Semaphore::new(settings.concurrency.max(1))),
            cache: settings.cache_dir.clone().map(Cache::new),
            settings,
        })
    }

    /// The cache, when one is configured.
    pub fn cache(&self) -> Option<&Cache> {
        self.cache.as_ref()
    }

    /// GET a project page, revalidating a cached copy with `ETag` / `Last-Modified`.
    pub async fn page(&self, index: &str, url: &Url) -> Result<PageResponse, ClientError> {
        let key = String::from(redact(url));
        let cached = match &self.cache {
            Some(cache) => cache.page(&key)?,
            None => None,
        };
        if self.settings.offline {
            return match cached {
                Some((page, body)) => Ok(found(page, body, url)),
                None => Err(ClientError::Offline {
                    url: redact(url),
                    index: index.to_string(),
                }),
            };
        }
        // Within the lifetime the index gave it, a page is used without asking again.
        if let Some((page, body)) = cached.as_ref().filter(|(page, _)| page.is_fresh()) {
            return Ok(found(page.clone(), body.clone(), url));
        }
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static(super::simple::ACCEPT));
        if let Some((page, _)) = &cached {
            if let Some(value) = page.etag.as_deref().and_then(header_value) {
                headers.insert(IF_NONE_MATCH, value);
            }
            if let Some(value) = page.last_modified.as_deref().and_then(header_value) {
                headers.insert(IF_MODIFIED_SINCE, value);
            }
        }
        let reply = self.execute(index, url, headers).await?;
        match reply.status {
            StatusCode::NOT_MODIFIED => match cached {
                Some((mut page, body)) => {
                    let lifetime = lifetime(&reply.headers);
                    if lifetime != page.fresh_until
                        && let Some(cache) = &self.cache
                    {
                        page.fresh_until = lifetime;
                        cache.store_page_header(&page)?;
                    }
                    Ok(found(page, body, url))
                }
                None => Err(status_error(index, url, reply.status)),
            },
            StatusCode::NOT_FOUND | StatusCode::GONE => Ok(PageResponse::NotFound),
            status if status.is_success() => {
                let text = |name| {
                    reply
                        .headers
                        .get(name)
                        .and_then(|value: &HeaderValue| value.to_str().ok())
                        .map(str::to_string)
                };
                let page = CachedPage {
                    url: key,
                    final_url: redact(&reply.final_url).into(),
                    content_type: text(CONTENT_TYPE),
                    etag: text(ETAG),
                    last_modified: text(LAST_MODIFIED),
                    fresh_until: lifetime(&reply.headers),
                };
                // Pages without validators are stored too: `--offline` can use them.
                if let Some(cache) = &self.cache {
                    cache.store_page(&page, &reply.body)?;
                }
                Ok(PageResponse::Found {
                    body: reply.body,
                    content_type: page.content_type,
                    final_url: reply.final_url,
                })
            }
            status => Err(status_error(index, url, status)),
        }
    }

    /// GET a whole file, e.g. a PEP 658 `.metadata` file.
    pub async fn bytes(&self, index: &str, url: &Url) -> Result<Vec<u8>, ClientError> {
        if self.settings.offline {
            return Err(ClientError::Offline {
                url: redact(url),
                index: index.to_string(),
            });
        }
        let reply = self.execute(index, url, HeaderMap::new()).await?;
        if reply.status.is_success() {
            Ok(reply.body)
        } else {
            Err(status_error(index, url, reply.status))
        }
    }

    /// GET a file and return its sha256 and length, hashing while it streams in.
    /// Connection failures, `5xx` and `429` before the body are retried like any
    /// request; a stall longer than the timeout while reading fails.
    pub async fn digest(&self, index: &str, url: &Url) -> Result<(String, u64), ClientError> {
        if self.settings.offline {
            return Err(ClientError::Offline {
                url: redact(url),
                index: index.to_string(),
            });
        }
        let request_error = |source: reqwest::Error| ClientError::Request {
            url: redact(url),
            index: index.to_string(),
            source: source.without_url(),
        };
        let stalled = || ClientError::Timeout {
            url: redact(url),
            index: index.to_string(),
            timeout: self.settings.timeout,
        };
        let _permit = self.semaphore.acquire().await;
        let mut attempt = 0;
        let mut response = loop {
            let sent = tokio::time::timeout(
                self.settings.timeout,
                self.client.get(url.clone()).timeout(DOWNLOAD_LIMIT).send(),
            )
            .await
            .map_err(|_| stalled())?;
            let retry_after = match &sent {
                Ok(response) if is_retryable_status(response.status()) => {
                    Some(retry_after(response.headers()))
                }
                Err(error) if error.is_connect() => Some(None),
                _ => None,
            };
            match (retry_after, sent) {
                (Some(hint), _) if attempt < self.settings.retries => {
                    let delay = hint.unwrap_or_else(|| self.backoff(attempt));
                    tokio::time::sleep(delay.min(self.settings.max_backoff)).await;
                    attempt += 1;
                }
                (_, Ok(response)) if response.status().is_success() => break response,
                (_, Ok(response)) => return Err(status_error(index, url, response.status())),
                (_, Err(source)) => return Err(request_error(source)),
            }
        };
        let mut hasher = sha2::Sha256::new();
        let mut length: u64 = 0;
        loop {
            let chunk = tokio::time::timeout(self.settings.timeout, response.chunk())
                .await
                .map_err(|_| stalled())?
                .map_err(request_error)?;
            let Some(chunk) = chunk else {
                break;
            };
            hasher.update(&chunk);
            length += u64::try_from(chunk.len()).unwrap_or(u64::MAX);
        }
        Ok((hex::encode(hasher.finalize()), length))
    }

    /// GET a byte range of a file.
    pub async fn range(
        &self,
        index: &str,
        url: &Url,
        range: ByteRange,
    ) -> Result<RangeResponse, ClientError> {
        if self.settings.offline {
            return Err(ClientError::Offline {
                url: redact(url),
                index: index.to_string(),
            });
        }
        let value = match range {
            ByteRange::Suffix(length) => format!("bytes=-{length}"),
            ByteRange::Bounded(start, end) => format!("bytes={start}-{end}"),
        };
        let mut headers = HeaderMap::new();
        if let Some(value) = header_value(&value) {
            headers.insert(RANGE, value);
        }
        let reply = self.execute(index, url, headers).await?;
        match reply.status {
            StatusCode::PARTIAL_CONTENT => {
                let content_range = reply
                    .headers
                    .get(CONTENT_RANGE)
                    .and_then(|value| value.to_str().ok())
                    .and_then(parse_content_range);
                match content_range {
                    Some((start, total)) => Ok(RangeResponse::Partial {
                        start,
                        total,
                        bytes: reply.body,
                    }),
                    // A 206 without a usable Content-Range: fetch the file whole.
                    None => self.bytes(index, url).await.map(RangeResponse::Full),
                }
            }
            status if status.is_success() => Ok(RangeResponse::Full(reply.body)),
            // 416 and friends: the server does not do ranges on this file.
            StatusCode::RANGE_NOT_SATISFIABLE => {
                self.bytes(index, url).await.map(RangeResponse::Full)
            }
            status => Err(status_error(index, url, status)),
        }
    }

    /// Send a GET with retries; returns the final response read whole.
    async fn execute(
        &self,
        index: &str,
        url: &Url,
        headers: HeaderMap,
    ) -> Result<Reply, ClientError> {
        let mut attempt = 0;
        loop {
            let outcome = self.attempt(url, headers.clone()).await;
            let retry_after = match &outcome {
                Ok(reply) if is_retryable_status(reply.status) => Some(retry_after(&reply.headers)),
                Err(error) if error.is_connect() => Some(None),
                _ => None,
            };
            match (retry_after, outcome) {
                (Some(hint), _) if attempt < self.settings.retries => {
                    let delay = hint.unwrap_or_else(|| self.backoff(attempt));
                    tokio::time::sleep(delay.min(self.settings.max_backoff)).await;
                    attempt += 1;
                }
                (_, Ok(reply)) if is_retryable_status(reply.status) => {
                    return Err(status_error(index, url, reply.status));
                }
                (_, Ok(reply)) => return Ok(reply),
                (_, Err(error)) if error.is_timeout() && !error.is_connect() => {
                    return Err(ClientError::Timeout {
                        url: redact(url),
                        index: index.to_string(),
                        timeout: self.settings.timeout,
                    });
                }
                (_, Err(source)) => {
                    return Err(ClientError::Request {
                        url: redact(url),
                        index: index.to_string(),
                        source: source.without_url(),
                    });
                }
            }
        }
    }

    async fn attempt(&self, url: &Url, headers: HeaderMap) -> Result<Reply, reqwest::Error> {
        // The semaphore is never closed, so acquiring only fails if it were.
        let _permit = self.semaphore.acquire().await;
        let response = self.client.get(url.clone()).headers(headers).send().await?;
        let status = response.status();
        let headers = response.headers().clone();
        let final_url = response.url().clone();
        let body = response.bytes().await?.to_vec();
        Ok(Reply {
            status,
            headers,
            final_url,
            body,
        })
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt);
        self.settings
            .backoff
            .saturating_mul(factor)
            .min(self.settings.max_backoff)
    }
}

/// Until when a response may be reused without asking again (`Cache-Control`, `Age`).
fn lifetime(headers: &HeaderMap) -> Option<u64> {
    let text = |name| {
        headers
            .get(name)
            .and_then(|value: &HeaderValue| value.to_str().ok())
    };
    super::cache::fresh_until(text(CACHE_CONTROL), text(AGE))
}

fn found(page: CachedPage, body: Vec<u8>, url: &Url) -> PageResponse {
    // The cached final URL has no credentials; relative links resolve the same way.
    let final_url = Url::parse(&page.final_url).unwrap_or_else(|_| url.clone());
    PageResponse::Found {
        body,
        content_type: page.content_type,
        final_url,
    }
}

fn is_retryable_status(status: StatusCode) -> bool {
    status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

fn status_error(index: &str, url: &Url, status: StatusCode) -> ClientError {
    ClientError::Status {
        url: redact(url),
        index: index.to_string(),
        status: status.to_string(),
    }
}

fn header_value(text: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(text).ok()
}

/// `bytes 100-199/1000` → `(100, 1000)`.
fn parse_content_range(value: &str) -> Option<(u64, u64)> {
    let range = value.trim().strip_prefix("bytes ")?;
    let (span, total) = range.split_once('/')?;
    let (start, _) = span.split_once('-')?;
    Some((start.trim().parse().ok()?, total.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_range() {
        assert_eq!(parse_content_range("bytes 100-199/1000"), Some((100, 1000)));
        assert_eq!(parse_content_range("bytes 0-9/*"), None);
    }
}
