//! The naive baseline every validation is scored beside: each request of a stream reads the
//! previous prompt of that stream while the TTL lives, and nothing else is modelled (no
//! compaction, no edit, no model switch, no fork, no shared prefix).
//!
//! It uses the same streams, the same recorded times and the same TTL class as the replay, so
//! the difference between the two is what plancache's event modelling adds. A rule about real
//! sessions that does not beat this baseline on the real sessions is not worth its complexity.

use crate::cache::CacheConfig;
use crate::import::scenario::RecordedRequest;
use crate::prompt::Ttl;

/// How the naive rule reads for one stream: the TTL and the cache's granularity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NaiveRule {
    /// Idle time (previous response finished -> this request sent) after which nothing is read.
    pub ttl_ms: u64,
    /// Reads are whole multiples of this many tokens (OpenAI's 128-token units; 1 elsewhere).
    pub unit: u64,
    /// Nothing is read below this many tokens (OpenAI's 1,024; 0 elsewhere: Anthropic's
    /// per-model minimum is far below any prompt of a real agent session).
    pub minimum: u64,
    /// Whether the provider bills writes (Anthropic: every token not read is written at the
    /// stream's TTL class; OpenAI before GPT-5.6: writes are free).
    pub writes: Option<Ttl>,
}

impl NaiveRule {
    /// The rule for a stream replayed against `cache` with the TTL class `ttl`.
    pub fn for_stream(cache: &str, config: &CacheConfig, ttl: Ttl) -> NaiveRule {
        if cache == "openai" {
            NaiveRule {
                ttl_ms: config.openai.idle_ttl.as_millis() as u64,
                unit: config.openai.increment.max(1),
                minimum: config.openai.min_tokens,
                writes: None,
            }
        } else {
            NaiveRule {
                ttl_ms: ttl.millis(),
                unit: 1,
                minimum: 0,
                writes: Some(ttl),
            }
        }
    }

    /// The naive read of every request of a stream, in order (the first reads nothing).
    pub fn reads(&self, requests: &[RecordedRequest]) -> Vec<NaiveRead> {
        let mut out = Vec::with_capacity(requests.len());
        for (i, r) in requests.iter().enumerate() {
            let prompt = r.usage.prompt_tokens();
            let read = match i.checked_sub(1).map(|j| &requests[j]) {
                Some(prev) if r.sent_at_ms.saturating_sub(prev.finished_at_ms) <= self.ttl_ms => {
                    let n = prev.usage.prompt_tokens().min(prompt) / self.unit * self.unit;
                    if n < self.minimum {
                        0
                    } else {
                        n
                    }
                }
                _ => 0,
            };
            let creation = if self.writes.is_some() {
                prompt - read
            } else {
                0
            };
            out.push(NaiveRead { read, creation });
        }
        out
    }
}

/// The naive prediction for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NaiveRead {
    /// Tokens read from the cache.
    pub read: u64,
    /// Tokens written (all that is not read, where the provider bills writes).
    pub creation: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::Usage;
    use crate::plan_mode::Mode;

    fn req(prompt: u64, sent: u64, finished: u64) -> RecordedRequest {
        RecordedRequest {
            request_id: String::new(),
            line: 1,
            model: "m".into(),
            usage: Usage {
                input_tokens: prompt,
                ..Usage::default()
            },
            sent_at_ms: sent,
            events: Vec::new(),
            mode: Mode::Default,
            finished_at_ms: finished,
        }
    }

    #[test]
    fn reads_the_previous_prompt_while_the_ttl_lives() {
        let rule = NaiveRule::for_stream("anthropic", &CacheConfig::default(), Ttl::FiveMinutes);
        // Gaps from the previous finish: 200 s (alive), 301 s (expired), 10 s (alive); the
        // third prompt (5,000) is smaller than the second (9,000): the read is capped at it.
        let reqs = [
            req(8_000, 0, 10_000),
            req(9_000, 210_000, 215_000),
            req(5_000, 516_000, 520_000),
            req(6_000, 530_000, 531_000),
        ];
        let r = rule.reads(&reqs);
        let reads: Vec<u64> = r.iter().map(|x| x.read).collect();
        assert_eq!(reads, vec![0, 8_000, 0, 5_000]);
        assert_eq!(r[1].creation, 1_000);
        assert_eq!(r[2].creation, 5_000);
    }

    #[test]
    fn openai_reads_whole_units_above_the_minimum_and_writes_nothing() {
        let rule = NaiveRule::for_stream("openai", &CacheConfig::default(), Ttl::FiveMinutes);
        // 2,006 -> 1,920 (15 x 128, the provider's own example); 1,000 is below 1,024.
        let reqs = [
            req(2_006, 0, 1),
            req(2_100, 10, 11),
            req(1_000, 20, 21),
            req(1_100, 30, 31),
        ];
        let r = rule.reads(&reqs);
        let reads: Vec<u64> = r.iter().map(|x| x.read).collect();
        assert_eq!(reads, vec![0, 1_920, 0, 0]);
        assert!(r.iter().all(|x| x.creation == 0));
    }
}
