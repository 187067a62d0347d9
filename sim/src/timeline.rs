//! A timeline of one run, as a self-contained HTML page with an inline SVG:
//! who did what when, who held what, and where it went wrong.
//!
//! A trace of a few hundred lines does not show where two holders
//! overlapped; a picture does. One lane per actor and per Redis node; in an
//! actor's lane every operation is a bar from its invoke to its completion,
//! coloured by how it ended (ok, fail, unknown, never completed), and every
//! lease it held is a band under the bars, from the grant to its local
//! deadline (solid while trusted, hatched while only believed: the window
//! fencing exists for). Faults are shaded spans on the lanes they hit; each
//! violation is a red line labelled with its invariant. Hovering anything
//! shows the event in the trace's own words.
//!
//! The page loads nothing (no script, style or font from the network). Its
//! one inline script checks, on load, that every operation was drawn and
//! writes the verdict into `body[data-rendered]`, which the headless-browser
//! check (`sim/check-in-chromium.sh`) reads back.
//!
//! Everything drawn is read from the history and the violations: the same
//! seed gives the same page, byte for byte.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::checker::Violation;
use crate::history::{Event, EventKind, FaultRecord, Millis, NemesisStep, Op};

/// One run to draw: what it is, how to reproduce it, and what happened.
#[derive(Debug, Clone, Copy)]
pub struct Timeline<'a> {
    /// Scenario name.
    pub scenario: &'a str,
    /// What the scenario must show (`must not violate anything`, …).
    pub expectation: &'a str,
    /// The command that reproduces the run.
    pub replay: &'a str,
    /// Redis nodes of the run (`redis-0` …): one lane each.
    pub nodes: u32,
    /// Simulated time the run covered (ms).
    pub simulated_ms: Millis,
    /// The history's digest, printed so a reader can tell two pages apart.
    pub digest: &'a str,
    /// The run's history.
    pub events: &'a [Event],
    /// What the checkers found.
    pub violations: &'a [Violation],
    /// Who held what, when: drawn as bands under the holders' operations
    /// (a family's `crate::Family::tenures`).
    pub tenures: &'a [Tenure],
}

/// One holder's time with something only one may hold (a lease, a
/// leadership): from when it got it, trusted until its deadline, believed
/// until it let go or learnt it had lost it. A family computes these from
/// its own operations; the timeline only draws them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenure {
    /// The holder's lane.
    pub process: String,
    /// When it started holding.
    pub from: Millis,
    /// Until when it could trust the hold (its local deadline; at most `to`).
    pub trusted: Millis,
    /// When it stopped believing it held (or the run ended).
    pub to: Millis,
    /// The band's tooltip, in words.
    pub title: String,
}

/// How an operation bar ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ending {
    Ok,
    Fail,
    Unknown,
    Pending,
}

impl Ending {
    fn class(self) -> &'static str {
        match self {
            Ending::Ok => "ok",
            Ending::Fail => "fail",
            Ending::Unknown => "info",
            Ending::Pending => "pending",
        }
    }
}

/// Something drawn in one lane over `[from, to]`.
#[derive(Debug, Clone, PartialEq)]
enum Mark {
    /// An operation: invoke to completion.
    Op { from: Millis, to: Millis, ending: Ending, title: String },
    /// An observation (no invoke): a tick.
    Tick { at: Millis, title: String },
    /// A lease or leadership: trusted over `[from, trusted]`, believed to `to`.
    Hold { from: Millis, trusted: Millis, to: Millis, title: String },
}

/// A fault: the lanes it hits and when.
#[derive(Debug, Clone, PartialEq)]
struct Span {
    lanes: Vec<String>,
    from: Millis,
    to: Millis,
    title: String,
}

impl Timeline<'_> {
    /// The page: self-contained HTML with the timeline as inline SVG.
    pub fn html(&self) -> String {
        let (events, violations) = (self.events, self.violations);
        let lanes = lanes(events, self.nodes);
        let marks = marks(events, self.tenures);
        let spans = spans(events, &lanes);
        let end = self.simulated_ms.max(events.last().map_or(0, |e| e.time)).max(1);
        let svg = svg(&lanes, &marks, &spans, violations, end);
        let mut page = String::new();
        let _ = write!(
            page,
            r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{scenario}: timeline</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }}
code {{ background: #f3f3f3; padding: 0 .3em; }}
.scroll {{ overflow-x: auto; border: 1px solid #ddd; }}
.legend span {{ display: inline-block; margin-right: 1.2em; }}
.legend i {{ display: inline-block; width: 1.6em; height: .8em; vertical-align: middle; margin-right: .3em; }}
.violation {{ color: #b00020; }}
</style></head>
<body data-rendered="pending">
<h1><code>{scenario}</code></h1>
<p>{expectation}. Reproduce with <code>{replay}</code> (digest <code>{digest}</code>), or add <code>--trace</code> for the same run as text.</p>
"#,
            scenario = esc(self.scenario),
            expectation = esc(self.expectation),
            replay = esc(self.replay),
            digest = esc(self.digest),
        );
        if violations.is_empty() {
            page.push_str("<p>No invariant was violated.</p>\n");
        } else {
            page.push_str("<ul class=\"violation\">\n");
            for v in violations {
                let at = v.at.map_or(String::new(), |t| format!(" at {t} ms"));
                let _ = writeln!(page, "<li><b>[{}]</b>{at}: {}</li>", esc(v.invariant.name()), esc(&v.detail));
            }
            page.push_str("</ul>\n");
        }
        page.push_str(
        r#"<p class="legend"><span><i style="background:#3a9d5d"></i>ok</span><span><i style="background:#d0463b"></i>failed (did not happen)</span><span><i style="background:#e0a030"></i>unknown outcome</span><span><i style="background:#9e9e9e"></i>never completed</span><span><i style="background:#4a6fd0"></i>lease trusted</span><span><i style="background:repeating-linear-gradient(45deg,#4a6fd0 0 3px,#fff 3px 6px)"></i>lease believed, no longer trusted</span><span><i style="background:#f3c0c0"></i>fault</span><span><i style="background:#b00020;width:.2em"></i>violation</span></p>
"#,
    );
        page.push_str("<div class=\"scroll\">\n");
        page.push_str(&svg);
        page.push_str("</div>\n<p>Time is simulated milliseconds since the run started. Hover a bar, band or span for its event.</p>\n");
        page.push_str(
            r#"<script>
window.addEventListener('load', function () {
  var svg = document.querySelector('svg.timeline');
  var drawn = svg.querySelectorAll('.op').length;
  var expected = Number(svg.getAttribute('data-ops'));
  var box = svg.getBBox();
  document.body.setAttribute('data-rendered',
    drawn === expected && box.width > 0 && box.height > 0 ? 'ok' : 'mismatch ' + drawn + '/' + expected);
});
</script>
</body></html>
"#,
        );
        page
    }
}

/// Escapes text for HTML and SVG (content and quoted attributes).
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Actors in order of first appearance, then the Redis nodes.
fn lanes(events: &[Event], nodes: u32) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in events {
        if e.process != "nemesis" && !out.contains(&e.process) {
            out.push(e.process.clone());
        }
    }
    for n in 0..nodes {
        let name = format!("redis-{n}");
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Every lane's operations, observations and holds.
fn marks(events: &[Event], tenures: &[Tenure]) -> BTreeMap<String, Vec<Mark>> {
    let mut out: BTreeMap<String, Vec<Mark>> = BTreeMap::new();
    let mut invoked: BTreeMap<u64, &Event> = BTreeMap::new();
    let end = events.last().map_or(0, |e| e.time);
    for e in events {
        if matches!(e.op, Op::Fault(_) | Op::Reached { .. }) {
            continue;
        }
        match e.kind {
            EventKind::Invoke => {
                invoked.insert(e.op_id.0, e);
            }
            kind => {
                let ending = match kind {
                    EventKind::Ok => Ending::Ok,
                    EventKind::Fail => Ending::Fail,
                    _ => Ending::Unknown,
                };
                let mark = match invoked.remove(&e.op_id.0) {
                    Some(i) => Mark::Op { from: i.time, to: e.time, ending, title: format!("{}\n{e}", i) },
                    None => Mark::Tick { at: e.time, title: e.to_string() },
                };
                out.entry(e.process.clone()).or_default().push(mark);
            }
        }
    }
    for i in invoked.values() {
        let mark =
            Mark::Op { from: i.time, to: end, ending: Ending::Pending, title: format!("{i}\n(never completed)") };
        out.entry(i.process.clone()).or_default().push(mark);
    }
    for t in tenures {
        let mark =
            Mark::Hold { from: t.from, trusted: t.trusted.clamp(t.from, t.to), to: t.to, title: t.title.clone() };
        out.entry(t.process.clone()).or_default().push(mark);
    }
    out
}

/// The faults as spans: each nemesis start paired with its undo (the same
/// class and target), a workload's stall or pause over its length; plus
/// every actor's own freezes and held requests. A fault hits the lanes of
/// the processes and nodes it names (every lane when none is a lane).
fn spans(events: &[Event], lanes: &[String]) -> Vec<Span> {
    let end = events.last().map_or(0, |e| e.time);
    let named = |names: &[&str]| -> Vec<String> {
        let hit: Vec<String> = lanes.iter().filter(|l| names.contains(&l.as_str())).cloned().collect();
        if hit.is_empty() {
            lanes.to_vec()
        } else {
            hit
        }
    };
    let mut out = Vec::new();
    let mut open: Vec<(&NemesisStep, Millis)> = Vec::new();
    for e in events {
        let Op::Fault(fault) = &e.op else { continue };
        let (names, lasting) = match fault {
            FaultRecord::Nemesis(step) if !step.undo => {
                open.push((step, e.time));
                continue;
            }
            FaultRecord::Nemesis(step) => {
                let undone = open.iter().position(|(s, _)| s.class() == step.class() && s.target == step.target);
                if let Some(i) = undone {
                    let (start, from) = open.remove(i);
                    out.push(Span {
                        lanes: named(&start.target.names()),
                        from,
                        to: e.time,
                        title: format!("{start}\nundone at {} ms: {fault}", e.time),
                    });
                    continue;
                }
                (step.target.names(), 0)
            }
            FaultRecord::LeaderStall { process, ms, .. } | FaultRecord::HolderPause { process, ms } => {
                (vec![process.as_str()], *ms)
            }
        };
        out.push(Span { lanes: named(&names), from: e.time, to: e.time + lasting, title: fault.to_string() });
    }
    for (start, from) in open {
        let title = format!("{start}\n(not undone before the end)");
        out.push(Span { lanes: named(&start.target.names()), from, to: end, title });
    }
    for (process, from, to) in crate::checker::interruptions(events) {
        out.push(Span {
            lanes: vec![process.to_string()],
            from,
            to,
            title: format!("{process} frozen or held by its workload from {from} ms to {to} ms"),
        });
    }
    out
}

const LABEL_W: f64 = 120.0;
const ROW_H: f64 = 9.0;
const BAND_H: f64 = 7.0;
const LANE_PAD: f64 = 6.0;
const AXIS_H: f64 = 50.0;
/// Rows of violation labels above the axis (labels at one instant stack).
const LABEL_ROWS: usize = 3;
/// Concurrent operations of one actor beyond this share the last row.
const MAX_ROWS: usize = 6;

/// Rows for the operations of one lane: each bar in the first row where
/// it does not overlap the previous bar (greedy interval packing).
fn rows(marks: &[Mark], px: f64) -> (Vec<usize>, usize) {
    let mut ends: Vec<f64> = Vec::new();
    let mut row_of = Vec::with_capacity(marks.len());
    for m in marks {
        let (from, to) = match m {
            Mark::Op { from, to, .. } => (*from as f64 * px, (*to as f64 * px).max(*from as f64 * px + 2.0)),
            Mark::Tick { at, .. } => (*at as f64 * px, *at as f64 * px + 1.5),
            Mark::Hold { .. } => {
                row_of.push(0);
                continue;
            }
        };
        let row = ends.iter().position(|e| *e <= from).unwrap_or(ends.len()).min(MAX_ROWS - 1);
        if row == ends.len() {
            ends.push(to);
        } else {
            ends[row] = ends[row].max(to);
        }
        row_of.push(row);
    }
    (row_of, ends.len().max(1))
}

/// A tick spacing giving at least 70 px between ticks.
fn tick_step(px: f64) -> Millis {
    [10, 20, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000]
        .into_iter()
        .find(|s| *s as f64 * px >= 70.0)
        .unwrap_or(100_000)
}

/// The SVG of a timeline: one lane per actor and node, faults shaded over
/// the lanes they hit, operations on top, violations marked at their time.
fn svg(
    lanes: &[String],
    marks: &BTreeMap<String, Vec<Mark>>,
    spans: &[Span],
    violations: &[Violation],
    end: Millis,
) -> String {
    // Wide enough to tell 10 ms apart on a short run, at most ~6000 px.
    let px = (1600.0 / end as f64).clamp(0.4, 2.0);
    let width = LABEL_W + end as f64 * px + 20.0;
    let drawn = draw_lanes(lanes, marks, px, width);
    let (backgrounds, body, ops) = (&drawn.backgrounds, &drawn.body, drawn.ops);
    let height = drawn.bottom + 10.0;
    let faults = draw_faults(spans, &drawn.lane_top, px);
    let axis = draw_axis(end, px, height);
    let marks_v = draw_violations(violations, px, height);
    format!(
        r##"<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.1} {height:.1}" data-ops="{ops}">
<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="3" height="6" fill="#4a6fd0"/></pattern></defs>
<style>
.label {{ font: 12px sans-serif; fill: #333; }}
.axis {{ font: 10px sans-serif; fill: #666; }}
.grid {{ stroke: #e6e6e6; }}
.op.ok {{ fill: #3a9d5d; }} .op.fail {{ fill: #d0463b; }} .op.info {{ fill: #e0a030; }} .op.pending {{ fill: #9e9e9e; }}
.tick {{ fill: #555; }}
.hold .trusted {{ fill: #4a6fd0; }} .hold .believed {{ fill: url(#hatch); stroke: #4a6fd0; stroke-width: .5; }}
.fault {{ fill: #d04040; fill-opacity: .16; }}
.violation line {{ stroke: #b00020; stroke-width: 2; }} .violation text {{ font: bold 11px sans-serif; fill: #b00020; }}
</style>
{backgrounds}{axis}{faults}{body}{marks_v}</svg>
"##
    )
}

/// The lanes drawn: backgrounds with labels, and the operations on them.
struct Lanes {
    backgrounds: String,
    body: String,
    /// Each lane's name, top and height (px).
    lane_top: Vec<(String, f64, f64)>,
    /// Operation bars drawn.
    ops: usize,
    /// Where the last lane ends (px).
    bottom: f64,
}

/// Draws every lane, its marks packed into rows (lane backgrounds first,
/// so that faults go over them and operations on top).
fn draw_lanes(lanes: &[String], marks: &BTreeMap<String, Vec<Mark>>, px: f64, width: f64) -> Lanes {
    let mut out = Lanes { backgrounds: String::new(), body: String::new(), lane_top: Vec::new(), ops: 0, bottom: 0.0 };
    let mut y = AXIS_H;
    for lane in lanes {
        let mut mine: Vec<Mark> = marks.get(lane).cloned().unwrap_or_default();
        mine.sort_by_key(|m| match m {
            Mark::Op { from, .. } | Mark::Hold { from, .. } => *from,
            Mark::Tick { at, .. } => *at,
        });
        let (row_of, rows_used) = rows(&mine, px);
        let has_holds = mine.iter().any(|m| matches!(m, Mark::Hold { .. }));
        let height = LANE_PAD * 2.0 + rows_used as f64 * ROW_H + if has_holds { BAND_H + 3.0 } else { 0.0 };
        out.lane_top.push((lane.clone(), y, height));
        let _ = writeln!(
            out.backgrounds,
            r#"<rect x="0" y="{y:.1}" width="{width:.1}" height="{height:.1}" fill="{}"/><text x="6" y="{:.1}" class="label">{}</text>"#,
            if out.lane_top.len() % 2 == 0 { "#fafafa" } else { "#ffffff" },
            y + height / 2.0 + 4.0,
            esc(lane)
        );
        let _ = writeln!(out.body, r#"<g class="lane">"#);
        for (m, row) in mine.iter().zip(row_of) {
            let x = |t: Millis| LABEL_W + t as f64 * px;
            let row_y = y + LANE_PAD + row as f64 * ROW_H;
            let band_y = y + LANE_PAD + rows_used as f64 * ROW_H + 2.0;
            out.ops += draw_mark(&mut out.body, m, &x, row_y, band_y);
        }
        out.body.push_str("</g>\n");
        y += height;
    }
    out.bottom = y;
    out
}

/// Draws one mark at row `row_y` (a hold in the band at `band_y`); 1 if it
/// is an operation bar.
fn draw_mark(body: &mut String, m: &Mark, x: &dyn Fn(Millis) -> f64, row_y: f64, band_y: f64) -> usize {
    match m {
        Mark::Op { from, to, ending, title } => {
            let w = (x(*to) - x(*from)).max(2.0);
            let _ = writeln!(
                body,
                r#"<rect class="op {}" x="{:.1}" y="{row_y:.1}" width="{w:.1}" height="{:.1}"><title>{}</title></rect>"#,
                ending.class(),
                x(*from),
                ROW_H - 2.0,
                esc(title)
            );
        }
        Mark::Tick { at, title } => {
            let _ = writeln!(
                body,
                r#"<rect class="tick" x="{:.1}" y="{row_y:.1}" width="1.5" height="{:.1}"><title>{}</title></rect>"#,
                x(*at),
                ROW_H - 2.0,
                esc(title)
            );
        }
        Mark::Hold { from, trusted, to, title } => {
            let _ = writeln!(
                body,
                r#"<g class="hold"><title>{}</title><rect class="trusted" x="{:.1}" y="{band_y:.1}" width="{:.1}" height="{BAND_H}"/><rect class="believed" x="{:.1}" y="{band_y:.1}" width="{:.1}" height="{BAND_H}"/></g>"#,
                esc(title),
                x(*from),
                (x(*trusted) - x(*from)).max(0.0),
                x(*trusted),
                (x(*to) - x(*trusted)).max(0.0)
            );
        }
    }
    usize::from(matches!(m, Mark::Op { .. }))
}

/// Shades each fault over the lanes it hits.
fn draw_faults(spans: &[Span], lane_top: &[(String, f64, f64)], px: f64) -> String {
    let mut faults = String::new();
    for s in spans {
        for lane in &s.lanes {
            let Some((_, top, h)) = lane_top.iter().find(|(l, _, _)| l == lane) else { continue };
            let x0 = LABEL_W + s.from as f64 * px;
            let w = ((s.to - s.from.min(s.to)) as f64 * px).max(2.0);
            let _ = writeln!(
                faults,
                r#"<rect class="fault" x="{x0:.1}" y="{top:.1}" width="{w:.1}" height="{h:.1}"><title>{}</title></rect>"#,
                esc(&s.title)
            );
        }
    }
    faults
}

/// The time axis and its grid lines.
fn draw_axis(end: Millis, px: f64, height: f64) -> String {
    let mut axis = String::new();
    let step = tick_step(px);
    let mut t = 0;
    while t <= end {
        let x = LABEL_W + t as f64 * px;
        let _ = writeln!(
            axis,
            r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{height:.1}" class="grid"/><text x="{x:.1}" y="{:.1}" class="axis">{t} ms</text>"#,
            AXIS_H - 4.0,
            AXIS_H - 8.0
        );
        t += step;
    }
    axis
}

/// A mark per violated invariant and instant, labels packed into rows.
fn draw_violations(violations: &[Violation], px: f64, height: f64) -> String {
    let mut marks_v = String::new();
    // Where each label row is free again (px); a label takes the first row
    // it fits in, the last row when none is free.
    let mut free_from = [f64::MIN; LABEL_ROWS];
    let mut drawn: Vec<(&str, Millis)> = Vec::new();
    for v in violations {
        let Some(at) = v.at else { continue };
        // One mark per invariant and instant; the list above the chart
        // has every violation's detail.
        if drawn.contains(&(v.invariant.name(), at)) {
            continue;
        }
        drawn.push((v.invariant.name(), at));
        let x = LABEL_W + at as f64 * px;
        let row = free_from.iter().position(|f| *f <= x).unwrap_or(LABEL_ROWS - 1);
        free_from[row] = x + 3.0 + v.invariant.name().len() as f64 * 6.5 + 8.0;
        let text_y = 11.0 + row as f64 * 11.0;
        let _ = writeln!(
            marks_v,
            r#"<g class="violation"><title>[{}] at {at} ms: {}</title><line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{height:.1}"/><text x="{:.1}" y="{text_y:.1}">{}</text></g>"#,
            esc(v.invariant.name()),
            esc(&v.detail),
            text_y - 9.0,
            x + 3.0,
            esc(v.invariant.name())
        );
    }
    marks_v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;
    use crate::nemesis::FaultKind;

    fn run() -> (Vec<Event>, Vec<Violation>) {
        let h = History::new();
        let acquire = || Op::Note { text: "acquire l".into() };
        let a = h.invoke_at(0, "client-0", acquire());
        h.ok(a, "client-0", acquire());
        h.fault_at(20, FaultRecord::on_client(FaultKind::ClientPause, "client-0", false, 200));
        let b = h.invoke_at(50, "client-1", acquire());
        h.fail(b, "client-1", acquire());
        h.fault_at(220, FaultRecord::on_client(FaultKind::ClientPause, "client-0", true, 200));
        h.fault_at(230, FaultRecord::on_node(FaultKind::ServerRestart, "redis-0", false, 10));
        let w = h.invoke_at(240, "client-0", Op::Note { text: "write <x> & \"y\"".into() });
        h.info(w, "client-0", Op::Note { text: "timed out".into() });
        (
            h.events(),
            vec![Violation::new(crate::checker::Invariant::new("mutual-exclusion"), Some(150), "two <holders>")],
        )
    }

    fn page_of(events: &[Event], violations: &[Violation]) -> String {
        Timeline {
            scenario: "lock-naive",
            expectation: "broken on purpose",
            replay: "rp-sim replay --scenario lock-naive --seed 1",
            nodes: 1,
            simulated_ms: 300,
            digest: "0123",
            events,
            violations,
            tenures: &[],
        }
        .html()
    }

    fn tenure() -> Tenure {
        Tenure { process: "client-0".into(), from: 0, trusted: 100, to: 240, title: "client-0 held l".into() }
    }

    #[test]
    fn faults_pair_with_their_undo_and_hit_the_lanes_they_name() {
        let (events, _) = run();
        let lanes = lanes(&events, 1);
        assert_eq!(lanes, ["client-0", "client-1", "redis-0"]);
        let spans = spans(&events, &lanes);
        assert_eq!((spans[0].from, spans[0].to, spans[0].lanes.clone()), (20, 220, vec!["client-0".to_string()]));
        // Never undone: runs to the end of the history.
        assert_eq!((spans[1].from, spans[1].to, spans[1].lanes.clone()), (230, 240, vec!["redis-0".to_string()]));
        assert_eq!(spans.len(), 2);
    }

    #[test]
    fn every_operation_is_a_bar_and_a_tenure_is_trusted_to_its_deadline() {
        let (events, _) = run();
        let beyond = Tenure { process: "client-1".into(), from: 50, trusted: 900, to: 60, title: "c1".into() };
        let marks = marks(&events, &[tenure(), beyond]);
        let c0 = &marks["client-0"];
        assert!(c0.contains(&Mark::Hold { from: 0, trusted: 100, to: 240, title: "client-0 held l".into() }));
        // A deadline past the tenure's end is drawn to its end.
        assert!(marks["client-1"].contains(&Mark::Hold { from: 50, trusted: 60, to: 60, title: "c1".into() }));
        let endings: Vec<Ending> = c0
            .iter()
            .filter_map(|m| match m {
                Mark::Op { ending, .. } => Some(*ending),
                _ => None,
            })
            .collect();
        assert_eq!(endings, [Ending::Ok, Ending::Unknown]);
        assert!(matches!(marks["client-1"][0], Mark::Op { ending: Ending::Fail, from: 50, to: 50, .. }));
    }

    #[test]
    fn the_page_is_escaped_counts_its_bars_and_marks_the_violation() {
        let (events, violations) = run();
        let page = page_of(&events, &violations);
        assert!(page.contains(r#"data-ops="3""#), "three operations");
        assert_eq!(page.matches(r#"<rect class="op "#).count(), 3);
        assert!(page.contains("two &lt;holders&gt;"));
        assert!(page.contains("write &lt;x&gt; &amp; &quot;y&quot;"));
        assert!(!page.contains("<holders>"));
        assert!(page.contains(r#"<g class="violation">"#));
        // Self-contained: the SVG namespace is the only address in it.
        assert_eq!(page.matches("http").count(), page.matches("http://www.w3.org/2000/svg").count());
        assert!(!page.contains("src=") && !page.contains("href"));
        assert_eq!(page_of(&events, &violations), page, "the same run gives the same page");
    }
}
