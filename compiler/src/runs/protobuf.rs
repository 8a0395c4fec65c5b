//! A protobuf message's fields, decoded by hand for the few messages `runs ingest` reads from
//! binary logs (TensorBoard's `Event`, Weights & Biases' `Record`): the wire format of
//! protobuf's encoding guide (varint = 0, fixed64 = 1, length-delimited = 2, fixed32 = 5; the
//! deprecated groups 3 and 4 are malformed here). Every length is checked against what is left,
//! a varint is at most ten bytes, and nothing is allocated.

/// One protobuf field: its number and value.
pub(super) enum Field<'a> {
    Varint(u64),
    Fixed64([u8; 8]),
    Bytes(&'a [u8]),
    Fixed32([u8; 4]),
}

/// The fields of one protobuf message, in order; `None` at the first malformed field.
pub(super) struct Fields<'a> {
    rest: &'a [u8],
}

/// A base-128 varint at the front of `rest`, advancing it.
fn varint(rest: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..70).step_by(7) {
        let (&byte, tail) = rest.split_first()?;
        *rest = tail;
        value |= u64::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// `n` bytes at the front of `rest`, advancing it.
fn take<'a>(rest: &mut &'a [u8], n: u64) -> Option<&'a [u8]> {
    let n = usize::try_from(n).ok()?;
    if n > rest.len() {
        return None;
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Some(head)
}

impl<'a> Fields<'a> {
    pub(super) fn of(bytes: &'a [u8]) -> Self {
        Fields { rest: bytes }
    }

    /// The next field, `Some(Err(()))` when the message is malformed.
    pub(super) fn next_field(&mut self) -> Option<Result<(u64, Field<'a>), ()>> {
        if self.rest.is_empty() {
            return None;
        }
        let mut read = || {
            let key = varint(&mut self.rest)?;
            let field = match key & 7 {
                0 => Field::Varint(varint(&mut self.rest)?),
                1 => Field::Fixed64(take(&mut self.rest, 8)?.try_into().ok()?),
                2 => {
                    let n = varint(&mut self.rest)?;
                    Field::Bytes(take(&mut self.rest, n)?)
                }
                5 => Field::Fixed32(take(&mut self.rest, 4)?.try_into().ok()?),
                _ => return None,
            };
            Some((key >> 3, field))
        };
        let field = read();
        if field.is_none() {
            self.rest = &[];
        }
        Some(field.ok_or(()))
    }
}
