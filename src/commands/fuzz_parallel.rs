//! `polyc fuzz-schedules` on several threads: the programs are checked on a pool of
//! threads, each program wholly on one (its own isl context), and their results handed over
//! in the programs' order as soon as every earlier one is in, so that the output is the
//! same whatever the number of threads and streams during a long run.

use crate::error::CliError;
use rayon::iter::{ParallelBridge, ParallelIterator};
use std::collections::BTreeMap;
use std::sync::mpsc;

/// Runs `check` on every item on `jobs` threads (0: one per core) and gives each result to
/// `take`, in the items' order; stops handing over at the first error `take` returns (the
/// items already started still finish).
pub fn in_order<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    check: impl Fn(&T) -> R + Sync,
    mut take: impl FnMut(&T, R) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| CliError::Internal(format!("starting {jobs} threads: {e}")))?;
    let check = &check;
    std::thread::scope(|scope| {
        let (sender, results) = mpsc::channel();
        scope.spawn(move || {
            pool.install(|| {
                // `par_bridge` takes the items in order as threads come free, so that the
                // results arrive roughly in order and few wait to be handed over.
                (items.iter().enumerate().par_bridge()).for_each_with(
                    sender,
                    |sender, (k, item)| {
                        // The receiver is gone only when `take` failed: nothing more to hand over.
                        let _ = sender.send((k, check(item)));
                    },
                )
            })
        });
        let mut waiting = BTreeMap::new();
        let mut next = 0;
        for (k, result) in results {
            waiting.insert(k, result);
            while let Some(result) = waiting.remove(&next) {
                take(&items[next], result)?;
                next += 1;
            }
        }
        Ok(())
    })
}
