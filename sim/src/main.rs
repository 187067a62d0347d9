//! `rp-sim`: command-line entry point of the simulation harness (see `cli`).
use clap::Parser;

use redis_primitives_sim::cli::{install_interrupt_handler, run, Cli};

fn main() {
    // Parse first: `--help` and usage errors (exit 2) need no handler.
    let cli = Cli::parse();
    install_interrupt_handler();
    std::process::exit(run(cli));
}
