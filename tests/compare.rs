//! The CI gate: passes against its own baseline, fails with exit 1 and a readable table when a
//! limit or rule is crossed, exit 2 on bad input.

use std::path::Path;
use std::process::{Command, Output};

use plancache::compare::{Limit, Metric, Rule};

fn plancache(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plancache"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn save_baseline(dir: &Path, json: bool) {
    let d = dir.to_str().unwrap();
    let mut args = vec![
        "run",
        "scenarios/auth-plan.toml",
        "--strategy",
        "permission-mode,toolset-swap",
        "--out",
        d,
    ];
    if json {
        args.extend(["--format", "json"]);
    }
    let o = plancache(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn passes_against_its_own_baseline_csv_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    save_baseline(&base, true);
    for b in ["summary.csv", "run.json"] {
        let path = base.join(b);
        let o = plancache(&[
            "compare",
            "--baseline",
            path.to_str().unwrap(),
            "scenarios/auth-plan.toml",
            "--strategy",
            "permission-mode,toolset-swap",
            "--rule",
            "permission-mode<=toolset-swap:cost",
            "--rule",
            "permission-mode<toolset-swap:recomputed",
        ]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{b}: {out}");
        assert!(out.starts_with("## plancache compare: passed"), "{out}");
        // permission-mode 0.159850 vs toolset-swap 0.244342 per session (summary.csv).
        assert!(out.contains("| ok | `permission-mode<=toolset-swap:cost` | auth-plan | anthropic | 0.159850 | 0.244342 |"), "{out}");
    }
}

#[test]
fn fails_with_a_table_naming_the_regression_and_its_breaks() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    save_baseline(&base, false);
    let cur = tmp.path().join("cur");
    std::fs::create_dir_all(&cur).unwrap();
    std::fs::copy(base.join("summary.csv"), cur.join("summary.csv")).unwrap();
    std::fs::copy(base.join("requests.csv"), cur.join("requests.csv")).unwrap();
    // Pretend the baseline swap cost 0.230000 and did not break at request 2.
    let s = std::fs::read_to_string(base.join("summary.csv")).unwrap();
    assert!(s.contains("0.244342"));
    std::fs::write(base.join("summary.csv"), s.replace("0.244342", "0.230000")).unwrap();
    let r = std::fs::read_to_string(base.join("requests.csv")).unwrap();
    let r: String = r
        .lines()
        .map(|l| {
            if l.starts_with("auth-plan,toolset-swap,anthropic,2,") {
                let mut cells: Vec<&str> = l.split(',').collect();
                cells[15] = "";
                cells.join(",")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(base.join("requests.csv"), r + "\n").unwrap();

    let b = base.join("summary.csv");
    let c = cur.join("summary.csv");
    let run = |limit: &str| {
        plancache(&[
            "compare",
            "--baseline",
            b.to_str().unwrap(),
            "--current",
            c.to_str().unwrap(),
            "--max-cost-increase",
            limit,
        ])
    };
    // +0.014342 over 0.230000 is +6.24%: over 5% and over 0.01 USD, under 10% and 0.015 USD.
    for (limit, code) in [("5%", 1), ("0.01", 1), ("10%", 0), ("0.015", 0)] {
        let o = run(limit);
        assert_eq!(o.status.code(), Some(code), "{limit}: {}", stdout(&o));
    }
    let out = stdout(&run("5%"));
    assert!(
        out.starts_with("## plancache compare: FAILED (1 violation)"),
        "{out}"
    );
    assert!(
        out.contains("| auth-plan | toolset-swap | anthropic | cost $ | 0.230000 | 0.244342 | +0.014342 (+6.2%) | 5% | **new** request 2: tools: prefix changed at tool:EnterPlanMode (token 1060)<br>request 6: tools: prefix changed at tool:Edit (token 1060) |"),
        "{out}"
    );
}

#[test]
fn rules_fail_when_the_order_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    save_baseline(&base, false);
    let b = base.join("summary.csv");
    let o = plancache(&[
        "compare",
        "--baseline",
        b.to_str().unwrap(),
        "--current",
        b.to_str().unwrap(),
        "--rule",
        "toolset-swap<=permission-mode:hit-rate",
        "--rule",
        "toolset-swap<=history-reset:cost",
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    // Hit rates 64734 / 98471 = 65.74% (swap) vs 87052 / 105591 = 82.44% (permission mode).
    assert!(out.contains("| FAIL | `toolset-swap<=permission-mode:hit-rate` | auth-plan | anthropic | 65.74% | 82.44% |"), "{out}");
    // A rule naming a strategy absent from the run cannot vouch for anything: it fails.
    assert!(out.contains("| FAIL | `toolset-swap<=history-reset:cost` | - | - | no scenario x cache has both strategies |"), "{out}");
    assert!(out.contains("FAILED (2 violations)"));
}

#[test]
fn bad_input_exits_2_with_place_and_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let o = plancache(&[
        "compare",
        "--baseline",
        "no/such/summary.csv",
        "--current",
        "x.csv",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no/such/summary.csv: cannot read"));
    let bad = tmp.path().join("summary.csv");
    std::fs::write(
        &bad,
        "scenario,strategy,cache,requests,prompt_tokens,cached_tokens,cache_write_tokens,recomputed_tokens,output_tokens,hit_rate,cost_usd,ttft_ms\n\
         a,b,c,1,1,1,0,0,1,1.0,0.1,10\n\
         a,d,c,1,1,1,0,0,1,1.0,lots,10\n",
    )
    .unwrap();
    let o = plancache(&[
        "compare",
        "--baseline",
        bad.to_str().unwrap(),
        "--current",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("line 3: column `cost_usd`: `lots` is not a number"),
        "{err}"
    );
    let o = plancache(&[
        "compare",
        "--baseline",
        bad.to_str().unwrap(),
        "--max-cost-increase",
        "five",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn limit_and_rule_syntax() {
    assert_eq!(Limit::parse("5%").unwrap(), Limit::Percent(5.0));
    assert_eq!(Limit::parse("0.02").unwrap(), Limit::Absolute(0.02));
    assert!(Limit::parse("-1").is_err() && Limit::parse("x%").is_err());
    assert_eq!(Limit::Percent(5.0).allowed(0.2), 0.01);
    let r = Rule::parse("permission-mode<=toolset-swap:hit-rate+1%").unwrap();
    assert_eq!(
        (r.a.as_str(), r.b.as_str(), r.strict),
        ("permission-mode", "toolset-swap", false)
    );
    assert_eq!(
        (r.metric, r.tolerance),
        // On a rate, 1% is one point: 0.01 absolute.
        (Metric::HitRate, Some(Limit::Absolute(0.01)))
    );
    assert_eq!(
        Limit::parse_rate("5%").unwrap(),
        Limit::parse_rate("0.05").unwrap()
    );
    assert!(Limit::parse_rate("5")
        .unwrap_err()
        .to_string()
        .contains("`5%`"));
    assert!(Rule::parse("masked<history-reset:cost").unwrap().strict);
    for bad in ["a<=b", "a=b:cost", "a<=a:cost", "a<=b:speed", "a<=b:cost+x"] {
        assert!(Rule::parse(bad).is_err(), "{bad}");
    }
    // Hit rate is better when higher; the others when lower.
    assert_eq!(Metric::HitRate.worsening(0.9, 0.8), 0.9 - 0.8);
    assert_eq!(Metric::Cost.worsening(1.0, 1.5), 0.5);
}
