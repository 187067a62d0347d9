//! Progress of long runs (`explore`, `report`, the mutation table's
//! searches), on stderr, outside the simulation.
//!
//! On a terminal it is an `indicatif` bar redrawn in place with the
//! throughput and the violations so far; in a file or a pipe (CI logs) a
//! redrawn bar is noise, so it prints one plain line at every tenth of the
//! work instead. Nothing here touches stdout, which `--json` keeps for the
//! result alone, and nothing here is read by simulated code: the rate is
//! wall-clock time, measured with `std::time`.
//!
//! The bar needs `indicatif`, which only the `cli` feature pulls in; a
//! build without it (the harness as a slim library dependency) prints the
//! plain lines on a terminal too.

use bar::Bar;

/// How to show progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Nothing.
    Quiet,
    /// A bar redrawn in place on stderr (a terminal).
    Bar,
    /// One line on stderr at every tenth of the work (stderr is a file or
    /// a pipe, where a redrawn bar would be noise).
    Lines,
}

impl Progress {
    /// A bar when stderr is a terminal, plain lines otherwise.
    pub fn for_stderr() -> Progress {
        if stderr_is_terminal() {
            Progress::Bar
        } else {
            Progress::Lines
        }
    }
}

/// Whether stderr is a terminal (the bar is only drawn on one).
pub(crate) fn stderr_is_terminal() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(2) == 1 }
}

/// The bar drawn in place, with `indicatif` (the `cli` feature).
#[cfg(feature = "cli")]
mod bar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

    /// The bar: label, bar, count, violations (or what is being searched),
    /// throughput and time left.
    pub(super) fn template(unit: &str) -> String {
        format!("{{prefix}} [{{bar:30}}] {{pos}}/{{len}} {unit}, {{msg}}, {{rate}}, {{eta}} left")
    }

    /// A bar of `total` units of `unit`, labelled `label`.
    #[derive(Debug)]
    pub(super) struct Bar(ProgressBar);

    impl Bar {
        pub(super) fn new(label: &str, unit: &'static str, total: u64) -> Option<Bar> {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(10));
            // The template is a constant: a parse error is a bug in this
            // file, caught by the unit test below, so falling back to the
            // default style is only ever a cosmetic loss.
            let style = ProgressStyle::with_template(&template(unit))
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .with_key("rate", move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.1} {unit}/s", state.per_sec());
                })
                .progress_chars("#>.");
            bar.set_style(style);
            bar.set_prefix(label.to_string());
            bar.set_message("0 violating");
            Some(Bar(bar))
        }

        pub(super) fn message(&self, message: String) {
            self.0.set_message(message);
        }

        pub(super) fn inc(&self) {
            self.0.inc(1);
        }

        pub(super) fn finish(&self) {
            self.0.finish();
        }
    }
}

/// No bar without the `cli` feature: [`Progress::Bar`] prints lines.
#[cfg(not(feature = "cli"))]
mod bar {
    #[derive(Debug)]
    pub(super) enum Bar {}

    impl Bar {
        pub(super) fn new(_label: &str, _unit: &'static str, _total: u64) -> Option<Bar> {
            None
        }

        pub(super) fn message(&self, _message: String) {
            match *self {}
        }

        pub(super) fn inc(&self) {
            match *self {}
        }

        pub(super) fn finish(&self) {
            match *self {}
        }
    }
}

/// One unit of work counted towards a total: seeds of an exploration, or
/// searches of the mutation table.
#[derive(Debug)]
pub(crate) struct Meter {
    mode: Progress,
    bar: Option<Bar>,
    label: String,
    unit: &'static str,
    total: u64,
    done: u64,
    violating: u64,
    started: std::time::Instant,
}

impl Meter {
    /// A meter of `total` units of `unit` (`"seeds"`) labelled `label`.
    pub(crate) fn new(mode: Progress, label: &str, unit: &'static str, total: u64) -> Meter {
        let bar = if mode == Progress::Bar { Bar::new(label, unit, total) } else { None };
        // Without a bar to draw (no `cli` feature), a terminal gets lines.
        let mode = if mode == Progress::Bar && bar.is_none() { Progress::Lines } else { mode };
        Meter {
            mode,
            bar,
            label: label.to_string(),
            unit,
            total,
            done: 0,
            violating: 0,
            started: std::time::Instant::now(),
        }
    }

    /// One more unit done; `violating` says whether it found a violation.
    pub(crate) fn step(&mut self, violating: bool) {
        self.done += 1;
        self.violating += u64::from(violating);
        match self.mode {
            Progress::Quiet => {}
            Progress::Bar => {
                if let Some(bar) = &self.bar {
                    if violating {
                        bar.message(format!("{} violating", self.violating));
                    }
                    bar.inc();
                }
            }
            Progress::Lines => {
                let tenth = (self.total / 10).max(1);
                if self.total >= 10 && (self.done % tenth == 0 || self.done == self.total) {
                    eprintln!("{}", self.line());
                }
            }
        }
    }

    /// Replaces the "N violating" part of the bar with `message` (the
    /// mutation table says which target it is searching).
    pub(crate) fn say(&self, message: impl Into<String>) {
        if let Some(bar) = &self.bar {
            bar.message(message.into());
        }
    }

    /// The plain progress line.
    fn line(&self) -> String {
        let rate = self.done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        format!(
            "{}: {}/{} {}, {} violating, {rate:.1} {}/s",
            self.label, self.done, self.total, self.unit, self.violating, self.unit
        )
    }

    /// Leaves the bar's last state on screen (or does nothing).
    pub(crate) fn finish(self) {
        if let Some(bar) = &self.bar {
            bar.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "cli")]
    #[test]
    fn the_bar_template_parses() {
        assert!(indicatif::ProgressStyle::with_template(&bar::template("seeds")).is_ok());
    }

    #[test]
    fn plain_lines_count_done_and_violating() {
        let mut m = Meter::new(Progress::Quiet, "lock", "seeds", 20);
        for i in 0..20 {
            m.step(i % 4 == 0);
        }
        assert!(m.line().starts_with("lock: 20/20 seeds, 5 violating, "), "{}", m.line());
    }
}
