//! The report of every bundled scenario under every cache model opens at an overview whose
//! links all land: parsed from the HTML, not grepped for a phrase.

use std::collections::BTreeSet;

/// Values of `attr="..."` on every tag, in document order.
fn attribute_values(html: &str, attr: &str) -> Vec<String> {
    let needle = format!(" {attr}=\"");
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(&needle) {
        let after = &rest[i + needle.len()..];
        let end = after.find('"').expect("attribute closed");
        out.push(after[..end].to_string());
        rest = &after[end..];
    }
    out
}

/// Tag names in document order (opening tags only).
fn tags(html: &str) -> Vec<String> {
    html.split('<')
        .skip(1)
        .filter(|t| !t.starts_with('/') && !t.starts_with('!'))
        .map(|t| {
            t.chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
        })
        .collect()
}

/// report.html and report.md of `plancache report scenarios --cache all`, built in-process by
/// the functions `report` calls (`chart::report::write` without its file writes: the charts are
/// rendered as the inline SVG the HTML embeds; the PNGs, which the overview does not link, are
/// left out, as are requests.csv and summary.csv). tests/report.rs runs the command itself.
fn report_of_everything() -> (String, String) {
    use plancache::chart::{self, report};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let paths = plancache::scenario::scenario_paths(&[root.join("scenarios")]).unwrap();
    let sessions = plancache::scenario::load_sessions(&paths).unwrap();
    let strategies = plancache::strategy::all();
    let caches: Vec<String> = plancache::cache::CACHE_NAMES
        .iter()
        .map(|c| c.to_string())
        .collect();
    let env = plancache::engine::ReplayEnv::default();
    let run = plancache::engine::run(&sessions, &strategies, &caches, &env).unwrap();
    let sections = report::sections(&run, &env.prices).unwrap();
    // In parallel, as `report` renders them (the test's longest step on the debug profile).
    use rayon::prelude::*;
    let charts: Vec<_> = sections
        .par_iter()
        .map(|s| chart::render_group(&s.group, &env.prices, None).unwrap())
        .collect();
    (
        report::html(&sections, &charts, &strategies),
        report::markdown(&sections, &charts, &strategies),
    )
}

#[test]
fn report_of_every_bundled_scenario_under_every_cache_opens_at_a_linked_overview() {
    let (html, md) = report_of_everything();
    let body = &html[html.find("<body>").unwrap()..];
    // The page opens with its title, then the overview: the first section heading and the first
    // table of the body are the overview's.
    let t = tags(body);
    let first_h2 = t.iter().position(|x| x == "h2").unwrap();
    let first_table = t.iter().position(|x| x == "table").unwrap();
    let first_section = t.iter().position(|x| x == "section").unwrap();
    assert!(first_h2 < first_table && first_table < first_section);
    assert!(body[body.find("<h2").unwrap()..].starts_with("<h2 id=\"overview\">Overview</h2>"));
    // Every in-page link lands on an element with that id; ids are unique.
    let ids = attribute_values(&html, "id");
    let unique: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "duplicate ids");
    let hrefs: Vec<String> = attribute_values(&html, "href")
        .into_iter()
        .filter_map(|h| h.strip_prefix('#').map(String::from))
        .collect();
    for h in &hrefs {
        assert!(unique.contains(h), "link #{h} lands nowhere");
    }
    // Every bundled scenario x the 8 cache models: one overview row, one contents link and one
    // collapsible block each, and one section per scenario.
    let scenarios =
        std::fs::read_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "toml")
            })
            .count();
    assert!(scenarios >= 9);
    let caches = plancache::cache::CACHE_NAMES.len();
    // 156 rows read as one collapsible block per scenario (closed), each a table with a
    // header row and one row per cache model.
    let overview = &body[..body.find("<nav").unwrap()];
    assert_eq!(
        overview.matches("<details class=\"ov\">").count(),
        scenarios
    );
    assert_eq!(overview.matches("<tr>").count(), scenarios * (1 + caches));
    assert!(overview.contains(&format!(" of {caches} cache models</summary>")));
    let blocks = ids.iter().filter(|i| i.contains("--")).count();
    assert_eq!(blocks, scenarios * caches);
    assert_eq!(
        ids.iter().filter(|i| i.starts_with("scenario-")).count(),
        scenarios
    );
    for id in ids
        .iter()
        .filter(|i| i.contains("--") || i.starts_with("scenario-"))
    {
        assert!(
            hrefs.contains(id),
            "#{id} is not linked from the overview or contents"
        );
    }
    // report.md carries the same anchors.
    assert!(md.starts_with("# plancache design review\n\n<a id=\"overview\"></a>"));
    assert!(
        md.contains("[auth-plan](#scenario-auth-plan)")
            && md.contains("<a id=\"auth-plan--radix\"></a>")
    );
}
