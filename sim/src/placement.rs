//! Where the simulation thread and its redis-servers run: on one core.
//!
//! A simulation talks to its servers in strict ping-pong: the bridge writes
//! one command and blocks until the reply, and the server sleeps in
//! `epoll_wait` until the next command arrives. Exactly one of the two is
//! runnable at any instant. On different cores every exchange costs two
//! cross-core wake-ups (an inter-processor interrupt and an idle core coming
//! back), which on a virtual machine can take tens of microseconds each; on
//! one core it is a context switch. Measured on this project's 2-core VMs:
//! `explore --scenario lock --seeds 50` took 6.2 s with the scheduler free to
//! place the processes and 2.9–3.1 s with both on one core
//! (`reports/explore-speed.md` has the whole table). Nothing else changes:
//! the placement is invisible to the simulation, so every seed gives the
//! same history and digest either way (`sim/tests/harness/determinism.rs`).
//!
//! [`Placement::SharedCore`] (the default of [`crate::Servers`]) pins the
//! thread that prepares a pool, and through it every server that thread
//! starts (a child inherits the affinity of the thread that forks it), to
//! one CPU of the process's allowed set. A pool takes the CPU that the
//! fewest live pools of this process are on, the first such CPU counted
//! from the one the process's first pool was running on: pools in one
//! thread one after another stay on that CPU, and pools alive at once (the
//! property search's one per thread, `explore --jobs`) spread out. A thread
//! spawned by a pinned one inherits its single CPU; [`Unpinned`] gives it
//! back the CPUs its parent had before, so that its own pool can choose.
//! When the pool is dropped
//! each pinned thread gets its previous affinity back: a caller's thread is
//! only pinned while it owns a pool. [`Placement::Anywhere`] leaves the
//! scheduler alone (`rp-sim --placement anywhere`), for a machine whose
//! other work should not share a core with the simulation.
//!
//! Linux only (`sched_setaffinity`); elsewhere both placements leave the
//! scheduler alone.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Where a [`crate::Servers`] pool runs its simulation thread and servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Placement {
    /// The thread that prepares the pool and every server it starts share
    /// one CPU (see the module docs for why, and the measured gain).
    #[default]
    SharedCore,
    /// The operating system places every thread and server as it likes.
    Anywhere,
}

/// The pinning a pool did, so that it can be undone.
#[derive(Debug, Default)]
pub(crate) struct Pinning {
    /// The CPU this pool's threads and servers run on, once chosen.
    cpu: Option<usize>,
    /// Each thread pinned so far (kernel thread id) and the affinity it had.
    threads: Vec<(i32, Affinity)>,
}

/// How many live pools of this process are on each CPU (CPU, pools).
static LIVE: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());
/// The CPU the first pool of the process was running on, plus one (0: unset).
static FIRST_CPU: AtomicUsize = AtomicUsize::new(0);

impl Pinning {
    /// Pins the calling thread to this pool's CPU (choosing it the first
    /// time), unless it already is. A failure to pin is not an error: the
    /// simulation is only slower, and gives the same histories.
    pub(crate) fn enter(&mut self, placement: Placement) {
        if placement == Placement::Anywhere {
            return;
        }
        let tid = current_thread();
        if self.threads.iter().any(|(t, _)| *t == tid) {
            return;
        }
        let Some(before) = Affinity::of(tid) else { return };
        let cpu = *self.cpu.get_or_insert_with(|| choose(&before));
        if Affinity::only(cpu).apply(tid) {
            self.threads.push((tid, before));
        }
    }

    /// The CPU chosen, if a thread was pinned.
    pub(crate) fn cpu(&self) -> Option<usize> {
        self.cpu.filter(|_| !self.threads.is_empty())
    }

    /// The CPUs the calling thread could use before this pool pinned it
    /// (its present ones if the pool did not pin it).
    pub(crate) fn unpinned(&self) -> Unpinned {
        let tid = current_thread();
        Unpinned(self.threads.iter().find(|(t, _)| *t == tid).map(|(_, before)| *before).or_else(|| Affinity::of(tid)))
    }
}

/// The CPUs a thread could use before a pool pinned it, to hand to a thread
/// it spawns: a new thread inherits its parent's single CPU, and a pool
/// built there would have nowhere else to go.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unpinned(Option<Affinity>);

impl Unpinned {
    /// Gives the calling thread those CPUs. A failure leaves it where it is:
    /// slower, not wrong.
    pub(crate) fn restore(self) {
        if let Some(mask) = self.0 {
            mask.apply(current_thread());
        }
    }
}

impl Drop for Pinning {
    fn drop(&mut self) {
        if let Some(cpu) = self.cpu {
            release(cpu);
        }
        for (tid, before) in self.threads.drain(..) {
            // Only a thread of this process: a thread id is reused once its
            // thread has ended, possibly by another process's thread.
            if still_ours(tid) {
                before.apply(tid);
            }
        }
    }
}

/// The CPU a new pool takes among those `allowed`: the one with the fewest
/// live pools, ties going to the first counted from the CPU the process's
/// first pool was running on. Counted as live until [`release`].
fn choose(allowed: &Affinity) -> usize {
    let cpus = allowed.cpus();
    let Some(&first) = cpus.first() else { return 0 };
    let start = match FIRST_CPU.load(Ordering::Acquire) {
        0 => {
            let here = running_on().filter(|c| cpus.contains(c)).unwrap_or(first);
            match FIRST_CPU.compare_exchange(0, here + 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => here,
                Err(set) => set - 1,
            }
        }
        set => set - 1,
    };
    // A panic elsewhere while holding the counts leaves them usable.
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    let cpu = least_loaded(&cpus, start, &live);
    match live.iter_mut().find(|(c, _)| *c == cpu) {
        Some((_, n)) => *n += 1,
        None => live.push((cpu, 1)),
    }
    cpu
}

/// A pool on `cpu` is gone.
fn release(cpu: usize) {
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, n)) = live.iter_mut().find(|(c, _)| *c == cpu) {
        *n = n.saturating_sub(1);
    }
}

/// Of `cpus` (non-empty), the one with the fewest pools in `live`, ties
/// going to the first counted from `start`.
fn least_loaded(cpus: &[usize], start: usize, live: &[(usize, usize)]) -> usize {
    let at = cpus.iter().position(|&c| c == start).unwrap_or(0);
    let load = |cpu: usize| live.iter().find(|(c, _)| *c == cpu).map_or(0, |(_, n)| *n);
    (0..cpus.len()).map(|i| cpus[(at + i) % cpus.len()]).min_by_key(|&c| load(c)).unwrap_or(start)
}

#[cfg(target_os = "linux")]
mod os {
    /// A thread's CPU affinity mask.
    #[derive(Clone, Copy)]
    pub(crate) struct Affinity(libc::cpu_set_t);

    impl std::fmt::Debug for Affinity {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_list().entries(self.cpus()).finish()
        }
    }

    impl Affinity {
        /// The mask of thread `tid`, if the kernel answers.
        pub(crate) fn of(tid: i32) -> Option<Affinity> {
            // SAFETY: an all-zero cpu_set_t is a valid empty set, and the
            // kernel writes at most size_of::<cpu_set_t>() bytes into it.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                (libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0)
                    .then_some(Affinity(set))
            }
        }

        /// The mask holding `cpu` alone.
        pub(crate) fn only(cpu: usize) -> Affinity {
            // SAFETY: as above; CPU_SET ignores a CPU beyond the set's size.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                Affinity(set)
            }
        }

        /// Sets thread `tid`'s mask; whether the kernel accepted it.
        pub(crate) fn apply(&self, tid: i32) -> bool {
            // SAFETY: the set is a valid cpu_set_t of the size passed.
            unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &self.0) == 0 }
        }

        /// The CPUs in the mask, in order.
        pub(crate) fn cpus(&self) -> Vec<usize> {
            let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
            // SAFETY: CPU_ISSET reads the set within its size.
            (0..max).filter(|&c| unsafe { libc::CPU_ISSET(c, &self.0) }).collect()
        }
    }

    /// The calling thread's kernel id.
    pub(crate) fn current_thread() -> i32 {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() }
    }

    /// The CPU the calling thread runs on now.
    pub(crate) fn running_on() -> Option<usize> {
        // SAFETY: sched_getcpu has no preconditions.
        usize::try_from(unsafe { libc::sched_getcpu() }).ok()
    }

    /// Whether thread `tid` is (still) a thread of this process.
    pub(crate) fn still_ours(tid: i32) -> bool {
        std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    /// No affinity outside Linux: every call leaves the scheduler alone.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct Affinity;

    impl Affinity {
        pub(crate) fn of(_tid: i32) -> Option<Affinity> {
            None
        }
        pub(crate) fn only(_cpu: usize) -> Affinity {
            Affinity
        }
        pub(crate) fn apply(&self, _tid: i32) -> bool {
            false
        }
        pub(crate) fn cpus(&self) -> Vec<usize> {
            Vec::new()
        }
    }

    pub(crate) fn current_thread() -> i32 {
        0
    }

    pub(crate) fn running_on() -> Option<usize> {
        None
    }

    pub(crate) fn still_ours(_tid: i32) -> bool {
        false
    }
}

use os::{current_thread, running_on, still_ours, Affinity};

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Runs `check` on a thread of its own: pinning changes the calling
    /// thread's affinity, which must not leak into the test runner's.
    fn on_a_fresh_thread(check: impl FnOnce() + Send + 'static) {
        std::thread::spawn(check).join().expect("thread");
    }

    /// A pool's pinning of the calling thread: the CPUs it had before, the
    /// pinning, and the CPU it is pinned to now.
    fn pinned_here() -> (Vec<usize>, Pinning, usize) {
        let before = Affinity::of(current_thread()).expect("affinity").cpus();
        let mut pinning = Pinning::default();
        pinning.enter(Placement::SharedCore);
        let cpu = pinning.cpu().expect("pinned");
        (before, pinning, cpu)
    }

    #[test]
    fn pins_the_thread_and_gives_its_affinity_back() {
        on_a_fresh_thread(|| {
            let tid = current_thread();
            let (before, mut pinning, cpu) = pinned_here();
            assert!(before.contains(&cpu), "chose {cpu}, allowed {before:?}");
            assert_eq!(Affinity::of(tid).expect("affinity").cpus(), vec![cpu]);
            // A second enter on the same thread changes nothing.
            pinning.enter(Placement::SharedCore);
            assert_eq!(pinning.threads.len(), 1);
            drop(pinning);
            assert_eq!(Affinity::of(tid).expect("affinity").cpus(), before);
        });
    }

    #[test]
    fn anywhere_leaves_the_thread_alone() {
        on_a_fresh_thread(|| {
            let tid = current_thread();
            let before = Affinity::of(tid).expect("affinity").cpus();
            let mut pinning = Pinning::default();
            pinning.enter(Placement::Anywhere);
            assert_eq!(pinning.cpu(), None);
            assert_eq!(Affinity::of(tid).expect("affinity").cpus(), before);
        });
    }

    #[test]
    fn a_pool_takes_the_least_loaded_cpu_counted_from_the_first() {
        // Nothing live: the first pool's CPU, again and again.
        assert_eq!(least_loaded(&[0, 1, 2, 3], 2, &[]), 2);
        assert_eq!(least_loaded(&[0, 1, 2, 3], 2, &[(2, 0)]), 2);
        // Pools alive at once spread out, in turn from the first.
        assert_eq!(least_loaded(&[0, 1, 2, 3], 2, &[(2, 1)]), 3);
        assert_eq!(least_loaded(&[0, 1, 2, 3], 2, &[(2, 1), (3, 1)]), 0);
        assert_eq!(least_loaded(&[0, 1, 2, 3], 2, &[(0, 1), (1, 1), (2, 1), (3, 1)]), 2);
        // A CPU freed by a dropped pool is taken again.
        assert_eq!(least_loaded(&[0, 1], 0, &[(0, 2), (1, 1)]), 1);
        assert_eq!(least_loaded(&[4, 6], 5, &[]), 4, "a start outside the set counts from the first");
    }

    #[test]
    fn a_thread_spawned_by_a_pinned_one_gets_the_cpus_back() {
        on_a_fresh_thread(|| {
            let (before, pinning, cpu) = pinned_here();
            let unpinned = pinning.unpinned();
            let (inherited, restored) = std::thread::spawn(move || {
                let inherited = Affinity::of(current_thread()).expect("affinity").cpus();
                unpinned.restore();
                (inherited, Affinity::of(current_thread()).expect("affinity").cpus())
            })
            .join()
            .expect("thread");
            assert_eq!(inherited, vec![cpu], "a new thread inherits its parent's mask");
            assert_eq!(restored, before);
        });
    }
}
