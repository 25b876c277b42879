//! Plain SVG line charts (no plotting library): log-scaled axes, one
//! polyline per series, several panels side by side. Enough for the
//! seed's Figures 5 and 6.

use std::fmt::Write;

/// One line of a panel.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// One chart.
#[derive(Debug, Clone)]
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Draw a horizontal reference line at this y (e.g. ratio 1).
    pub reference: Option<f64>,
}

const W: f64 = 420.0;
const H: f64 = 300.0;
const ML: f64 = 62.0;
const MR: f64 = 12.0;
const MT: f64 = 28.0;
const MB: f64 = 42.0;
const KNOWN: [&str; 8] = [
    "ac",
    "ac-full",
    "ac-compact",
    "wm",
    "e2xb",
    "bmh",
    "hs",
    "auto",
];
const COLORS: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#000000",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn log_range(v: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for x in v.filter(|x| x.is_finite() && *x > 0.0) {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let (a, b) = (lo.log10().floor(), hi.log10().ceil());
    (a, if b > a { b } else { a + 1.0 })
}

/// Renders `panels` in a grid of `cols` columns, with one shared legend.
pub fn render(title: &str, panels: &[Panel], cols: usize) -> String {
    let cols = cols.max(1);
    let rows = panels.len().div_ceil(cols);
    let mut names: Vec<&str> = Vec::new();
    for p in panels {
        for s in &p.series {
            if !names.contains(&s.name.as_str()) {
                names.push(&s.name);
            }
        }
    }
    let legend_h = 24.0;
    let total_w = W * cols as f64;
    let total_h = 30.0 + legend_h + H * rows as f64;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" viewBox="0 0 {total_w} {total_h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        o,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="14">{}</text>"#,
        total_w / 2.0,
        esc(title)
    );
    // Known engines keep their colour across charts; others by order.
    let color = |name: &str| {
        let i = KNOWN
            .iter()
            .position(|n| *n == name)
            .or_else(|| {
                names
                    .iter()
                    .position(|n| *n == name)
                    .map(|i| i + KNOWN.len())
            })
            .unwrap_or(0);
        COLORS[i % COLORS.len()]
    };
    // `auto` coincides with the engine it picked: draw it dashed on top.
    let style = |name: &str| {
        if name == "auto" {
            r#" stroke-width="3" stroke-dasharray="7 5""#
        } else {
            r#" stroke-width="1.8""#
        }
    };
    for (i, n) in names.iter().enumerate() {
        let x = 10.0 + i as f64 * 115.0;
        let _ = writeln!(
            o,
            r#"<line x1="{x}" y1="38" x2="{}" y2="38" stroke="{}"{}/><text x="{}" y="42">{}</text>"#,
            x + 18.0,
            color(n),
            style(n),
            x + 22.0,
            esc(n)
        );
    }
    for (pi, p) in panels.iter().enumerate() {
        let ox = W * (pi % cols) as f64;
        let oy = 30.0 + legend_h + H * (pi / cols) as f64;
        let (x0, x1) = log_range(p.series.iter().flat_map(|s| s.points.iter().map(|q| q.0)));
        let (y0, y1) = log_range(
            p.series
                .iter()
                .flat_map(|s| s.points.iter().map(|q| q.1))
                .chain(p.reference),
        );
        let px = |x: f64| ox + ML + (x.log10() - x0) / (x1 - x0) * (W - ML - MR);
        let py = |y: f64| oy + H - MB - (y.log10() - y0) / (y1 - y0) * (H - MT - MB);
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="12">{}</text>"#,
            ox + W / 2.0,
            oy + 16.0,
            esc(&p.title)
        );
        let _ = writeln!(
            o,
            r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#444"/>"##,
            ox + ML,
            oy + MT,
            W - ML - MR,
            H - MT - MB
        );
        let mut e = x0;
        while e <= x1 + 1e-9 {
            let x = px(10f64.powf(e));
            let _ = writeln!(
                o,
                r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#ddd"/><text x="{x}" y="{}" text-anchor="middle">{}</text>"##,
                oy + MT,
                oy + H - MB,
                oy + H - MB + 14.0,
                fmt_pow(e)
            );
            e += 1.0;
        }
        let mut e = y0;
        while e <= y1 + 1e-9 {
            let y = py(10f64.powf(e));
            let _ = writeln!(
                o,
                r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
                ox + ML,
                ox + W - MR,
                ox + ML - 4.0,
                y + 4.0,
                fmt_pow(e)
            );
            e += 1.0;
        }
        if let Some(r) = p.reference {
            let y = py(r);
            let _ = writeln!(
                o,
                r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#000" stroke-dasharray="4 3"/>"##,
                ox + ML,
                ox + W - MR
            );
        }
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            ox + ML + (W - ML - MR) / 2.0,
            oy + H - 8.0,
            esc(&p.x_label)
        );
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})">{}</text>"#,
            ox + 14.0,
            oy + MT + (H - MT - MB) / 2.0,
            ox + 14.0,
            oy + MT + (H - MT - MB) / 2.0,
            esc(&p.y_label)
        );
        for s in &p.series {
            let pts: Vec<String> = s
                .points
                .iter()
                .filter(|q| q.0 > 0.0 && q.1 > 0.0 && q.1.is_finite())
                .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            if pts.is_empty() {
                continue;
            }
            let _ = writeln!(
                o,
                r#"<polyline fill="none" stroke="{}"{} points="{}"/>"#,
                color(&s.name),
                style(&s.name),
                pts.join(" ")
            );
        }
    }
    o.push_str("</svg>\n");
    o
}

fn fmt_pow(e: f64) -> String {
    let v = 10f64.powf(e);
    if (0.001..100_000.0).contains(&v) {
        let s = format!("{v}");
        s.trim_end_matches(".0").to_string()
    } else {
        format!("1e{e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_well_formed_svg() {
        let p = Panel {
            title: "t <1>".into(),
            x_label: "rules".into(),
            y_label: "ns".into(),
            series: vec![Series {
                name: "ac".into(),
                points: vec![(1.0, 10.0), (100.0, 50.0)],
            }],
            reference: Some(1.0),
        };
        let s = render("x", &[p.clone(), p], 2);
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("polyline") && s.contains("t &lt;1&gt;"));
    }
}
