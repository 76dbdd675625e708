//! Token bytes → id of one encoding: an open-addressing hash table (linear probing) over the
//! tokens' bytes, stored back to back in one buffer. Built in one pass without an allocation per
//! token (a `HashMap<Vec<u8>, u32>` of o200k_base's 199,998 tokens doubled the encoder's load
//! time) and looked up with plain loops that stay fast in unoptimised test builds.

/// One slot of the table: a token's bytes (`bytes[start..end]`) and its id, or empty.
#[derive(Debug, Clone, Copy)]
struct Slot {
    start: u32,
    end: u32,
    /// The token's id; [`EMPTY`] for an empty slot.
    id: u32,
}

/// The id of an empty slot (no token has it: ids are below 2^18).
const EMPTY: u32 = u32::MAX;

/// The tokens of one encoding.
#[derive(Debug)]
pub struct Ranks {
    /// Every token's bytes, back to back, in id order.
    bytes: Vec<u8>,
    /// A power of two of slots, at most half full.
    slots: Vec<Slot>,
    /// Bits of the hash that pick a slot (`slots.len() == 1 << bits`).
    bits: u32,
}

/// Hash of a token's bytes: 8 bytes at a time, multiplied into the state (FxHash's scheme,
/// with the length mixed in); the slot is taken from the top bits.
#[inline]
fn hash(key: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = key.len() as u64;
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = 0u64;
        for (i, &b) in rest.iter().enumerate() {
            w |= u64::from(b) << (8 * i);
        }
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    h
}

impl Ranks {
    /// The table of the tokens `tokens` yields, in id order (id 0 first).
    pub fn new(count_hint: usize, tokens: impl Iterator<Item = Vec<u8>>) -> Ranks {
        let bits = (count_hint.max(1) * 2).next_power_of_two().trailing_zeros();
        let mut ranks = Ranks {
            bytes: Vec::with_capacity(count_hint * 8),
            slots: vec![
                Slot {
                    start: 0,
                    end: 0,
                    id: EMPTY,
                };
                1 << bits
            ],
            bits,
        };
        for (id, token) in tokens.enumerate() {
            ranks.insert(&token, id as u32);
        }
        ranks
    }

    /// Adds a token (the table never grows: `new` sized it for `count_hint` tokens; more than
    /// twice that would fill it, so `new` is only called with the encoding's exact size).
    fn insert(&mut self, token: &[u8], id: u32) {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(token);
        let slot = Slot {
            start,
            end: self.bytes.len() as u32,
            id,
        };
        let mask = self.slots.len() - 1;
        let mut i = (hash(token) >> (64 - self.bits)) as usize;
        while self.slots[i].id != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.id != EMPTY).count()
    }

    /// The id of the token whose bytes are `key`, if any.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = (hash(key) >> (64 - self.bits)) as usize;
        loop {
            let s = self.slots[i];
            if s.id == EMPTY {
                return None;
            }
            if (s.end - s.start) as usize == key.len()
                && &self.bytes[s.start as usize..s.end as usize] == key
            {
                return Some(s.id);
            }
            i = (i + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_token_and_nothing_else() {
        let tokens: Vec<Vec<u8>> = (0..=255u8)
            .map(|b| vec![b])
            .chain(["ab", "abc", " the", "abcdefghijk", "abcdefgh"].map(|t| t.into()))
            .collect();
        let r = Ranks::new(tokens.len(), tokens.clone().into_iter());
        assert_eq!(r.len(), tokens.len());
        for (id, t) in tokens.iter().enumerate() {
            assert_eq!(r.get(t), Some(id as u32), "{t:?}");
        }
        for missing in ["", "ba", "abcd", "abcdefghij", "abcdefghijkl", " th"] {
            assert_eq!(r.get(missing.as_bytes()), None, "{missing:?}");
        }
    }
}
