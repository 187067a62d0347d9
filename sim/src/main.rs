//! `rp-sim`: command-line entry point of the simulation harness.
fn main() {
    eprintln!("rp-sim: not built yet (issue 4)");
    std::process::exit(2);
}
