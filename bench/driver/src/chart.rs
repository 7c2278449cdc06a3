//! The chart: the table's headline metrics as ratios to bare, presa's and rmcp's side by
//! side with each target marked, written as SVG text (no plotting dependency). It is drawn
//! from the markdown table `report` prints, never from the samples directly, so a chart
//! always shows the figures of the table it sits next to, and a table kept from an
//! earlier run can be drawn again (`bench-driver chart TABLE.md OUT.svg`).

use crate::report::Goal;
use std::fmt::Write as _;

/// Which way a ratio is good.
#[derive(Clone, Copy)]
enum Better {
    Higher,
    Lower,
}

/// One metric of the chart: a row of the table, by its label there.
struct Metric {
    /// The row's label in the table (`report`'s `ROWS`).
    row: &'static str,
    /// What the chart calls it.
    name: &'static str,
    better: Better,
    /// The target on presa ÷ bare, when the row has one.
    target: Option<Goal>,
}

const fn metric(
    row: &'static str,
    name: &'static str,
    better: Better,
    target: Option<Goal>,
) -> Metric {
    Metric {
        row,
        name,
        better,
        target,
    }
}

/// The metrics drawn, in order: every ratio target of the table, and what a user pays
/// besides (CPU and memory over stdio, the binary).
const METRICS: &[Metric] = &[
    metric(
        "HTTP tools/call throughput, c=32 (req/s)",
        "HTTP throughput, 32 connections",
        Better::Higher,
        Some(Goal::AtLeast(0.85)),
    ),
    metric(
        "server CPU per HTTP call, c=32 (µs)",
        "CPU per HTTP call, 32 connections",
        Better::Lower,
        Some(Goal::AtMost(1.3)),
    ),
    metric(
        "HTTP latency p50, c=1 (µs)",
        "HTTP latency p50, 1 connection",
        Better::Lower,
        Some(Goal::AtMost(1.2)),
    ),
    metric(
        "HTTP peak RSS under c=32 load (MiB)",
        "HTTP peak memory under load",
        Better::Lower,
        Some(Goal::AtMost(1.5)),
    ),
    metric(
        "stdio pipelined throughput (req/s)",
        "stdio pipelined throughput",
        Better::Higher,
        Some(Goal::AtLeast(0.5)),
    ),
    metric(
        "stdio server CPU per call, pipelined (µs)",
        "CPU per stdio call, pipelined",
        Better::Lower,
        None,
    ),
    metric(
        "stdio peak RSS, pipelined run (MiB)",
        "stdio peak memory, pipelined run",
        Better::Lower,
        None,
    ),
    metric(
        "cold start to first response, stdio (ms)",
        "cold start, stdio",
        Better::Lower,
        Some(Goal::AtMost(1.3)),
    ),
    metric(
        "cold start to first response, HTTP (ms)",
        "cold start, HTTP",
        Better::Lower,
        Some(Goal::AtMost(1.3)),
    ),
    metric("binary size (MiB)", "binary size", Better::Lower, None),
];

/// The axis runs from 0 to this ratio; a longer bar is cut at the edge and says its value.
const MAX: f64 = 2.5;
const WIDTH: f64 = 960.0;
/// x of ratio 0 and of `MAX`.
const X0: f64 = 330.0;
const X1: f64 = 790.0;
/// Where the target column starts.
const TARGET_X: f64 = 806.0;
/// y of the first metric's band, and each band's height.
const TOP: f64 = 104.0;
const BAND: f64 = 46.0;
const BAR: f64 = 15.0;
const PRESA: &str = "#2b6cb0";
const RMCP: &str = "#dd8a2e";
const TARGET: &str = "#c53030";

/// The figures of one table: its ratios by row label, and the lines that say where and
/// when it was measured.
struct Table {
    /// `(label, presa ÷ bare, rmcp ÷ bare)`; `None` where the table reads "–".
    rows: Vec<(String, Option<f64>, Option<f64>)>,
    run: Option<String>,
    machine: Option<String>,
    repeats: Option<String>,
}

impl Table {
    fn ratios(&self, label: &str) -> Option<(Option<f64>, Option<f64>)> {
        self.rows
            .iter()
            .find(|(l, _, _)| l == label)
            .map(|(_, p, r)| (*p, *r))
    }
}

/// The main table of `report`'s markdown and its meta lines.
fn parse(markdown: &str) -> Result<Table, String> {
    let mut table = Table {
        rows: Vec::new(),
        run: None,
        machine: None,
        repeats: None,
    };
    let mut in_main = false;
    for line in markdown.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("- Run on ") {
            // The date, presa's commit, rmcp's version and the pinning; not the load.
            let kept: Vec<&str> = rest
                .trim_end_matches('.')
                .split("; ")
                .filter(|p| !p.starts_with("load average"))
                .collect();
            table.run = Some(format!("Run on {}.", kept.join("; ")));
        } else if let Some(rest) = line.strip_prefix("- Machine: ") {
            table.machine = Some(format!("Machine: {rest}"));
        } else if let Some(rest) = line.strip_prefix("Medians of ") {
            table.repeats = rest.split(' ').next().map(str::to_owned);
        }
        if line.starts_with("| metric | bare | presa | rmcp | presa ÷ bare | rmcp ÷ bare |") {
            in_main = true;
            continue;
        }
        if !in_main {
            continue;
        }
        if !line.starts_with('|') {
            if !table.rows.is_empty() {
                break;
            }
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() < 6 || cells[1].starts_with("---") {
            continue;
        }
        let num = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite());
        table
            .rows
            .push((cells[0].to_owned(), num(cells[4]), num(cells[5])));
    }
    if table.rows.is_empty() {
        return Err("no table of bare, presa and rmcp found".into());
    }
    Ok(table)
}

/// Text for an SVG text node or attribute value.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// x of a ratio, cut at the axis' end.
fn x(ratio: f64) -> f64 {
    X0 + ratio.clamp(0.0, MAX) / MAX * (X1 - X0)
}

/// One bar with its value: beside its end, or inside it in white when that would run
/// past the axis (a bar cut at the edge always says its value there).
fn bar(svg: &mut String, who: &str, color: &str, metric: &str, y: f64, ratio: Option<f64>) {
    let Some(v) = ratio else {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#777">{who}: not measured</text>"##,
            X0 + 4.0,
            y + BAR - 3.5
        );
        return;
    };
    let end = x(v);
    let cut = v > MAX;
    let _ = writeln!(
        svg,
        r#"<rect class="bar {who}" data-metric="{}" x="{X0}" y="{y:.1}" width="{:.1}" height="{BAR}" fill="{color}"><title>{who} ÷ bare, {}: {v:.2}</title></rect>"#,
        esc(metric),
        (end - X0).max(1.0),
        esc(metric),
    );
    let label = if cut {
        format!("{v:.2}× ›")
    } else {
        format!("{v:.2}×")
    };
    if end + 48.0 > X1 + 12.0 {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" font-size="11" font-weight="bold" fill="#fff" text-anchor="end">{label}</text>"##,
            end - 4.0,
            y + BAR - 3.5
        );
    } else {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#222" stroke="#fff" stroke-width="3" paint-order="stroke">{label}</text>"##,
            end + 4.0,
            y + BAR - 3.5
        );
    }
}

/// The chart of `markdown`, a table `report` printed.
pub fn from_table(markdown: &str) -> Result<String, String> {
    let table = parse(markdown)?;
    let drawn: Vec<(&Metric, Option<f64>, Option<f64>)> = METRICS
        .iter()
        .filter_map(|m| table.ratios(m.row).map(|(p, r)| (m, p, r)))
        .collect();
    if drawn.is_empty() {
        return Err("the table has none of the chart's metrics".into());
    }
    let plot_bottom = TOP + BAND * drawn.len() as f64;
    let height = plot_bottom + 96.0;
    let mut svg = String::new();
    let title = "What presa costs per call, against bare axum and rmcp";
    let repeats = match table.repeats.as_deref() {
        None => String::new(),
        Some("1") => " One run per cell.".to_owned(),
        Some(n) => format!(" Medians of {n} runs per cell."),
    };
    let subtitle = format!(
        "Each metric as a ratio to bare (axum + serde_json, no MCP checks): bare = 1×.{repeats}"
    );
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" role="img" aria-labelledby="chart-title chart-desc">"#
    );
    let _ = writeln!(svg, r#"<title id="chart-title">{}</title>"#, esc(title));
    let _ = writeln!(svg, r#"<desc id="chart-desc">{}</desc>"#, esc(&subtitle));
    let _ = writeln!(
        svg,
        r##"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#fff"/>"##
    );
    let _ = writeln!(
        svg,
        r##"<text x="20" y="30" font-size="19" font-weight="bold" fill="#111">{}</text>"##,
        esc(title)
    );
    let _ = writeln!(
        svg,
        r##"<text x="20" y="52" font-size="13" fill="#333">{}</text>"##,
        esc(&subtitle)
    );

    // Legend.
    let ly = 70.0;
    let _ = writeln!(
        svg,
        r##"<rect x="20" y="{ly}" width="14" height="12" fill="{PRESA}"/><text x="40" y="{:.1}" font-size="12" fill="#222">presa ÷ bare</text>"##,
        ly + 10.5
    );
    let _ = writeln!(
        svg,
        r##"<rect x="140" y="{ly}" width="14" height="12" fill="{RMCP}"/><text x="160" y="{:.1}" font-size="12" fill="#222">rmcp ÷ bare</text>"##,
        ly + 10.5
    );
    let _ = writeln!(
        svg,
        r##"<line x1="262" y1="{ly}" x2="262" y2="{:.1}" stroke="{TARGET}" stroke-width="2" stroke-dasharray="4 2"/><text x="270" y="{:.1}" font-size="12" fill="#222">presa's target</text>"##,
        ly + 12.0,
        ly + 10.5
    );
    let _ = writeln!(
        svg,
        r##"<line x1="380" y1="{ly}" x2="380" y2="{:.1}" stroke="#111" stroke-width="1.5"/><text x="388" y="{:.1}" font-size="12" fill="#222">bare (1×)</text>"##,
        ly + 12.0,
        ly + 10.5
    );
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#555" text-anchor="end">bars past {MAX}× are cut at the edge</text>"##,
        X1,
        ly + 10.5
    );

    // Bands, grid and the 1× line under the bars.
    for (i, _) in drawn.iter().enumerate() {
        if i % 2 == 0 {
            let _ = writeln!(
                svg,
                r##"<rect x="10" y="{:.1}" width="{:.1}" height="{BAND}" fill="#f3f5f8"/>"##,
                TOP + BAND * i as f64,
                WIDTH - 20.0
            );
        }
    }
    let mut tick = 0.0;
    while tick <= MAX + 1e-9 {
        let tx = x(tick);
        let _ = writeln!(
            svg,
            r##"<line x1="{tx:.1}" y1="{TOP}" x2="{tx:.1}" y2="{plot_bottom:.1}" stroke="#d5d9e0" stroke-width="1"/>"##
        );
        let _ = writeln!(
            svg,
            r##"<text x="{tx:.1}" y="{:.1}" font-size="11" fill="#333" text-anchor="middle">{tick}×</text>"##,
            plot_bottom + 16.0
        );
        tick += 0.5;
    }
    let _ = writeln!(
        svg,
        r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{plot_bottom:.1}" stroke="#111" stroke-width="1.5"/>"##,
        x(1.0),
        TOP - 4.0,
        x(1.0)
    );

    for (i, (m, presa, rmcp)) in drawn.iter().enumerate() {
        let y0 = TOP + BAND * i as f64;
        let _ = writeln!(
            svg,
            r##"<text class="metric" x="20" y="{:.1}" font-size="13" fill="#111">{}</text>"##,
            y0 + 20.0,
            esc(m.name)
        );
        let way = match m.better {
            Better::Higher => "higher is better",
            Better::Lower => "lower is better",
        };
        let _ = writeln!(
            svg,
            r##"<text x="20" y="{:.1}" font-size="11" fill="#666">{way}</text>"##,
            y0 + 36.0
        );
        // The target's line first, so the bars' values read over it.
        if let Some(goal) = m.target {
            let bound = goal.bound();
            let tx = x(bound);
            let _ = writeln!(
                svg,
                r##"<line x1="{tx:.1}" y1="{:.1}" x2="{tx:.1}" y2="{:.1}" stroke="{TARGET}" stroke-width="2" stroke-dasharray="4 2"/>"##,
                y0 + 2.0,
                y0 + BAND - 2.0
            );
            let verdict = match presa {
                Some(v) if goal.holds(*v) => "met",
                Some(_) => "missed",
                None => "not measured",
            };
            let _ = writeln!(
                svg,
                r##"<text x="{TARGET_X}" y="{:.1}" font-size="12" fill="{TARGET}">target {}</text>"##,
                y0 + 20.0,
                esc(&goal.text())
            );
            let _ = writeln!(
                svg,
                r##"<text x="{TARGET_X}" y="{:.1}" font-size="11" fill="#444">presa: {verdict}</text>"##,
                y0 + 36.0
            );
        }
        bar(&mut svg, "presa", PRESA, m.name, y0 + 6.0, *presa);
        bar(&mut svg, "rmcp", RMCP, m.name, y0 + 25.0, *rmcp);
    }

    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" font-size="12" fill="#222" text-anchor="middle">ratio to bare (bare = 1×)</text>"##,
        (X0 + X1) / 2.0,
        plot_bottom + 34.0
    );
    let mut fy = plot_bottom + 60.0;
    for line in [&table.run, &table.machine].into_iter().flatten() {
        let _ = writeln!(
            svg,
            r##"<text x="20" y="{fy:.1}" font-size="11" fill="#555">{}</text>"##,
            esc(line)
        );
        fy += 16.0;
    }
    svg.push_str("</svg>\n");
    Ok(svg)
}

/// `bench-driver chart TABLE.md OUT.svg`: draws the chart of a table `report` printed.
pub fn run(args: &[String]) -> Result<(), String> {
    let [table, out] = args else {
        return Err("usage: bench-driver chart TABLE.md OUT.svg".into());
    };
    let text = std::fs::read_to_string(table).map_err(|e| format!("{table}: {e}"))?;
    let svg = from_table(&text).map_err(|e| format!("{table}: {e}"))?;
    std::fs::write(out, svg).map_err(|e| format!("{out}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head of a table as `report` prints it, with the chart's rows and one more.
    const TABLE: &str = "\
- Machine: 2 CPUs (AMD EPYC), 23 GiB, Linux 6.18; rustc 1.95.0.
- Run on 2026-12-03, presa at f6607a9, rmcp 3.11.0; servers pinned to CPU 0, load to CPU 1; load average at start 1.04 1.13 1.18.

Medians of 5 run(s) per cell; ratios of those medians.

| metric | bare | presa | rmcp | presa ÷ bare | rmcp ÷ bare | presa ÷ rmcp |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
| HTTP tools/call throughput, c=1 (req/s) | 12609 | 13176 | 9375 | 1.05 | 0.74 | 1.41 |
| HTTP latency p50, c=1 (µs) | 76.5 | 71.7 | 98.7 | 0.94 | 1.29 | 0.73 |
| HTTP tools/call throughput, c=32 (req/s) | 97980 | 97177 | 30054 | 0.99 | 0.31 | 3.23 |
| server CPU per HTTP call, c=32 (µs) | 9.21 | 9.81 | 32.73 | 1.07 | 3.55 | 0.30 |
| HTTP peak RSS under c=32 load (MiB) | 4.3 | 5.5 | 8.8 | 1.29 | 2.03 | 0.63 |
| stdio pipelined throughput (req/s) | 1859500 | 1052259 | 37799 | 0.57 | 0.02 | 27.84 |
| stdio server CPU per call, pipelined (µs) | 0.53 | 0.91 | 25.47 | 1.73 | 48.39 | 0.04 |
| stdio peak RSS, pipelined run (MiB) | 3.2 | 4.9 | 715.9 | 1.54 | 224.86 | 0.01 |
| cold start to first response, stdio (ms) | 1.23 | 1.54 | 1.76 | 1.25 | 1.43 | 0.87 |
| cold start to first response, HTTP (ms) | 1.80 | 1.78 | 1.97 | 0.99 | 1.10 | 0.90 |
| binary size (MiB) | 1.82 | 3.62 | – | 1.98 | – | – |

Subscriptions (presa only), 1000 open streams:

| metric | presa |
| --- | ---: |
| memory per open stream (KiB) | 24.1 |
";

    /// A small XML well-formedness check: tags nest and close, attribute values are
    /// quoted, and `&` and `<` appear only as markup or entities. Returns the elements'
    /// start tags, in order.
    fn well_formed(xml: &str) -> Result<Vec<String>, String> {
        let mut stack: Vec<String> = Vec::new();
        let mut starts = Vec::new();
        let mut rest = xml;
        let text_ok = |t: &str| -> Result<(), String> {
            let mut parts = t.split('&');
            parts.next();
            for p in parts {
                let entity = p.split(';').next().unwrap_or("");
                if !p.contains(';') || !["amp", "lt", "gt", "quot", "apos"].contains(&entity) {
                    return Err(format!("a bare & in {t:?}"));
                }
            }
            if t.contains('>') {
                return Err(format!("a bare > in {t:?}"));
            }
            Ok(())
        };
        while let Some(open) = rest.find('<') {
            text_ok(&rest[..open])?;
            let after = &rest[open + 1..];
            let close = after.find('>').ok_or("a tag that never ends")?;
            let tag = &after[..close];
            rest = &after[close + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                let top = stack.pop().ok_or(format!("</{name}> closes nothing"))?;
                if top != name.trim() {
                    return Err(format!("</{name}> closes <{top}>"));
                }
                continue;
            }
            let empty = tag.ends_with('/');
            let body = tag.trim_end_matches('/');
            let name = body.split_whitespace().next().ok_or("an empty tag")?;
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(format!("a bad element name in <{tag}>"));
            }
            // Attributes: name="value", each value free of < and with & only as entities.
            let mut attrs = body[name.len()..].trim();
            while !attrs.is_empty() {
                let (key, value) = attrs
                    .split_once("=\"")
                    .ok_or(format!("an attribute without a quoted value in <{tag}>"))?;
                if key.trim().is_empty() || key.trim().contains(char::is_whitespace) {
                    return Err(format!("a bad attribute name in <{tag}>"));
                }
                let (value, after) = value
                    .split_once('"')
                    .ok_or(format!("an unterminated attribute in <{tag}>"))?;
                if value.contains('<') {
                    return Err(format!("a < in an attribute of <{tag}>"));
                }
                text_ok(value)?;
                attrs = after.trim_start();
            }
            starts.push(body.to_owned());
            if !empty {
                stack.push(name.to_owned());
            }
        }
        text_ok(rest)?;
        if !rest.trim().is_empty() {
            return Err("text after the root element".into());
        }
        match stack.last() {
            Some(open) => Err(format!("<{open}> is never closed")),
            None => Ok(starts),
        }
    }

    #[test]
    fn the_chart_is_well_formed_with_one_bar_per_metric_and_server() {
        let svg = from_table(TABLE).expect("a chart");
        let starts = well_formed(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
        assert!(starts[0].starts_with("svg xmlns=\"http://www.w3.org/2000/svg\""));
        for who in ["presa", "rmcp"] {
            let bars: Vec<&String> = starts
                .iter()
                .filter(|s| s.starts_with(&format!("rect class=\"bar {who}\"")))
                .collect();
            // rmcp's binary size reads "–": no bar, a note instead.
            let expected = if who == "presa" { 10 } else { 9 };
            assert_eq!(bars.len(), expected, "{who}'s bars");
        }
        for m in METRICS {
            assert!(
                svg.contains(&format!(">{}</text>", esc(m.name))),
                "{} is named",
                m.name
            );
            assert!(
                svg.contains(&format!("data-metric=\"{}\"", esc(m.name))),
                "{} has its bar",
                m.name
            );
        }
        assert!(svg.contains("rmcp: not measured"));
    }

    #[test]
    fn the_chart_says_when_and_where_and_judges_the_targets() {
        let svg = from_table(TABLE).expect("a chart");
        assert!(svg.contains("Run on 2026-12-03, presa at f6607a9, rmcp 3.11.0; servers pinned to CPU 0, load to CPU 1."));
        assert!(!svg.contains("load average"));
        assert!(svg.contains("Machine: 2 CPUs (AMD EPYC), 23 GiB, Linux 6.18; rustc 1.95.0."));
        assert!(svg.contains("Medians of 5 runs per cell."));
        // Seven targets, all met by this table; the stdio throughput target among them.
        assert_eq!(svg.matches("presa: met").count(), 7);
        assert!(svg.contains(">target ≥ 0.5</text>"));
        // A bar past the axis is cut at its end and says its value inside.
        assert!(svg.contains(">48.39× ›</text>"));
    }

    #[test]
    fn one_run_is_not_a_median() {
        let table = TABLE.replace("Medians of 5 run(s)", "Medians of 1 run(s)");
        let svg = from_table(&table).expect("a chart");
        assert!(svg.contains("bare = 1×. One run per cell."));
        assert!(!svg.contains("Medians"));
    }

    #[test]
    fn a_missed_target_reads_missed() {
        let table = TABLE.replace(
            "| 1859500 | 1052259 | 37799 | 0.57 |",
            "| 1859500 | 752259 | 37799 | 0.40 |",
        );
        let svg = from_table(&table).expect("a chart");
        assert_eq!(svg.matches("presa: missed").count(), 1);
    }

    /// Every metric of the chart is a row `report` prints, under the same label.
    #[test]
    fn every_metric_is_a_row_of_the_table() {
        for m in METRICS {
            assert!(
                crate::report::row_labels().any(|l| l == m.row),
                "{} is not a row of the table",
                m.row
            );
        }
    }

    #[test]
    fn text_without_the_table_is_refused() {
        assert!(from_table("- Machine: x\n\nno table here\n").is_err());
    }

    #[test]
    fn the_checker_catches_what_it_exists_to_catch() {
        assert!(well_formed("<svg><g></svg>").is_err());
        assert!(well_formed("<svg><text>a & b</text></svg>").is_err());
        assert!(well_formed("<svg x=1></svg>").is_err());
        assert!(well_formed("<svg><rect/></svg>").is_ok());
    }
}
