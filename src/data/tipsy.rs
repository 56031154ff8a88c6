//! Tipsy binary snapshots (big or little endian, 32- or 28-byte header, f32 or f64 positions).
//!
//! Layout (see ../shared/data/README.md and the tipsy manual): header `double time; int32
//! nbodies, ndim, nsph, ndark, nstar [, int32 pad]`, then gas, dark and star records of float32
//! values. Positions are float64 in files written with double-precision positions. The byte
//! order, header size and position precision are not stored anywhere, so they are detected by
//! trying every combination and keeping the one whose counts add up and predict the exact file
//! size.

pub use super::tipsy_format::ByteOrder;
pub use super::tipsy_write::{TipsyWriteOptions, write};

use super::subsample::Subsample;
use super::tipsy_format::{FAMILIES, record_bytes, record_position, velocity_offset};
use super::{
    Header, LoadOptions, Masses, ReadError, Snapshot, SnapshotFormat, SourceInfo, Species,
    SpeciesKind,
};
use crate::jobs::Progress;
use rayon::prelude::*;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::Path;

/// What the header of a tipsy file says, once its encoding is known.
#[derive(Debug, Clone, PartialEq)]
pub struct TipsyLayout {
    /// Byte order.
    pub byte_order: ByteOrder,
    /// 32 (with pad) or 28 bytes.
    pub header_bytes: u32,
    /// Whether positions are stored as f64.
    pub double_positions: bool,
    /// Simulation time (the expansion factor in comoving runs).
    pub time: f64,
    /// Number of gas, dark and star particles.
    pub counts: [u64; 3],
}

impl TipsyLayout {
    /// File size this layout predicts.
    pub fn file_bytes(&self) -> u64 {
        let mut total = u64::from(self.header_bytes);
        for ((_, extras), &count) in FAMILIES.iter().zip(&self.counts) {
            total += count * record_bytes(extras.len(), self.double_positions);
        }
        total
    }
}

/// Finds the encoding whose header counts add up and predict `file_bytes` exactly.
///
/// `head` holds the first bytes of the file (at least 28 when the file has that many).
pub fn detect_layout(head: &[u8], file_bytes: u64) -> Result<TipsyLayout, String> {
    if head.len() < 28 {
        return Err(format!(
            "file is {file_bytes} bytes, shorter than the smallest tipsy header (28 bytes)"
        ));
    }
    let mut tried = Vec::new();
    for byte_order in [ByteOrder::Big, ByteOrder::Little] {
        let int_at = |offset: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&head[offset..offset + 4]);
            byte_order.u32_from(b) as i32
        };
        let mut t = [0u8; 8];
        t.copy_from_slice(&head[0..8]);
        let time = f64::from_bits(byte_order.u64_from(t));
        let (nbodies, ndim) = (int_at(8), int_at(12));
        let (nsph, ndark, nstar) = (int_at(16), int_at(20), int_at(24));
        let summary = format!(
            "{} endian: nbodies={nbodies} ndim={ndim} nsph={nsph} ndark={ndark} nstar={nstar}",
            byte_order.name()
        );
        if nsph < 0 || ndark < 0 || nstar < 0 {
            tried.push(format!("{summary} (negative count)"));
            continue;
        }
        if i64::from(nbodies) != i64::from(nsph) + i64::from(ndark) + i64::from(nstar) {
            tried.push(format!("{summary} (nbodies ≠ nsph + ndark + nstar)"));
            continue;
        }
        let counts = [nsph as u64, ndark as u64, nstar as u64];
        let mut predicted = Vec::new();
        for double_positions in [false, true] {
            for header_bytes in [32u32, 28] {
                let layout = TipsyLayout {
                    byte_order,
                    header_bytes,
                    double_positions,
                    time,
                    counts,
                };
                let expected = layout.file_bytes();
                if expected == file_bytes {
                    // A standard 32-byte-header file missing its last 4 bytes fits the 28-byte
                    // layout exactly; its zero pad then reads as the first particle's mass.
                    // Real particles have mass, so a zero there means truncation.
                    if header_bytes == 28
                        && counts.iter().any(|&n| n > 0)
                        && head.get(28..32) == Some(&[0u8; 4][..])
                    {
                        return Err(format!(
                            "file is {file_bytes} bytes: with a 28-byte header the first \
                             particle has zero mass, so this is more likely a 32-byte-header \
                             file ({summary}) truncated by 4 bytes"
                        ));
                    }
                    return Ok(layout);
                }
                predicted.push(expected.to_string());
            }
        }
        tried.push(format!(
            "{summary} predicts {} bytes (32/28-byte header, f32 then f64 positions)",
            predicted.join("/")
        ));
    }
    Err(format!(
        "not a tipsy file: it is {file_bytes} bytes, but no byte order and header size fit: {}",
        tried.join("; ")
    ))
}

/// Reads a tipsy file.
pub fn read(
    path: &Path,
    options: &LoadOptions,
    progress: &Progress,
) -> Result<Snapshot, ReadError> {
    let file = std::fs::File::open(path).map_err(|e| ReadError::io(path, e))?;
    let meta = file.metadata().map_err(|e| ReadError::io(path, e))?;
    if meta.is_dir() {
        return Err(ReadError::invalid(
            path,
            "is a directory, not a snapshot file",
        ));
    }
    let mut snapshot = read_from(file, path, options, progress)?;
    snapshot.source.paths = vec![path.to_path_buf()];
    Ok(snapshot)
}

/// Reads a tipsy snapshot held in memory (for fuzzing and tests); `name` labels errors.
pub fn read_from_bytes(
    bytes: &[u8],
    name: &Path,
    options: &LoadOptions,
    progress: &Progress,
) -> Result<Snapshot, ReadError> {
    read_from(std::io::Cursor::new(bytes), name, options, progress)
}

/// Bytes read per chunk: large sequential reads, decoded in parallel.
const CHUNK_BYTES: u64 = 8 << 20;
/// Records per parallel decoding task.
const TASK_RECORDS: u64 = 16 << 10;

/// Reads a tipsy snapshot from any seekable stream; `path` labels errors.
pub fn read_from<R: Read + Seek + Send>(
    mut reader: R,
    path: &Path,
    options: &LoadOptions,
    progress: &Progress,
) -> Result<Snapshot, ReadError> {
    let io = |e| ReadError::io(path, e);
    let file_bytes = reader.seek(SeekFrom::End(0)).map_err(io)?;
    reader.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut head = vec![0u8; file_bytes.min(32) as usize];
    reader.read_exact(&mut head).map_err(io)?;
    let layout =
        detect_layout(&head, file_bytes).map_err(|m| unknown_format(path, &head, file_bytes, m))?;
    reader
        .seek(SeekFrom::Start(u64::from(layout.header_bytes)))
        .map_err(io)?;

    // The layout predicts the exact file size, so every count below is backed by file bytes.
    let total: u64 = layout.counts.iter().sum();
    let sub = Subsample::new(total, options.max_particles);
    let total_bytes = file_bytes - u64::from(layout.header_bytes);
    let mut file = FamilyReader {
        reader,
        layout: &layout,
        sub: &sub,
        path,
        progress,
        buf: Vec::new(),
        next: Vec::new(),
        offset: u64::from(layout.header_bytes),
        done_bytes: 0,
        total_bytes,
    };
    let mut species = Vec::new();
    let mut first_global = 0u64;
    for (&(kind, extras), &count) in FAMILIES.iter().zip(&layout.counts) {
        if count == 0 {
            continue;
        }
        let family = Family {
            kind,
            extras,
            first_global,
            record_bytes: record_bytes(extras.len(), layout.double_positions),
            read: first_global..first_global + count,
        };
        let columns = file.read_family(&family)?;
        let decoded = columns.into_species(kind, extras);
        super::validate::check_species(path, &decoded, "hsmooth")?;
        species.push(decoded);
        first_global += count;
    }
    progress.report("reading", total_bytes, total_bytes);
    Ok(Snapshot {
        header: Header {
            time: layout.time,
            // Tipsy does not say whether `time` is an expansion factor, so no redshift.
            redshift: None,
            box_size: None,
            periodic: false,
            ..Header::default()
        },
        species,
        source: SourceInfo {
            paths: Vec::new(),
            format: SnapshotFormat::Tipsy,
            byte_order: Some(layout.byte_order.name().to_owned()),
            header_bytes: Some(layout.header_bytes),
            particles_in_file: total,
        },
    })
}

/// The part of one tipsy family that [`read_family_part`] reads.
pub(super) struct FamilyPart {
    pub kind: SpeciesKind,
    pub extras: &'static [&'static str],
    /// Global index of the family's first record.
    pub first_global: u64,
    /// Byte offset of the family's first record.
    pub family_offset: u64,
    /// Global indices of the records to read.
    pub read: Range<u64>,
}

/// The records of `part` in the tipsy file `reader`, decoded as [`read_from`] decodes the
/// whole family: chunks decoded on every thread while the next is read (a rank's share of the
/// family).
pub(super) fn read_family_part<R: Read + Seek + Send>(
    mut reader: R,
    layout: &TipsyLayout,
    sub: &Subsample,
    (path, progress): (&Path, &Progress),
    part: FamilyPart,
) -> Result<Species, ReadError> {
    let FamilyPart {
        kind,
        extras,
        first_global,
        family_offset,
        read,
    } = part;
    let record_bytes = record_bytes(extras.len(), layout.double_positions);
    let offset = family_offset + (read.start - first_global) * record_bytes;
    reader
        .seek(SeekFrom::Start(offset))
        .map_err(|e| ReadError::io(path, e))?;
    let family = Family {
        kind,
        extras,
        first_global,
        record_bytes,
        read: read.clone(),
    };
    let mut file = FamilyReader {
        reader,
        layout,
        sub,
        path,
        progress,
        buf: Vec::new(),
        next: Vec::new(),
        offset,
        done_bytes: 0,
        total_bytes: (read.end - read.start) * record_bytes,
    };
    let columns = file.read_family(&family)?;
    Ok(columns.into_species(kind, extras))
}

/// The error for a file whose header fits no tipsy layout: no snapshot of any known format; a
/// binary file also gets the tipsy counts tried (it may be a damaged tipsy file), a text file
/// not (its bytes read as counts mean nothing).
fn unknown_format(path: &Path, head: &[u8], file_bytes: u64, tipsy_message: String) -> ReadError {
    let hdf5 = if head.starts_with(&super::gadget_hdf5::HDF5_SIGNATURE) {
        "HDF5 signature present"
    } else {
        "no HDF5 signature"
    };
    // A character cut by the 32-byte window still counts as text.
    let valid = match std::str::from_utf8(head) {
        Ok(t) => Some(t),
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok(),
        Err(_) => None,
    };
    // Shorter files keep the tipsy message, which says they are shorter than any header.
    let text = head.len() >= 28
        && valid.is_some_and(|t| {
            t.chars()
                .all(|c| !c.is_control() || c.is_ascii_whitespace())
        });
    let message = if text {
        format!(
            "not a snapshot of any known format: its {file_bytes} bytes start with text; tried \
             tipsy (big- and little-endian, 28- and 32-byte headers) and Gadget/SWIFT/AREPO \
             HDF5 ({hdf5})"
        )
    } else {
        format!(
            "not a snapshot of any known format: not Gadget/SWIFT/AREPO HDF5 ({hdf5}), and \
             {tipsy_message}"
        )
    };
    ReadError::invalid(path, message)
}

/// One family's place in the file, and the part of it to read.
struct Family {
    kind: SpeciesKind,
    extras: &'static [&'static str],
    first_global: u64,
    record_bytes: u64,
    /// Global indices of the records to read: the whole family, or a rank's share of it.
    read: Range<u64>,
}

/// Decoded values of one family (structure of arrays).
struct Columns {
    positions: Vec<[f32; 3]>,
    velocities: Vec<[f32; 3]>,
    masses: Vec<f32>,
    extras: Vec<Vec<f32>>,
}

/// Mutable windows into [`Columns`], split between parallel tasks.
struct ColumnsMut<'a> {
    positions: &'a mut [[f32; 3]],
    velocities: &'a mut [[f32; 3]],
    masses: &'a mut [f32],
    extras: Vec<&'a mut [f32]>,
}

impl Columns {
    fn zeroed(n: usize, n_extras: usize) -> Self {
        Self {
            positions: vec![[0.0; 3]; n],
            velocities: vec![[0.0; 3]; n],
            masses: vec![0.0; n],
            extras: (0..n_extras).map(|_| vec![0.0; n]).collect(),
        }
    }

    fn window(&mut self, range: std::ops::Range<usize>) -> ColumnsMut<'_> {
        ColumnsMut {
            positions: &mut self.positions[range.clone()],
            velocities: &mut self.velocities[range.clone()],
            masses: &mut self.masses[range.clone()],
            extras: self
                .extras
                .iter_mut()
                .map(|v| &mut v[range.clone()])
                .collect(),
        }
    }

    fn into_species(self, kind: SpeciesKind, extras: &[&str]) -> Species {
        // Decided (and the per-particle vector freed) before the smoothing lengths are copied,
        // so the copy reuses the memory and the peak stays at the data kept.
        let masses = match self.masses.first() {
            Some(&m) if self.masses.iter().all(|&x| x.to_bits() == m.to_bits()) => {
                drop(self.masses);
                Masses::Uniform(m)
            }
            _ => Masses::PerParticle(self.masses),
        };
        let fields: Vec<super::Field> = extras
            .iter()
            .zip(self.extras)
            .map(|(name, values)| super::Field {
                name: (*name).to_owned(),
                values,
                units: Default::default(),
            })
            .collect();
        // Gas smoothing lengths are kept both as `hsmooth` (the file's name) and as the
        // renderer's smoothing lengths.
        let smoothing_lengths = (kind == SpeciesKind::Gas)
            .then(|| fields.iter().find(|f| f.name == "hsmooth"))
            .flatten()
            .map(|f| f.values.clone());
        Species {
            kind,
            positions: self.positions,
            masses,
            velocities: Some(self.velocities),
            ids: None,
            kernel_support: smoothing_lengths.as_ref().map(|_| 2.0),
            smoothing_lengths,
            fields,
            left_out: Vec::new(),
        }
    }
}

impl<'a> ColumnsMut<'a> {
    fn split_at(self, n: usize) -> (Self, Self) {
        let (p0, p1) = self.positions.split_at_mut(n);
        let (v0, v1) = self.velocities.split_at_mut(n);
        let (m0, m1) = self.masses.split_at_mut(n);
        let (e0, e1) = self.extras.into_iter().map(|e| e.split_at_mut(n)).unzip();
        (
            Self {
                positions: p0,
                velocities: v0,
                masses: m0,
                extras: e0,
            },
            Self {
                positions: p1,
                velocities: v1,
                masses: m1,
                extras: e1,
            },
        )
    }
}

/// The particle records of a tipsy file, read family after family, and what every family's
/// read shares.
struct FamilyReader<'a, R> {
    /// The file, at `offset`.
    reader: R,
    layout: &'a TipsyLayout,
    sub: &'a Subsample,
    /// Labels errors.
    path: &'a Path,
    progress: &'a Progress,
    /// Bytes of the chunk being decoded, and of the next one being read (both reused).
    buf: Vec<u8>,
    next: Vec<u8>,
    /// Byte offset of the next record in the file.
    offset: u64,
    /// Record bytes read so far, and in all, for the progress.
    done_bytes: u64,
    total_bytes: u64,
}

impl<R: Read + Send> FamilyReader<'_, R> {
    /// Reads the next family chunk by chunk: large reads, each decoded in parallel into place
    /// while a thread of its own reads the next chunk (the read is one thread's copy out of the
    /// page cache, as long as the decode on many).
    fn read_family(&mut self, family: &Family) -> Result<Columns, ReadError> {
        let (layout, sub, path, progress) = (self.layout, self.sub, self.path, self.progress);
        let total_bytes = self.total_bytes;
        let end_global = family.read.end;
        let kept_before_family = sub.kept_before(family.read.start);
        let n_kept = sub.kept_in(family.read.clone());
        let mut columns = Columns::zeroed(n_kept as usize, family.extras.len());
        let chunk_records = (CHUNK_BYTES / family.record_bytes).max(1);
        let chunk_end = |start: u64| (start + chunk_records).min(end_global);
        let mut chunk_start = family.read.start;
        let mut buf = std::mem::take(&mut self.buf);
        let mut next = std::mem::take(&mut self.next);
        if chunk_start < end_global {
            self.read_chunk(family, chunk_start, chunk_end(chunk_start), &mut buf)?;
        }
        while chunk_start < end_global {
            progress.check().map_err(|_| ReadError::Cancelled {
                path: path.to_path_buf(),
            })?;
            let end = chunk_end(chunk_start);
            let dest_start = sub.kept_before(chunk_start) - kept_before_family;
            let dest_end = sub.kept_before(end) - kept_before_family;
            let window = columns.window(dest_start as usize..dest_end as usize);
            let (decoded, read) = std::thread::scope(|scope| {
                let reading = (end < end_global).then(|| {
                    let next = &mut next;
                    let this = &mut *self;
                    scope.spawn(move || this.read_chunk(family, end, chunk_end(end), next))
                });
                let decoded = decode_chunk(&buf, chunk_start, window, family, layout, sub);
                let read = reading.map(|thread| {
                    thread
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                });
                (decoded, read)
            });
            // A bad record of this chunk comes before any read error of the next.
            decoded.map_err(|index| {
                ReadError::invalid(
                    path,
                    format!(
                        "{} particle {index}: position is NaN or infinite",
                        family.kind.name()
                    ),
                )
            })?;
            self.done_bytes += buf.len() as u64;
            progress.report("reading", self.done_bytes, total_bytes);
            read.transpose()?;
            std::mem::swap(&mut buf, &mut next);
            chunk_start = end;
        }
        self.buf = buf;
        self.next = next;
        Ok(columns)
    }

    /// Reads the records `start..end` of `family` (the next ones in the file) into `buf`.
    fn read_chunk(
        &mut self,
        family: &Family,
        start: u64,
        end: u64,
        buf: &mut Vec<u8>,
    ) -> Result<(), ReadError> {
        let n_bytes = ((end - start) * family.record_bytes) as usize;
        buf.resize(n_bytes, 0);
        let offset = self.offset;
        self.reader.read_exact(buf).map_err(|e| {
            ReadError::invalid(
                self.path,
                format!(
                    "cannot read {n_bytes} bytes of {} records at offset {offset}: {e}",
                    family.kind.name()
                ),
            )
        })?;
        self.offset += n_bytes as u64;
        Ok(())
    }
}

/// Decodes the records in `bytes` (global indices from `first`) into `dest` in parallel tasks.
/// On a non-finite position, returns the particle's index within its family.
fn decode_chunk(
    bytes: &[u8],
    first: u64,
    mut dest: ColumnsMut<'_>,
    family: &Family,
    layout: &TipsyLayout,
    sub: &Subsample,
) -> Result<(), u64> {
    let n_records = bytes.len() as u64 / family.record_bytes;
    let mut tasks = Vec::new();
    let mut task_start = 0u64;
    while task_start < n_records {
        let task_end = (task_start + TASK_RECORDS).min(n_records);
        let n_kept = sub.kept_in(first + task_start..first + task_end) as usize;
        let (head, rest) = dest.split_at(n_kept);
        dest = rest;
        let src = &bytes[(task_start * family.record_bytes) as usize
            ..(task_end * family.record_bytes) as usize];
        tasks.push((first + task_start, src, head));
        task_start = task_end;
    }
    let bad = tasks
        .into_par_iter()
        .filter_map(|(task_first, src, out)| decode_task(src, task_first, out, family, layout, sub))
        .min();
    match bad {
        Some(index) => Err(index),
        None => Ok(()),
    }
}

/// Decodes consecutive records; returns the family index of the first non-finite position.
fn decode_task(
    src: &[u8],
    first: u64,
    mut out: ColumnsMut<'_>,
    family: &Family,
    layout: &TipsyLayout,
    sub: &Subsample,
) -> Option<u64> {
    let order = layout.byte_order;
    let v = velocity_offset(layout.double_positions);
    let mut k = 0usize;
    let mut bad = None;
    for (j, rec) in src.chunks_exact(family.record_bytes as usize).enumerate() {
        let global = first + j as u64;
        if !sub.keeps_all() && !sub.is_kept(global) {
            continue;
        }
        let pos = record_position(rec, order, layout.double_positions);
        if bad.is_none() && !pos.iter().all(|x| x.is_finite()) {
            bad = Some(global - family.first_global);
        }
        out.masses[k] = order.f32_at(rec, 0);
        out.positions[k] = pos;
        out.velocities[k] = [
            order.f32_at(rec, v),
            order.f32_at(rec, v + 4),
            order.f32_at(rec, v + 8),
        ];
        for (e, column) in out.extras.iter_mut().enumerate() {
            column[k] = order.f32_at(rec, v + 12 + 4 * e);
        }
        k += 1;
    }
    bad
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(order: ByteOrder, counts: [i32; 5], pad: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let time = 0.5f64.to_bits();
        match order {
            ByteOrder::Big => out.extend(time.to_be_bytes()),
            ByteOrder::Little => out.extend(time.to_le_bytes()),
        }
        for c in counts.iter().chain(pad.then_some(&0)) {
            match order {
                ByteOrder::Big => out.extend(c.to_be_bytes()),
                ByteOrder::Little => out.extend(c.to_le_bytes()),
            }
        }
        out
    }

    #[test]
    fn detects_each_encoding_from_the_file_size() {
        for order in [ByteOrder::Big, ByteOrder::Little] {
            for pad in [true, false] {
                let head = header(order, [6, 3, 1, 2, 3], pad);
                let hdr = head.len() as u64;
                let float_size = hdr + 48 + 2 * 36 + 3 * 44;
                let layout = detect_layout(&head, float_size).expect("layout");
                assert_eq!(layout.byte_order, order);
                assert_eq!(u64::from(layout.header_bytes), hdr);
                assert!(!layout.double_positions);
                assert_eq!(layout.counts, [1, 2, 3]);
                assert_eq!(layout.time, 0.5);
                let double = detect_layout(&head, float_size + 6 * 12).expect("double layout");
                assert!(double.double_positions);
            }
        }
    }

    #[test]
    fn rejects_negative_counts_and_wrong_sizes_with_the_numbers() {
        let head = header(ByteOrder::Big, [-1, 3, -1, 0, 0], true);
        let err = detect_layout(&head, 32).expect_err("negative");
        assert!(err.contains("negative count"), "{err}");
        let head = header(ByteOrder::Big, [2, 3, 0, 2, 0], true);
        let err = detect_layout(&head, 101).expect_err("size");
        assert!(
            err.contains("101 bytes") && err.contains("104/100"),
            "{err}"
        );
    }

    /// A big-endian tipsy file of `n_gas` gas and `n_dark` dark particles whose every value
    /// follows from its index; dark particle `nan_dark` (if any) has a NaN x.
    fn file_of(n_gas: usize, n_dark: usize, nan_dark: Option<usize>) -> Vec<u8> {
        let counts = [(n_gas + n_dark) as i32, 3, n_gas as i32, n_dark as i32, 0];
        let mut out = header(ByteOrder::Big, counts, true);
        let mut put = |values: &[f32]| values.iter().for_each(|v| out.extend(v.to_be_bytes()));
        for i in 0..n_gas {
            let x = i as f32;
            put(&[
                1.0,
                x,
                -x,
                0.5 * x,
                1.0,
                2.0,
                3.0,
                x + 1.0,
                100.0,
                0.01,
                0.0,
                0.0,
            ]);
        }
        for i in 0..n_dark {
            let x = if nan_dark == Some(i) {
                f32::NAN
            } else {
                i as f32
            };
            put(&[2.0, x, x + 1.0, x + 2.0, 0.0, 0.0, 0.0, 0.1, 0.0]);
        }
        out
    }

    #[test]
    fn families_larger_than_a_chunk_are_read_whole_and_in_order() {
        // 9.6 MB of gas and 10.8 MB of dark records: two chunks each.
        let (n_gas, n_dark) = (200_000, 300_000);
        let bytes = file_of(n_gas, n_dark, None);
        let name = Path::new("big.tbin");
        let snapshot = read_from_bytes(&bytes, name, &LoadOptions::default(), &Progress::none())
            .expect("read");
        let [gas, dark] = &snapshot.species[..] else {
            panic!("two species expected");
        };
        assert_eq!((gas.positions.len(), dark.positions.len()), (n_gas, n_dark));
        assert!(gas.positions.iter().enumerate().all(|(i, p)| {
            let x = i as f32;
            *p == [x, -x, 0.5 * x]
        }));
        assert!(dark.positions.iter().enumerate().all(|(i, p)| {
            let x = i as f32;
            *p == [x, x + 1.0, x + 2.0]
        }));
    }

    #[test]
    fn a_bad_record_beyond_the_first_chunk_is_named() {
        let bytes = file_of(10, 300_000, Some(250_000));
        let err = read_from_bytes(
            &bytes,
            Path::new("bad.tbin"),
            &LoadOptions::default(),
            &Progress::none(),
        )
        .expect_err("a NaN position");
        let message = err.to_string();
        assert!(
            message.contains("bad.tbin") && message.contains("dark particle 250000"),
            "{message}"
        );
    }
}
