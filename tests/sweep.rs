//! Sweeps: grid parsing, deterministic shards, merge byte-identical to the unsharded run, the
//! break-even heatmap.

use std::path::Path;
use std::process::{Command, Output};

use plancache::chart::heatmap;
use plancache::engine::ReplayEnv;
use plancache::sweep::{self, Shard, Sweep};

fn plancache(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plancache"))
        .args(args)
        .output()
        .unwrap()
}

const SMALL: &str = r#"
name = "small"
[compare]
a = "history-reset"
b = "permission-mode"
x = "exploration_rounds"
y = "implementation_turns"
[base]
seed = 3
[grid]
implementation_turns = [1, 6]
exploration_rounds = [1, 3, 9]
cache = ["anthropic"]
"#;

#[test]
fn grid_points_are_ordered_last_axis_fastest() {
    let s = Sweep::parse(SMALL, Path::new("small.toml")).unwrap();
    // Axes sorted by name; `strategy` comes from [compare] (a, b).
    let names: Vec<&str> = s.axes.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "cache",
            "exploration_rounds",
            "implementation_turns",
            "strategy"
        ]
    );
    assert_eq!(s.len(), 3 * 2 * 2);
    let show = |i: usize| {
        s.point(i)
            .iter()
            .map(|v| sweep::show(v))
            .collect::<Vec<_>>()
            .join(",")
    };
    assert_eq!(show(0), "anthropic,1,1,history-reset");
    assert_eq!(show(1), "anthropic,1,1,permission-mode");
    assert_eq!(show(2), "anthropic,1,6,history-reset");
    assert_eq!(show(11), "anthropic,9,6,permission-mode");
    assert_eq!(
        s.header()[..4],
        [
            "point",
            "exploration_rounds",
            "implementation_turns",
            "scenario"
        ]
    );
}

#[test]
fn shards_partition_the_grid() {
    let idx = |s: &str| Shard::parse(s).unwrap().indices(8).collect::<Vec<_>>();
    assert_eq!(idx("2/3"), [1, 4, 7]);
    assert_eq!(idx("3/3"), [2, 5]);
    let mut all: Vec<usize> = (1..=3)
        .flat_map(|i| Shard { index: i, count: 3 }.indices(8))
        .collect();
    all.sort();
    assert_eq!(all, (0..8).collect::<Vec<_>>());
    for bad in ["0/3", "4/3", "1/0", "x", "1/2/3"] {
        assert!(Shard::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn bad_sweep_files_name_the_problem() {
    let err = |text: &str| {
        Sweep::parse(text, Path::new("s.toml"))
            .unwrap_err()
            .to_string()
    };
    let e = err("name = \"x\"\n[grid]\nexploration_rounds = 3\nstrategy = [\"permission-mode\"]\n");
    assert!(
        e.contains("s.toml: [grid] exploration_rounds: expected a non-empty list"),
        "{e}"
    );
    let e = err("name = \"x\"\n[grid]\nstrategy = [\"nope\"]\n");
    assert!(e.contains("[grid] strategy:") && e.contains("nope"), "{e}");
    let e = err("name = \"x\"\n[grid]\nexploration_rounds = [1]\n");
    assert!(e.contains("no `strategy` axis"), "{e}");
    let e = err(&SMALL.replace("y = \"implementation_turns\"", "y = \"tools\""));
    assert!(
        e.contains("[compare] y = \"tools\" is not a generator axis"),
        "{e}"
    );
    let e = err(&SMALL.replace(
        "cache = [\"anthropic\"]",
        "cache = [\"anthropic\"]\nttl = [\"2h\"]",
    ));
    assert!(e.contains("[grid] ttl: `2h` is not a TTL class"), "{e}");
}

#[test]
fn sweep_errors_are_typed_with_their_place() {
    use plancache::sweep::files::parse_list;
    use plancache::sweep::SweepError;
    let text = SMALL.replace("exploration_rounds = [", "exploraton_rounds = [");
    match Sweep::parse(&text, Path::new("s.toml")).unwrap_err() {
        SweepError::UnknownParameter(u) => {
            assert_eq!(u.name, "exploraton_rounds");
            assert_eq!(u.near.as_deref(), Some("exploration_rounds"));
            // `exploraton_rounds` is line 12 of SMALL (which opens with a newline), column 1.
            assert_eq!(
                (u.section, u.what, u.place),
                ("grid", "axis", Some((12, 1)))
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(Shard::parse("0/3"), Err(SweepError::Shard(s)) if s == "0/3"));
    assert!(matches!(
        parse_list("model"),
        Err(SweepError::ListSpec { why: "no `=`", .. })
    ));
    let e = Sweep::over_files(
        &[Path::new("s.toml").to_path_buf()],
        vec![parse_list("cache=antropic").unwrap()],
        toml::Table::new(),
        100,
    )
    .unwrap_err();
    let SweepError::ListValue {
        axis,
        value,
        source,
    } = e
    else {
        panic!("{e:?}")
    };
    assert_eq!((axis.as_str(), value.as_str()), ("cache", "antropic"));
    assert!(
        matches!(*source, SweepError::UnknownCache { ref suggestion, .. } if suggestion.contains("`anthropic`")),
        "{source:?}"
    );
    let shard = "point,a\n1,x\n".to_string();
    let inputs = [
        (Path::new("shard-1-of-2.csv").to_path_buf(), shard.clone()),
        (Path::new("shard-2-of-2.csv").to_path_buf(), shard),
    ];
    assert!(matches!(
        sweep::merge(&inputs, None),
        Err(SweepError::DuplicatePoint {
            first_line: 2,
            line: 2,
            point: 1,
            ..
        })
    ));
}

#[test]
fn a_failing_point_is_named() {
    let s = Sweep::parse(SMALL, Path::new("small.toml")).unwrap();
    let source = |_: &toml::Table| -> Result<plancache::scenario::Session, String> {
        Err("no scenario here".to_string())
    };
    let e = sweep::run(&s, Shard::all(), &source, &ReplayEnv::default())
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("small.toml: point 1 (cache=anthropic, exploration_rounds=1, implementation_turns=1, strategy=history-reset): no scenario here"), "{e}");
}

#[test]
fn heatmap_cells_are_a_advantage_over_b() {
    let s = Sweep::parse(SMALL, Path::new("small.toml")).unwrap();
    let header: Vec<String> = s.header();
    // Hand-made rows: only the columns the heatmap reads matter.
    let row = |p: usize, x: &str, y: &str, strategy: &str, cost: &str| {
        let mut r = vec![String::new(); header.len()];
        let set = |r: &mut Vec<String>, col: &str, v: &str| {
            let i = header.iter().position(|h| h == col).unwrap();
            r[i] = v.to_string();
        };
        set(&mut r, "point", &p.to_string());
        set(&mut r, "exploration_rounds", x);
        set(&mut r, "implementation_turns", y);
        set(&mut r, "strategy", strategy);
        set(&mut r, "cache", "anthropic");
        set(&mut r, "cost_usd", cost);
        r
    };
    let rows = vec![
        row(1, "1", "1", "history-reset", "0.110"),
        row(2, "1", "1", "permission-mode", "0.100"),
        row(3, "9", "6", "history-reset", "0.150"),
        row(4, "9", "6", "permission-mode", "0.200"),
    ];
    let maps = heatmap::heatmaps(&s, &header, &rows).unwrap();
    assert_eq!(maps.len(), 1);
    let m = &maps[0];
    assert_eq!(m.facet, "cache=anthropic");
    assert_eq!(m.x_labels, ["1", "3", "9"]);
    assert_eq!(m.y_labels, ["1", "6"]);
    // (0.100 - 0.110) / 0.100 = -10%: history-reset costs more. (0.200 - 0.150) / 0.200 = +25%.
    assert!((m.cells[0][0].unwrap() + 10.0).abs() < 1e-9);
    assert!((m.cells[1][2].unwrap() - 25.0).abs() < 1e-9);
    assert_eq!(m.cells[0][1], None);
    assert_eq!(m.a_wins(), 1);
}

#[test]
fn shards_merge_into_the_unsharded_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("small.toml");
    std::fs::write(&file, SMALL).unwrap();
    let f = file.to_str().unwrap();
    let full = tmp.path().join("full");
    let o = plancache(&["sweep", f, "--out", full.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Not a terminal: no progress bar; the heatmap's count and the summary line.
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(
        err.starts_with("history-reset beats permission-mode on cost in "),
        "{err}"
    );
    let csv = std::fs::read_to_string(full.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 12);
    assert!(full.join("heatmap.svg").exists() && full.join("heatmap.png").exists());

    let shards = tmp.path().join("shards");
    for i in 1..=3 {
        let o = plancache(&[
            "sweep",
            f,
            "--shard",
            &format!("{i}/3"),
            "--out",
            shards.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let s = |i: usize| {
        shards
            .join(format!("shard-{i}-of-3.csv"))
            .to_str()
            .unwrap()
            .to_string()
    };
    // Points 1, 4, 7, 10 in shard 1.
    let first = std::fs::read_to_string(s(1)).unwrap();
    let points: Vec<&str> = first
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(points, ["1", "4", "7", "10"]);
    let merged = tmp.path().join("merged");
    let o = plancache(&[
        "merge",
        &s(3),
        &s(1),
        &s(2),
        "--sweep",
        f,
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for name in ["sweep.csv", "heatmap.svg", "heatmap.png"] {
        assert_eq!(
            std::fs::read(full.join(name)).unwrap(),
            std::fs::read(merged.join(name)).unwrap(),
            "{name}"
        );
    }
    // A missing shard or a shard given twice is bad input.
    let o = plancache(&[
        "merge",
        &s(1),
        &s(2),
        "--sweep",
        f,
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("the shards hold 8 of 12 points; missing: 3, 6, 9, 12"));
    let o = plancache(&["merge", &s(1), &s(1), "--out", merged.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    // Both places are named (issue 19 item 5): file:line and file:line.
    assert!(String::from_utf8_lossy(&o.stderr).contains(":2: both hold point 1"));
}

#[test]
fn bundled_sweep_file_is_valid() {
    let s = Sweep::load(Path::new("sweeps/history-reset-vs-permission-mode.toml")).unwrap();
    let c = s.compare.as_ref().unwrap();
    assert_eq!(
        (c.a.as_str(), c.b.as_str()),
        ("history-reset", "permission-mode")
    );
    assert_eq!(s.len(), 7 * 7 * 2);
}

#[test]
fn ttl_axis_reaches_the_cache_model() {
    let text = r#"
name = "ttl"
[base]
seed = 5
exploration_rounds = 2
implementation_turns = 3
review_wait = "10m"
[grid]
ttl = ["5m", "1h"]
strategy = ["permission-mode"]
cache = ["anthropic"]
"#;
    let s = Sweep::parse(text, Path::new("ttl.toml")).unwrap();
    let rows = sweep::run(
        &s,
        Shard::all(),
        &sweep::Generated::default(),
        &ReplayEnv::default(),
    )
    .unwrap();
    let h = s.header();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    assert_eq!(rows[0][col("ttl")], "5m");
    let cached = |r: &Vec<String>| r[col("cached_tokens")].parse::<u64>().unwrap();
    // The user reads the plan for 10 minutes: 5-minute entries expire during the review, 1-hour
    // entries survive it, so the 1-hour run reads strictly more from the cache.
    assert!(cached(&rows[0]) < cached(&rows[1]), "{rows:?}");
}
