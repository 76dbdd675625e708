//! The counters the account adds up: per request, billed beside predicted.

use crate::cache::PriceTable;

/// Input-side counters of one or more requests. `units` is the cost in base-price units
/// (uncached input 1, writes and reads at the model's multipliers, as `validate` counts it) and
/// `usd` the same cost in dollars at the model's input price.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counters {
    /// Requests counted.
    pub requests: u64,
    /// Prompt tokens: input plus writes plus reads.
    pub prompt: u64,
    /// Uncached input after the last breakpoint.
    pub input: u64,
    /// Tokens written with a 5-minute TTL.
    pub write_5m: u64,
    /// Tokens written with a 1-hour TTL.
    pub write_1h: u64,
    /// Tokens read from the cache.
    pub read: u64,
    /// Cost in base-price units.
    pub units: f64,
    /// Cost in dollars.
    pub usd: f64,
}

impl Counters {
    /// A cache model's outcome for one request, priced with `model`'s multipliers.
    pub fn of_outcome(
        prices: &PriceTable,
        model: &str,
        o: &crate::cache::CacheOutcome,
    ) -> Counters {
        Counters::priced(
            prices,
            model,
            o.prompt_tokens,
            o.uncached_input_tokens,
            o.write_5m_tokens,
            o.write_1h_tokens,
            o.cached_tokens,
        )
    }

    /// One request's counters priced with `model`'s multipliers (unknown model: Anthropic's
    /// 1.25 / 2 / 0.1 and a zero dollar price, as `validate` does for units).
    pub fn priced(
        prices: &PriceTable,
        model: &str,
        prompt: u64,
        input: u64,
        write_5m: u64,
        write_1h: u64,
        read: u64,
    ) -> Counters {
        let (w5, w1, r, usd_per_unit) = prices.get(model).map_or((1.25, 2.0, 0.1, 0.0), |p| {
            (p.write_5m, p.write_1h, p.read, p.input / 1_000_000.0)
        });
        let units = input as f64 + write_5m as f64 * w5 + write_1h as f64 * w1 + read as f64 * r;
        Counters {
            requests: 1,
            prompt,
            input,
            write_5m,
            write_1h,
            read,
            units,
            usd: units * usd_per_unit,
        }
    }

    /// Adds another request's (or total's) counters.
    pub fn add(&mut self, o: &Counters) {
        self.requests += o.requests;
        self.prompt += o.prompt;
        self.input += o.input;
        self.write_5m += o.write_5m;
        self.write_1h += o.write_1h;
        self.read += o.read;
        self.units += o.units;
        self.usd += o.usd;
    }

    /// Tokens written, both TTL classes.
    pub fn writes(&self) -> u64 {
        self.write_5m + self.write_1h
    }

    /// read / prompt (0 for an empty prompt).
    pub fn hit_rate(&self) -> f64 {
        if self.prompt == 0 {
            0.0
        } else {
            self.read as f64 / self.prompt as f64
        }
    }
}

/// One request of the account: what was billed and what plancache predicts.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestFigures {
    /// The stream (`main`, `agent-1`, ...).
    pub stream: String,
    /// 1-based within its stream.
    pub request: usize,
    /// Recorded send time (epoch ms).
    pub sent_at_ms: u64,
    /// The model the request ran on (date suffix dropped).
    pub model: String,
    /// Whether this is its stream's first request.
    pub first_in_stream: bool,
    /// From the transcript's usage records: shown beside the prediction, never fed into it.
    pub billed: Counters,
    /// The replay's counters for the same request.
    pub predicted: Counters,
    /// Output tokens as logged, and their price (the same on both sides).
    pub output_tokens: u64,
    /// The output's price in dollars.
    pub output_usd: f64,
    /// Reads less than half of the previous request's prompt in its stream.
    pub billed_break: bool,
    /// Likewise for the replay's read and prompt.
    pub predicted_break: bool,
    /// The cache model's account of where and why reuse stopped (`messages: ttl expired at
    /// ... (token N)`); empty when nothing was lost.
    pub reason: String,
}

impl RequestFigures {
    /// The cause of a predicted break: the level and reason of the model's explanation
    /// (`messages: ttl expired`), without the place.
    pub fn cause(&self) -> String {
        let r = self.reason.as_str();
        match r.find(" at ") {
            Some(i) => r[..i].to_string(),
            None if r.is_empty() => "unexplained".into(),
            None => r.to_string(),
        }
    }

    /// Tokens of the previous prompt this request had to process again (0 when no break).
    pub fn lost_tokens(&self, previous_prompt: u64) -> u64 {
        previous_prompt.saturating_sub(self.predicted.read)
    }
}

/// Days since 1970-01-01 as `YYYY-MM-DD` (proleptic Gregorian, UTC).
pub fn day_string(epoch_ms: u64) -> String {
    let days = (epoch_ms / 86_400_000) as i64;
    // Civil-from-days: shift the epoch to 0000-03-01 so leap days end each 400-year era.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_civil_dates() {
        assert_eq!(day_string(0), "1970-01-01");
        // 2025-09-03T00:47:19Z is day 20334 (the import tests' timestamp).
        assert_eq!(day_string(20_334 * 86_400_000 + 2_839_293), "2025-09-03");
        // 2024-02-29: 19782 days after the epoch (leap day); the next day is March 1st.
        assert_eq!(day_string(19_782 * 86_400_000), "2024-02-29");
        assert_eq!(day_string(19_783 * 86_400_000 - 1), "2024-02-29");
        assert_eq!(day_string(19_783 * 86_400_000), "2024-03-01");
    }

    #[test]
    fn units_use_the_model_multipliers() {
        // claude-sonnet-4-5: writes 1.25 (5 m) / 2 (1 h), reads 0.1, $3 per Mtok input.
        // 100 uncached + 1000 × 1.25 + 200 × 2 + 10000 × 0.1 = 100 + 1250 + 400 + 1000 = 2750
        // units = $0.00825.
        let p = PriceTable::bundled();
        let c = Counters::priced(&p, "claude-sonnet-4-5", 11_300, 100, 1000, 200, 10_000);
        assert!((c.units - 2750.0).abs() < 1e-9);
        assert!((c.usd - 0.00825).abs() < 1e-12);
        assert!((c.hit_rate() - 10_000.0 / 11_300.0).abs() < 1e-12);
    }
}
