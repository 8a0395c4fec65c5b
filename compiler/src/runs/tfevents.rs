//! PyTorch Lightning's throughput through its default logger, `TensorBoardLogger`: an
//! `events.out.tfevents.*` file. `TensorBoardLogger.log_metrics` calls the summary writer's
//! `add_scalar(key, value, step)` for each key of the `ThroughputMonitor`'s call (the keys the
//! CSV path reads, [`super::lightning`]), so the same rates arrive as scalar events sharing the
//! logging call's step.
//!
//! The file (tensorflow/tensorboard): a sequence of TFRecords, each `u64` little-endian length,
//! `u32` masked CRC32C of those 8 bytes, the data, `u32` masked CRC32C of the data
//! (`RecordWriter.write` in `tensorboard/summary/writer/record_writer.py`; the mask is
//! `((crc >> 15) | (crc << 17)) + 0xa282ead8`, `masked_crc32c` in
//! `tensorboard/compat/tensorflow_stub/pywrap_tensorflow.py`). Each record is a `tensorboard.Event`
//! protobuf (`tensorboard/compat/proto/event.proto`: `wall_time` = 1 double, `step` = 2 int64,
//! `file_version` = 3 string, `summary` = 5) whose `Summary` (`summary.proto`) holds repeated
//! `value` = 1, each `Summary.Value` with `tag` = 1 string, `simple_value` = 2 float, `tensor` =
//! 8 `TensorProto` (`tensor.proto`: `dtype` = 1, `tensor_content` = 4 bytes, `float_val` = 5
//! packed float, `double_val` = 6 packed double). torch's `SummaryWriter.add_scalar`
//! (`scalar` in `torch/utils/tensorboard/summary.py`, pytorch/pytorch) writes `simple_value`, or
//! with `new_style=True` a tensor with `float_val` (`double_val` with `double_precision=True`);
//! all three are read, and a tensor's `tensor_content` as one little-endian float or double.
//!
//! The protobuf is decoded by hand ([`super::protobuf`]: the few fields above, every length
//! checked against what is left) rather than with a protobuf crate, and CRC32C (Castagnoli) is a
//! table-free bitwise loop, tested on RFC 3720's check value. Bounded: a record over
//! [`RECORD_CAP`] bytes or more than [`RECORDS_CAP`] records is an error, and the file itself
//! is capped by the caller's reader. Every error gives the record's byte offset and never echoes
//! the file's bytes.

use super::lightning::{self, Rate, Rates};
use super::protobuf::{Field, Fields};
use super::{IngestError, TrainingMeasure};

/// The largest record read: 16 MiB (the W&B reader's too). A scalar event is about 50 bytes;
/// an image or a graph definition logged beside it can be megabytes.
pub const RECORD_CAP: u64 = 16 << 20;

/// The most records read from one file: 4 Mi, as many as a 64 MiB file (the most the CLI
/// reads) holds of the smallest, 16-byte, TFRecords.
pub const RECORDS_CAP: usize = 4 << 20;

/// The framing around a record's data: length, its CRC, and the data's CRC.
const HEADER: usize = 12;
const FOOTER: usize = 4;

/// CRC32C (Castagnoli, reflected polynomial `0x82F63B78`) of `bytes`.
pub(super) fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// TensorFlow's masked CRC32C, as the record writer stores it.
pub(super) fn masked_crc32c(bytes: &[u8]) -> u32 {
    let crc = crc32c(bytes);
    (crc.rotate_right(15)).wrapping_add(0xa282_ead8)
}

/// The little-endian `u32` at `at`, when the bytes are there.
fn le_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// Whether `bytes` open with a TFRecord header whose length CRC checks: a TensorBoard event
/// file, whatever its name (a text log cannot pass by chance but once in 2³² files).
pub(super) fn recognises(bytes: &[u8]) -> bool {
    match (bytes.get(..8), le_u32(bytes, 8)) {
        (Some(length), Some(crc)) => masked_crc32c(length) == crc,
        _ => false,
    }
}

/// An error at the record starting at byte `offset`.
fn at(offset: usize, message: impl std::fmt::Display) -> IngestError {
    IngestError {
        line: 0,
        message: format!("byte {offset}: {message}"),
    }
}

/// The records' data, in order, each with its byte offset; framing errors located.
fn records(bytes: &[u8]) -> impl Iterator<Item = Result<(usize, &[u8]), IngestError>> {
    let mut offset = 0usize;
    let mut count = 0usize;
    std::iter::from_fn(move || {
        if offset >= bytes.len() {
            return None;
        }
        let start = offset;
        // Stop after an error: the framing is lost.
        offset = bytes.len();
        count += 1;
        if count > RECORDS_CAP {
            return Some(Err(at(
                start,
                format!("more than {RECORDS_CAP} records, the most loam reads from one file"),
            )));
        }
        let partial = || at(start, "the file ends inside a record (a partial file)");
        let Some(header) = bytes.get(start..start + HEADER) else {
            return Some(Err(partial()));
        };
        let (length, crc) = header.split_at(8);
        if le_u32(crc, 0) != Some(masked_crc32c(length)) {
            return Some(Err(at(start, "the record's length fails its CRC32C")));
        }
        let length = u64::from_le_bytes(length.try_into().unwrap_or_default());
        if length > RECORD_CAP {
            return Some(Err(at(
                start,
                format!(
                    "a record of {length} bytes, over the {} MiB loam reads",
                    RECORD_CAP >> 20
                ),
            )));
        }
        // Under the cap, so it fits in usize.
        let end = start + HEADER + length as usize;
        let (Some(data), Some(crc)) = (bytes.get(start + HEADER..end), le_u32(bytes, end)) else {
            return Some(Err(partial()));
        };
        if masked_crc32c(data) != crc {
            return Some(Err(at(start, "the record's data fails its CRC32C")));
        }
        offset = end + FOOTER;
        Some(Ok((start, data)))
    })
}

/// One scalar of an event: its tag and value.
struct Scalar<'a> {
    tag: &'a [u8],
    value: Option<f64>,
}

/// A `TensorProto`'s single value: `float_val`, `double_val` (packed or not) or
/// `tensor_content` of a `DT_FLOAT` (1) or `DT_DOUBLE` (2) tensor.
fn tensor_value(bytes: &[u8]) -> Result<Option<f64>, ()> {
    // The first value of a packed (or single) float or double field.
    let float = |b: &[u8]| Some(f64::from(f32::from_le_bytes(b.get(..4)?.try_into().ok()?)));
    let double = |b: &[u8]| Some(f64::from_le_bytes(b.get(..8)?.try_into().ok()?));
    let mut dtype = 0;
    let mut content = None;
    let mut value = None;
    let mut fields = Fields::of(bytes);
    while let Some(field) = fields.next_field() {
        match field? {
            (1, Field::Varint(d)) => dtype = d,
            (4, Field::Bytes(b)) => content = Some(b),
            (5, Field::Fixed32(b)) => value = float(&b),
            (5, Field::Bytes(b)) => value = float(b),
            (6, Field::Fixed64(b)) => value = double(&b),
            (6, Field::Bytes(b)) => value = double(b),
            _ => {}
        }
    }
    Ok(value.or_else(|| match (dtype, content) {
        (1, Some(b)) => float(b),
        (2, Some(b)) => double(b),
        _ => None,
    }))
}

/// A `Summary.Value`: its tag and scalar, whichever way it was written.
fn summary_value(bytes: &[u8]) -> Result<Scalar<'_>, ()> {
    let mut scalar = Scalar {
        tag: &[],
        value: None,
    };
    let mut fields = Fields::of(bytes);
    while let Some(field) = fields.next_field() {
        match field? {
            (1, Field::Bytes(tag)) => scalar.tag = tag,
            (2, Field::Fixed32(b)) => scalar.value = Some(f64::from(f32::from_le_bytes(b))),
            (8, Field::Bytes(tensor)) => scalar.value = tensor_value(tensor)?,
            _ => {}
        }
    }
    Ok(scalar)
}

/// An `Event`'s step and the scalars of its summary.
fn event(bytes: &[u8]) -> Result<(u64, Vec<Scalar<'_>>), ()> {
    let mut step = 0;
    let mut scalars = Vec::new();
    let mut fields = Fields::of(bytes);
    while let Some(field) = fields.next_field() {
        match field? {
            (2, Field::Varint(s)) => step = s,
            (5, Field::Bytes(summary)) => {
                let mut values = Fields::of(summary);
                while let Some(value) = values.next_field() {
                    if let (1, Field::Bytes(value)) = value? {
                        scalars.push(summary_value(value)?);
                    }
                }
            }
            _ => {}
        }
    }
    Ok((step, scalars))
}

/// One logging call's rates, gathered from the scalar events of its step.
#[derive(Default)]
struct Call {
    step: u64,
    device: Option<f64>,
    job: Option<f64>,
}

/// The steady samples per second of the job, by the CSV path's rule ([`lightning::Rates`]):
/// scalars of one step are one logging call, a call without the per-device rate is not an
/// interval.
pub(super) fn read(bytes: &[u8]) -> Result<TrainingMeasure, IngestError> {
    let mut rates = Rates::default();
    let mut call: Option<Call> = None;
    let flush = |call: Option<Call>, rates: &mut Rates| {
        if let Some(Call {
            step,
            device: Some(device),
            job,
        }) = call
        {
            rates.push(step, device, job);
        }
    };
    let mut seen = 0usize;
    for record in records(bytes) {
        let (offset, data) = record?;
        let (step, scalars) =
            event(data).map_err(|()| at(offset, "the record is not a well-formed Event"))?;
        for scalar in scalars {
            let Some(which) = std::str::from_utf8(scalar.tag)
                .ok()
                .and_then(lightning::rate)
            else {
                continue;
            };
            let value = scalar
                .value
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or_else(|| at(offset, "a training rate that is not a positive number"))?;
            seen += 1;
            let same = call.as_ref().is_some_and(|c| {
                c.step == step
                    && match which {
                        Rate::Device => c.device.is_none(),
                        Rate::Job => c.job.is_none(),
                    }
            });
            if !same {
                flush(call.take(), &mut rates);
            }
            let current = call.get_or_insert_with(|| Call {
                step,
                ..Call::default()
            });
            match which {
                Rate::Device => current.device = Some(value),
                Rate::Job => current.job = Some(value),
            }
        }
    }
    flush(call.take(), &mut rates);
    if seen == 0 {
        return Err(IngestError {
            line: 0,
            message: "a TensorBoard event file with no `train/device/samples_per_sec` scalar: \
                      loam reads Lightning's ThroughputMonitor from it"
                .into(),
        });
    }
    rates.finish()
}
