//! `--batch` as a gate: the nodes are taken in inventory order, batch after batch (of
//! the sizes [`super::BatchList::sizes`] gives, e.g. `[1, 2, 1]`), and a batch opens only
//! when every node of the batches before it has ended (however it ended: converged,
//! failed, unreachable or skipped) and the run's leader opens it. The leader may close
//! the gate instead (too many failures, a canary not approved): every node still waiting
//! is then told not to start. A node of a later batch may be probed and even end
//! (unreachable) before an earlier batch has; the batches still end in order.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::watch;

/// Whether the nodes waiting for their batch may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    /// The first `n` batches are open.
    Open(usize),
    /// No further node starts.
    Closed,
}

/// The batches of one fleet run.
pub struct Batches {
    /// Per batch, the index of its first node; one more entry: the node count.
    starts: Vec<usize>,
    /// Per batch, the nodes not yet ended.
    remaining: Vec<AtomicUsize>,
    /// How many batches have ended, in order.
    done: watch::Sender<usize>,
    /// Which batches may start.
    gate: watch::Sender<Gate>,
}

impl Batches {
    /// Batches of `sizes` nodes, in order (a size of 0 counts as 1 and the last batch
    /// ends with the nodes; the caller's sizes already sum to the node count), none open.
    pub fn new(sizes: &[usize]) -> Self {
        let mut starts = vec![0];
        let mut next = 0;
        for size in sizes {
            next += (*size).max(1);
            starts.push(next);
        }
        Self {
            remaining: sizes
                .iter()
                .map(|size| AtomicUsize::new((*size).max(1)))
                .collect(),
            starts,
            done: watch::Sender::new(0),
            gate: watch::Sender::new(Gate::Open(0)),
        }
    }

    /// How many batches there are, e.g. `3`.
    pub fn count(&self) -> usize {
        self.remaining.len()
    }

    /// The batch of the `index`th node, from 0 (the last batch for an index past the end).
    pub fn of(&self, index: usize) -> usize {
        self.starts
            .iter()
            .skip(1)
            .position(|end| index < *end)
            .unwrap_or(self.count().saturating_sub(1))
    }

    /// The node indexes of `batch`, e.g. `1..3`.
    pub fn nodes(&self, batch: usize) -> std::ops::Range<usize> {
        match (self.starts.get(batch), self.starts.get(batch + 1)) {
            (Some(start), Some(end)) => *start..*end,
            _ => 0..0,
        }
    }

    /// The `index`th node ended.
    pub fn ended(&self, index: usize) {
        if let Some(remaining) = self.remaining.get(self.of(index)) {
            let _ = remaining.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                left.checked_sub(1)
            });
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

    /// Wait until every batch before `batch` has ended.
    pub async fn ended_before(&self, batch: usize) {
        let mut done = self.done.subscribe();
        // The sender lives as long as `self`: the wait ends only when the batches have.
        let _ = done.wait_for(|done| *done >= batch).await;
    }

    /// Let the nodes of `batch` (and of every batch before it) start.
    pub fn open(&self, batch: usize) {
        self.gate.send_modify(|gate| {
            if let Gate::Open(open) = gate {
                *open = (*open).max(batch + 1);
            }
        });
    }

    /// No further node starts: every node still waiting for its batch is told so.
    pub fn close(&self) {
        self.gate.send_replace(Gate::Closed);
    }

    /// Wait for the `index`th node's batch to open: `true` to start, `false` when the
    /// gate was closed before it did.
    pub async fn turn(&self, index: usize) -> bool {
        let batch = self.of(index);
        let mut gate = self.gate.subscribe();
        let opened = gate
            .wait_for(|gate| match gate {
                Gate::Open(open) => *open > batch,
                Gate::Closed => true,
            })
            .await
            .map(|gate| *gate != Gate::Closed);
        opened.unwrap_or(false)
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
    fn uneven_batches_end_in_order_whoever_ends_first() {
        // 1, 2, 2: a canary, then two batches of two.
        let batches = Batches::new(&[1, 2, 2]);
        assert_eq!(batches.count(), 3);
        assert_eq!(
            (0..5).map(|index| batches.of(index)).collect::<Vec<_>>(),
            vec![0, 1, 1, 2, 2]
        );
        assert_eq!(batches.nodes(1), 1..3);
        assert_eq!(done(&batches), 0);
        // Node 3 (batch 2) ends first, e.g. unreachable: batch 0 is still running.
        batches.ended(3);
        assert_eq!(done(&batches), 0);
        batches.ended(0);
        assert_eq!(done(&batches), 1);
        batches.ended(1);
        assert_eq!(done(&batches), 1);
        batches.ended(2);
        // Batch 1 ended; batch 2 still has node 4.
        assert_eq!(done(&batches), 2);
        batches.ended(4);
        assert_eq!(done(&batches), 3);
    }

    #[test]
    fn a_batch_starts_when_opened_and_never_once_closed() {
        let batches = Batches::new(&[1, 2]);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let waits = |index: usize| {
            runtime.block_on(async {
                tokio::time::timeout(std::time::Duration::from_millis(50), batches.turn(index))
                    .await
            })
        };
        // Nothing is open until the leader opens it.
        assert!(waits(0).is_err());
        batches.open(0);
        assert_eq!(waits(0), Ok(true));
        assert!(waits(1).is_err(), "batch 1 is not open yet");
        batches.ended(0);
        runtime.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(1), batches.ended_before(1))
                .await
                .expect("batch 0 ended")
        });
        batches.close();
        assert_eq!(waits(1), Ok(false));
        assert_eq!(waits(2), Ok(false));
        // A closed gate stays closed.
        batches.open(1);
        assert_eq!(waits(1), Ok(false));
    }
}
