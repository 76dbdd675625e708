//! plancache's own pre-tokenizer: a hand-written scanner that cuts text into exactly the pieces
//! the split patterns of o200k_base and cl100k_base match (as tiktoken's regex engine,
//! fancy-regex, finds them: leftmost-first alternation, greedy quantifiers that give back one
//! character at a time, possessive ones that do not), without a regex engine. Each alternative
//! below names the part of the pattern it stands for; `tests/tokenizer_ids.rs` compares the ids
//! with tiktoken-rs on the corpus, real transcripts and random strings.
//!
//! The patterns (tiktoken-rs 0.12.1, `tiktoken_ext/openai_public.rs`):
//!
//! o200k_base: `[^\r\n\p{L}\p{N}]?[U]*[W]+C? | [^\r\n\p{L}\p{N}]?[U]+[W]*C? | \p{N}{1,3} |
//! ␠?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+` with `U` =
//! `\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}`, `W` = `\p{Ll}\p{Lm}\p{Lo}\p{M}` and `C` =
//! `(?i:'s|'t|'re|'ve|'m|'ll|'d)`.
//!
//! cl100k_base: `'(?i:[sdmt]|ll|ve|re) | [^\r\n\p{L}\p{N}]?+\p{L}++ | \p{N}{1,3}+ |
//! ␠?[^\s\p{L}\p{N}]++[\r\n]*+ | \s++$ | \s*[\r\n] | \s+(?!\S) | \s`.

use super::chars::{Cat, CharTable};

/// Which split pattern to scan with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    O200k,
    Cl100k,
}

/// Calls `piece` with each piece of `text`, in order; the pieces cover the text.
pub fn split(table: &CharTable, pattern: Pattern, text: &str, mut piece: impl FnMut(&[u8])) {
    let s = Scanner {
        table,
        b: text.as_bytes(),
    };
    let mut p = 0;
    while p < s.b.len() {
        let end = match pattern {
            Pattern::O200k => s.o200k(p),
            Pattern::Cl100k => s.cl100k(p),
        };
        // Every alternative consumes at least one character; `max` only guards the loop.
        let end = end.max(p + 1);
        piece(&s.b[p..end]);
        p = end;
    }
}

/// The text being split (valid UTF-8: it comes from a `&str`, and every position the scanner
/// stops at is a character boundary) and the classes of its characters.
struct Scanner<'a> {
    table: &'a CharTable,
    b: &'a [u8],
}

/// `[^\r\n\p{L}\p{N}]`: the optional character before a word.
#[inline]
fn is_prefix(c: char, cat: Cat) -> bool {
    !(c == '\r' || c == '\n' || cat.is_letter() || cat == Cat::Number)
}

/// The character case-insensitive matching treats `c` as, for the contractions' letters
/// (regex-syntax's simple case folding: only `ſ` folds into one of them besides upper case).
#[inline]
fn fold(c: char) -> char {
    if c == 'ſ' {
        's'
    } else {
        c.to_ascii_lowercase()
    }
}

impl Scanner<'_> {
    /// The character at byte `p`, its class and its length in bytes; `None` at the end.
    #[inline]
    fn at(&self, p: usize) -> Option<(char, Cat, usize)> {
        let x = *self.b.get(p)?;
        if x < 0x80 {
            let c = x as char;
            return Some((c, self.table.cat(c), 1));
        }
        let (n, init) = match x {
            0xC0..=0xDF => (2, x & 0x1F),
            0xE0..=0xEF => (3, x & 0x0F),
            _ => (4, x & 0x07),
        };
        let mut cp = u32::from(init);
        for &y in &self.b[p + 1..p + n] {
            cp = (cp << 6) | u32::from(y & 0x3F);
        }
        let c = char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER);
        Some((c, self.table.cat(c), n))
    }

    /// End of the run of characters from `p` that satisfy `keep`, and of its first `max` only.
    #[inline]
    fn run(&self, mut p: usize, max: usize, keep: impl Fn(char, Cat) -> bool) -> usize {
        let mut count = 0;
        while count < max {
            match self.at(p) {
                Some((c, cat, n)) if keep(c, cat) => p += n,
                _ => break,
            }
            count += 1;
        }
        p
    }

    /// The common case of a word, all in ASCII: an optional prefix byte (`[^\r\n\p{L}\p{N}]`
    /// in ASCII), then letters up to `end`, which must be the end of the text or an ASCII byte
    /// (a letter or mark beyond it would continue the word). `letters(i)` is where the
    /// encoding's ASCII word from `i` ends. `None` leaves the piece to the general path: no
    /// letter after the prefix, or a non-ASCII byte after the letters.
    #[inline]
    fn ascii_word(&self, p: usize, letters: impl Fn(usize) -> usize) -> Option<usize> {
        let b = self.b;
        let c = b[p];
        let start = if c < 0x80 && !c.is_ascii_alphanumeric() && c != b'\r' && c != b'\n' {
            p + 1
        } else {
            p
        };
        let end = letters(start);
        (end > start && b.get(end).is_none_or(|&x| x < 0x80)).then_some(end)
    }

    /// o200k's ASCII words: `[A-Z]*[a-z]*` (the two word alternatives agree on ASCII letters).
    #[inline]
    fn o200k_ascii_letters(&self, mut i: usize) -> usize {
        let b = self.b;
        while i < b.len() && b[i].is_ascii_uppercase() {
            i += 1;
        }
        while i < b.len() && b[i].is_ascii_lowercase() {
            i += 1;
        }
        i
    }

    /// cl100k's ASCII words: `[A-Za-z]+`.
    #[inline]
    fn cl100k_ascii_letters(&self, mut i: usize) -> usize {
        let b = self.b;
        while i < b.len() && b[i].is_ascii_alphabetic() {
            i += 1;
        }
        i
    }

    /// One o200k_base piece starting at `p` (not the end): its end.
    fn o200k(&self, p: usize) -> usize {
        if let Some(end) = self.ascii_word(p, |i| self.o200k_ascii_letters(i)) {
            return self.o200k_contraction(end);
        }
        let Some((c, cat, n)) = self.at(p) else {
            return p;
        };
        let prefix = is_prefix(c, cat);
        // The two word alternatives, each first with the optional prefix, then without.
        if prefix {
            if let Some(end) = self.o200k_lower_word(p + n) {
                return end;
            }
        }
        if let Some(end) = self.o200k_lower_word(p) {
            return end;
        }
        if prefix {
            if let Some(end) = self.o200k_upper_word(p + n) {
                return end;
            }
        }
        if let Some(end) = self.o200k_upper_word(p) {
            return end;
        }
        if cat == Cat::Number {
            return self.run(p, 3, |_, cat| cat == Cat::Number);
        }
        if let Some(end) = self.punct(p, c, cat, true) {
            return end;
        }
        self.o200k_space(p)
    }

    /// `[U]*[W]+C?` from `q`: the upper-case run, then the lower-case run after it; when that is
    /// empty the upper-case run gives back characters until one that is also lower-case (`Lm`,
    /// `Lo`, `M`) can be the `[W]+`.
    fn o200k_lower_word(&self, q: usize) -> Option<usize> {
        let mut i = q;
        let mut last_lowerish = None;
        while let Some((_, cat, n)) = self.at(i) {
            if !cat.is_upperish() {
                break;
            }
            i += n;
            if cat.is_lowerish() {
                last_lowerish = Some(i);
            }
        }
        let upper_end = i;
        let lower_end = self.run(upper_end, usize::MAX, |_, cat| cat.is_lowerish());
        let end = if lower_end > upper_end {
            lower_end
        } else {
            last_lowerish?
        };
        Some(self.o200k_contraction(end))
    }

    /// `[U]+[W]*C?` from `q`.
    fn o200k_upper_word(&self, q: usize) -> Option<usize> {
        let upper_end = self.run(q, usize::MAX, |_, cat| cat.is_upperish());
        if upper_end == q {
            return None;
        }
        let end = self.run(upper_end, usize::MAX, |_, cat| cat.is_lowerish());
        Some(self.o200k_contraction(end))
    }

    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `e`: the end after it, or `e`.
    fn o200k_contraction(&self, e: usize) -> usize {
        if self.b.get(e) != Some(&b'\'') {
            return e;
        }
        let Some((c1, _, n1)) = self.at(e + 1) else {
            return e;
        };
        let after = e + 1 + n1;
        match fold(c1) {
            's' | 't' | 'm' | 'd' => after,
            first @ ('r' | 'v' | 'l') => match self.at(after) {
                Some((c2, _, n2)) if fold(c2) == if first == 'l' { 'l' } else { 'e' } => after + n2,
                _ => e,
            },
            _ => e,
        }
    }

    /// `␠?[^\s\p{L}\p{N}]+` then `[\r\n/]*` (o200k, `slash`) or `[\r\n]*` (cl100k) at `p`.
    fn punct(&self, p: usize, c: char, cat: Cat, slash: bool) -> Option<usize> {
        let start = if c == ' ' {
            p + 1
        } else if cat.is_punct() {
            p
        } else {
            return None;
        };
        let end = self.run(start, usize::MAX, |_, cat| cat.is_punct());
        if end == start {
            return None;
        }
        let trail = |c: char, _| c == '\r' || c == '\n' || (slash && c == '/');
        Some(self.run(end, usize::MAX, trail))
    }

    /// The run of `\s` from `p`: its end, the start of its last character and the end of its
    /// last `\r` or `\n` (if any).
    fn space_run(&self, p: usize) -> (usize, usize, Option<usize>) {
        let (mut i, mut last_start, mut last_newline) = (p, p, None);
        while let Some((c, cat, n)) = self.at(i) {
            if cat != Cat::Space {
                break;
            }
            last_start = i;
            i += n;
            if c == '\r' || c == '\n' {
                last_newline = Some(i);
            }
        }
        (i, last_start, last_newline)
    }

    /// `\s*[\r\n]+ | \s+(?!\S) | \s+` at `p` (a `\s` character).
    fn o200k_space(&self, p: usize) -> usize {
        let (end, last_start, last_newline) = self.space_run(p);
        if let Some(e) = last_newline {
            return e;
        }
        if end == self.b.len() || last_start == p {
            return end;
        }
        last_start
    }

    /// One cl100k_base piece starting at `p` (not the end): its end.
    fn cl100k(&self, p: usize) -> usize {
        let Some((c, cat, n)) = self.at(p) else {
            return p;
        };
        if c == '\'' {
            if let Some(end) = self.cl100k_contraction(p + 1) {
                return end;
            }
        }
        if let Some(end) = self.ascii_word(p, |i| self.cl100k_ascii_letters(i)) {
            return end;
        }
        // `[^\r\n\p{L}\p{N}]?+\p{L}++`: a prefix character, once taken, is never given back.
        if is_prefix(c, cat) {
            let end = self.run(p + n, usize::MAX, |_, cat| cat.is_letter());
            if end > p + n {
                return end;
            }
        } else if cat.is_letter() {
            return self.run(p, usize::MAX, |_, cat| cat.is_letter());
        }
        if cat == Cat::Number {
            return self.run(p, 3, |_, cat| cat == Cat::Number);
        }
        if let Some(end) = self.punct(p, c, cat, false) {
            return end;
        }
        // `\s++$ | \s*[\r\n] | \s+(?!\S) | \s`
        let (end, last_start, last_newline) = self.space_run(p);
        if end == self.b.len() {
            return end;
        }
        if let Some(e) = last_newline {
            return e;
        }
        if last_start > p {
            return last_start;
        }
        p + n
    }

    /// `(?i:[sdmt]|ll|ve|re)` at `q`, after an apostrophe.
    fn cl100k_contraction(&self, q: usize) -> Option<usize> {
        let (c1, _, n1) = self.at(q)?;
        let after = q + n1;
        match fold(c1) {
            's' | 'd' | 'm' | 't' => Some(after),
            first @ ('l' | 'v' | 'r') => {
                let (c2, _, n2) = self.at(after)?;
                (fold(c2) == if first == 'l' { 'l' } else { 'e' }).then_some(after + n2)
            }
            _ => None,
        }
    }
}
