//! `--batch` as a gate: the nodes are taken in inventory order, `size` a batch, and a
//! node's turn to converge comes once every node of the batches before its own has
//! ended (however it ended: converged, failed, unreachable or skipped). A node of a later
//! batch may be probed and even end (unreachable) before an earlier batch has; the
//! batches still end in order.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::watch;

/// The batches of one fleet run.
pub struct Batches {
    /// Nodes per batch (at least 1).
    size: usize,
    /// Per batch, the nodes not yet ended.
    remaining: Vec<AtomicUsize>,
    /// How many batches have ended, in order.
    done: watch::Sender<usize>,
}

impl Batches {
    /// `total` nodes, `size` a batch (0 counts as 1).
    pub fn new(total: usize, size: usize) -> Self {
        let size = size.max(1);
        Self {
            size,
            remaining: (0..total.div_ceil(size))
                .map(|batch| AtomicUsize::new(size.min(total - batch * size)))
                .collect(),
            done: watch::Sender::new(0),
        }
    }

    /// The `index`th node ended.
    pub fn ended(&self, index: usize) {
        if let Some(remaining) = self.remaining.get(index / self.size) {
            remaining.fetch_sub(1, Ordering::SeqCst);
        }
        self.done.send_modify(|done| {
            while self
                .remaining
                .get(*done)
                .is_some_and(|remaining| remaining.load(Ordering::SeqCst) == 0)
            {
                *done += 1;
            }
        });
    }

    /// Wait until every batch before the `index`th node's has ended.
    pub async fn turn(&self, index: usize) {
        let batch = index / self.size;
        let mut done = self.done.subscribe();
        // The sender lives as long as `self`: the wait ends only when the turn comes.
        let _ = done.wait_for(|done| *done >= batch).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many batches have ended, in order.
    fn done(batches: &Batches) -> usize {
        *batches.done.borrow()
    }

    #[test]
    fn batches_end_in_order_whoever_ends_first() {
        let batches = Batches::new(5, 2);
        assert_eq!(done(&batches), 0);
        // Node 2 (batch 1) ends first, e.g. unreachable: batch 0 is still running.
        batches.ended(2);
        assert_eq!(done(&batches), 0);
        batches.ended(0);
        batches.ended(1);
        // Batch 0 ended; batch 1 still has node 3.
        assert_eq!(done(&batches), 1);
        batches.ended(3);
        assert_eq!(done(&batches), 2);
        batches.ended(4);
        assert_eq!(done(&batches), 3);
    }

    #[test]
    fn one_batch_never_waits() {
        let batches = Batches::new(3, 3);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            for index in 0..3 {
                tokio::time::timeout(std::time::Duration::from_secs(1), batches.turn(index))
                    .await
                    .expect("a node of the only batch waited");
            }
            // The second batch of another run waits for the first.
            let two = Batches::new(2, 1);
            assert!(
                tokio::time::timeout(std::time::Duration::from_millis(50), two.turn(1))
                    .await
                    .is_err()
            );
            two.ended(0);
            tokio::time::timeout(std::time::Duration::from_secs(1), two.turn(1))
                .await
                .expect("node 1 waited after batch 0 ended");
        });
    }
}
