//! Builds the LD_PRELOAD clock library (`sim/clock/rp_clock.c`) into a shared
//! object and tells the crate where it is.
//!
//! The `cc` crate builds static archives, and an `LD_PRELOAD` library must be
//! a shared object, so this script only borrows `cc`'s compiler discovery
//! (`CC`, cross targets, flags) and links `-shared -fPIC` itself. The result
//! lands in `OUT_DIR`, and its absolute path reaches the crate as the
//! compile-time variable `RP_CLOCK_LIB` (see `servers::clock_library`, which
//! also honours a run-time `RP_CLOCK_LIB` override). Why C and not a Rust
//! `cdylib`: see docs/decisions/0005-clock-library.md.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let source = PathBuf::from("clock/rp_clock.c");
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rerun-if-env-changed=CC");

    let out_dir = match std::env::var_os("OUT_DIR") {
        Some(d) => PathBuf::from(d),
        None => fail("OUT_DIR is not set; build.rs must run under cargo"),
    };
    let library = out_dir.join("librp_clock.so");

    let compiler = cc::Build::new().cargo_metadata(false).opt_level(2).get_compiler();
    let mut cmd: Command = compiler.to_command();
    cmd.args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-std=gnu11"]).arg("-o").arg(&library).arg(&source);
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) => fail(&format!(
            "could not run the C compiler ({e}); install gcc or clang (Debian: `apt-get install -y gcc`) or set CC"
        )),
    };
    if !status.success() {
        fail(&format!("compiling {} failed ({status}); see the compiler output above", source.display()));
    }
    println!("cargo:rustc-env=RP_CLOCK_LIB={}", library.display());
}

fn fail(msg: &str) -> ! {
    eprintln!("error: rp-sim clock library: {msg}");
    std::process::exit(1);
}
