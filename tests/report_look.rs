//! What the report and its charts look like (issue 21, item 6) and how scenario and sweep errors
//! read (item 7): each test parses the SVG, HTML or error text a regression would change.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn plancache(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plancache"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .unwrap()
}

fn report(args: &[&str], out: &Path) {
    let mut all = vec!["report"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let o = plancache(&all);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Every `<text x=.. y=..>CONTENT</text>` of a plotters SVG: (x, y, content).
fn texts(svg: &str) -> Vec<(f64, f64, String)> {
    let mut out = Vec::new();
    for part in svg.split("<text ").skip(1) {
        let attr = |name: &str| -> f64 {
            let k = format!("{name}=\"");
            let i = part.find(&k).unwrap() + k.len();
            part[i..i + part[i..].find('"').unwrap()].parse().unwrap()
        };
        let body = &part[part.find('>').unwrap() + 1..part.find("</text>").unwrap()];
        out.push((attr("x"), attr("y"), body.trim().to_string()));
    }
    out
}

fn text_at<'a>(t: &'a [(f64, f64, String)], content: &str) -> &'a (f64, f64, String) {
    t.iter()
        .find(|x| x.2 == content)
        .unwrap_or_else(|| panic!("no text `{content}` in {t:?}"))
}

/// The stroke colour of the legend swatch drawn just before the legend entry `name`.
fn legend_colour(svg: &str, name: &str) -> String {
    let at = svg
        .find(&format!("\n{name}\n</text>"))
        .unwrap_or_else(|| panic!("no legend entry {name}"));
    let line = &svg[svg[..at].rfind("<polyline").unwrap()..at];
    let i = line.find("stroke=\"").unwrap() + 8;
    line[i..i + 7].to_string()
}

#[test]
fn a_strategy_has_one_colour_whatever_the_strategy_order() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let base = ["scenarios/auth-plan.toml", "--strategy"];
    report(&[&base[..], &["permission-mode,toolset-swap"]].concat(), &a);
    report(
        &[&base[..], &["toolset-swap,history-reset,permission-mode"]].concat(),
        &b,
    );
    for kind in ["hit-rate", "recomputed"] {
        let f = format!("charts/auth-plan-anthropic-{kind}.svg");
        let (sa, sb) = (
            std::fs::read_to_string(a.join(&f)).unwrap(),
            std::fs::read_to_string(b.join(&f)).unwrap(),
        );
        // The fixed palette: toolset-swap #1F77B4 and permission-mode #D62728 in both reports,
        // although toolset-swap is the second strategy of one and the first of the other.
        assert_eq!(legend_colour(&sa, "toolset-swap"), "#1F77B4", "{kind}");
        assert_eq!(legend_colour(&sb, "toolset-swap"), "#1F77B4", "{kind}");
        assert_eq!(legend_colour(&sa, "permission-mode"), "#D62728", "{kind}");
        assert_eq!(legend_colour(&sb, "permission-mode"), "#D62728", "{kind}");
    }
}

#[test]
fn labels_sit_at_their_break_pings_are_marked_and_near_lines_are_noted() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    report(&["scenarios/keepalive-review.toml"], &out);
    let svg = std::fs::read_to_string(out.join("charts/keepalive-review-anthropic-hit-rate.svg"))
        .unwrap();
    let t = texts(&svg);
    // toolset-swap loses its prefix at request 4 (0% hit rate there): its label lies inside the
    // plot (below the 100% tick, not in a band above it), within three label rows of the 0%
    // tick's height and beside the x of request 4.
    let label = text_at(&t, "toolset-swap: tools changed");
    let (x4, y0, y100) = (
        text_at(&t, "4").0,
        text_at(&t, "0%").1,
        text_at(&t, "100%").1,
    );
    let w = plancache::chart::raster::text_width(&label.2, 14.0);
    assert!(
        label.1 > y100,
        "label above the plot: {label:?}, 100% at {y100}"
    );
    assert!(
        (label.1 - y0).abs() < 3.0 * 19.0 + 30.0,
        "label far from its point: {label:?}, 0% at {y0}"
    );
    assert!(
        label.0 >= x4 - w - 12.0 && label.0 <= x4 + 12.0,
        "label not beside request 4 ({x4}): {label:?}"
    );
    // The keep-alive ping (request 3) is a black-outlined triangle on each drawn line, and the
    // legend explains it.
    assert!(svg.contains("<polygon opacity=\"1\" fill=\"#000000\""));
    assert!(t.iter().any(|x| x.2 == "keep-alive ping"));
    // system-swap and toolset-swap differ by less than 1.5% of the axis at every request on
    // this session: the legend says which line hides which.
    assert!(t.iter().any(|x| x.2 == "≈ toolset-swap"), "{t:?}");
    assert!(t.iter().any(|x| x.2 == "≈ : within 1.5% of the axis"));
}

/// The `cost $` column of `plancache run` per strategy.
fn run_costs(args: &[&str]) -> Vec<(String, String)> {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    let o = plancache(&all);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap()
        .split("  ")
        .filter(|c| !c.is_empty())
        .collect();
    let (s, c) = (
        header.iter().position(|h| h.trim() == "strategy").unwrap(),
        header.iter().position(|h| h.trim() == "cost $").unwrap(),
    );
    // The table ends at its first blank line (the `--reference` verdicts follow it).
    lines
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (cells[s].to_string(), cells[c].to_string())
        })
        .collect()
}

#[test]
fn the_verdict_ranks_the_totals_run_prints_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let args = [
        "scenarios/auth-plan.toml",
        "--strategy",
        "toolset-swap,permission-mode",
    ];
    report(&args, &out);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    // `run` prints permission-mode 0.1598 and toolset-swap 0.2443 under cost $; the verdict
    // ranks those totals and names them: (0.2443 - 0.1598) / 0.2443 = 35%.
    let costs = run_costs(&args);
    assert_eq!(
        costs,
        [
            ("toolset-swap".to_string(), "0.2443".to_string()),
            ("permission-mode".to_string(), "0.1598".to_string())
        ]
    );
    assert!(html.contains(
        "Total cost (prompt + output: cost $ in plancache run), cheapest first: 1. permission-mode $0.1598 (hit 82%; no breaks), \
         2. toolset-swap $0.2443 (hit 66%; permission-mode saves 35%;"
    ), "{}", &html[html.find("Verdict.").unwrap()..][..400]);
    // The summary table names what its sums sum; no bare "input $".
    assert!(html.contains("<th class=\"n\">prompt $</th><th class=\"n\">total $</th>"));
    assert!(!html.contains(">input $<"));
    assert!(html.contains("prompt $ = uncached input + cache writes + cache reads; total $ = prompt $ + output $ + cache storage $"));
    // The overview header says what it shows and what verdicts rank by.
    assert!(html.contains("Total cost in USD (prompt + output: the cost $ of plancache run, and what every verdict ranks by)"));
}

#[test]
fn gemini_explicit_writes_are_not_called_5_minute_writes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    report(
        &[
            "scenarios/auth-plan.toml",
            "--cache",
            "gemini-explicit,anthropic",
            "--strategy",
            "permission-mode",
        ],
        &out,
    );
    let gem =
        std::fs::read_to_string(out.join("charts/auth-plan-gemini-explicit-cost.svg")).unwrap();
    assert!(!gem.contains("cache writes 5m"), "gemini-explicit says 5m");
    assert!(gem.contains("\ncache writes\n"));
    // Anthropic's writes keep their class.
    let ant = std::fs::read_to_string(out.join("charts/auth-plan-anthropic-cost.svg")).unwrap();
    assert!(ant.contains("\ncache writes 1h\n"));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let gem_block = &html[html.find("id=\"auth-plan--gemini-explicit\"").unwrap()..];
    let gem_block = &gem_block[..gem_block.find("</table>").unwrap()];
    assert!(!gem_block.contains("5m"), "{gem_block}");
}

#[test]
fn the_overview_of_several_caches_is_one_collapsible_block_per_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    report(
        &[
            "scenarios/auth-plan.toml",
            "scenarios/keepalive-review.toml",
            "--cache",
            "anthropic,ideal,gemini",
            "--strategy",
            "permission-mode,history-reset",
        ],
        &out,
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let overview = &html[html.find("id=\"overview\"").unwrap()..html.find("<nav").unwrap()];
    // Two scenarios: two blocks, each a header row and one row per cache model (3), and no
    // scenario column (the block names it).
    assert_eq!(overview.matches("<details class=\"ov\">").count(), 2);
    assert_eq!(overview.matches("<tr>").count(), 2 * (1 + 3));
    assert!(!overview.contains("<th class=\"t\">scenario</th>"));
    // Each block's line counts who is cheapest under how many cache models (3 in all).
    for scenario in ["auth-plan", "keepalive-review"] {
        let at = overview
            .find(&format!(
                "<summary><a href=\"#scenario-{scenario}\">{scenario}</a>: cheapest: "
            ))
            .unwrap_or_else(|| panic!("{scenario}: {overview}"));
        let line = &overview[at..at + overview[at..].find("</summary>").unwrap()];
        let counted: usize = line
            .split(" under ")
            .skip(1)
            .map(|p| p.split(' ').next().unwrap().parse::<usize>().unwrap())
            .sum();
        assert_eq!(counted, 3, "{line}");
        assert!(line.ends_with(" of 3 cache models"), "{line}");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert_eq!(
        md.matches("<summary><b>auth-plan</b>: cheapest: ").count(),
        1
    );
}

#[test]
fn report_tables_scroll_inside_the_page_and_their_headers_wrap() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    // Every strategy: the widest overview (9 strategy columns), which spilled past the page's
    // right edge in a 1400 px window before.
    report(&["scenarios/auth-plan.toml"], &out);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let tables = html.matches("<table>").count();
    assert!(tables >= 3, "{tables} tables");
    // Each table in its own sideways-scrolling box...
    assert_eq!(html.matches("<div class=\"wide\"><table>").count(), tables);
    assert!(html.contains(".wide{overflow-x:auto}"));
    // ...and numeric headers (`permission-mode`) may break at their hyphen, while the numbers
    // and the first column's names stay on one line.
    assert!(html.contains("th.n{white-space:normal}"));
    assert!(html.contains(".n{text-align:right;white-space:nowrap}"));
    assert!(html.contains("td.t:first-child{white-space:nowrap}"));
    // The one-table overview in the smaller type of the grouped one: 12 columns fit 1150 px.
    assert!(html.contains("#overview~.wide table{font-size:13px}"));
}

#[test]
fn the_heatmap_caption_says_which_sign_wins() {
    let h = plancache::chart::heatmap::Heatmap {
        title: "Where history-reset beats permission-mode (cost)".into(),
        facet: String::new(),
        a: "history-reset".into(),
        b: "permission-mode".into(),
        metric: "cost".into(),
        x_name: "x".into(),
        y_name: "y".into(),
        x_labels: vec!["1".into(), "2".into()],
        y_labels: vec!["1".into(), "2".into()],
        cells: vec![vec![Some(1.0), Some(-1.0)], vec![Some(2.0), None]],
    };
    let svg = plancache::chart::svg(&h).unwrap();
    assert!(svg.contains("(positive: history-reset has the lower cost)"));
    assert!(!svg.contains("is better"));
}

// --- errors (item 7) ---------------------------------------------------------------------------

/// Writes `text` as a scenario file, runs `run` on it, returns (exit code, stderr).
fn run_file(dir: &Path, name: &str, text: &str, cmd: &str) -> (Option<i32>, String, PathBuf) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let mut args = vec![cmd, path.to_str().unwrap()];
    let out = dir.join("out");
    if cmd == "sweep" {
        args.extend(["--out", out.to_str().unwrap()]);
    }
    let o = plancache(&args);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        path,
    )
}

fn auth_plan() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/auth-plan.toml"))
        .unwrap()
}

#[test]
fn a_misspelled_field_gets_did_you_mean_and_a_caret() {
    let dir = tempfile::tempdir().unwrap();
    // Line 47 of auth-plan: `{ tool = "Glob", result_tokens = 40 }` at column 54.
    let text = auth_plan().replacen("result_tokens = 40", "result_token = 40", 1);
    let (code, err, path) = run_file(dir.path(), "typo.toml", &text, "run");
    assert_eq!(code, Some(2));
    assert!(
        err.contains(&format!(
            "{}: line 47, column 54: unknown field `result_token`",
            path.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(
            "47 | assistant = { tokens = 90, calls = [{ tool = \"Glob\", result_token = 40 }] }"
        ),
        "{err}"
    );
    // 12 carets under `result_token`, from column 54 of the source line.
    let caret = err.lines().find(|l| l.contains('^')).unwrap();
    let bar = caret.find('|').unwrap();
    assert_eq!(
        &caret[bar + 2..],
        format!(
            "{}{} did you mean `result_tokens`?",
            " ".repeat(53),
            "^".repeat(12)
        )
    );
    assert!(
        err.contains("hint: rename `result_token` to `result_tokens`"),
        "{err}"
    );
}

#[test]
fn a_toml_syntax_error_shows_the_line_and_a_caret() {
    let dir = tempfile::tempdir().unwrap();
    let text = auth_plan().replacen("seed = 7", "seed = = 7", 1);
    let (code, err, path) = run_file(dir.path(), "syntax.toml", &text, "run");
    assert_eq!(code, Some(2));
    assert!(
        err.contains(&format!("{}: line 8, column 8: ", path.display())),
        "{err}"
    );
    assert!(err.contains("8 | seed = = 7\n  |        ^ "), "{err}");
}

#[test]
fn an_unknown_model_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = auth_plan().replacen("\"claude-sonnet-4-5\"", "\"claude-sonet-4-5\"", 1);
    let (code, err, path) = run_file(dir.path(), "model.toml", &text, "run");
    assert_eq!(code, Some(2));
    assert!(err.contains(&format!(
        "{}: line 6, column 9: model `claude-sonet-4-5` is not in the pricing table; did you mean `claude-sonnet-4-5`?",
        path.display()
    )), "{err}");
    assert!(err.contains("6 | model = \"claude-sonet-4-5\"\n  |         ^^^^^^^^^^^^^^^^^^ not in the pricing table"), "{err}");
}

#[test]
fn a_misspelled_sweep_axis_is_named_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps/history-reset-vs-permission-mode.toml"),
    )
    .unwrap()
    .replacen("\nimplementation_turns = [", "\nimplementation_turn = [", 1);
    let line = text
        .lines()
        .position(|l| l.starts_with("implementation_turn ="))
        .unwrap()
        + 1;
    let (code, err, path) = run_file(dir.path(), "sweep.toml", &text, "sweep");
    assert_eq!(code, Some(2));
    assert!(err.contains(&format!(
        "{}: line {line}, column 1: [grid] axis `implementation_turn` is not a generator parameter; did you mean `implementation_turns`?",
        path.display()
    )), "{err}");
    assert!(
        err.contains(&format!("{line} | implementation_turn = [")),
        "{err}"
    );
    assert!(!err.contains("point 1"), "{err}");
}
