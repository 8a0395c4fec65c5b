//! Independent pieces of work spread over a few threads, with the results put back in input
//! order: the output is the same byte for byte whatever the number of threads and however they
//! were scheduled.
//!
//! The caller says how many threads to use (the CLI asks the operating system); the core never
//! looks at the machine itself.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Below this many items the work runs on the calling thread: starting threads costs more.
const SERIAL_BELOW: usize = 4;

/// Applies `work` to every item on up to `threads` threads; the results come back in the order
/// of `items`.
pub fn map_ordered<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = threads.min(items.len());
    if threads <= 1 || items.len() < SERIAL_BELOW {
        return items.iter().map(&work).collect();
    }
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(items.len()));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut mine = Vec::new();
                loop {
                    let idx = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(idx) else { break };
                    mine.push((idx, work(item)));
                }
                if let Ok(mut all) = done.lock() {
                    all.append(&mut mine);
                }
            });
        }
    });
    let mut all = done
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    all.sort_by_key(|(idx, _)| *idx);
    all.into_iter().map(|(_, result)| result).collect()
}

#[cfg(test)]
mod tests {
    use super::map_ordered;

    #[test]
    fn results_keep_input_order_on_any_thread_count() {
        let items: Vec<u64> = (0..100).collect();
        let serial = map_ordered(&items, 1, |x| x * x);
        for threads in [2, 3, 8] {
            assert_eq!(map_ordered(&items, threads, |x| x * x), serial);
        }
    }
}
