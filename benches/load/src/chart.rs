//! The chart of a run: one group of bars per throughput workload, each bar a ratio of medians
//! (sake ÷ bare axum, rmcp ÷ bare axum, or sake ÷ rmcp where the workload has no bare axum),
//! with a line at 1.0. Written as SVG with plotters.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// What a bar compares.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Series {
    SakeOverAxum,
    RmcpOverAxum,
    SakeOverRmcp,
}

impl Series {
    const ALL: [Series; 3] = [
        Series::SakeOverAxum,
        Series::RmcpOverAxum,
        Series::SakeOverRmcp,
    ];

    fn label(self) -> &'static str {
        match self {
            Series::SakeOverAxum => "sake ÷ bare axum",
            Series::RmcpOverAxum => "rmcp ÷ bare axum",
            Series::SakeOverRmcp => "sake ÷ rmcp (no bare axum in this workload)",
        }
    }

    fn color(self) -> RGBColor {
        match self {
            Series::SakeOverAxum => RGBColor(0xd9, 0x5f, 0x02),
            Series::RmcpOverAxum => RGBColor(0x1f, 0x77, 0xb4),
            Series::SakeOverRmcp => RGBColor(0x2c, 0xa0, 0x2c),
        }
    }
}

/// One workload's bars.
#[derive(Clone, Debug)]
pub struct Group {
    pub label: String,
    pub bars: Vec<(Series, f64)>,
}

/// Draws `groups` into an SVG file at `path`.
pub fn write(path: &Path, title: &str, groups: &[Group]) -> Result<(), String> {
    let groups: Vec<Group> = groups
        .iter()
        .map(|g| Group {
            label: g.label.clone(),
            bars: g
                .bars
                .iter()
                .copied()
                .filter(|(_, v)| v.is_finite() && *v > 0.0)
                .collect(),
        })
        .filter(|g| !g.bars.is_empty())
        .collect();
    if groups.is_empty() {
        return Err("no throughput workload with a baseline ran".into());
    }
    draw(path, title, &groups).map_err(|e| e.to_string())
}

fn draw(
    path: &Path,
    title: &str,
    groups: &[Group],
) -> Result<(), Box<dyn std::error::Error + 'static>> {
    let width = (180 * groups.len() as u32).clamp(720, 1800);
    let root = SVGBackend::new(path, (width, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = groups
        .iter()
        .flat_map(|g| g.bars.iter().map(|(_, v)| *v))
        .fold(1.0_f64, f64::max);
    let n = groups.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..n, 0.0..top * 1.18)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("ratio of medians (higher: faster than the baseline)")
        .y_label_formatter(&|v| format!("{v:.1}×"))
        .label_style(("sans-serif", 15))
        .draw()?;
    let value_style =
        TextStyle::from(("sans-serif", 15).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    for series in Series::ALL {
        let mut bars = Vec::new();
        let mut values = Vec::new();
        for (i, g) in groups.iter().enumerate() {
            let Some(slot) = g.bars.iter().position(|(s, _)| *s == series) else {
                continue;
            };
            let v = g.bars[slot].1;
            // The group's bars side by side in the middle 80% of its slot.
            let w = 0.8 / g.bars.len() as f64;
            let x0 = i as f64 + 0.1 + w * slot as f64;
            bars.push(Rectangle::new(
                [(x0 + 0.05 * w, 0.0), (x0 + 0.95 * w, v)],
                series.color().filled(),
            ));
            values.push(Text::new(
                format!("{v:.2}×"),
                (x0 + w / 2.0, v),
                value_style.clone(),
            ));
        }
        if bars.is_empty() {
            continue;
        }
        let color = series.color();
        chart
            .draw_series(bars)?
            .label(series.label())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled()));
        chart.draw_series(values)?;
    }
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(0.0, 1.0), (n, 1.0)],
        BLACK.stroke_width(2),
    )))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()?;
    // The workloads' names under their groups, in the label area (drawn on the whole image:
    // the plotting area would clip them).
    let label_style =
        TextStyle::from(("sans-serif", 17).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, g) in groups.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        root.draw(&Text::new(
            g.label.clone(),
            (x, y + 10),
            label_style.clone(),
        ))?;
    }
    root.present()?;
    Ok(())
}
