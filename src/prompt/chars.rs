//! The Unicode classes the two split patterns of o200k_base and cl100k_base test, one per code
//! point, in a table built once from regex-syntax's own Unicode data: the same tables
//! fancy-regex (tiktoken's regex engine) uses, so a letter for the scanner is a letter for
//! tiktoken, at whatever Unicode version regex-syntax ships.

use regex_syntax::hir::{Class, HirKind};

/// The class of a code point. Unicode general categories are disjoint and White_Space holds
/// only separators and controls, so every code point has exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Cat {
    /// Anything below: punctuation, symbols, controls, unassigned.
    Other = 0,
    /// `\p{Lu}` or `\p{Lt}`.
    Upper = 1,
    /// `\p{Ll}`.
    Lower = 2,
    /// `\p{Lm}` or `\p{Lo}` (both "upper" and "lower" for o200k's word alternatives).
    Modifier = 3,
    /// `\p{M}` (not a letter, but in both of o200k's letter sets).
    Mark = 4,
    /// `\p{N}`.
    Number = 5,
    /// `\s` (the White_Space property).
    Space = 6,
}

impl Cat {
    /// `\p{L}`.
    #[inline]
    pub fn is_letter(self) -> bool {
        matches!(self, Cat::Upper | Cat::Lower | Cat::Modifier)
    }
    /// o200k's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`.
    #[inline]
    pub fn is_upperish(self) -> bool {
        matches!(self, Cat::Upper | Cat::Modifier | Cat::Mark)
    }
    /// o200k's `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
    #[inline]
    pub fn is_lowerish(self) -> bool {
        matches!(self, Cat::Lower | Cat::Modifier | Cat::Mark)
    }
    /// `[^\s\p{L}\p{N}]`: punctuation, symbols, marks and the rest.
    #[inline]
    pub fn is_punct(self) -> bool {
        matches!(self, Cat::Other | Cat::Mark)
    }
}

/// Code points below this (the Basic Multilingual Plane) are looked up in a flat table.
const FLAT: usize = 0x1_0000;

/// The class of every code point: a flat table for the Basic Multilingual Plane (64 KB, where
/// nearly all text is) and sorted ranges for the rest (emoji, historic scripts, math letters),
/// searched by bisection.
#[derive(Debug)]
pub struct CharTable {
    /// Class of each code point below [`FLAT`].
    flat: Vec<Cat>,
    /// Classes of the code points from [`FLAT`] up that are not [`Cat::Other`], as sorted,
    /// disjoint, inclusive ranges.
    astral: Vec<(u32, u32, Cat)>,
}

/// The patterns whose classes make up each [`Cat`] (regex-syntax syntax).
const CLASSES: [(Cat, &str); 6] = [
    (Cat::Upper, r"[\p{Lu}\p{Lt}]"),
    (Cat::Lower, r"\p{Ll}"),
    (Cat::Modifier, r"[\p{Lm}\p{Lo}]"),
    (Cat::Mark, r"\p{M}"),
    (Cat::Number, r"\p{N}"),
    (Cat::Space, r"\s"),
];

impl CharTable {
    /// Builds the table from regex-syntax's classes (about a millisecond, once per process).
    pub fn new() -> CharTable {
        let mut flat = vec![Cat::Other; FLAT];
        let mut astral = Vec::new();
        for (cat, pattern) in CLASSES {
            for (start, end) in class_ranges(pattern) {
                let (start, end) = (start as u32, end as u32);
                if (start as usize) < FLAT {
                    flat[start as usize..=(end as usize).min(FLAT - 1)].fill(cat);
                }
                if end as usize >= FLAT {
                    astral.push((start.max(FLAT as u32), end, cat));
                }
            }
        }
        astral.sort_unstable_by_key(|&(start, _, _)| start);
        CharTable { flat, astral }
    }

    /// The class of `c`.
    #[inline]
    pub fn cat(&self, c: char) -> Cat {
        let cp = c as u32;
        if (cp as usize) < FLAT {
            return self.flat[cp as usize];
        }
        // The last range starting at or before `cp`, if it reaches `cp`.
        let i = self.astral.partition_point(|&(start, _, _)| start <= cp);
        match i.checked_sub(1).map(|i| self.astral[i]) {
            Some((_, end, cat)) if cp <= end => cat,
            _ => Cat::Other,
        }
    }
}

impl Default for CharTable {
    fn default() -> Self {
        CharTable::new()
    }
}

/// The code point ranges of a one-class pattern such as `\p{Ll}`.
fn class_ranges(pattern: &str) -> Vec<(char, char)> {
    let hir = regex_syntax::parse(pattern).expect("a fixed, valid class pattern");
    match hir.kind() {
        HirKind::Class(Class::Unicode(class)) => class
            .ranges()
            .iter()
            .map(|r| (r.start(), r.end()))
            .collect(),
        other => unreachable!("{pattern} is not a Unicode class: {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_disjoint_and_cover_known_code_points() {
        // Each code point is in at most one class (filling in order would hide an overlap).
        let mut owner = vec![None; 0x11_0000];
        for (cat, pattern) in CLASSES {
            for (start, end) in class_ranges(pattern) {
                for (cp, slot) in owner[start as usize..=end as usize].iter_mut().enumerate() {
                    assert_eq!(*slot, None, "U+{:04X} in two classes", start as usize + cp);
                    *slot = Some(cat);
                }
            }
        }
        let t = CharTable::new();
        for (c, cat) in [
            ('a', Cat::Lower),
            ('Z', Cat::Upper),
            ('ǅ', Cat::Upper), // Lt
            ('ʰ', Cat::Modifier),
            ('中', Cat::Modifier),
            ('\u{0301}', Cat::Mark),
            ('7', Cat::Number),
            ('Ⅻ', Cat::Number),
            ('½', Cat::Number),
            (' ', Cat::Space),
            ('\u{3000}', Cat::Space),
            ('\u{85}', Cat::Space),
            ('\u{0B}', Cat::Space),
            ('!', Cat::Other),
            ('🙂', Cat::Other),
            ('\u{200D}', Cat::Other),
            ('\u{10FFFF}', Cat::Other),
            ('\u{1D400}', Cat::Upper),
            ('\u{20000}', Cat::Modifier),
            ('\u{E0100}', Cat::Mark),
        ] {
            assert_eq!(t.cat(c), cat, "{c:?}");
        }
        // The table's answer is the classes' for every code point.
        for cp in 0..0x11_0000u32 {
            if let Some(c) = char::from_u32(cp) {
                assert_eq!(
                    Some(t.cat(c)).filter(|&c| c != Cat::Other),
                    owner[cp as usize]
                );
            }
        }
    }
}
