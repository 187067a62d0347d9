//! What an operation costs this process: heap allocations (a counting
//! global allocator), context switches and CPU seconds, read from /proc.

use crate::*;

/// The system allocator, counting the allocations this process makes: the
/// client's allocations per operation are one of the measures of its own
/// cost (the speed issue, item 4). A relaxed atomic add per allocation is
/// the whole overhead, paid by both sides of every comparison alike.
pub(crate) struct Counting;

pub(crate) static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to `System`, which upholds
// `GlobalAlloc`'s contract; the counter has no effect on the memory.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's obligations are passed on as they are.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: as above.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
pub(crate) static GLOBAL: Counting = Counting;

/// Context switches of every thread of this process so far (voluntary and
/// not): each is a thread going to sleep or being put off the CPU, so per
/// operation it counts the client's wake-ups.
pub(crate) fn context_switches() -> Result<u64, BoxError> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task")? {
        // A thread may end between the listing and the read.
        let Ok(status) = std::fs::read_to_string(task?.path().join("status")) else { continue };
        for line in status.lines() {
            if let Some(n) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                total += n.trim().parse::<u64>()?;
            }
        }
    }
    Ok(total)
}

/// CPU seconds (user + system) a process has used so far, all threads:
/// fields 14 and 15 of `/proc/PID/stat`, in clock ticks.
pub(crate) fn cpu_seconds(pid: &str) -> Result<f64, BoxError> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) is parenthesised and may hold spaces.
    let after = stat.rsplit_once(')').ok_or("unreadable /proc stat")?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| -> Result<f64, BoxError> { Ok(fields.get(i).ok_or("short /proc stat")?.parse::<f64>()?) };
    // After the name, field 3 (state) is index 0: utime is 14, stime 15.
    Ok((ticks(11)? + ticks(12)?) / clock_ticks()?)
}

/// `getconf CLK_TCK`, once.
pub(crate) fn clock_ticks() -> Result<f64, BoxError> {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    if let Some(t) = TICKS.get() {
        return Ok(*t);
    }
    let out = Command::new("getconf").arg("CLK_TCK").output().map_err(|e| format!("getconf: {e}"))?;
    let t: f64 = String::from_utf8_lossy(&out.stdout).trim().parse()?;
    Ok(*TICKS.get_or_init(|| t))
}
