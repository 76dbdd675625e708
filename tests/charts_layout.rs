//! Chart layout on crowded inputs: 30 x 30 heatmaps, many coinciding strategies, many breaks.
//! Set PLANCACHE_CHART_DIR to keep the rendered PNGs for a look.

use plancache::chart::{self, heatmap::Heatmap};

fn out_dir() -> (Option<tempfile::TempDir>, std::path::PathBuf) {
    match std::env::var_os("PLANCACHE_CHART_DIR") {
        Some(d) => (None, std::path::PathBuf::from(d)),
        None => {
            let t = tempfile::tempdir().unwrap();
            let p = t.path().to_path_buf();
            (Some(t), p)
        }
    }
}

fn grid(n: usize) -> Heatmap {
    let labels: Vec<String> = (1..=n).map(|k| (k * 4).to_string()).collect();
    Heatmap {
        title: "Where history-reset beats permission-mode (cost)".into(),
        facet: String::new(),
        a: "history-reset".into(),
        b: "permission-mode".into(),
        metric: "cost".into(),
        x_name: "exploration_rounds".into(),
        y_name: "implementation_turns".into(),
        x_labels: labels.clone(),
        y_labels: labels,
        // A diagonal break-even: positive above x = y.
        cells: (0..n)
            .map(|y| (0..n).map(|x| Some(y as f64 - x as f64)).collect())
            .collect(),
    }
}

#[test]
fn a_30_by_30_heatmap_drops_cell_values_and_thins_ticks() {
    let (_keep, dir) = out_dir();
    let big = grid(30);
    let svg = chart::svg(&big).unwrap();
    std::fs::write(dir.join("heatmap-30.svg"), &svg).unwrap();
    chart::png(&big, &dir.join("heatmap-30.png")).unwrap();
    // 30 x 30 cells of about 26 x 16 px: no "+12.0%" fits, so no cell carries a value; the
    // colour bar carries five ticks (+29.0%, +14.5%, 0%, -14.5%, -29.0%).
    assert!(!svg.contains("\n+12.0%\n"), "cell values drawn at 30x30");
    for tick in ["+29.0%", "+14.5%", "0%", "-14.5%", "-29.0%"] {
        assert!(
            svg.contains(&format!("\n{tick}\n")),
            "colour bar tick {tick}"
        );
    }
    // Tick labels thinned: 30 labels of up to 3 characters (about 29 px each) do not fit 16 px
    // rows, so every second label shows: 4, 12, 20, ... and never 8.
    assert!(svg.contains("\n4\n"));
    assert!(!svg.contains("\n8\n"), "every x label drawn");
    // A 4 x 4 grid keeps its values.
    let small = grid(4);
    let svg = chart::svg(&small).unwrap();
    chart::png(&small, &dir.join("heatmap-4.png")).unwrap();
    assert!(svg.contains("\n+3.0%\n") && svg.contains("\n-3.0%\n"));
}

fn report(args: &[&str], out: &std::path::Path) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_plancache"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("report")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn coinciding_series_are_named_and_shared_breaks_share_a_label() {
    let (_keep, dir) = out_dir();
    let out = dir.join("long");
    report(&["scenarios/long-exploration.toml"], &out);
    let svg = std::fs::read_to_string(out.join("charts/long-exploration-anthropic-hit-rate.svg"))
        .unwrap();
    // permission-mode and masked send identical requests on this session: one line, one
    // legend entry naming both.
    assert!(
        svg.contains("\npermission-mode\n") && svg.contains("\n= masked\n"),
        "legend"
    );
    // Every strategy loses the lookback at request 3: one label, not nine, beside the break.
    assert!(svg.contains("\nall 9 strategies: messages: lookback exceeded\n"));
    assert_eq!(svg.matches("lookback exceeded").count(), 1);
    // The cost chart has no legend entry for a part no strategy paid (no uncached input here:
    // every uncached token is written under the anthropic model).
    let cost =
        std::fs::read_to_string(out.join("charts/long-exploration-anthropic-cost.svg")).unwrap();
    assert!(!cost.contains("\nuncached input\n") && cost.contains("\ncache writes 1h\n"));
}

#[test]
fn x_ticks_thin_out_on_a_2500_request_session() {
    let (_keep, dir) = out_dir();
    let scenario = dir.join("big.toml");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_plancache"))
        .args([
            "generate",
            "--seed",
            "5",
            "--exploration-rounds",
            "1200",
            "--implementation-turns",
            "1300",
            "--result-tokens",
            "20..60",
            "--allow-over-context",
            "--out",
        ])
        .arg(&scenario)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = dir.join("big");
    report(
        &[
            scenario.to_str().unwrap(),
            "--strategy",
            "permission-mode,toolset-swap",
            "--cache",
            "ideal",
        ],
        &out,
    );
    let svg = std::fs::read_to_string(out.join("charts/generated-5-ideal-hit-rate.svg")).unwrap();
    // 1 (enter) + 1200 + 1 (exit) + 1300 = 2502 requests on ~780 px: ticks every 500.
    let ticks: Vec<&str> = ["500", "1000", "1500", "2000", "2500"]
        .into_iter()
        .filter(|t| svg.contains(&format!("\n{t}\n")))
        .collect();
    assert_eq!(ticks.len(), 5, "{ticks:?}");
    assert!(!svg.contains("\n100\n") && !svg.contains("\n250\n"));
}

/// The short tick marks of a plotters SVG: (x0, y0, x1, y1) of every 5 px two-point polyline.
fn ticks(svg: &str) -> Vec<(i32, i32, i32, i32)> {
    svg.split("points=\"")
        .skip(1)
        .filter_map(|p| {
            let pts: Vec<i32> = p[..p.find('"')?]
                .split([' ', ','])
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().ok())
                .collect::<Option<_>>()?;
            let t = (pts[0], pts[1], *pts.get(2)?, *pts.get(3)?);
            (pts.len() == 4 && (t.2 - t.0).abs() + (t.3 - t.1).abs() == 5).then_some(t)
        })
        .collect()
}

#[test]
fn heatmap_ticks_sit_at_cell_centres_only() {
    for n in [4, 7, 30] {
        let svg = chart::svg(&grid(n)).unwrap();
        let t = ticks(&svg);
        // One mark per cell on each axis (at the edges as well there would be 2n + 1).
        // (The colour bar on the right has tick marks of its own.)
        let y: Vec<i32> = t
            .iter()
            .filter(|m| m.1 == m.3 && m.2 < 500)
            .map(|m| m.1)
            .collect();
        let x: Vec<i32> = t.iter().filter(|m| m.0 == m.2).map(|m| m.0).collect();
        assert_eq!((x.len(), y.len()), (n, n), "{n}x{n}: {t:?}");
        // Each labelled row's label is level with a mark: the label is at the centre.
        for label in ["4", "8"] {
            let Some(at) = svg.find(&format!("\">\n{label}\n</text>")) else {
                continue;
            };
            let tag = &svg[svg[..at].rfind("<text").unwrap()..at];
            if !tag.contains("text-anchor=\"end\"") {
                continue;
            }
            let ly: i32 = tag
                .split("y=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert!(
                y.iter().any(|&m| (m - ly).abs() <= 1),
                "{n}: label {label} at {ly}, marks {y:?}"
            );
        }
    }
}
