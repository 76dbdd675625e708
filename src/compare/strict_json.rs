//! A strict first pass over a JSON baseline: a key given twice in one object is an error naming
//! both lines (serde_json keeps the later value silently, so a doubled `cost_usd` would gate on
//! whichever came last), and the line of every object is recorded so rows can be named by line.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The line (1-based) where each object starts (its first key), by JSON path (`summary[3]`).
pub type Lines = BTreeMap<String, usize>;

/// Walks `text`; a duplicate key is an error naming the path and both lines.
pub fn walk(text: &str) -> Result<Lines, String> {
    let state = State {
        text,
        lines: RefCell::new(Lines::new()),
        duplicate: RefCell::new(None),
    };
    let mut d = serde_json::Deserializer::from_str(text);
    let r = Walk {
        state: &state,
        path: String::new(),
    }
    .deserialize(&mut d);
    if let Some(msg) = state.duplicate.borrow_mut().take() {
        return Err(msg);
    }
    r.map_err(|e| format!("invalid JSON: {e}"))?;
    Ok(state.lines.into_inner())
}

struct State<'t> {
    text: &'t str,
    lines: RefCell<Lines>,
    duplicate: RefCell<Option<String>>,
}

impl State<'_> {
    /// The line of a key borrowed from the text (None when it had escapes and was copied).
    fn line(&self, borrowed: Option<&str>) -> Option<usize> {
        let k = borrowed?;
        let start = self.text.as_ptr() as usize;
        let at = (k.as_ptr() as usize).checked_sub(start)?;
        (at <= self.text.len()).then(|| self.text[..at].matches('\n').count() + 1)
    }
}

struct Walk<'s, 't> {
    state: &'s State<'t>,
    path: String,
}

/// An object key, borrowed from the text where it can be (so its place is known).
struct KeyText<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for KeyText<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyText<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(KeyText(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(KeyText(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(Walk {
                state: self.state,
                path: format!("{}[{i}]", self.path),
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: BTreeMap<String, Option<usize>> = BTreeMap::new();
        while let Some(KeyText(k)) = map.next_key::<KeyText<'de>>()? {
            let line = self.state.line(match &k {
                Cow::Borrowed(b) => Some(*b),
                Cow::Owned(_) => None,
            });
            if seen.is_empty() {
                if let Some(l) = line {
                    self.state.lines.borrow_mut().insert(self.path.clone(), l);
                }
            }
            if let Some(first) = seen.get(k.as_ref()) {
                let at = |l: Option<usize>| l.map_or("?".to_string(), |l| l.to_string());
                let msg = format!(
                    "line {} and line {}: `{k}` is given twice in {}; a gate cannot tell which value is meant",
                    at(*first),
                    at(line),
                    if self.path.is_empty() { "the document" } else { &self.path }
                );
                *self.state.duplicate.borrow_mut() = Some(msg.clone());
                return Err(de::Error::custom(msg));
            }
            let child = if self.path.is_empty() {
                k.to_string()
            } else {
                format!("{}.{k}", self.path)
            };
            seen.insert(k.into_owned(), line);
            map.next_value_seed(Walk {
                state: self.state,
                path: child,
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_doubled_key_names_both_lines() {
        let text = "{\"summary\": [\n {\"a\": 1},\n {\"cost_usd\": 1,\n  \"cost_usd\": 3}\n]}";
        let e = walk(text).unwrap_err();
        assert!(
            e.starts_with("line 3 and line 4: `cost_usd` is given twice in summary[1]"),
            "{e}"
        );
        let lines = walk("{\"summary\": [\n {\"a\": 1},\n {\"b\": 2}]}").unwrap();
        assert_eq!(lines["summary[0]"], 2);
        assert_eq!(lines["summary[1]"], 3);
    }
}
