//! What one simulated millisecond costs turmoil itself, per host.
//!
//! Every step of a simulation ticks the tokio runtime of every host whose
//! software is still running, whether or not it has anything to do: an
//! actor asleep until the end of the run costs as much per step as a busy
//! one, minus its own work. This measures that floor with idle hosts (each
//! sleeps through the whole run) and no Redis at all, so that
//! `reports/explore-speed.md` can say how much of a scenario's wall time is
//! turmoil's per-host tick: (hosts running) × (steps) × (this figure).
//!
//! ```sh
//! cargo run --release -p redis-primitives-sim --example tick_cost
//! ```
//!
//! Wall time here is measured outside the simulation (`std::time` around
//! `Sim::step`), which is fine: nothing inside the simulation reads it.

use std::time::{Duration, Instant};

/// Simulated milliseconds per measurement.
const STEPS: u64 = 3000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("| hosts running | wall per step (µs), min / median / max of 5 | per host per step (µs) |");
    println!("|---:|---|---:|");
    for hosts in [1usize, 2, 4, 8, 16, 24] {
        let mut per_step = Vec::new();
        for _ in 0..5 {
            per_step.push(measure(hosts)?);
        }
        per_step.sort_by(f64::total_cmp);
        let median = per_step[per_step.len() / 2];
        println!(
            "| {hosts} | {:.1} / **{median:.1}** / {:.1} | {:.2} |",
            per_step[0],
            per_step[per_step.len() - 1],
            median / hosts as f64
        );
    }
    Ok(())
}

/// µs of wall time per step of a simulation of `hosts` idle clients.
fn measure(hosts: usize) -> Result<f64, Box<dyn std::error::Error>> {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_millis(STEPS * 2))
        .tick_duration(Duration::from_millis(1))
        .build();
    for i in 0..hosts {
        sim.client(format!("idle-{i}"), async {
            tokio::time::sleep(Duration::from_millis(STEPS * 2)).await;
            Ok(())
        });
    }
    let started = Instant::now();
    for _ in 0..STEPS {
        sim.step()?;
    }
    Ok(started.elapsed().as_secs_f64() * 1e6 / STEPS as f64)
}
