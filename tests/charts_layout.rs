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
