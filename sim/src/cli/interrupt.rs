//! Ctrl-C and SIGTERM: kill every redis-server this process started,
//! remove its clock files and exit 130 (see the `cli` module docs).

use super::*;

extern "C" fn on_interrupt(_signal: libc::c_int) {
    servers::shutdown_all();
    // SAFETY: waitpid(2), nanosleep(2), write(2) and _exit(2) are
    // async-signal-safe; the buffers are static or on this stack.
    unsafe {
        // Reap the killed servers (bounded: at most ~1 s) so that they are
        // gone, not merely dying, when the shell gets its prompt back.
        let pause = libc::timespec { tv_sec: 0, tv_nsec: 10_000_000 };
        for _ in 0..100 {
            match libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) {
                -1 => break,
                0 => {
                    libc::nanosleep(&pause, std::ptr::null_mut());
                }
                _ => {}
            }
        }
        remove_clock_files();
        let msg = b"\nrp-sim: interrupted; every redis-server it started has been killed\n";
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::_exit(130);
    }
}

/// `<tmp>/rp-clock-<pid>-`, the prefix of this process's clock control files
/// (see `clock::ServerClock::create`), NUL-padded; written once before the
/// handler is installed, only read inside it.
static mut CLOCK_PREFIX: [u8; 240] = [0; 240];

/// Unlinks `<prefix>0` … `<prefix>1023` without allocating (the handler
/// skips destructors, which would otherwise delete them).
///
/// # Safety
/// Only from the signal handler, after `install_interrupt_handler`.
unsafe fn remove_clock_files() {
    // SAFETY: written before the handler was installed, never again.
    let prefix = unsafe { &*core::ptr::addr_of!(CLOCK_PREFIX) };
    let len = prefix.iter().position(|b| *b == 0).unwrap_or(0);
    if len == 0 {
        return;
    }
    for n in 0u32..1024 {
        let mut path = [0u8; 256];
        path[..len].copy_from_slice(&prefix[..len]);
        let mut digits = [0u8; 10];
        let mut d = 0;
        let mut v = n;
        loop {
            digits[d] = b'0' + (v % 10) as u8;
            d += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        for i in 0..d {
            path[len + i] = digits[d - 1 - i];
        }
        // SAFETY: `path` is NUL-terminated (zero-filled past the digits).
        unsafe {
            libc::unlink(path.as_ptr().cast());
        }
    }
}

/// Installs the Ctrl-C (and SIGTERM) handler described in the module docs.
pub fn install_interrupt_handler() {
    let prefix = std::env::temp_dir().join(format!("rp-clock-{}-", std::process::id()));
    let bytes = prefix.as_os_str().as_encoded_bytes();
    if bytes.len() < 240 - 12 {
        // SAFETY: no handler is installed yet, so nothing reads it concurrently.
        unsafe {
            let dst = &mut *core::ptr::addr_of_mut!(CLOCK_PREFIX);
            dst[..bytes.len()].copy_from_slice(bytes);
        }
    }
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the
    // handler only calls async-signal-safe functions.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        for signal in [libc::SIGINT, libc::SIGTERM] {
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}
