//! Parameters on the user's own scenario files: `--model`, `--keepalive` and `--set PATH=VALUE`,
//! applied to the parsed TOML document *before* the scenario is loaded, so every load-time check
//! (sizes, budgets, the state machine's rules) still runs on the result.
//!
//! Paths name fields as the scenario format does, with 1-based list indices as in plancache's
//! messages (`steps[5]` is the fifth step, "step 5"): `model`, `timing.human`,
//! `steps[5].wait.duration`, `tools[2].tokens`. Each path is checked against the format's JSON
//! Schema when it is parsed, so a misspelt field is an error with the nearest valid one. A wait
//! or a message written as a string takes a field as its table form would (`wait = "7m"` with
//! `steps[5].wait.keepalive=4m30s` becomes `{ duration = "7m", keepalive = "4m30s" }`).
//!
//! The document is edited with `toml_edit`, which keeps every other line as written: errors
//! found when loading still name the user's lines.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use toml_edit::{DocumentMut, InlineTable, Item, TableLike, Value};

/// One step of a parameter path: a field name or a 1-based list index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// A field of a table.
    Key(String),
    /// The n-th entry (1-based) of a list.
    Index(usize),
}

/// One `--set PATH=VALUE`, its path checked against the scenario format.
#[derive(Debug, Clone, PartialEq)]
pub struct SetParam {
    /// The path as written (`steps[5].wait.duration`), for messages and sweep columns.
    pub path: String,
    /// The path's steps.
    pub segs: Vec<Seg>,
    /// The value as written: TOML (`7000`, `true`, `"text"`, `{ tokens = 5 }`) or a bare string.
    pub raw: String,
}

/// A parameter that cannot be applied, with the place and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// The text is not `PATH=VALUE` or the path is not `key.key[n]...`.
    #[error("--set {spec}: {why}\n  hint: write PATH=VALUE, e.g. --set 'steps[5].wait.duration=20m' (list indices count from 1)")]
    Syntax {
        /// The argument as given.
        spec: String,
        /// What is wrong with it.
        why: String,
    },
    /// A field the scenario format does not have at that place.
    #[error("--set {path}: {}has no field `{field}`{suggestion}\n  hint: `plancache schema` lists every field{}", place(at), known_list(known))]
    UnknownField {
        /// The path as given.
        path: String,
        /// The path up to the unknown field (empty at the top level).
        at: String,
        /// The unknown field.
        field: String,
        /// `; did you mean `x`?`, or empty.
        suggestion: String,
        /// The valid fields there.
        known: Vec<String>,
    },
    /// A path that goes into a value that has no fields or entries.
    #[error("--set {path}: `{at}` is {what}, so it has no {wanted}\n  hint: set `{at}` itself, e.g. --set '{at}=...'")]
    NotContainer {
        /// The path as given.
        path: String,
        /// The path up to the value.
        at: String,
        /// What the value is (`a number`, `a list`).
        what: String,
        /// `fields` or `entries`.
        wanted: &'static str,
    },
    /// An index past the end of a list of the file.
    #[error("{}: --set {path}: `{at}` has {len} entr{}, so there is no [{index}]\n  hint: list indices count from 1, as in plancache's messages (\"step 5\" is steps[5])", file.display(), if *len == 1 { "y" } else { "ies" })]
    NoEntry {
        /// The scenario file.
        file: PathBuf,
        /// The path as given.
        path: String,
        /// The list's path.
        at: String,
        /// The index asked for (1-based).
        index: usize,
        /// The list's length in the file.
        len: usize,
    },
    /// The file's value at that place cannot take the path (a number where a table is needed).
    #[error("{}: --set {path}: `{at}` is {what} in this file, so it has no field `{field}`\n  hint: set `{at}` as a whole, e.g. --set '{at}={{ {field} = ... }}'", file.display())]
    Shape {
        /// The scenario file.
        file: PathBuf,
        /// The path as given.
        path: String,
        /// The path up to the value.
        at: String,
        /// What the file has there.
        what: String,
        /// The field asked for.
        field: String,
    },
}

fn place(at: &str) -> String {
    if at.is_empty() {
        "the scenario format ".to_string()
    } else {
        format!("`{at}` ")
    }
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() || known.len() > 24 {
        String::new()
    } else {
        format!("; fields here: {}", known.join(", "))
    }
}

/// Renders a path prefix: `steps[5].wait`.
pub fn show_path(segs: &[Seg]) -> String {
    let mut s = String::new();
    for seg in segs {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// Parses `key.key[n].key`; indices count from 1.
pub fn parse_path(path: &str) -> Result<Vec<Seg>, String> {
    let mut segs = Vec::new();
    let mut rest = path.trim();
    if rest.is_empty() {
        return Err("the path is empty".into());
    }
    let key_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    loop {
        let end = rest.find(|c: char| !key_char(c)).unwrap_or(rest.len());
        if end == 0 {
            return Err(format!("expected a field name at `{rest}`"));
        }
        segs.push(Seg::Key(rest[..end].to_string()));
        rest = &rest[end..];
        while let Some(after) = rest.strip_prefix('[') {
            let close = after
                .find(']')
                .ok_or_else(|| format!("`[` without `]` in `{path}`"))?;
            let n: usize = after[..close]
                .trim()
                .parse()
                .map_err(|_| format!("`[{}]` is not a list index", &after[..close]))?;
            if n == 0 {
                return Err(
                    "list indices count from 1 (steps[1] is the first step, \"step 1\")".into(),
                );
            }
            segs.push(Seg::Index(n));
            rest = &after[close + 1..];
        }
        if rest.is_empty() {
            return Ok(segs);
        }
        rest = rest
            .strip_prefix('.')
            .ok_or_else(|| format!("unexpected `{rest}` in `{path}`"))?;
    }
}

impl SetParam {
    /// Parses `PATH=VALUE` and checks the path against the scenario format.
    pub fn parse(spec: &str) -> Result<SetParam, ParamError> {
        let syntax = |why: String| ParamError::Syntax {
            spec: spec.to_string(),
            why,
        };
        let (path, raw) = spec
            .split_once('=')
            .ok_or_else(|| syntax("no `=`".into()))?;
        let segs = parse_path(path).map_err(syntax)?;
        let path = path.trim().to_string();
        check_path(&path, &segs)?;
        Ok(SetParam {
            path,
            segs,
            raw: raw.trim().to_string(),
        })
    }

    /// A parameter from a path (checked) and a value, as a sweep axis gives them.
    pub fn new(path: &str, raw: &str) -> Result<SetParam, ParamError> {
        SetParam::parse(&format!("{path}={raw}"))
    }

    /// The value to write: TOML when it parses as a TOML value, else the text as a string.
    pub fn value(&self) -> Value {
        value_of(&self.raw)
    }
}

/// `VALUE` as TOML (`7000`, `true`, `"x"`, `[1, 2]`, `{ tokens = 5 }`), or as a string when it
/// is not TOML (`20m`, `claude-opus-4-6`).
pub fn value_of(raw: &str) -> Value {
    match raw.parse::<Value>() {
        Ok(v) => v.decorated(" ", ""),
        Err(_) => Value::from(raw).decorated(" ", ""),
    }
}

// --- the schema walk --------------------------------------------------------------------------

fn schema() -> &'static serde_json::Value {
    static SCHEMA: OnceLock<serde_json::Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        serde_json::to_value(schemars::schema_for!(super::Scenario)).unwrap_or_default()
    })
}

/// The concrete alternatives a schema node stands for (`$ref`, `anyOf`, `oneOf`, `allOf`
/// expanded).
fn alternatives<'a>(
    root: &'a serde_json::Value,
    node: &'a serde_json::Value,
    out: &mut Vec<&'a serde_json::Value>,
) {
    let mut combined = false;
    if let Some(r) = node.get("$ref").and_then(|r| r.as_str()) {
        combined = true;
        if let Some(def) = r
            .strip_prefix("#/$defs/")
            .and_then(|name| root.get("$defs")?.get(name))
        {
            alternatives(root, def, out);
        }
    }
    for k in ["anyOf", "oneOf", "allOf"] {
        if let Some(items) = node.get(k).and_then(|v| v.as_array()) {
            combined = true;
            for a in items {
                alternatives(root, a, out);
            }
        }
    }
    let own = ["type", "properties", "items", "enum", "const"]
        .iter()
        .any(|k| node.get(k).is_some());
    if own || !combined {
        out.push(node);
    }
}

/// A node that accepts anything (a free-form value such as a tool's input schema).
fn is_any(node: &serde_json::Value) -> bool {
    if node.as_bool() == Some(true) {
        return true;
    }
    let keys = [
        "type",
        "properties",
        "items",
        "enum",
        "const",
        "$ref",
        "anyOf",
        "oneOf",
        "allOf",
    ];
    node.is_object() && !keys.iter().any(|k| node.get(k).is_some())
}

fn kind_of(alts: &[&serde_json::Value]) -> String {
    let types: Vec<String> = alts
        .iter()
        .filter_map(|a| a.get("type"))
        .flat_map(|t| match t {
            serde_json::Value::Array(v) => v
                .iter()
                .filter_map(|x| x.as_str())
                .map(String::from)
                .collect(),
            serde_json::Value::String(s) => vec![s.clone()],
            _ => vec![],
        })
        .filter(|t| t != "null")
        .collect();
    match types.first().map(String::as_str) {
        Some("array") => "a list".into(),
        Some("string") if alts.iter().any(|a| a.get("enum").is_some()) => "a name".into(),
        Some("string") => "a string".into(),
        Some("integer") | Some("number") => "a number".into(),
        Some("boolean") => "true or false".into(),
        _ => "a value".into(),
    }
}

/// Checks that `segs` names a field of the scenario format.
fn check_path(path: &str, segs: &[Seg]) -> Result<(), ParamError> {
    let root = schema();
    let mut node = root;
    for (i, seg) in segs.iter().enumerate() {
        let mut alts = Vec::new();
        alternatives(root, node, &mut alts);
        if alts.iter().any(|a| is_any(a)) {
            return Ok(());
        }
        let at = show_path(&segs[..i]);
        match seg {
            Seg::Key(k) => {
                let objects: Vec<&serde_json::Map<String, serde_json::Value>> = alts
                    .iter()
                    .filter_map(|a| a.get("properties").and_then(|p| p.as_object()))
                    .collect();
                if let Some(next) = objects.iter().find_map(|p| p.get(k)) {
                    node = next;
                    continue;
                }
                if let Some(extra) = alts
                    .iter()
                    .filter_map(|a| a.get("additionalProperties"))
                    .find(|x| x.is_object() || x.as_bool() == Some(true))
                {
                    node = extra;
                    continue;
                }
                if objects.is_empty() {
                    return Err(ParamError::NotContainer {
                        path: path.into(),
                        at,
                        what: kind_of(&alts),
                        wanted: "fields",
                    });
                }
                let mut known: Vec<String> =
                    objects.iter().flat_map(|p| p.keys().cloned()).collect();
                known.sort();
                known.dedup();
                let suggestion = crate::util::did_you_mean(k, known.iter().map(String::as_str));
                return Err(ParamError::UnknownField {
                    path: path.into(),
                    at,
                    field: k.clone(),
                    suggestion,
                    known,
                });
            }
            Seg::Index(_) => match alts.iter().find_map(|a| a.get("items")) {
                Some(items) => node = items,
                None => {
                    return Err(ParamError::NotContainer {
                        path: path.into(),
                        at,
                        what: kind_of(&alts),
                        wanted: "entries",
                    })
                }
            },
        }
    }
    Ok(())
}

// --- applying to a document -------------------------------------------------------------------

/// The parameters given for the user's scenario files, applied in order: `model`, `keepalive`,
/// then each `--set` (so an explicit `--set` wins).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `--model`: the session's `model` (prices and cache rules follow it).
    pub model: Option<String>,
    /// `--keepalive`: the ping interval of every main-stream wait, as written (`4m30s`, `off`).
    pub keepalive: Option<String>,
    /// `--set PATH=VALUE`, in command-line order.
    pub sets: Vec<SetParam>,
}

impl Overrides {
    /// Whether nothing is overridden (the file is loaded as written).
    pub fn is_empty(&self) -> bool {
        self.model.is_none() && self.keepalive.is_none() && self.sets.is_empty()
    }

    /// The scenario text with the parameters applied. Text that is not TOML is returned as is,
    /// so the loader reports the syntax error with its line.
    pub fn apply(&self, text: &str, file: &Path) -> Result<String, ParamError> {
        if self.is_empty() {
            return Ok(text.to_string());
        }
        let Ok(mut doc) = text.parse::<DocumentMut>() else {
            return Ok(text.to_string());
        };
        if let Some(m) = &self.model {
            let model = SetParam {
                path: "model".into(),
                segs: vec![Seg::Key("model".into())],
                raw: m.clone(),
            };
            set_param(
                &mut doc,
                &model,
                Value::from(m.as_str()).decorated(" ", ""),
                file,
            )?;
        }
        if let Some(every) = &self.keepalive {
            apply_keepalive(&mut doc, every);
        }
        for s in &self.sets {
            set_param(&mut doc, s, s.value(), file)?;
        }
        Ok(doc.to_string())
    }
}

/// Where an edit is, for errors.
struct Ctx<'a> {
    file: &'a Path,
    param: &'a SetParam,
}

fn set_param(doc: &mut DocumentMut, p: &SetParam, v: Value, file: &Path) -> Result<(), ParamError> {
    let ctx = Ctx { file, param: p };
    set_in_table(doc.as_table_mut(), &p.segs, 0, &v, &ctx)
}

/// Replaces a value, keeping the comments and spacing around the old one.
fn put(slot: &mut Item, v: &Value) {
    match slot.as_value_mut() {
        Some(old) => {
            let decor = old.decor().clone();
            *old = v.clone();
            *old.decor_mut() = decor;
        }
        None => match v.as_inline_table() {
            // A [table] or [[entry]] replaced by a table value stays a table.
            Some(t) if slot.is_table() => *slot = Item::Table(t.clone().into_table()),
            _ => *slot = Item::Value(v.clone()),
        },
    }
}

fn set_in_table(
    t: &mut dyn TableLike,
    segs: &[Seg],
    depth: usize,
    v: &Value,
    ctx: &Ctx<'_>,
) -> Result<(), ParamError> {
    let Some(Seg::Key(k)) = segs.get(depth) else {
        return Ok(());
    };
    if depth + 1 == segs.len() {
        match t.get_mut(k) {
            Some(slot) => put(slot, v),
            None => {
                t.insert(k, Item::Value(v.clone()));
            }
        }
        return Ok(());
    }
    if t.get(k).is_none() {
        if let Seg::Index(index) = segs[depth + 1] {
            return Err(no_entry(ctx, &segs[..=depth], index, 0));
        }
        t.insert(k, Item::Value(Value::InlineTable(InlineTable::new())));
    }
    match t.get_mut(k) {
        Some(child) => set_in_item(child, segs, depth + 1, v, ctx),
        None => Ok(()),
    }
}

fn set_in_item(
    item: &mut Item,
    segs: &[Seg],
    depth: usize,
    v: &Value,
    ctx: &Ctx<'_>,
) -> Result<(), ParamError> {
    match (&segs[depth], item) {
        (Seg::Index(i), Item::ArrayOfTables(a)) => {
            let len = a.len();
            let Some(t) = a.get_mut(i - 1) else {
                return Err(no_entry(ctx, &segs[..depth], *i, len));
            };
            if depth + 1 == segs.len() {
                let Some(table) = v.as_inline_table() else {
                    return Err(shape(ctx, &segs[..=depth], "a table", "(a whole entry)"));
                };
                *t = table.clone().into_table();
                return Ok(());
            }
            set_in_table(t, segs, depth + 1, v, ctx)
        }
        (_, Item::Value(value)) => set_in_value(value, segs, depth, v, ctx),
        (Seg::Key(_), item) => match item.as_table_like_mut() {
            Some(t) => set_in_table(t, segs, depth, v, ctx),
            None => Err(shape(ctx, &segs[..depth], "not a table", key(&segs[depth]))),
        },
        (Seg::Index(_), _) => Err(shape(ctx, &segs[..depth], "not a list", "[..]")),
    }
}

fn set_in_value(
    value: &mut Value,
    segs: &[Seg],
    depth: usize,
    v: &Value,
    ctx: &Ctx<'_>,
) -> Result<(), ParamError> {
    match &segs[depth] {
        Seg::Index(i) => {
            let Some(a) = value.as_array_mut() else {
                return Err(shape(ctx, &segs[..depth], type_of(value), "[..]"));
            };
            let len = a.len();
            let Some(entry) = a.get_mut(i - 1) else {
                return Err(no_entry(ctx, &segs[..depth], *i, len));
            };
            if depth + 1 == segs.len() {
                let decor = entry.decor().clone();
                *entry = v.clone();
                *entry.decor_mut() = decor;
                return Ok(());
            }
            set_in_value(entry, segs, depth + 1, v, ctx)
        }
        Seg::Key(k) => {
            if let (Some(s), Some(field)) = (value.as_str(), shorthand(&segs[..depth])) {
                // `wait = "7m"` is `{ duration = "7m" }`; `user = "hi"` is `{ text = "hi" }`.
                let mut t = InlineTable::new();
                t.insert(field, Value::from(s));
                let decor = value.decor().clone();
                *value = Value::InlineTable(t);
                *value.decor_mut() = decor;
            }
            let what = type_of(value);
            match value.as_inline_table_mut() {
                Some(t) => set_in_table(t, segs, depth, v, ctx),
                None => Err(shape(ctx, &segs[..depth], what, k)),
            }
        }
    }
}

/// The field a string value stands for when a path goes into it.
fn shorthand(at: &[Seg]) -> Option<&'static str> {
    match at.last() {
        Some(Seg::Key(k)) if k == "wait" => Some("duration"),
        Some(Seg::Key(k)) if k == "user" || k == "reject" || k == "prompt" => Some("text"),
        _ => None,
    }
}

fn key(seg: &Seg) -> &str {
    match seg {
        Seg::Key(k) => k,
        Seg::Index(_) => "[..]",
    }
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) | Value::Float(_) => "a number",
        Value::Boolean(_) => "true or false",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "a list",
        Value::InlineTable(_) => "a table",
    }
}

fn no_entry(ctx: &Ctx<'_>, at: &[Seg], index: usize, len: usize) -> ParamError {
    ParamError::NoEntry {
        file: ctx.file.to_path_buf(),
        path: ctx.param.path.clone(),
        at: show_path(at),
        index,
        len,
    }
}

fn shape(ctx: &Ctx<'_>, at: &[Seg], what: &str, field: &str) -> ParamError {
    ParamError::Shape {
        file: ctx.file.to_path_buf(),
        path: ctx.param.path.clone(),
        at: show_path(at),
        what: what.to_string(),
        field: field.to_string(),
    }
}

/// Sets the keep-alive interval of every main-stream wait (`off`: no pings); a wait written as
/// a duration becomes `{ duration = ..., keepalive = ... }`.
fn apply_keepalive(doc: &mut DocumentMut, every: &str) {
    let off = every.trim() == "off";
    let set = |wait: &mut Item| {
        if let Some(s) = wait.as_str().map(String::from) {
            if !off {
                let mut t = InlineTable::new();
                t.insert("duration", Value::from(s));
                t.insert("keepalive", Value::from(every));
                put(wait, &Value::InlineTable(t));
            }
        } else if let Some(t) = wait.as_table_like_mut() {
            match t.get_mut("keepalive") {
                Some(slot) => put(slot, &Value::from(every).decorated(" ", "")),
                None => {
                    t.insert("keepalive", Item::Value(Value::from(every)));
                }
            }
        }
    };
    match doc.get_mut("steps") {
        Some(Item::ArrayOfTables(a)) => {
            for t in a.iter_mut() {
                if let Some(w) = t.get_mut("wait") {
                    set(w);
                }
            }
        }
        Some(Item::Value(Value::Array(a))) => {
            for v in a.iter_mut() {
                if let Some(w) = v
                    .as_inline_table_mut()
                    .and_then(|t| TableLike::get_mut(t, "wait"))
                {
                    set(w);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "name = \"x\" # the id\nmodel = \"claude-sonnet-4-5\"\nsystem = { tokens = 10 }\ntools = []\n[[steps]]\nuser = \"hi\"\n[[steps]]\nwait = \"3m\"   # reading\n[[steps]]\nassistant = { tokens = 5 }\n";

    fn apply(o: &Overrides) -> String {
        o.apply(TEXT, Path::new("s.toml")).unwrap()
    }

    #[test]
    fn paths_count_from_one_and_check_the_schema() {
        assert_eq!(
            parse_path("steps[12].wait.duration").unwrap(),
            vec![
                Seg::Key("steps".into()),
                Seg::Index(12),
                Seg::Key("wait".into()),
                Seg::Key("duration".into())
            ]
        );
        assert!(parse_path("steps[0].wait").is_err());
        let e = SetParam::parse("steps[2].wait.duraton=20m").unwrap_err();
        match &e {
            ParamError::UnknownField { at, suggestion, .. } => {
                assert_eq!(at, "steps[2].wait");
                assert_eq!(suggestion, "; did you mean `duration`?");
            }
            other => panic!("{other:?}"),
        }
        let e = SetParam::parse("steps[3].assistant.calls[1].result_token=5").unwrap_err();
        assert!(
            e.to_string().contains("did you mean `result_tokens`"),
            "{e}"
        );
        assert!(SetParam::parse("tools[1].schema.anything.goes=1").is_ok());
        assert!(matches!(
            SetParam::parse("model.x=1").unwrap_err(),
            ParamError::NotContainer { .. }
        ));
    }

    #[test]
    fn edits_keep_the_other_lines_and_comments() {
        let o = Overrides {
            model: Some("claude-opus-4-6".into()),
            keepalive: None,
            sets: vec![SetParam::parse("steps[2].wait.duration=20m").unwrap()],
        };
        let out = apply(&o);
        assert!(
            out.starts_with("name = \"x\" # the id\nmodel = \"claude-opus-4-6\"\n"),
            "{out}"
        );
        assert!(
            out.contains("wait = { duration = \"20m\" }   # reading\n"),
            "{out}"
        );
        assert_eq!(out.lines().count(), TEXT.lines().count());
    }

    #[test]
    fn keepalive_turns_a_duration_into_the_table_form() {
        let o = Overrides {
            keepalive: Some("4m30s".into()),
            ..Overrides::default()
        };
        let out = apply(&o);
        assert!(
            out.contains("wait = { duration = \"3m\", keepalive = \"4m30s\" }"),
            "{out}"
        );
        let off = Overrides {
            keepalive: Some("off".into()),
            ..Overrides::default()
        };
        assert_eq!(apply(&off), TEXT);
    }

    #[test]
    fn an_index_past_the_end_names_the_length() {
        let o = Overrides {
            sets: vec![SetParam::parse("steps[9].wait=1m").unwrap()],
            ..Overrides::default()
        };
        let e = o.apply(TEXT, Path::new("s.toml")).unwrap_err();
        assert!(
            e.to_string()
                .contains("`steps` has 3 entries, so there is no [9]"),
            "{e}"
        );
    }

    #[test]
    fn values_are_toml_or_strings() {
        assert_eq!(value_of("7000").as_integer(), Some(7000));
        assert_eq!(value_of("true").as_bool(), Some(true));
        assert_eq!(value_of("20m").as_str(), Some("20m"));
        assert_eq!(
            value_of("claude-opus-4-6").as_str(),
            Some("claude-opus-4-6")
        );
        assert_eq!(value_of("\"42\"").as_str(), Some("42"));
    }
}
