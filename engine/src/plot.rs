//! PNG charts that render on a fresh machine: the font is embedded in the binary.

use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

/// The font family name charts use; registered from embedded bytes, never from the system.
const FAMILY: &str = "sans-serif";

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        plotters::style::register_font(
            FAMILY,
            FontStyle::Normal,
            epaint_default_fonts::UBUNTU_LIGHT,
        )
        .unwrap_or_else(|_| panic!("the embedded chart font is invalid"));
    });
}

/// One line of a chart.
#[derive(Clone, Debug, Default)]
pub struct Series {
    /// Its legend.
    pub label: String,
    /// Its points, in order.
    pub points: Vec<(f64, f64)>,
    /// The 95% interval of each point's y (`(lo, hi)`, in the order of `points`), drawn as
    /// error bars; empty when the series has none.
    pub errors: Vec<(f64, f64)>,
}

impl Series {
    /// A series of `(x, y)` points without error bars: computed values (a model, a CDF), or
    /// measured ones whose interval is not estimated.
    pub fn new(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            label: label.into(),
            points,
            errors: Vec::new(),
        }
    }

    /// A series of `(x, y, 95% interval of y)` points: `None` intervals draw no bar.
    pub fn with_errors(
        label: impl Into<String>,
        points: impl IntoIterator<Item = (f64, f64, Option<(f64, f64)>)>,
    ) -> Series {
        let (points, errors) = points
            .into_iter()
            .map(|(x, y, ci)| ((x, y), ci.unwrap_or((y, y))))
            .unzip();
        Series {
            label: label.into(),
            points,
            errors,
        }
    }
}

/// An error bar: its two ends, in a panel's drawing coordinates.
type Bar = ((f64, f64), (f64, f64));

/// How a panel's x axis is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XScale {
    /// Linear from zero.
    Linear,
    /// Log2, labelled as byte sizes.
    Bytes,
    /// Log2, labelled as plain numbers (group sizes).
    Log2,
    /// Log10, labelled as plain numbers (latencies that span decades).
    Log10,
}

/// One panel: a title, axis labels and its series; x is drawn as `x` says, y on a linear or
/// (with `log_y`) a log10 scale.
#[derive(Clone, Debug)]
pub struct Panel {
    /// Its title.
    pub title: String,
    /// The x axis's label.
    pub x_label: String,
    /// The y axis's label.
    pub y_label: String,
    /// Whether the y axis is logarithmic.
    pub log_y: bool,
    /// How the x axis is scaled and labelled.
    pub x: XScale,
    /// Its lines.
    pub series: Vec<Series>,
}

/// The colour a series' label is drawn in, if it has one of its own (else its position in the
/// panel picks one).
pub type Colours<'a> = &'a dyn Fn(&str) -> Option<RGBColor>;

/// Draws `panels` side by side into a PNG at `path`, series in `colours`.
pub fn draw_png(
    path: &Path,
    caption: &str,
    panels: &[Panel],
    colours: Colours<'_>,
) -> Result<(), String> {
    register_font();
    let width = 700 * panels.len().max(1) as u32;
    let root = BitMapBackend::new(path, (width, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = root
        .titled(caption, (FAMILY, 24))
        .map_err(|e| e.to_string())?;
    let areas = root.split_evenly((1, panels.len().max(1)));
    for (panel, area) in panels.iter().zip(areas.iter()) {
        draw_panel(area, panel, colours)?;
    }
    root.present()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn draw_panel(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    panel: &Panel,
    colours: Colours<'_>,
) -> Result<(), String> {
    // A log y axis is drawn as log10(y) on a linear axis whose labels show 10^label.
    let ty = |y: f64| if panel.log_y { y.max(1e-9).log10() } else { y };
    let series: Vec<Vec<(f64, f64)>> = panel
        .series
        .iter()
        .map(|s| s.points.iter().map(|&(x, y)| (x, ty(y))).collect())
        .collect();
    // Each error bar as its two ends, in the axis's coordinates.
    let bars: Vec<Vec<Bar>> = panel
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .zip(&s.errors)
                .filter(|(_, (lo, hi))| hi > lo)
                .map(|(&(x, _), &(lo, hi))| ((x, ty(lo)), (x, ty(hi))))
                .collect()
        })
        .collect();
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    let ends = bars.iter().flatten().flat_map(|&(a, b)| [a, b]);
    for (x, y) in series.iter().flatten().copied().chain(ends) {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (1.0, 2.0, 0.0, 1.0);
    }
    let x1 = if x1 <= x0 { x0 * 2.0 } else { x1 };
    let (y0, y1) = if panel.log_y {
        (y0.floor(), y1.ceil().max(y0.floor() + 1.0))
    } else {
        (0.0, if y1 <= 0.0 { 1.0 } else { y1 * 1.1 })
    };
    if panel.x != XScale::Linear {
        let chart = ChartBuilder::on(area)
            .caption(&panel.title, (FAMILY, 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(
                (x0..x1)
                    .log_scale()
                    .base(if panel.x == XScale::Log10 { 10.0 } else { 2.0 }),
                y0..y1,
            )
            .map_err(|e| e.to_string())?;
        match panel.x {
            XScale::Bytes => finish(chart, panel, &series, &bars, &|x| human_bytes(*x), colours),
            XScale::Log10 => finish(chart, panel, &series, &bars, &|x| plain(*x), colours),
            _ => finish(
                chart,
                panel,
                &series,
                &bars,
                &|x| format!("{x:.0}"),
                colours,
            ),
        }
    } else {
        let chart = ChartBuilder::on(area)
            .caption(&panel.title, (FAMILY, 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..x1 * 1.05, y0..y1)
            .map_err(|e| e.to_string())?;
        // Tick positions are sums of floats (0.30000000000000004): three decimals at most;
        // whole numbers print as before.
        finish(
            chart,
            panel,
            &series,
            &bars,
            &|x| format!("{}", (x * 1000.0).round() / 1000.0),
            colours,
        )
    }
}

/// Draws the mesh, the series (with their error bars) and the legend of a panel on its chart.
fn finish<'a, X>(
    mut chart: ChartContext<
        'a,
        BitMapBackend<'a>,
        Cartesian2d<X, plotters::coord::types::RangedCoordf64>,
    >,
    panel: &Panel,
    series: &[Vec<(f64, f64)>],
    bars: &[Vec<Bar>],
    x_format: &dyn Fn(&f64) -> String,
    colours: Colours<'_>,
) -> Result<(), String>
where
    X: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(&panel.x_label)
        .y_desc(&panel.y_label)
        .label_style((FAMILY, 14))
        .x_label_formatter(x_format)
        .y_label_formatter(&|y| {
            if panel.log_y {
                plain(10f64.powf(*y))
            } else {
                format!("{}", (y * 100.0).round() / 100.0)
            }
        })
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, (s, points)) in panel.series.iter().zip(series).enumerate() {
        let color = colours(&s.label).map_or(Palette99::pick(i).to_rgba(), |c| c.to_rgba());
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?
            .label(&s.label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(
                bars[i]
                    .iter()
                    .map(|&(lo, hi)| PathElement::new(vec![lo, hi], color.stroke_width(1))),
            )
            .map_err(|e| e.to_string())?;
    }
    chart
        .configure_series_labels()
        .label_font((FAMILY, 14))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// The colour of a series labelled `label` as `harness compare` labels protocols (`ramcast`,
/// `tram:breadth`, `ridge:ring`, ...): a label of `fixed` its colour, the same in every panel
/// and every comparison; `None` for labels of protocols that are not `coloured`, which are
/// coloured by position. A variant that is not listed (a TRAM tree that is not a preset) of a
/// protocol that is coloured gets one drawn from its label, darkened if it is too pale to read
/// on white. A protocol's default variant named explicitly (`ridge:ridge`) is the protocol.
pub fn label_colour<'a>(
    label: &str,
    mut fixed: impl Iterator<Item = &'a (&'static str, RGBColor)>,
    coloured: impl Fn(&str) -> bool,
) -> Option<RGBColor> {
    let label = match label.split_once(':') {
        Some((name, variant)) if name == variant => name,
        _ => label,
    };
    if let Some((_, c)) = fixed.find(|(name, _)| *name == label) {
        return Some(*c);
    }
    let (name, _) = label.split_once(':')?;
    if !coloured(name) {
        return None;
    }
    // FNV-1a of the label: stable across runs and platforms.
    let h = label.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let (r, g, b) = Palette99::pick(h as usize % 99).rgb();
    let pale = u32::from(r) + u32::from(g) + u32::from(b) > 600;
    let darken = |x: u8| {
        if pale {
            (u32::from(x) * 3 / 5) as u8
        } else {
            x
        }
    };
    Some(RGBColor(darken(r), darken(g), darken(b)))
}

/// A tick of a log axis: whole from 10 on, two decimals below, in scientific notation below
/// a hundredth (a CCDF's tail reaches 1e-4).
fn plain(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}")
    } else if v >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.0e}")
    }
}

/// `4096` -> `4K`, `1048576` -> `1M`.
pub fn human_bytes(x: f64) -> String {
    let x = x.round() as u64;
    match x {
        x if x >= 1 << 20 && x % (1 << 20) == 0 => format!("{}M", x >> 20),
        x if x >= 1 << 10 && x % (1 << 10) == 0 => format!("{}K", x >> 10),
        x => x.to_string(),
    }
}
