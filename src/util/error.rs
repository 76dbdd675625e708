//! The error of a bad input file: the file, the place in it, what is wrong, the fix, and the
//! offending lines with a caret under the place.

use std::fmt;
use std::path::{Path, PathBuf};

/// A scenario that could not be read or is not valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file at fault.
    pub file: PathBuf,
    /// `line:column`, or a path into the document such as `step 7 (line 42)`.
    pub place: Option<String>,
    /// What is wrong.
    pub message: String,
    /// How to fix it, when known.
    pub hint: Option<String>,
    /// The offending lines of the file with a caret under the place (annotate-snippets), when
    /// the place is a known span of the text.
    pub snippet: Option<String>,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(place) = &self.place {
            write!(f, ": {place}")?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(snippet) = &self.snippet {
            write!(f, "\n{snippet}")?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

impl ScenarioError {
    /// An error in `file` at `place` (if known), with no hint or snippet yet.
    pub fn new(file: &Path, place: Option<String>, message: impl fmt::Display) -> Self {
        ScenarioError {
            file: file.to_path_buf(),
            place,
            message: message.to_string(),
            hint: None,
            snippet: None,
        }
    }

    /// Adds the source lines around `span` of `text`, the span underlined with a caret.
    pub fn with_snippet(mut self, text: &str, span: std::ops::Range<usize>, label: &str) -> Self {
        self.snippet = Some(snippet(text, span, label));
        self
    }

    /// Adds the fix to suggest.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// The lines of `text` around `span` with a caret under it and `label` beside the caret
/// (annotate-snippets, plain: no colour codes, so the text is the same on a terminal and in a
/// log).
pub fn snippet(text: &str, span: std::ops::Range<usize>, label: &str) -> String {
    use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
    let end = span.end.max(span.start).min(text.len());
    let start = span.start.min(end);
    let report = [Group::with_level(Level::ERROR).element(
        Snippet::source(text)
            .line_start(1)
            .annotation(AnnotationKind::Primary.span(start..end).label(label)),
    )];
    Renderer::plain().render(&report).to_string()
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before.len(), |nl| before.len() - nl - 1)
        + 1;
    (line, col)
}
