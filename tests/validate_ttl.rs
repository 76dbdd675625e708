//! Claude Code writes one TTL class per request: the main thread 1 h (2.1.x), subagents 5 m.

use std::path::Path;

use plancache::cache::anthropic::mixed_ttl_warning;
use plancache::cache::CacheConfig;
use plancache::engine::ReplayEnv;
use plancache::import::discover::discover;
use plancache::prompt::Ttl;
use plancache::scenario::load_str;
use plancache::validate::{validate_session, ValidateOptions};

#[test]
fn subagent_requests_write_a_single_ttl_class() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts/projects");
    let session = &discover(&root).unwrap()[0];
    let opts = ValidateOptions {
        first_request: plancache::validate::FirstRequest::Include,
        ..ValidateOptions::default()
    };
    let v = validate_session(session, &opts, &ReplayEnv::default()).unwrap();
    for c in &v.checks {
        // Sonnet 4.5 multipliers: 5 m write 1.25, 1 h write 2, read 0.1. The main stream wrote
        // 1 h entries, the agents 5 m ones: every written token of a request is of its stream's
        // class, tools and system included.
        let write = if c.stream == "main" { 2.0 } else { 1.25 };
        let units = c.predicted_input as f64
            + c.predicted_creation as f64 * write
            + c.predicted_read as f64 * 0.1;
        assert!(
            (c.predicted_units - units).abs() < 1e-6,
            "{} {}: {} vs {units}",
            c.stream,
            c.request_id,
            c.predicted_units
        );
        assert!(c.predicted_creation > 0 || c.predicted_read > 0);
    }
}

#[test]
fn check_warns_when_a_layout_bills_two_ttl_classes_in_one_request() {
    let scenario = load_str(
        "name = \"t\"\nmodel = \"claude-sonnet-4-5\"\n[system]\ntokens = 2000\n[[tools]]\nname = \"Read\"\ntokens = 100\n[[steps]]\nuser = \"hi\"\n[[steps]]\nassistant = { tokens = 10 }\n",
        Path::new("t.toml"),
    )
    .unwrap();
    let mut config = CacheConfig::default().anthropic;
    // Claude Code 2.1's main thread: 1 h on the system prompt and on the last message.
    assert_eq!(mixed_ttl_warning(scenario.cache_marks(), &config), None);
    config.message_ttl = Ttl::FiveMinutes;
    let w = mixed_ttl_warning(scenario.cache_marks(), &config).expect("warns");
    assert!(w.contains("1h") && w.contains("5m"), "{w}");
}
