//! The budget's totals of a scenario built in memory, counted on the structs as serde hands them
//! over, with no document built: the same counts [`super::Budget::check_document`] makes over
//! the scenario's JSON-then-TOML form (the rules of `walk`), in whatever order the fields come.
//!
//! Running totals only grow, so a session whose final totals are within the budget never
//! crosses a limit on the way; only one that does not needs the walk, which names the place
//! where it crosses. Anything this serializer does not follow exactly as serde_json would (128-bit
//! integers, map keys other than strings, numbers, booleans and unit variants) is an error, and the
//! caller falls back to the walk.

use std::fmt;

use serde::ser::{self, Serialize};

/// What a scenario declares, as the budget counts it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Totals {
    /// Content tokens (`*tokens` sizes but `reasoning_tokens`, one per byte of text); `None`
    /// past `u64::MAX`.
    pub tokens: Option<u64>,
    /// Steps, keep-alive pings included (saturating).
    pub steps: u64,
    /// Streams: the main one plus one per agent.
    pub streams: u64,
    /// Per enclosing `steps` array (a stream), innermost last: whether it has a request to keep
    /// warm (see [`super::StreamSent`]).
    sent: Vec<super::StreamSent>,
}

/// The totals of `value`, or `None` when it holds something only the document walk follows.
pub(super) fn totals<T: Serialize>(value: &T) -> Option<Totals> {
    let mut t = Totals {
        tokens: Some(0),
        steps: 0,
        streams: 1,
        sent: Vec::new(),
    };
    value
        .serialize(Value {
            t: &mut t,
            key: None,
            capture: None,
            step_kind: None,
        })
        .ok()?;
    Some(t)
}

/// A shape the counter does not follow.
#[derive(Debug)]
pub(super) struct Unsupported;

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not counted on the structs")
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<M: fmt::Display>(_msg: M) -> Self {
        Unsupported
    }
}

impl Totals {
    fn add_tokens(&mut self, n: u64) {
        self.tokens = self.tokens.and_then(|t| t.checked_add(n));
    }
}

/// One value, sitting under `key` when it is a table's entry (array items have none).
struct Value<'a> {
    /// The totals counted into.
    t: &'a mut Totals,
    /// The table key the value sits under.
    key: Option<&'a str>,
    /// Where a `wait` table keeps the text of its `duration` / `keepalive` entry.
    capture: Option<&'a mut Option<String>>,
    /// Where an item of a `steps` array notes its step kind (its variant's name).
    step_kind: Option<&'a mut Option<&'static str>>,
}

impl<'a> Value<'a> {
    fn int(self, n: i64) -> Result<(), Unsupported> {
        if self
            .key
            .is_some_and(|k| k.ends_with("tokens") && k != "reasoning_tokens")
        {
            self.t.add_tokens(u64::try_from(n).unwrap_or(0));
        }
        Ok(())
    }

    fn text(self, s: &str) -> Result<(), Unsupported> {
        // Text is tokenized later; a token holds at least one byte.
        self.t.add_tokens(s.len() as u64);
        if let Some(c) = self.capture {
            *c = Some(s.to_string());
        }
        Ok(())
    }

    fn compound(self, kind: Kind) -> Compound<'a> {
        if kind == Kind::Steps {
            self.t.sent.push(super::StreamSent::default());
        }
        Compound {
            t: self.t,
            kind,
            items: 0,
            pending: String::new(),
            duration: None,
            keepalive: None,
        }
    }

    fn array(self) -> Compound<'a> {
        let kind = match self.key {
            Some("steps") => Kind::Steps,
            Some("agents") => Kind::Agents,
            _ => Kind::Array,
        };
        self.compound(kind)
    }

    fn table(self) -> Compound<'a> {
        let kind = if self.key == Some("wait") {
            Kind::Wait
        } else {
            Kind::Table
        };
        self.compound(kind)
    }
}

/// What a compound value is, as far as the counts care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An array: items have no key.
    Array,
    /// An array under `steps`: one step per item.
    Steps,
    /// An array under `agents`: one stream per item.
    Agents,
    /// A table.
    Table,
    /// A table under `wait`: its `duration` / `keepalive` texts give the pings.
    Wait,
    /// `{variant: value}` (serde_json's externally tagged variants) still to close.
    Variant,
}

/// An array or table being counted.
struct Compound<'a> {
    /// The totals counted into.
    t: &'a mut Totals,
    /// What it is.
    kind: Kind,
    /// Items so far (arrays).
    items: u64,
    /// The key of the map entry whose value comes next.
    pending: String,
    /// A `wait` table's `duration` text.
    duration: Option<String>,
    /// A `wait` table's `keepalive` text.
    keepalive: Option<String>,
}

impl<'a> Compound<'a> {
    fn item<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Unsupported> {
        self.items += 1;
        let mut step_kind = None;
        v.serialize(Value {
            t: self.t,
            key: None,
            capture: None,
            step_kind: (self.kind == Kind::Steps).then_some(&mut step_kind),
        })?;
        if let (Some(kind), Some(sent)) = (step_kind, self.t.sent.last_mut()) {
            sent.after(kind);
        }
        Ok(())
    }

    fn entry<T: Serialize + ?Sized>(&mut self, key: &str, v: &T) -> Result<(), Unsupported> {
        let capture = match (self.kind, key) {
            (Kind::Wait, "duration") => Some(&mut self.duration),
            (Kind::Wait, "keepalive") => Some(&mut self.keepalive),
            _ => None,
        };
        v.serialize(Value {
            t: self.t,
            key: Some(key),
            capture,
            step_kind: None,
        })
    }

    fn close(self) -> Result<(), Unsupported> {
        match self.kind {
            Kind::Steps => {
                self.t.steps = self.t.steps.saturating_add(self.items);
                self.t.sent.pop();
            }
            Kind::Agents => self.t.streams = self.t.streams.saturating_add(self.items),
            Kind::Wait => {
                let parse = |d: &Option<String>| {
                    d.as_deref().and_then(|d| humantime::parse_duration(d).ok())
                };
                let keeps_warm = self.t.sent.last().is_none_or(|s| s.has_sent());
                if let (Some(total), Some(every)) = (parse(&self.duration), parse(&self.keepalive))
                {
                    if keeps_warm && !every.is_zero() {
                        let pings = total.as_nanos() / every.as_nanos();
                        let pings = u64::try_from(pings).unwrap_or(u64::MAX);
                        self.t.steps = self.t.steps.saturating_add(pings);
                    }
                }
            }
            Kind::Array | Kind::Table | Kind::Variant => {}
        }
        Ok(())
    }
}

impl<'a> ser::Serializer for Value<'a> {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, _: bool) -> Result<(), Unsupported> {
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Unsupported> {
        self.int(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Unsupported> {
        self.int(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Unsupported> {
        self.int(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Unsupported> {
        self.int(v)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Unsupported> {
        self.int(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Unsupported> {
        self.int(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Unsupported> {
        self.int(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Unsupported> {
        // Beyond i64 the document saturates (TOML integers stop there).
        self.int(i64::try_from(v).unwrap_or(i64::MAX))
    }
    fn serialize_i128(self, _: i128) -> Result<(), Unsupported> {
        Err(Unsupported)
    }
    fn serialize_u128(self, _: u128) -> Result<(), Unsupported> {
        Err(Unsupported)
    }
    fn serialize_f32(self, _: f32) -> Result<(), Unsupported> {
        Ok(())
    }
    fn serialize_f64(self, _: f64) -> Result<(), Unsupported> {
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Unsupported> {
        self.text(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Unsupported> {
        self.text(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Unsupported> {
        // An array of numbers, which count nothing but items.
        let mut a = self.array();
        a.items = v.len() as u64;
        a.close()
    }
    fn serialize_none(self) -> Result<(), Unsupported> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Unsupported> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Unsupported> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Unsupported> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Unsupported> {
        self.text(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Unsupported> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        mut self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Unsupported> {
        if let Some(k) = self.step_kind.take() {
            *k = Some(variant);
        }
        let mut table = self.table();
        table.entry(variant, v)?;
        table.close()
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, Unsupported> {
        Ok(self.array())
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, Unsupported> {
        Ok(self.array())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Unsupported> {
        Ok(self.array())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Unsupported> {
        variant_compound(self, variant)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, Unsupported> {
        Ok(self.table())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, Unsupported> {
        Ok(self.table())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Unsupported> {
        variant_compound(self, variant)
    }
}

/// `{variant: [...]}` / `{variant: {...}}`: the outer table has one entry, whose value is the
/// compound that follows, under the key `variant` (`steps`, `agents` and `wait` are field
/// names, never variant names, so the inner compound is a plain array or table).
fn variant_compound<'a>(v: Value<'a>, variant: &'static str) -> Result<Compound<'a>, Unsupported> {
    if matches!(variant, "steps" | "agents" | "wait") {
        return Err(Unsupported);
    }
    Ok(v.compound(Kind::Variant))
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Unsupported> {
        self.item(v)
    }
    fn end(self) -> Result<(), Unsupported> {
        self.close()
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Unsupported> {
        self.item(v)
    }
    fn end(self) -> Result<(), Unsupported> {
        self.close()
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Unsupported> {
        self.item(v)
    }
    fn end(self) -> Result<(), Unsupported> {
        self.close()
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Unsupported> {
        self.item(v)
    }
    fn end(self) -> Result<(), Unsupported> {
        self.close()
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), Unsupported> {
        self.pending = k.serialize(Key)?;
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Unsupported> {
        let key = std::mem::take(&mut self.pending);
        self.entry(&key, v)
    }
    fn end(self) -> Result<(), Unsupported> {
        self.close()
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Unsupported> {
        self.entry(key, v)
    }
    fn end(self) -> Result<(), Unsupported> {
        self.close()
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Unsupported> {
        self.entry(key, v)
    }
    fn end(self) -> Result<(), Unsupported> {
        self.close()
    }
}

/// A map key as serde_json writes it: text as is, numbers and booleans as their digits.
struct Key;

impl ser::Serializer for Key {
    type Ok = String;
    type Error = Unsupported;
    type SerializeSeq = ser::Impossible<String, Unsupported>;
    type SerializeTuple = ser::Impossible<String, Unsupported>;
    type SerializeTupleStruct = ser::Impossible<String, Unsupported>;
    type SerializeTupleVariant = ser::Impossible<String, Unsupported>;
    type SerializeMap = ser::Impossible<String, Unsupported>;
    type SerializeStruct = ser::Impossible<String, Unsupported>;
    type SerializeStructVariant = ser::Impossible<String, Unsupported>;

    fn serialize_bool(self, v: bool) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_f32(self, _: f32) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_f64(self, _: f64) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_char(self, v: char) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_str(self, v: &str) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_none(self) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_unit(self) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String, Unsupported> {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<String, Unsupported> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Unsupported> {
        Err(Unsupported)
    }
}
