//! What a layout may use of a device: the device's memory less the CUDA context, NCCL's buffers
//! and the allocator's fragmentation, worked out by hand for the shipped devices.

use super::{reserved_memory, usable_memory};
use crate::catalogue::builtin;

/// Bytes in a GiB.
fn gib() -> f64 {
    f64::from(1u32 << 30)
}

fn figures(id: &str) -> crate::hardware::DeviceFigures {
    builtin()
        .device(id)
        .map(|d| d.figures())
        .unwrap_or_else(|| panic!("{id} is shipped"))
}

#[test]
fn h100_keeps_75_gib_for_a_layout() {
    // H100 SXM: 79.6 GiB, NVLink4 900 GB/s both ways = 450 GB/s one way → 450/14 = 32.1
    // channels, capped at 32. NCCL: 32 channels × (4,194,304 + 4,915,200 + 524,288 B) × 3
    // connections × 2 communicators = 1,849,688,064 B = 1.7227 GiB. Context 0.5 GiB,
    // fragmentation 2.3 % × 79.6 = 1.8308 GiB. Reserved 4.0535 GiB, usable 75.5465 GiB (the
    // former fixed 90 % left 71.64).
    let h100 = figures("H100_SXM");
    assert!((reserved_memory(&h100) / gib() - 4.0535).abs() < 0.0005);
    assert!((usable_memory(&h100) / gib() - 75.5465).abs() < 0.0005);
}

#[test]
fn pcie_devices_reserve_little_for_nccl() {
    // L40S: 48 GB = 44.703 GiB, PCIe Gen4 64 GB/s both ways = 32 GB/s → 2.286 channels.
    // NCCL: 2.286 × 9,633,792 × 6 = 132.1 MB = 0.1230 GiB; fragmentation 2.3 % × 44.7035 =
    // 1.0282 GiB; context 0.5 GiB. Reserved 1.6512 GiB, usable 43.0523 GiB (the former fixed
    // 90 % left 40.233).
    let l40s = figures("L40S");
    assert!((reserved_memory(&l40s) / gib() - 1.6512).abs() < 0.0005);
    assert!((usable_memory(&l40s) / gib() - 43.0523).abs() < 0.0005);
}

#[test]
fn a100_40gb_keeps_37_gib() {
    // A100 40 GB: 40 GiB, NVLink3 600 GB/s both ways → 300/14 = 21.43 channels. NCCL:
    // 21.43 × 9,633,792 × 6 = 1.2387e9 B = 1.1536 GiB; fragmentation 2.3 % × 40 = 0.92 GiB;
    // context 0.5 GiB. Reserved 2.5736 GiB, usable 37.4264 GiB (36.0 before).
    let a100 = figures("A100_SXM_40GB");
    assert!((reserved_memory(&a100) / gib() - 2.5736).abs() < 0.0005);
    assert!((usable_memory(&a100) / gib() - 37.4264).abs() < 0.0005);
}

#[test]
fn a_device_smaller_than_its_reserve_has_nothing_usable() {
    let mut tiny = figures("L40S");
    tiny.memory_bytes = 0.25 * gib();
    assert_eq!(usable_memory(&tiny), 0.0);
}
