//! The billed side alone (`account --billed-only`): every recorded request's usage priced at
//! its model's prices, with no import into a scenario and no replay, the way ccusage adds
//! usage up. Requests are timed by their first response record (ccusage's entry timestamp);
//! the full run times them by when the replay sends them (the input they answer), which can be
//! a few seconds earlier.

use super::figures::{Counters, RequestFigures};
use crate::cache::PriceTable;
use crate::import::scenario::model_family;
use crate::import::Transcript;

/// The billed figures of every request of `t`, stream by stream (predicted counters zero).
pub fn requests(t: &Transcript, prices: &PriceTable, break_threshold: f64) -> Vec<RequestFigures> {
    let mut out = Vec::new();
    for s in &t.streams {
        let mut prev_prompt: Option<u64> = None;
        for (i, r) in s.requests().enumerate() {
            let u = &r.usage;
            let (c5, c1) = match (u.creation_5m, u.creation_1h) {
                (Some(a), Some(b)) => (a, b),
                (Some(a), None) => (a, 0),
                (None, Some(b)) => (0, b),
                (None, None) => (u.cache_creation_input_tokens, 0),
            };
            let model = model_family(&r.model);
            let billed = Counters::priced(
                prices,
                &model,
                u.prompt_tokens(),
                u.input_tokens,
                c5,
                c1,
                u.cache_read_input_tokens,
            );
            let out_price = prices.get(&model).map_or(0.0, |m| m.output) / 1e6;
            let billed_break =
                prev_prompt.is_some_and(|p| (billed.read as f64) < break_threshold * p as f64);
            prev_prompt = Some(billed.prompt);
            out.push(RequestFigures {
                stream: s.name.clone(),
                request: i + 1,
                sent_at_ms: r.first_at_ms,
                model,
                first_in_stream: i == 0,
                billed,
                predicted: Counters::default(),
                output_tokens: u.output_tokens,
                output_usd: u.output_tokens as f64 * out_price,
                billed_break,
                predicted_break: false,
                reason: String::new(),
            });
        }
    }
    out
}
