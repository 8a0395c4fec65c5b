//! PyTorch Lightning's throughput through `WandbLogger`: a Weights & Biases run file
//! (`wandb/offline-run-*/run-*.wandb`, written in offline mode and beside an online run alike).
//! `WandbLogger.log_metrics` (`lightning/pytorch/loggers/wandb.py`) calls
//! `run.log(dict(metrics, **{"trainer/global_step": step}))`, one history record per call, with
//! the `ThroughputMonitor`'s keys (those the CSV path reads, [`super::lightning`]).
//!
//! The file (`DataStore` in `wandb/sdk/internal/datastore.py`, wandb/wandb): a 7-byte header
//! (`:W&B`, magic `0xBEE1` little-endian, version 0), then LevelDB log records in 32 KiB blocks
//! (a block's tail under 7 bytes is zero padding), each a 7-byte header `<IHB` (CRC-32 of the
//! type byte then the data, unmasked; the length; the type FULL = 1, FIRST = 2, MIDDLE = 3,
//! LAST = 4) before its data; a record larger than a block's room is split FIRST, MIDDLE…,
//! LAST. Each whole record is a `wandb_internal.Record` protobuf (`wandb/proto/
//! wandb_internal.proto`: `history` = 2, a `HistoryRecord` with repeated `item` = 1, each a
//! `HistoryItem` with `key` = 1 or `nested_key` = 2 (the Go core of wandb writes a flat key
//! there, alone) and `value_json` = 16, and `step` = 2, a `HistoryStep` with `num` = 1). A call's step is its `trainer/global_step` item, or wandb's own step when it has
//! none.
//!
//! Bounded like the TensorBoard path ([`super::tfevents`]): a record over 16 MiB, more than
//! 4 million records, a CRC that fails or a record cut short is an error at the record's byte
//! offset, and no message shows the file's bytes.

use super::lightning::{self, Rate, Rates};
use super::protobuf::{Field, Fields};
use super::tfevents::{RECORD_CAP, RECORDS_CAP};
use super::{IngestError, TrainingMeasure};

/// The file's header: `:W&B`, magic 0xBEE1 (little-endian), version 0.
const FILE_HEADER: &[u8] = b":W&B\xe1\xbe\x00";
/// A LevelDB log block and a record's header.
const BLOCK: usize = 32 * 1024;
const HEADER: usize = 7;
/// Lightning's step key.
const STEP_KEY: &[u8] = b"trainer/global_step";

/// CRC-32 (IEEE, reflected polynomial `0xEDB88320`, zlib's `crc32`) of `bytes`, continuing `crc`.
pub(super) fn crc32(crc: u32, bytes: &[u8]) -> u32 {
    let mut crc = !crc;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Whether `bytes` open with a W&B run file's header.
pub(super) fn recognises(bytes: &[u8]) -> bool {
    bytes.starts_with(FILE_HEADER)
}

/// An error at the record starting at byte `offset`.
fn at(offset: usize, message: impl std::fmt::Display) -> IngestError {
    IngestError {
        line: 0,
        message: format!("byte {offset}: {message}"),
    }
}

/// The whole records of the file, each with the byte offset of its first piece.
fn records(bytes: &[u8]) -> impl Iterator<Item = Result<(usize, Vec<u8>), IngestError>> {
    let mut index = FILE_HEADER.len();
    let mut count = 0usize;
    std::iter::from_fn(move || {
        let mut whole: Option<(usize, Vec<u8>)> = None;
        loop {
            let left = BLOCK - index % BLOCK;
            if left < HEADER && index < bytes.len() {
                index += left;
                continue;
            }
            if index >= bytes.len() {
                return whole.map(|(start, _)| {
                    Err(at(start, "the file ends inside a record (a partial file)"))
                });
            }
            let start = index;
            // Stop after an error: the framing is lost.
            let fail = |index: &mut usize, message: String| {
                *index = bytes.len();
                Some(Err(at(start, message)))
            };
            let Some(header) = bytes.get(start..start + HEADER) else {
                return fail(
                    &mut index,
                    "the file ends inside a record (a partial file)".into(),
                );
            };
            let crc = header
                .get(..4)
                .and_then(|c| c.try_into().ok())
                .map_or(0, u32::from_le_bytes);
            let length = header
                .get(4..6)
                .and_then(|c| c.try_into().ok())
                .map_or(0, u16::from_le_bytes);
            let kind = header.get(6).copied().unwrap_or_default();
            let Some(data) = bytes.get(start + HEADER..start + HEADER + usize::from(length)) else {
                return fail(
                    &mut index,
                    "the file ends inside a record (a partial file)".into(),
                );
            };
            if crc32(crc32(0, &[kind]), data) != crc {
                return fail(&mut index, "the record fails its CRC-32".into());
            }
            index = start + HEADER + usize::from(length);
            match (kind, whole.as_mut()) {
                (1, None) => {
                    whole = Some((start, data.to_vec()));
                    break;
                }
                (2, None) => whole = Some((start, data.to_vec())),
                (3 | 4, Some((_, so_far))) => {
                    if (so_far.len() + data.len()) as u64 > RECORD_CAP {
                        return fail(
                            &mut index,
                            format!("a record over the {} MiB loam reads", RECORD_CAP >> 20),
                        );
                    }
                    so_far.extend_from_slice(data);
                    if kind == 4 {
                        break;
                    }
                }
                _ => {
                    return fail(
                        &mut index,
                        format!("a piece of type {kind} where the log format has none"),
                    );
                }
            }
        }
        count += 1;
        if count > RECORDS_CAP {
            index = bytes.len();
            return whole.map(|(start, _)| {
                Err(at(
                    start,
                    format!("more than {RECORDS_CAP} records, the most loam reads from one file"),
                ))
            });
        }
        whole.map(Ok)
    })
}

/// One `run.log` call's step and training rates, from a `Record`; `None` when the record is
/// not a history record.
struct Call {
    step: Option<u64>,
    wandb_step: u64,
    device: Option<f64>,
    job: Option<f64>,
}

/// A `HistoryItem`'s key and JSON value: its `key`, or its one `nested_key` (wandb 0.19 and
/// later, whose Go core writes every flat key so); a key nested two or more deep is a
/// dictionary's entry, never a Lightning metric, and reads as no key.
fn item(bytes: &[u8]) -> Result<(&[u8], &[u8]), ()> {
    let (mut key, mut value): (&[u8], &[u8]) = (&[], &[]);
    let (mut nested, mut depth): (&[u8], usize) = (&[], 0);
    let mut fields = Fields::of(bytes);
    while let Some(field) = fields.next_field() {
        match field? {
            (1, Field::Bytes(k)) => key = k,
            (2, Field::Bytes(k)) => {
                nested = k;
                depth += 1;
            }
            (16, Field::Bytes(v)) => value = v,
            _ => {}
        }
    }
    if key.is_empty() && depth == 1 {
        key = nested;
    }
    Ok((key, value))
}

/// A JSON number's value, when the text is one.
fn number(json: &[u8]) -> Option<f64> {
    std::str::from_utf8(json).ok()?.trim().parse::<f64>().ok()
}

/// The history record's call, `Ok(None)` for another kind of record, `Err(why)` when a rate is
/// not a positive number or the record is malformed.
fn call(record: &[u8]) -> Result<Option<Call>, &'static str> {
    let malformed = |()| "the record is not a well-formed wandb Record";
    let mut history = None;
    let mut fields = Fields::of(record);
    while let Some(field) = fields.next_field() {
        if let (2, Field::Bytes(h)) = field.map_err(malformed)? {
            history = Some(h);
        }
    }
    let Some(history) = history else {
        return Ok(None);
    };
    let mut call = Call {
        step: None,
        wandb_step: 0,
        device: None,
        job: None,
    };
    let mut fields = Fields::of(history);
    while let Some(field) = fields.next_field() {
        match field.map_err(malformed)? {
            (1, Field::Bytes(bytes)) => {
                let (key, value) = item(bytes).map_err(malformed)?;
                if key == STEP_KEY {
                    call.step = number(value)
                        .filter(|s| *s >= 0.0 && s.fract() == 0.0 && *s < 1e18)
                        .map(|s| s as u64);
                    continue;
                }
                let Some(which) = std::str::from_utf8(key).ok().and_then(lightning::rate) else {
                    continue;
                };
                let rate = number(value)
                    .filter(|v| v.is_finite() && *v > 0.0)
                    .ok_or("a training rate that is not a positive number")?;
                match which {
                    Rate::Device => call.device = Some(rate),
                    Rate::Job => call.job = Some(rate),
                }
            }
            (2, Field::Bytes(step)) => {
                let mut step = Fields::of(step);
                while let Some(field) = step.next_field() {
                    if let (1, Field::Varint(n)) = field.map_err(malformed)? {
                        call.wandb_step = n;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(Some(call))
}

/// The steady samples per second of the job, by the CSV path's rule ([`lightning::Rates`]):
/// each history record with the per-device rate is one logging call.
pub(super) fn read(bytes: &[u8]) -> Result<TrainingMeasure, IngestError> {
    let mut rates = Rates::default();
    let mut seen = 0usize;
    for record in records(bytes) {
        let (offset, data) = record?;
        let Some(call) = call(&data).map_err(|why| at(offset, why))? else {
            continue;
        };
        if let Some(device) = call.device {
            seen += 1;
            rates.push(call.step.unwrap_or(call.wandb_step), device, call.job);
        }
    }
    if seen == 0 {
        return Err(IngestError {
            line: 0,
            message: "a Weights & Biases run file with no `train/device/samples_per_sec` in its \
                      history: loam reads Lightning's ThroughputMonitor from it"
                .into(),
        });
    }
    rates.finish()
}
