//! `join_all`: poll one request per master together, inside the caller's task.
//!
//! Redlock must ask every master at once (sequential requests would add the
//! latencies up and eat the lease's validity), but the library spawns no
//! task: a spawned task would escape the harness' pausable wrapper and keep
//! talking to Redis while its actor is "frozen". So the requests are plain
//! futures polled side by side by the future the caller awaits.
//!
//! Every wake-up polls each unfinished future once, in master order. That is
//! O(N) per wake-up, which is nothing for the handful of masters Redlock
//! uses, and the fixed order keeps the simulation deterministic. Written by
//! hand rather than pulled from `futures-util` to keep the dependency list short.

use core::future::Future;
use core::pin::Pin;
use core::task::Poll;

/// Polls every future in `futures` until all are done; outputs in input order.
pub(crate) async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    // Boxing pins each future without `unsafe`; one allocation per master
    // per round is far below the cost of the network round trip.
    let mut slots: Vec<Slot<F>> = futures.into_iter().map(|f| Slot::Running(Box::pin(f))).collect();
    core::future::poll_fn(move |cx| {
        let mut running = false;
        for slot in slots.iter_mut() {
            if let Slot::Running(future) = slot {
                match future.as_mut().poll(cx) {
                    Poll::Ready(output) => *slot = Slot::Done(Some(output)),
                    Poll::Pending => running = true,
                }
            }
        }
        if running {
            return Poll::Pending;
        }
        let outputs = slots
            .iter_mut()
            .filter_map(|slot| match slot {
                Slot::Done(output) => output.take(),
                Slot::Running(_) => None,
            })
            .collect();
        Poll::Ready(outputs)
    })
    .await
}

enum Slot<F: Future> {
    Running(Pin<Box<F>>),
    // `Option` so the output can be moved out once everything is done.
    Done(Option<F::Output>),
}
