//! Ctrl-C leaves no redis-server behind.
//!
//! Starts a long `rp-sim explore` with two jobs, finds the redis-server
//! processes it started (children of its pid, in their own process
//! groups), sends SIGINT, and checks that rp-sim exits with 130 and that
//! every one of those servers is gone — killed and reaped, not orphaned.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Pids of processes whose parent is `parent` and whose command is redis-server
/// (or valkey-server).
fn redis_children(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return out };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // "pid (comm) state ppid ...": comm may hold spaces, so split after ')'.
        let Some(close) = stat.rfind(')') else { continue };
        let comm = &stat[stat.find('(').map_or(0, |i| i + 1)..close];
        let ppid = stat[close + 1..].split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
        // valkey-server too: `REDIS_SERVER` may name either.
        if ppid == Some(parent) && (comm.starts_with("redis-server") || comm.starts_with("valkey-server")) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn ctrl_c_kills_every_server_and_exits_130() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rp-sim"))
        // Two jobs: two pools of five servers, one started by a thread
        // that is not the main one; Ctrl-C must reach both.
        .args(["explore", "--scenario", "redlock", "--seeds", "100000", "--jobs", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rp-sim starts");
    let pid = child.id();
    // Wait (generously: a busy machine) until both jobs' servers are up.
    let started = Instant::now();
    let mut servers = Vec::new();
    while started.elapsed() < Duration::from_secs(30) {
        servers = redis_children(pid);
        if servers.len() >= 10 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(servers.len() >= 10, "rp-sim did not start both jobs' servers: {servers:?}");
    interrupt_and_expect_gone(&mut child, &servers);
    println!("SIGINT: rp-sim exited 130; {} redis-server processes gone", servers.len());
}

#[test]
fn ctrl_c_in_a_live_run_kills_every_server_and_exits_130() {
    // counter-loss restarts its server mid-run: live, a killed process and
    // a new one, started by the run's operator thread. Every server seen
    // while it runs must be gone after Ctrl-C, the restarted ones too.
    let mut child = Command::new(env!("CARGO_BIN_EXE_rp-sim"))
        .args(["live", "--scenario", "counter-loss", "--runs", "100"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rp-sim starts");
    let pid = child.id();
    let started = Instant::now();
    let mut seen: Vec<u32> = Vec::new();
    // Two runs' worth of wall time (one run takes about 3.5 s): long
    // enough to see a restart, whatever the machine's load.
    while started.elapsed() < Duration::from_secs(8) {
        for s in redis_children(pid) {
            if !seen.contains(&s) {
                seen.push(s);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(seen.len() >= 2, "rp-sim live did not restart its server: {seen:?}");
    interrupt_and_expect_gone(&mut child, &seen);
}

/// Sends SIGINT to `child` (an rp-sim), expects exit status 130, and every
/// one of `servers` killed and reaped, not orphaned.
fn interrupt_and_expect_gone(child: &mut std::process::Child, servers: &[u32]) {
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = child.wait().expect("rp-sim exits");
    assert_eq!(status.code(), Some(130), "exit status {status:?}");
    for s in servers {
        let proc_dir = format!("/proc/{s}");
        // Reaped by rp-sim's handler; allow a moment for the kernel.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Path::new(&proc_dir).exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!Path::new(&proc_dir).exists(), "redis-server {s} survived Ctrl-C");
    }
}
