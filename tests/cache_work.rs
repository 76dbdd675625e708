//! Every registered cache model costs what a request adds, not the length of its prompt: the
//! work it does (counted by `plancache::cache::work` in debug builds: hash-map probes, tokens
//! hashed or compared, segments chained, nodes and streams visited) per request stays flat from
//! a 100-request session to a 1,000-request one, whose prompts are about eight times as long
//! (`small_session`: the long session's shape at a tenth of its sizes, from about 8k to about
//! 70k tokens, so a debug build replays both in seconds). A model that walked its whole prompt
//! per request would do about eight times the work per request at 1,000 (its prompts are on
//! average that much longer); the bound allows 1.5×. Counted, not timed, so the machine's load
//! does not matter. Every registered model is checked ([`CACHE_NAMES`]), so a model added later
//! is covered without editing this file.

#[allow(dead_code)]
#[path = "../benches/common/sessions.rs"]
mod sessions;

#[path = "../benches/common/caches.rs"]
mod caches;

use plancache::cache::{self, work, PriceTable, CACHE_NAMES};

/// Work units per request of `name` over the requests of a `requests`-request session.
fn work_per_request(name: &str, recorded: &[sessions::Recorded], prices: &PriceTable) -> f64 {
    let mut model = cache::build(name, prices).expect("registered");
    work::take();
    for r in recorded {
        let outcome = model.lookup(&r.request);
        model.store(&r.request, &outcome, r.visible_at_ms, r.completed_at_ms);
    }
    let units = work::take().expect("debug builds count");
    units as f64 / recorded.len() as f64
}

#[test]
fn every_cache_model_does_flat_work_per_request_from_100_to_1000_requests() {
    if work::take().is_none() {
        eprintln!("release build: the work counter is compiled away, nothing to check");
        return;
    }
    let prices = PriceTable::bundled();
    let short = sessions::requests_of(&sessions::small_session(100, 5));
    let long = sessions::requests_of(&sessions::small_session(1000, 5));
    let tokens = |rs: &[sessions::Recorded]| rs.last().map_or(0, |r| r.request.prompt_tokens());
    // The long session's prompts really are longer (the premise of the check).
    assert!(
        tokens(&long) > 6 * tokens(&short),
        "{} vs {}",
        tokens(&long),
        tokens(&short)
    );
    // It spans several hours, so `gemini`'s units age out of their one-hour `max_age` and are
    // written anew, several times over (the work that once grew with the session).
    let span = |rs: &[sessions::Recorded]| {
        rs.last().map_or(0, |r| r.request.sent_at_ms)
            - rs.first().map_or(0, |r| r.request.sent_at_ms)
    };
    assert!(span(&long) > 3 * 3_600_000, "{} ms", span(&long));
    let mut report = Vec::new();
    // The scaling bench's grid runs every registered model (tests/bench_coverage.rs).
    assert_eq!(CACHE_NAMES.len(), caches::grid().len());
    let mut ratios = Vec::new();
    for name in CACHE_NAMES {
        let a = work_per_request(name, &short, &prices);
        let b = work_per_request(name, &long, &prices);
        report.push(format!(
            "{name}: {a:.0} -> {b:.0} units/request ({:.2}x)",
            b / a
        ));
        eprintln!("{}", report.last().expect("pushed"));
        assert!(a > 0.0, "{name} counted no work");
        ratios.push((*name, b / a));
    }
    let text = report.join("\n");
    for (name, ratio) in ratios {
        assert!(
            ratio < 1.5,
            "`{name}` does {ratio:.2}x the work per request at 1,000 requests (bound 1.5x):\n{text}"
        );
    }
}
