//! Host names resolved once per client, with hedged lookups.
//!
//! Each new connection would otherwise ask the system resolver again: eight connections
//! to an index's file host are eight lookups, and a resolver that drops one UDP query
//! answers it only after its timeout (glibc: 5 s), a stall measured in one `lock --live`
//! in six. Here concurrent lookups of one name share one answer, kept for the client's
//! life (a run, not a long-lived cache), and a lookup still unanswered after
//! [`HEDGE_AFTER`] is asked again beside the first, whichever answers first winning.
//! A failed lookup is not kept, so the next connection asks afresh.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use tokio::sync::OnceCell;

/// How long a lookup runs before the same lookup is started again beside it.
const HEDGE_AFTER: Duration = Duration::from_millis(800);
/// Lookups of one name at once, the first included.
const MAX_LOOKUPS: usize = 3;

type Answer = Result<Vec<SocketAddr>, String>;

/// The resolver a client's connections share (clones share the names); see the module
/// documentation.
#[derive(Debug, Clone, Default)]
pub(super) struct SharedResolver {
    names: Arc<Mutex<HashMap<String, Arc<OnceCell<Answer>>>>>,
}

impl SharedResolver {
    /// The addresses of `host` (port 0), from the first lookup of it that answers.
    async fn addresses(&self, host: &str) -> Answer {
        let cell = {
            let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(names.entry(host.to_string()).or_default())
        };
        let answer = cell.get_or_init(|| hedged_lookup(host.to_string())).await;
        if answer.is_err() {
            let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
            if names
                .get(host)
                .is_some_and(|known| Arc::ptr_eq(known, &cell))
            {
                names.remove(host);
            }
        }
        answer.clone()
    }
}

impl Resolve for SharedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let resolver = self.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addresses = resolver.addresses(&host).await.map_err(|reason| {
                Box::new(std::io::Error::other(reason)) as Box<dyn std::error::Error + Send + Sync>
            })?;
            Ok(Box::new(addresses.into_iter()) as Addrs)
        })
    }
}

/// One system lookup of `host`, started again beside itself after each [`HEDGE_AFTER`]
/// without an answer, up to [`MAX_LOOKUPS`] at once; the first answer wins.
async fn hedged_lookup(host: String) -> Answer {
    let mut lookups = tokio::task::JoinSet::new();
    let mut last_error = None;
    for started in 1..=MAX_LOOKUPS {
        let name = host.clone();
        lookups.spawn(async move {
            tokio::net::lookup_host((name.as_str(), 0))
                .await
                .map(|addresses| addresses.collect::<Vec<SocketAddr>>())
        });
        let wait = async {
            if started < MAX_LOOKUPS {
                tokio::time::sleep(HEDGE_AFTER).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            joined = lookups.join_next() => match joined {
                Some(Ok(Ok(addresses))) => return Ok(addresses),
                Some(Ok(Err(error))) => last_error = Some(error.to_string()),
                Some(Err(error)) => last_error = Some(error.to_string()),
                None => {}
            },
            () = wait => continue,
        }
        // An answer that is an error: let the lookups still running answer instead.
        while let Some(joined) = lookups.join_next().await {
            match joined {
                Ok(Ok(addresses)) => return Ok(addresses),
                Ok(Err(error)) => last_error = Some(error.to_string()),
                Err(error) => last_error = Some(error.to_string()),
            }
        }
        break;
    }
    Err(last_error.unwrap_or_else(|| format!("no address for `{host}`")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_name_is_looked_up_once_and_a_failure_is_not_kept() {
        let resolver = SharedResolver::default();
        let first = resolver.addresses("localhost").await.unwrap();
        assert!(first.iter().any(|address| address.ip().is_loopback()));
        let names = resolver.names.lock().unwrap().len();
        assert_eq!(names, 1);
        assert_eq!(resolver.addresses("localhost").await.unwrap(), first);
        // A name the system refuses without asking any server.
        assert!(resolver.addresses("").await.is_err());
        assert!(!resolver.names.lock().unwrap().contains_key(""));
    }
}
