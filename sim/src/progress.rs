//! Progress of long runs (`explore`, `report`, the mutation table's
//! searches), on stderr, outside the simulation.
//!
//! On a terminal it is an `indicatif` bar redrawn in place with the
//! throughput and the violations so far; in a file or a pipe (CI logs) a
//! redrawn bar is noise, so it prints one plain line at every tenth of the
//! work instead. Nothing here touches stdout, which `--json` keeps for the
//! result alone, and nothing here is read by simulated code: the rate is
//! wall-clock time, measured by `indicatif` with `std::time`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

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
pub fn stderr_is_terminal() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(2) == 1 }
}

/// The bar: label, bar, count, violations (or what is being searched),
/// throughput and time left.
fn template(unit: &str) -> String {
    format!("{{prefix}} [{{bar:30}}] {{pos}}/{{len}} {unit}, {{msg}}, {{rate}}, {{eta}} left")
}

/// One unit of work counted towards a total: seeds of an exploration, or
/// searches of the mutation table.
#[derive(Debug)]
pub struct Meter {
    mode: Progress,
    bar: Option<ProgressBar>,
    label: String,
    unit: &'static str,
    total: u64,
    done: u64,
    violating: u64,
    started: std::time::Instant,
}

impl Meter {
    /// A meter of `total` units of `unit` (`"seeds"`) labelled `label`.
    pub fn new(mode: Progress, label: &str, unit: &'static str, total: u64) -> Meter {
        let bar = (mode == Progress::Bar).then(|| {
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
            bar
        });
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
    pub fn step(&mut self, violating: bool) {
        self.done += 1;
        self.violating += u64::from(violating);
        match self.mode {
            Progress::Quiet => {}
            Progress::Bar => {
                if let Some(bar) = &self.bar {
                    if violating {
                        bar.set_message(format!("{} violating", self.violating));
                    }
                    bar.inc(1);
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
    pub fn say(&self, message: impl Into<String>) {
        if let Some(bar) = &self.bar {
            bar.set_message(message.into());
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
    pub fn finish(self) {
        if let Some(bar) = &self.bar {
            bar.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_template_parses() {
        assert!(ProgressStyle::with_template(&template("seeds")).is_ok());
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
