//! Where two request bodies first differ, as a JSON path and a character offset
//! (`tools[12].input_schema.properties.path.description@41`, `system[2].text@118`).

use serde_json::Value;

use super::body::Piece;

/// The first difference between a request and the previous one of its stream.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Divergence {
    /// Index of the first piece that differs (or the first new piece).
    pub piece: usize,
    /// JSON path and character offset, `messages[0].content[3].text@0`.
    pub at: String,
    /// True when every piece of the previous request is unchanged and the request only
    /// appends: the conversation grew, nothing changed.
    pub appended: bool,
}

/// The first piece where `cur` departs from `prev`; `None` when they are identical.
pub fn diverge(prev: &[Piece], cur: &[Piece]) -> Option<Divergence> {
    for (i, (a, b)) in prev.iter().zip(cur).enumerate() {
        if a.value != b.value || a.level != b.level {
            let (path, off) = first_leaf(&b.path, &a.value, &b.value);
            return Some(Divergence {
                piece: i,
                at: format!("{path}@{off}"),
                appended: false,
            });
        }
    }
    match prev.len().cmp(&cur.len()) {
        std::cmp::Ordering::Less => Some(Divergence {
            piece: prev.len(),
            at: format!("{}@0", cur[prev.len()].path),
            appended: true,
        }),
        std::cmp::Ordering::Greater => Some(Divergence {
            piece: cur.len(),
            at: format!("{}@0", prev[cur.len()].path),
            appended: false,
        }),
        std::cmp::Ordering::Equal => None,
    }
}

/// The path of the first differing leaf under `base` and the character offset in it.
fn first_leaf(base: &str, a: &Value, b: &Value) -> (String, usize) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) if p == q => continue,
                    (Some(p), Some(q)) => return first_leaf(&format!("{base}.{k}"), p, q),
                    _ => return (format!("{base}.{k}"), 0),
                }
            }
            (base.to_string(), 0)
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if p != q {
                    return first_leaf(&format!("{base}[{i}]"), p, q);
                }
            }
            (format!("{base}[{}]", x.len().min(y.len())), 0)
        }
        (Value::String(x), Value::String(y)) => {
            let off = x.chars().zip(y.chars()).take_while(|(p, q)| p == q).count();
            (base.to_string(), off)
        }
        _ => (base.to_string(), 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::Level;
    use serde_json::json;

    fn p(path: &str, v: Value) -> Piece {
        Piece {
            path: path.into(),
            level: Level::Tools,
            role: None,
            text: v.to_string(),
            value: v,
            mark: None,
            name: None,
        }
    }

    #[test]
    fn schema_description_offset() {
        let a = p(
            "tools[0]",
            json!({"name": "Read", "input_schema": {"properties": {"path": {"description": "The path of the file to read"}}}}),
        );
        let b = p(
            "tools[0]",
            json!({"name": "Read", "input_schema": {"properties": {"path": {"description": "The path of the file to open"}}}}),
        );
        let d = diverge(&[a], &[b]).unwrap();
        // "The path of the file to " is 24 characters, then "read" vs "open".
        assert_eq!(d.at, "tools[0].input_schema.properties.path.description@24");
        assert!(!d.appended);
    }
}
