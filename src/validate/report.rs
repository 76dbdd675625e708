//! How a validation is written: one CSV row per request, and the Markdown summary (figures per
//! stream, per transcript and overall, each beside the naive baseline's).

use super::{FirstRequest, RequestCheck, SharedPrefix, ValidateError, Validation};
use crate::import::Events;

impl Validation {
    /// One CSV row per request.
    pub fn to_csv(&self) -> Result<Vec<u8>, ValidateError> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let err = |e: csv::Error| ValidateError::Csv(e.to_string());
        w.write_record([
            "transcript",
            "stream",
            "request",
            "request_id",
            "line",
            "model",
            "sent_at_ms",
            "first_in_stream",
            "recorded_prompt",
            "predicted_prompt",
            "recorded_input",
            "predicted_input",
            "recorded_creation",
            "predicted_creation",
            "recorded_read",
            "predicted_read",
            "recorded_units",
            "predicted_units",
            "recorded_break",
            "predicted_break",
            "mispredicted",
            "reason",
            "events",
            "naive_read",
            "naive_break",
        ])
        .map_err(err)?;
        for c in &self.checks {
            w.write_record([
                c.transcript.clone(),
                c.stream.clone(),
                c.request.to_string(),
                c.request_id.clone(),
                c.line.to_string(),
                c.model.clone(),
                c.sent_at_ms.to_string(),
                c.first_in_stream.to_string(),
                c.recorded_prompt.to_string(),
                c.predicted_prompt.to_string(),
                c.recorded_input.to_string(),
                c.predicted_input.to_string(),
                c.recorded_creation.to_string(),
                c.predicted_creation.to_string(),
                c.recorded_read.to_string(),
                c.predicted_read.to_string(),
                format!("{:.1}", c.recorded_units),
                format!("{:.1}", c.predicted_units),
                c.recorded_break.to_string(),
                c.predicted_break.to_string(),
                c.mispredicted(self.options.tolerance).to_string(),
                c.reason.clone(),
                c.events.clone(),
                c.naive_read.to_string(),
                c.naive_break.to_string(),
            ])
            .map_err(err)?;
        }
        w.into_inner()
            .map_err(|e| ValidateError::Csv(e.to_string()))
    }

    /// The Markdown summary: figures per stream and overall, then the mispredicted requests.
    pub fn to_markdown(&self) -> String {
        let mut md = self.md_header();
        self.md_imports(&mut md);
        self.md_error_figures(&mut md);
        self.md_first_requests(&mut md);
        self.md_mispredicted(&mut md);
        self.md_unexplained(&mut md);
        self.md_model_findings(&mut md);
        md
    }

    /// The title and the paragraph that says how the figures were made.
    fn md_header(&self) -> String {
        let o = &self.options;
        format!(
            "# Validation against recorded usage (--events {})\n\n{}\n\nStrategy `{}`, cache model `{}`, first request of each stream: {}, cross-session prefix: {}; mispredicted = |Δcache_read| > {} of the prompt or a wrong break verdict; break = cache_read < {}% of the previous prompt.\n\n",
            o.events.as_str(),
            self.md_mode(),
            o.strategy,
            o.cache,
            match o.first_request {
                FirstRequest::Apart => "kept apart",
                FirstRequest::Include => "included",
            },
            match o.shared_prefix {
                SharedPrefix::None => "none (cold cache)",
                SharedPrefix::Recorded if o.events == Events::Transcript => "none (the block the first request read is a billed figure)",
                SharedPrefix::Recorded => "the block the first request read",
                SharedPrefix::KeptWarm => "the block the first request read, tools/system kept warm",
            },
            pct(o.tolerance),
            o.break_threshold * 100.0
        )
    }

    /// What the replayed events come from, by `--events` mode.
    fn md_mode(&self) -> String {
        match self.options.events {
            Events::Transcript => "Mode `--events transcript`: every replayed event comes from the transcript's records and timestamps; billed cache reads and writes are only compared against.".to_string(),
            Events::Billed => format!(
                "Mode `--events billed`: besides the transcript's own events, {} event(s) were placed where the billed cache read dropped within the TTL (marked `# inferred from billed cache_read`); the figures below are not a blind prediction.",
                self.imports.iter().map(|i| i.inferred).sum::<usize>()
            ),
        }
    }

    /// One row per transcript read, its skipped lines and notes, and the sessions not scored.
    fn md_imports(&self, md: &mut String) {
        md.push_str("## Imports\n\n| transcript | lines | skipped | streams | requests | main TTL | shared prefix |\n|---|---:|---:|---:|---:|---|---:|\n");
        for i in &self.imports {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                i.transcript,
                i.lines,
                i.skipped.len(),
                i.streams,
                i.requests,
                i.ttl,
                i.shared_prefix
            ));
        }
        for i in &self.imports {
            for s in i.skipped.iter().chain(&i.notes) {
                md.push_str(&format!("- {}: {s}\n", i.transcript));
            }
        }
        if !self.skipped.is_empty() {
            md.push_str("\n## Sessions skipped\n\nNot scored; the others are.\n\n");
            for s in &self.skipped {
                md.push_str(&format!("- {}: {}\n", s.transcript, s.reason));
            }
        }
    }

    /// plancache's figures beside the naive baseline's, per stream, transcript and overall.
    fn md_error_figures(&self, md: &mut String) {
        md.push_str("\n## Error figures\n\nEach row gives plancache's figures, then the naive baseline's over the same requests (each request reads the previous prompt of its stream while the TTL lives; nothing else modelled): what the event modelling adds.\n\n| streams | requests | median prompt err | worst prompt err | mean abs Δread/prompt | mean abs Δcreation/prompt | breaks rec/pred/both | precision | recall | cost rec (units) | cost pred (units) | cost err | mispredicted | naive Δread/prompt | naive breaks pred/both | naive precision | naive recall | naive cost err |\n|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n");
        for s in self.stats() {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {}/{}/{} | {} | {} | {:.0} | {:.0} | {} | {} | {} | {}/{} | {} | {} | {} |\n",
                s.label,
                s.requests,
                pct(s.median_prompt_error),
                pct(s.worst_prompt_error),
                pct(s.mean_read_error),
                pct(s.mean_creation_error),
                s.recorded_breaks,
                s.predicted_breaks,
                s.true_breaks,
                opt(s.precision),
                opt(s.recall),
                s.recorded_units,
                s.predicted_units,
                pct(s.cost_error()),
                s.mispredicted,
                pct(s.naive.mean_read_error),
                s.naive.predicted_breaks,
                s.naive.true_breaks,
                opt(s.naive.precision),
                opt(s.naive.recall),
                pct(s.naive_cost_error()),
            ));
        }
    }

    /// The first request of every stream (kept out of the error figures by default).
    fn md_first_requests(&self, md: &mut String) {
        let firsts: Vec<&RequestCheck> = self.checks.iter().filter(|c| c.first_in_stream).collect();
        md.push_str("\n## First request of each stream\n\n| transcript | stream | prompt | read rec | read pred | creation rec | creation pred |\n|---|---|---:|---:|---:|---:|---:|\n");
        for c in firsts {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                c.transcript,
                c.stream,
                c.recorded_prompt,
                c.recorded_read,
                c.predicted_read,
                c.recorded_creation,
                c.predicted_creation
            ));
        }
    }

    /// The requests whose read or break verdict is off by more than the tolerance.
    fn md_mispredicted(&self, md: &mut String) {
        md.push_str("\n## Mispredicted requests\n\n");
        let bad = self.counted(|c| c.mispredicted(self.options.tolerance));
        if bad.is_empty() {
            md.push_str("None.\n");
            return;
        }
        md.push_str("| transcript | stream | request | line | prompt | read rec | read pred | break rec/pred | model's reason | recognised event |\n|---|---|---:|---:|---:|---:|---:|---|---|---|\n");
        for c in bad {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {}/{} | {} | {} |\n",
                c.transcript,
                c.stream,
                c.request,
                c.line,
                c.recorded_prompt,
                c.recorded_read,
                c.predicted_read,
                c.recorded_break,
                c.predicted_break,
                if c.reason.is_empty() { "-" } else { &c.reason },
                if c.events.is_empty() { "-" } else { &c.events }
            ));
        }
    }

    /// Recorded breaks within the TTL that no record of the transcript explains.
    fn md_unexplained(&self, md: &mut String) {
        md.push_str(&format!(
            "\n## Breaks the transcript cannot explain\n\n{} recorded break(s) within the TTL with no event in the transcript before them: a replay from the transcript cannot predict these, and none is fixed up.\n\n",
            self.unexplained.len()
        ));
        if self.unexplained.is_empty() {
            return;
        }
        md.push_str("| transcript | stream | request | request id | line | idle since previous response | previous prompt | read |\n|---|---|---:|---|---:|---:|---:|---:|\n");
        for u in &self.unexplained {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {:.0}s | {} | {} |\n",
                u.transcript,
                u.stream,
                u.request,
                u.request_id,
                u.line,
                u.gap_ms as f64 / 1000.0,
                u.previous_prompt,
                u.recorded_read
            ));
        }
    }

    /// Requests billed on the other model of an `opusplan` session than its mode implies.
    fn md_model_findings(&self, md: &mut String) {
        md.push_str(&format!(
            "\n## Model not the one the mode implies\n\n{} request(s): in a session whose plan-mode requests ran on Opus and whose other requests on Sonnet (`opusplan`), a request billed on the other model.\n\n",
            self.model_findings.len()
        ));
        if self.model_findings.is_empty() {
            return;
        }
        md.push_str("| transcript | stream | request id | line | mode | billed model | mode implies |\n|---|---|---|---:|---|---|---|\n");
        for f in &self.model_findings {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                f.transcript, f.stream, f.request_id, f.line, f.mode, f.model, f.expected
            ));
        }
    }
}

/// A fraction as a percentage with two decimals.
fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

/// A ratio with two decimals, or `n/a` where it is undefined.
fn opt(x: Option<f64>) -> String {
    x.map_or("n/a".to_string(), |v| format!("{v:.2}"))
}
