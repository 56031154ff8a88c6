//! The records of one tipsy family kept by a partial read (a region, a rank's share), as a
//! structure of arrays, and the species the full reader would build from them.

use super::region::collapse_masses;
use super::tipsy_format::{ByteOrder, velocity_offset};
use super::{Field, Species, SpeciesKind};

/// The kept records of one family.
pub(super) struct Kept {
    positions: Vec<[f32; 3]>,
    velocities: Vec<[f32; 3]>,
    masses: Vec<f32>,
    extras: Vec<Vec<f32>>,
}

impl Kept {
    /// No records yet, for a family with `n_extras` extra columns.
    pub(super) fn new(n_extras: usize) -> Self {
        Self {
            positions: Vec::new(),
            velocities: Vec::new(),
            masses: Vec::new(),
            extras: vec![Vec::new(); n_extras],
        }
    }

    /// Whether no record was kept.
    pub(super) fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Keeps record `rec`, whose position `pos` the caller decoded (and checked) already.
    pub(super) fn push(
        &mut self,
        rec: &[u8],
        order: ByteOrder,
        double_positions: bool,
        pos: [f32; 3],
    ) {
        let v = velocity_offset(double_positions);
        self.masses.push(order.f32_at(rec, 0));
        self.positions.push(pos);
        self.velocities.push([
            order.f32_at(rec, v),
            order.f32_at(rec, v + 4),
            order.f32_at(rec, v + 8),
        ]);
        for (e, column) in self.extras.iter_mut().enumerate() {
            column.push(order.f32_at(rec, v + 12 + 4 * e));
        }
    }

    /// The species as the full reader builds it: gas `hsmooth` doubles as smoothing lengths.
    pub(super) fn into_species(self, kind: SpeciesKind, extras: &[&str]) -> Species {
        let fields: Vec<Field> = extras
            .iter()
            .zip(self.extras)
            .map(|(name, values)| Field {
                name: (*name).to_owned(),
                values,
                units: Default::default(),
            })
            .collect();
        let smoothing_lengths = (kind == SpeciesKind::Gas)
            .then(|| fields.iter().find(|f| f.name == "hsmooth"))
            .flatten()
            .map(|f| f.values.clone());
        Species {
            kind,
            positions: self.positions,
            masses: collapse_masses(self.masses),
            velocities: Some(self.velocities),
            ids: None,
            kernel_support: smoothing_lengths.as_ref().map(|_| 2.0),
            smoothing_lengths,
            fields,
            left_out: Vec::new(),
        }
    }
}
