//! `polyc fuzz-schedules` on several threads: the programs are checked on a pool of
//! threads, each program wholly on one (its own isl context), and their results handed over
//! in the programs' order as soon as every earlier one is in, so that the output is the
//! same whatever the number of threads and streams during a long run. A program still
//! running after a time limit is reported as stuck (a hang is a failure, not a stalled run).

use crate::error::CliError;
use rayon::iter::{ParallelBridge, ParallelIterator};
use std::collections::BTreeMap;
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// Runs `check` on every item on `jobs` threads (0: one per core) and gives each result to
/// `take`, in the items' order; stops handing over at the first error `take` returns (the
/// items already started still finish).
///
/// With a `limit`, an item whose check has run longer than it is given to `stuck` and the
/// run stops with an error. A thread cannot be stopped from outside, so the error comes
/// only once the stuck check returns: a `stuck` that must not wait (a hang never returns)
/// ends the process itself.
pub fn in_order<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    limit: Option<Duration>,
    check: impl Fn(&T) -> R + Sync,
    mut take: impl FnMut(&T, R) -> Result<(), CliError>,
    stuck: impl FnOnce(&T, Duration),
) -> Result<(), CliError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| CliError::Internal(format!("starting {jobs} threads: {e}")))?;
    let check = &check;
    // When each item being checked started.
    let running = &Mutex::new(BTreeMap::new());
    let poll = limit.map_or(Duration::MAX, |l| (l / 4).min(Duration::from_secs(1)));
    std::thread::scope(|scope| {
        let (sender, results) = mpsc::channel();
        scope.spawn(move || {
            pool.install(|| {
                // `par_bridge` takes the items in order as threads come free, so that the
                // results arrive roughly in order and few wait to be handed over.
                (items.iter().enumerate().par_bridge()).for_each_with(
                    sender,
                    |sender, (k, item)| {
                        lock(running).insert(k, Instant::now());
                        let result = check(item);
                        lock(running).remove(&k);
                        // The receiver is gone only when `take` failed: nothing more to hand over.
                        let _ = sender.send((k, result));
                    },
                )
            })
        });
        let mut waiting = BTreeMap::new();
        let mut next = 0;
        loop {
            let (k, result) = match results.recv_timeout(poll) {
                Ok(received) => received,
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let longest = lock(running)
                        .iter()
                        .map(|(&k, start)| (k, start.elapsed()))
                        .max_by_key(|&(_, elapsed)| elapsed);
                    match (longest, limit) {
                        (Some((k, elapsed)), Some(limit)) if elapsed > limit => {
                            stuck(&items[k], elapsed);
                            return Err(CliError::Internal(format!(
                                "item {k} was still being checked after {} s",
                                elapsed.as_secs()
                            )));
                        }
                        _ => continue,
                    }
                }
            };
            waiting.insert(k, result);
            while let Some(result) = waiting.remove(&next) {
                take(&items[next], result)?;
                next += 1;
            }
        }
    })
}

/// The map of running checks (a check that panicked poisons nothing it left half-done).
fn lock<V>(m: &Mutex<V>) -> std::sync::MutexGuard<'_, V> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_order_and_a_check_beyond_the_limit_is_stuck() {
        let items = [0u64, 1, 2, 3];
        let mut taken = Vec::new();
        let mut stuck = None;
        let outcome = in_order(
            &items,
            2,
            Some(Duration::from_millis(200)),
            |&i| {
                if i == 2 {
                    std::thread::sleep(Duration::from_secs(2));
                }
                i * 10
            },
            |&i, r| {
                taken.push((i, r));
                Ok(())
            },
            |&i, elapsed| stuck = Some((i, elapsed)),
        );
        assert!(outcome.is_err());
        let (item, elapsed) = stuck.unwrap();
        assert_eq!(item, 2);
        assert!(elapsed > Duration::from_millis(200));
        // Handed over in order, up to the stuck one.
        assert!(taken.iter().map(|&(i, _)| i).eq(0..taken.len() as u64));
        assert!(taken.len() <= 2);
    }

    #[test]
    fn without_a_limit_every_result_is_handed_over_in_order() {
        let items: Vec<u64> = (0..50).collect();
        let mut taken = Vec::new();
        in_order(
            &items,
            3,
            None,
            |&i| i * i,
            |&i, r| {
                taken.push((i, r));
                Ok(())
            },
            |_, _| unreachable!("no limit"),
        )
        .unwrap();
        assert_eq!(taken, (0..50).map(|i| (i, i * i)).collect::<Vec<_>>());
    }
}
