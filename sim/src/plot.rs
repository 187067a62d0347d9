//! Plots of the histograms: one self-contained SVG file per family and
//! histogram, every variant of the family on the same chart.
//!
//! A table's p99 hides what a plot shows at once: a bimodal failover time,
//! a broken variant's split-brain windows an order of magnitude longer
//! than the correct one's, a fixed-window limiter's admissions past the
//! limit line. Each chart is a cumulative distribution (the fraction of
//! samples at or below x) because variants with very different sample
//! counts then share one y axis. A time axis is logarithmic when the
//! samples span more than [`LOG_SPREAD`]× (a 2 ms and a 2 s window on one
//! chart); counts and percentages stay linear, where a bound reads best.
//! Bounds a family declares ([`Bound`], e.g. a limiter's limit) are drawn
//! as dashed vertical lines: what lies right of one breaks the promise.
//!
//! Drawn with `plotters`' SVG backend (text as SVG `<text>`, so no font
//! files are read and the output is the same on every machine).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;

use crate::stats::{Bound, Histograms, Unit};

/// Times (ms) spanning more than this factor get a logarithmic x axis.
pub(crate) const LOG_SPREAD: u64 = 50;

/// A variant's histograms as [`Histograms::counts`] reads them out.
type Samples = BTreeMap<String, Vec<(u64, u64)>>;

/// Chart size in pixels.
const SIZE: (u32, u32) = (760, 420);

/// One variant's histogram on a chart.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Curve<'a> {
    /// The variant (scenario) name: the legend.
    pub scenario: &'a str,
    /// Its histograms (the chart picks its own by name).
    pub histograms: &'a Histograms,
}

/// A chart written to disk.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct PlotFile {
    /// The family.
    pub family: String,
    /// The histogram.
    pub histogram: String,
    /// The file, relative to the output directory.
    pub path: PathBuf,
}

/// The cumulative distribution of `(value, count)` pairs as step points:
/// `(value, fraction of samples ≤ value)`, one rise per recorded value.
pub(crate) fn cdf(counts: &[(u64, u64)]) -> Vec<(u64, f64)> {
    let total: u64 = counts.iter().map(|(_, n)| n).sum();
    if total == 0 {
        return Vec::new();
    }
    let mut sorted = counts.to_vec();
    sorted.sort_unstable();
    let mut seen = 0u64;
    let mut points = Vec::with_capacity(sorted.len() * 2);
    for (value, n) in sorted {
        points.push((value, seen as f64 / total as f64));
        seen += n;
        points.push((value, seen as f64 / total as f64));
    }
    points
}

/// One run's charts: each histogram of `histograms` (the seeds of
/// `scenario`, of `family`) drawn into `dir` with `bounds`; returns the
/// files written, `dir` included (what `explore --plot` and `run_main
/// --plot` print).
pub(crate) fn write_one(
    dir: &Path,
    family: &str,
    scenario: &str,
    histograms: &Histograms,
    bounds: Vec<Bound>,
) -> std::io::Result<Vec<PathBuf>> {
    let curves = BTreeMap::from([(family.to_string(), vec![Curve { scenario, histograms }])]);
    let bounds = BTreeMap::from([(family.to_string(), bounds)]);
    Ok(write_plots(dir, &curves, &bounds)?.into_iter().map(|f| dir.join(f.path)).collect())
}

/// Writes one chart per (family, histogram) with samples into `dir`
/// (created if missing), as `<family>-<histogram>.svg`; returns them in
/// family, then histogram order.
pub(crate) fn write_plots(
    dir: &Path,
    families: &BTreeMap<String, Vec<Curve<'_>>>,
    bounds: &BTreeMap<String, Vec<Bound>>,
) -> std::io::Result<Vec<PlotFile>> {
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    for (family, curves) in families {
        // Each variant's samples, read out once: (variant, histogram → counts).
        let counts: Vec<(&str, Samples)> = curves.iter().map(|c| (c.scenario, c.histograms.counts())).collect();
        let mut names: Vec<&str> = counts.iter().flat_map(|(_, h)| h.keys().map(String::as_str)).collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let series: Vec<(&str, Vec<(u64, u64)>)> = counts
                .iter()
                .filter_map(|(scenario, h)| {
                    let counts = h.get(name).filter(|c| !c.is_empty())?;
                    Some((*scenario, counts.clone()))
                })
                .collect();
            if series.is_empty() {
                continue;
            }
            let lines: Vec<&Bound> =
                bounds.get(family).into_iter().flatten().filter(|b| b.histogram.name == name).collect();
            let unit = curves.iter().find_map(|c| c.histograms.unit(name)).unwrap_or(Unit::Ms);
            let file = PathBuf::from(format!("{family}-{name}.svg"));
            let svg = chart(family, (name, unit), &series, &lines).map_err(std::io::Error::other)?;
            std::fs::write(dir.join(&file), svg)?;
            files.push(PlotFile { family: family.clone(), histogram: name.to_string(), path: file });
        }
    }
    Ok(files)
}

/// The SVG text of one chart of `histogram` (its name and unit).
pub(crate) fn chart(
    family: &str,
    (histogram, unit): (&str, Unit),
    series: &[(&str, Vec<(u64, u64)>)],
    bounds: &[&Bound],
) -> Result<String, String> {
    let curves: Vec<Line<'_>> = series
        .iter()
        .map(|(name, counts)| Line { name, samples: counts.iter().map(|(_, n)| n).sum(), points: cdf(counts) })
        .collect();
    let lo = curves.iter().flat_map(|l| l.points.first()).map(|(v, _)| *v).min().unwrap_or(0);
    let hi = curves
        .iter()
        .flat_map(|l| l.points.last())
        .map(|(v, _)| *v)
        .chain(bounds.iter().map(|b| b.value))
        .max()
        .unwrap_or(1);
    let log = unit == Unit::Ms && hi >= lo.max(1).saturating_mul(LOG_SPREAD);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let caption = format!("{family}: {histogram}");
        let mut builder = ChartBuilder::on(&root);
        builder.caption(caption, ("sans-serif", 18)).margin(12).x_label_area_size(42).y_label_area_size(52);
        let x_desc = if log { format!("{unit} (log scale; below 1 drawn at 1)") } else { unit.to_string() };
        // Plotted as f64 so that one code path serves both axes; values are
        // at most a few million, exact in an f64.
        let top = (hi as f64 * 1.05).max(hi as f64 + 1.0);
        if log {
            let mut chart =
                builder.build_cartesian_2d((1f64..top).log_scale(), 0f64..1.02).map_err(|e| e.to_string())?;
            draw(&mut chart, &curves, bounds, &x_desc, |v| (v as f64).max(1.0))?;
        } else {
            let left = if lo == 0 { -0.5 } else { lo as f64 - 1.0 };
            let mut chart = builder.build_cartesian_2d(left..top, 0f64..1.02).map_err(|e| e.to_string())?;
            draw(&mut chart, &curves, bounds, &x_desc, |v| v as f64)?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// One variant's curve.
struct Line<'a> {
    name: &'a str,
    samples: u64,
    points: Vec<(u64, f64)>,
}

/// Colours of the variants, in registry order (a colour-blind-safe set).
const PALETTE: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
];

fn draw<'a, X>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    curves: &[Line<'_>],
    bounds: &[&Bound],
    x_desc: &str,
    x: impl Fn(u64) -> f64,
) -> Result<(), String>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("fraction of samples ≤ x")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.1}"))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(|e| e.to_string())?;
    let y_max = 1.02;
    for bound in bounds {
        let at = x(bound.value);
        let style = ShapeStyle { color: BLACK.mix(0.8), filled: false, stroke_width: 2 };
        chart
            .draw_series(DashedLineSeries::new(vec![(at, 0.0), (at, y_max)], 6, 4, style))
            .map_err(|e| e.to_string())?
            .label(bound.label.clone())
            .legend(move |(px, py)| PathElement::new(vec![(px, py), (px + 18, py)], style));
    }
    for (i, Line { name, samples, points }) in curves.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let style = ShapeStyle { color: colour.to_rgba(), filled: false, stroke_width: 2 };
        chart
            .draw_series(LineSeries::new(points.iter().map(|(v, f)| (x(*v), *f)), style))
            .map_err(|e| e.to_string())?
            .label(format!("{name} ({samples} samples)"))
            .legend(move |(px, py)| PathElement::new(vec![(px, py), (px + 18, py)], style));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.7))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cdf_rises_to_one_at_each_recorded_value() {
        let points = cdf(&[(30, 1), (10, 3)]);
        assert_eq!(points, vec![(10, 0.0), (10, 0.75), (30, 0.75), (30, 1.0)]);
        assert!(cdf(&[]).is_empty());
    }

    #[test]
    fn a_chart_names_every_variant_and_bound() {
        let admissions = crate::stats::Metric::new("admissions-per-window", Unit::Requests);
        let bound = Bound { histogram: admissions, value: 5, label: "limit 5".into() };
        let svg = chart(
            "rate-limit",
            ("admissions-per-window", Unit::Requests),
            &[("rate-limit", vec![(1, 4), (5, 2)]), ("rate-limit-fixed-window", vec![(3, 1), (9, 2)])],
            &[&bound],
        )
        .expect("draws");
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        for text in ["rate-limit (6 samples)", "rate-limit-fixed-window (3 samples)", "limit 5", "fraction of samples"]
        {
            assert!(svg.contains(text), "{text} missing");
        }
    }

    #[test]
    fn a_wide_spread_gets_a_log_axis() {
        let svg =
            chart("lock", ("unsafe-window", Unit::Ms), &[("lock-naive", vec![(0, 3), (2000, 1)])], &[]).expect("draws");
        assert!(svg.contains("log scale"));
        let svg =
            chart("lock", ("unsafe-window", Unit::Ms), &[("lock-naive", vec![(10, 3), (20, 1)])], &[]).expect("draws");
        assert!(!svg.contains("log scale"));
        let svg =
            chart("rate-limit", ("window-fill", Unit::PercentOfLimit), &[("rate-limit", vec![(1, 3), (160, 1)])], &[])
                .expect("draws");
        assert!(!svg.contains("log scale"), "a percentage stays linear");
    }
}
