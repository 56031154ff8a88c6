//! Damaged inputs: truncated, lying, negative, empty, random and non-finite tipsy files, and
//! HDF5 snapshots with missing datasets, wrong shapes and lying headers. Each must give a clear
//! error naming the problem, never panic, and never allocate what a header claims.

mod common;

use common::shared_data;
use haloscope::data::gadget_hdf5::{self, GadgetWriteOptions};
use haloscope::data::tipsy::{self, ByteOrder, TipsyWriteOptions};
use haloscope::data::{
    EventList, LoadOptions, ReadError, Snapshot, SpeciesKind, demo, events, load_snapshot,
};
use haloscope::jobs::Progress;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

/// Records the largest single allocation made on each thread, so a test can show that a reader
/// did not allocate what a lying header claimed. Safety: forwards every call unchanged to the
/// system allocator; the thread-local is a plain `Cell<usize>` that never allocates.
struct LargestAllocation;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

// SAFETY: every method forwards to `System` with the caller's arguments.
unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

/// Runs `f` and returns the largest single allocation it made on this thread.
fn largest_allocation_in<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    let out = f();
    (out, LARGEST.with(Cell::get))
}

fn read_bytes(bytes: &[u8]) -> Result<Snapshot, ReadError> {
    tipsy::read_from_bytes(
        bytes,
        Path::new("mem.tipsy"),
        &LoadOptions::default(),
        &Progress::none(),
    )
}

fn read_path(path: &Path) -> Result<Snapshot, ReadError> {
    load_snapshot(path, &LoadOptions::default(), &Progress::none())
}

fn err_text(result: Result<Snapshot, ReadError>) -> String {
    match result {
        Ok(s) => panic!("expected an error, read {} particles", s.n_particles()),
        Err(e) => e.to_string(),
    }
}

/// A small valid tipsy file with all three families, as bytes.
fn small_tipsy(options: &TipsyWriteOptions) -> Vec<u8> {
    let snap = demo::demo_snapshot(60, 9);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("small.tipsy");
    tipsy::write(&path, &snap, options).expect("written");
    std::fs::read(&path).expect("read back")
}

#[test]
fn every_truncation_of_a_tipsy_file_is_an_error_naming_the_size() {
    for options in [
        TipsyWriteOptions::default(),
        TipsyWriteOptions {
            byte_order: ByteOrder::Little,
            header_bytes: 28,
            double_positions: true,
        },
    ] {
        let bytes = small_tipsy(&options);
        assert!(read_bytes(&bytes).is_ok());
        for len in 0..bytes.len() {
            let cut = &bytes[..len];
            let text = match read_bytes(cut) {
                // The same misread (see below) whose values the reader's checks refuse.
                Err(e) if e.to_string().contains("particles are NaN, infinite") => {
                    let layout = tipsy::detect_layout(&cut[..32], len as u64).expect("fits");
                    assert!(
                        options.double_positions && !layout.double_positions,
                        "{len}: {e}"
                    );
                    continue;
                }
                Err(e) => e.to_string(),
                Ok(misread) => {
                    // A double-position file cut by 12 bytes per particle (± the 4-byte pad)
                    // has exactly the size of the same counts in another encoding; the format
                    // cannot tell them apart. It must never pass as the original encoding.
                    let layout = tipsy::detect_layout(&cut[..32], len as u64).expect("fits");
                    assert!(
                        options.double_positions && !layout.double_positions,
                        "{len}"
                    );
                    assert_eq!(misread.n_particles(), 60);
                    continue;
                }
            };
            assert!(
                text.contains("not a tipsy file")
                    || text.contains("shorter than")
                    || text.contains("truncated by 4 bytes"),
                "{len}: {text}"
            );
            assert!(text.contains(&format!("{len} bytes")), "{len}: {text}");
        }
    }
    // The shared file, cut at a spread of offsets and through the real file path.
    let bytes = std::fs::read(shared_data("snapshots/run581.20000")).expect("read");
    let dir = tempfile::tempdir().expect("temp dir");
    for len in (0..bytes.len())
        .step_by(9_973)
        .chain([bytes.len() - 1, 27, 31, 33])
    {
        let path = dir.path().join("cut.tbin");
        std::fs::write(&path, &bytes[..len]).expect("write");
        let text = err_text(read_path(&path));
        assert!(text.starts_with(&path.display().to_string()), "{text}");
    }
}

fn with_counts(bytes: &[u8], counts: [i32; 5]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for (k, c) in counts.iter().enumerate() {
        out[8 + 4 * k..12 + 4 * k].copy_from_slice(&c.to_be_bytes());
    }
    out
}

#[test]
fn header_counts_larger_than_the_file_are_refused_without_allocating_them() {
    let bytes = small_tipsy(&TipsyWriteOptions::default());
    let huge = i32::MAX / 2;
    let lying = with_counts(&bytes, [huge + 10, 3, 10, huge, 0]);
    let (result, largest) = largest_allocation_in(|| read_bytes(&lying));
    let text = err_text(result);
    assert!(text.contains(&format!("ndark={huge}")), "{text}");
    assert!(largest < 1 << 20, "allocated {largest} bytes");
}

#[test]
fn negative_counts_are_named() {
    let bytes = small_tipsy(&TipsyWriteOptions::default());
    let text = err_text(read_bytes(&with_counts(&bytes, [-4, 3, -10, 3, 3])));
    assert!(text.contains("negative count"), "{text}");
    assert!(text.contains("nsph=-10"), "{text}");
}

#[test]
fn empty_and_random_files_are_errors() {
    let text = err_text(read_bytes(&[]));
    assert!(text.contains("0 bytes") && text.contains("28"), "{text}");
    let dir = tempfile::tempdir().expect("temp dir");
    let empty = dir.path().join("empty");
    std::fs::write(&empty, []).expect("write");
    assert!(err_text(read_path(&empty)).contains("0 bytes"));
    // xorshift64 with a fixed seed: reproducible random files of many sizes.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..500 {
        let len = (next() % 3000) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        assert!(
            read_bytes(&bytes).is_err(),
            "random {len} bytes read as tipsy"
        );
    }
}

#[test]
fn non_finite_positions_name_the_particle_and_family() {
    let mut snap = demo::demo_snapshot(60, 9);
    let dir = tempfile::tempdir().expect("temp dir");
    for (kind, index, value, double_positions) in [
        (SpeciesKind::Dark, 3, f32::NAN, false),
        (SpeciesKind::Star, 5, f32::INFINITY, false),
        (SpeciesKind::Gas, 0, f32::NEG_INFINITY, true),
    ] {
        let original = snap.clone();
        snap.species_mut(kind).expect("family").positions[index][1] = value;
        let path = dir.path().join("nan.tipsy");
        let options = TipsyWriteOptions {
            double_positions,
            ..TipsyWriteOptions::default()
        };
        tipsy::write(&path, &snap, &options).expect("written");
        let text = err_text(read_path(&path));
        assert!(
            text.contains(&format!(
                "{kind} particle {index}: position is NaN or infinite"
            )),
            "{text}"
        );
        let h5 = dir.path().join("nan.hdf5");
        gadget_hdf5::write(&h5, &snap, &GadgetWriteOptions::default()).expect("written");
        let text = err_text(read_path(&h5));
        assert!(
            text.contains(&format!(
                "{kind} particle {index}: position is NaN or infinite"
            )),
            "{text}"
        );
        snap = original;
    }
}

// Fuzzing (fuzz/README.md): the seeds the fuzzers start from, and the inputs they found.

/// A fuzz seed file (fuzz/seeds/, cut down from the shared files by fuzz/seeds/make_seeds.py).
fn fuzz_seed(relative: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn family(snapshot: &Snapshot, kind: SpeciesKind) -> &haloscope::data::Species {
    snapshot.species(kind).expect("family present")
}

/// The seeds must stay valid files of every encoding, or the fuzzers would start from junk.
#[test]
fn tipsy_fuzz_seeds_are_valid_cut_downs_of_the_shared_files() {
    let run581 = read_path(&shared_data("snapshots/run581.20000")).expect("run581");
    for (name, order, header_bytes) in [
        ("tipsy/run581_be32.tbin", "big", 32),
        ("tipsy/run581_le28.tbin", "little", 28),
    ] {
        let seed = read_bytes(&fuzz_seed(name)).expect(name);
        assert_eq!(seed.source.byte_order.as_deref(), Some(order), "{name}");
        assert_eq!(seed.source.header_bytes, Some(header_bytes), "{name}");
        assert_eq!(seed.header.time, run581.header.time, "{name}");
        for (kind, n) in [(SpeciesKind::Dark, 4), (SpeciesKind::Star, 3)] {
            let (cut, full) = (family(&seed, kind), family(&run581, kind));
            assert_eq!(cut.positions, full.positions[..n], "{name} {kind}");
            assert_eq!(
                cut.velocities.as_deref(),
                full.velocities.as_ref().map(|v| &v[..n])
            );
        }
    }
    let lambs = read_path(&shared_data("snapshots/lambs.00200_subsamp_30K")).expect("lambs");
    let lambs_dark = family(&lambs, SpeciesKind::Dark);
    let bytes = fuzz_seed("tipsy/lambs_be32_f64pos.tbin");
    let layout = tipsy::detect_layout(&bytes[..32], bytes.len() as u64).expect("layout");
    assert!(layout.double_positions && layout.byte_order == ByteOrder::Big);
    let seed = read_bytes(&bytes).expect("f64 seed");
    // f32 → f64 on disk → f32 in memory is exact.
    assert_eq!(
        family(&seed, SpeciesKind::Dark).positions,
        lambs_dark.positions[..5]
    );
    let seed = read_bytes(&fuzz_seed("tipsy/gas_dark_le32.tbin")).expect("gas seed");
    assert_eq!(seed.source.byte_order.as_deref(), Some("little"));
    let gas = family(&seed, SpeciesKind::Gas);
    assert_eq!(gas.smoothing_lengths.as_deref(), Some(&[0.003f32; 3][..]));
    assert_eq!(
        family(&seed, SpeciesKind::Dark).positions,
        lambs_dark.positions[..2]
    );
}

fn read_event_bytes(bytes: &[u8]) -> Result<EventList, ReadError> {
    events::read_from_bytes(bytes, Path::new("mem.txt"), &Progress::none())
}

/// Each event seed reads through `read_from_bytes` exactly as its rows read from the shared file.
#[test]
fn event_fuzz_seeds_read_as_the_first_rows_of_the_shared_files() {
    let ic40 =
        events::read(&[&shared_data("events/IC40_exp.csv")], &Progress::none()).expect("IC40");
    for name in ["events/ic40_10yr.txt", "events/ic40_comma.csv"] {
        let seed = read_event_bytes(&fuzz_seed(name)).expect(name);
        assert_eq!(seed.len(), 20, "{name}");
        assert_eq!(seed.ra, ic40.ra[..20], "{name}");
        assert_eq!(seed.dec, ic40.dec[..20], "{name}");
        assert_eq!(seed.energy, ic40.energy[..20], "{name}");
        let first_20 = |c: &Option<Vec<f64>>| c.as_ref().map(|v| v[..20].to_vec());
        assert_eq!(seed.ang_err, first_20(&ic40.ang_err), "{name}");
        assert_eq!(seed.mjd, first_20(&ic40.mjd), "{name}");
        assert_eq!(seed.sources, [Path::new("mem.txt")]);
    }
    let bytes = fuzz_seed("events/ic86_2011_crlf.txt");
    assert!(events::looks_like_events_bytes(&bytes));
    let seed = read_event_bytes(&bytes).expect("IC86-2011 seed");
    let up = events::read(
        &[&shared_data("events/IC86-2011/upgoing_events.txt")],
        &Progress::none(),
    )
    .expect("upgoing");
    assert_eq!(seed.len(), 22);
    assert_eq!(seed.columns, up.columns);
    assert_eq!(seed.ra[..20], up.ra[..20]);
    // The two downgoing rows: `55699 3.8 0.2 360.0 -24.8` (RA wraps to 0) and
    // `55821 3.7 0.6 331.8 -90.0` (the pole is kept).
    assert_eq!(seed.ra[20..], [0.0, 331.8f64.to_radians()]);
    assert_eq!(
        seed.dec[20..],
        [(-24.8f64).to_radians(), (-90.0f64).to_radians()]
    );
    // The same bytes through a file give the same list.
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("seed.txt");
    std::fs::write(&path, &bytes).expect("write");
    let mut from_file = events::read(&[&path], &Progress::none()).expect("from file");
    from_file.sources = seed.sources.clone();
    assert_eq!(from_file, seed);
}

#[path = "readers_damaged/hdf5_cases.rs"]
mod hdf5_cases;
