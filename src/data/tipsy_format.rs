//! The tipsy format as the reader and the writer share it: byte order, the families in file
//! order with their record fields, and the record size.

use super::SpeciesKind;

/// Byte order of a tipsy file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    /// Big-endian (XDR), the standard.
    Big,
    /// Little-endian (native on x86), written by some codes.
    Little,
}

impl ByteOrder {
    /// `"big"` or `"little"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Big => "big",
            Self::Little => "little",
        }
    }

    pub(super) fn u32_from(self, bytes: [u8; 4]) -> u32 {
        match self {
            Self::Big => u32::from_be_bytes(bytes),
            Self::Little => u32::from_le_bytes(bytes),
        }
    }

    pub(super) fn u64_from(self, bytes: [u8; 8]) -> u64 {
        match self {
            Self::Big => u64::from_be_bytes(bytes),
            Self::Little => u64::from_le_bytes(bytes),
        }
    }

    /// The float32 at byte `at` of a record in this order.
    pub(super) fn f32_at(self, rec: &[u8], at: usize) -> f32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&rec[at..at + 4]);
        f32::from_bits(self.u32_from(b))
    }

    /// The float64 at byte `at` of a record in this order.
    pub(super) fn f64_at(self, rec: &[u8], at: usize) -> f64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&rec[at..at + 8]);
        f64::from_bits(self.u64_from(b))
    }
}

/// Named float32 values after mass, position and velocity in each record, in file order.
pub(super) const GAS_FIELDS: [&str; 5] = ["rho", "temp", "hsmooth", "metals", "phi"];
/// See [`GAS_FIELDS`].
pub(super) const DARK_FIELDS: [&str; 2] = ["eps", "phi"];
/// See [`GAS_FIELDS`].
pub(super) const STAR_FIELDS: [&str; 4] = ["metals", "tform", "eps", "phi"];

/// The tipsy families in file order with their extra field names.
pub(super) const FAMILIES: [(SpeciesKind, &[&str]); 3] = [
    (SpeciesKind::Gas, &GAS_FIELDS),
    (SpeciesKind::Dark, &DARK_FIELDS),
    (SpeciesKind::Star, &STAR_FIELDS),
];

/// Bytes in one record: mass, position, velocity, extras; positions take 24 bytes as f64.
pub(super) fn record_bytes(n_extra: usize, double_positions: bool) -> u64 {
    let floats = 7 + n_extra as u64;
    floats * 4 + if double_positions { 12 } else { 0 }
}

/// A record's position (after its mass). Double positions are kept as f32: f32 keeps ~7 digits,
/// enough to render and link.
pub(super) fn record_position(rec: &[u8], order: ByteOrder, double_positions: bool) -> [f32; 3] {
    if double_positions {
        [
            order.f64_at(rec, 4),
            order.f64_at(rec, 12),
            order.f64_at(rec, 20),
        ]
        .map(|x| x as f32)
    } else {
        [
            order.f32_at(rec, 4),
            order.f32_at(rec, 8),
            order.f32_at(rec, 12),
        ]
    }
}

/// Byte offset of a record's velocity (after its mass and position); the extras follow it.
pub(super) fn velocity_offset(double_positions: bool) -> usize {
    4 + if double_positions { 24 } else { 12 }
}
