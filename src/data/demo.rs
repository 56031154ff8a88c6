//! Deterministic synthetic snapshot and event list for first start, tests and benchmarks.

use super::{EventList, Snapshot};

/// A synthetic snapshot of about `n_particles` particles (halos on filaments: gas with smoothing
/// lengths, density and temperature; dark matter; stars), the same for the same `seed`.
pub fn demo_snapshot(n_particles: u64, seed: u64) -> Snapshot {
    let _ = (n_particles, seed);
    todo_snapshot()
}

/// A synthetic event list of `n_events` events (isotropic background plus injected point
/// sources), the same for the same `seed`.
pub fn demo_events(n_events: usize, seed: u64) -> EventList {
    let _ = (n_events, seed);
    EventList::default()
}

fn todo_snapshot() -> Snapshot {
    use super::{Header, SnapshotFormat, SourceInfo};
    Snapshot {
        header: Header::default(),
        species: Vec::new(),
        source: SourceInfo {
            paths: Vec::new(),
            format: SnapshotFormat::Demo,
            byte_order: None,
            header_bytes: None,
            particles_in_file: 0,
        },
    }
}
