//! The resident upload with the host's per-particle work done inside the pinned staging fill:
//! each piece is transformed by rayon threads straight into a pinned buffer (the drawn
//! smoothing lengths scaled and Σ 1/h summed; a linear field's limits found) while the previous
//! piece is in flight, so no host array is built and nothing is read twice. A log field's raw
//! values are copied and its log10 and limits taken on the device (log10.rs), which gives the
//! host's bits; where it would not, the host takes the log10 in the fill. The kernels then
//! apply the normaliser's clamp and scale to the uploaded values (log10 already taken): the
//! same f32 operations as [`Normaliser::apply`], so n stays bit-identical to the CPU
//! reference's. The Morton reorder's keys (reorder.rs) are computed on the compute stream while
//! the arrays after the positions upload.

use super::CudaRenderer;
use super::data::{DeviceArrays, LoadedSpecies, alloc_arrays};
use super::log10::PendingLimits;
use super::reorder;
use crate::data::Snapshot;
use crate::gpu::{GpuError, PinnedStaging, STAGING_PIECE};
use crate::jobs::Progress;
use crate::render::knn::smoothing_lengths;
use crate::render::normalise::Normaliser;
use crate::render::resolve::{Fields, Values, resolve_fields};
use crate::render::{RenderError, RenderSettings, SpeciesStyle, StageTime};
use cudarc::driver::{CudaSlice, CudaStream};
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

/// Particles per Σ 1/h partial sum: the sums are added in chunk order, so the f64 total has
/// the same bits as the host path's (data.rs sums the same chunks).
const SUM_CHUNK: usize = 1 << 16;
const _: () = assert!(STAGING_PIECE.is_multiple_of(SUM_CHUNK));

/// What the host does to each value on its way into the staging buffer.
#[derive(Debug, Clone, Copy)]
enum Transform {
    /// As it is.
    Copy,
    /// Times a factor (the drawn smoothing lengths), in f32.
    Scale(f32),
    /// log10 for values > 0, NaN otherwise (the kernels map NaN to the lower limit, as
    /// [`Normaliser::apply`] maps excluded values).
    Log10,
}

impl Transform {
    #[inline]
    fn apply(self, v: f32) -> f32 {
        match self {
            Self::Copy => v,
            Self::Scale(f) => v * f,
            Self::Log10 if v > 0.0 => v.log10(),
            Self::Log10 => f32::NAN,
        }
    }
}

/// What a pass over one array found: the finite minimum and maximum of the uploaded values and
/// the Σ 1/v partial sums (over finite v > 0) of each [`SUM_CHUNK`], in order.
#[derive(Debug)]
struct Found {
    lo: f32,
    hi: f32,
    inv_sums: Vec<f64>,
}

/// One [`SUM_CHUNK`] of `src` (or of the constant) into `out`; with `limits`, the finite
/// minimum and maximum of what was written (else infinity and minus infinity); under
/// [`Transform::Scale`], Σ 1/v over its finite v > 0.
fn fill_chunk(
    out: &mut [f32],
    src: Values<'_>,
    first: usize,
    t: Transform,
    limits: bool,
) -> (f32, f32, f64) {
    let len = out.len();
    match (src, t) {
        (Values::Slice(values), Transform::Copy) => {
            out.copy_from_slice(&values[first..first + len])
        }
        (Values::Slice(values), Transform::Scale(f)) => {
            for (o, &v) in out.iter_mut().zip(&values[first..first + len]) {
                *o = v * f;
            }
        }
        (Values::Slice(values), Transform::Log10) => {
            for (o, &v) in out.iter_mut().zip(&values[first..first + len]) {
                *o = t.apply(v);
            }
        }
        (Values::Constant(c), _) => out.fill(t.apply(c)),
    }
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    if limits {
        for &x in out.iter().filter(|x| x.is_finite()) {
            lo = lo.min(x);
            hi = hi.max(x);
        }
    }
    let inv = if matches!(t, Transform::Scale(_)) {
        // The same expression as the host path's sum (data.rs), chunk by chunk.
        out.iter()
            .filter(|h| **h > 0.0 && h.is_finite())
            .map(|h| 1.0 / f64::from(*h))
            .sum::<f64>()
    } else {
        0.0
    };
    (lo, hi, inv)
}

/// Uploads `n` transformed values of `src` into `dst` on `stream`.
fn upload_values(
    staging: &mut PinnedStaging,
    stream: &Arc<CudaStream>,
    src: Values<'_>,
    n: usize,
    t: Transform,
    limits: bool,
    dst: &mut CudaSlice<f32>,
) -> Result<Found, GpuError> {
    let pieces = staging.upload_filled(stream, &mut dst.slice_mut(0..n), |start, out| {
        out.par_chunks_mut(SUM_CHUNK)
            .enumerate()
            .map(|(c, o)| fill_chunk(o, src, start + c * SUM_CHUNK, t, limits))
            .collect::<Vec<_>>()
    })?;
    let mut found = Found {
        lo: f32::INFINITY,
        hi: f32::NEG_INFINITY,
        inv_sums: Vec::new(),
    };
    for (lo, hi, inv) in pieces.into_iter().flatten() {
        found.lo = found.lo.min(lo);
        found.hi = found.hi.max(hi);
        found.inv_sums.push(inv);
    }
    Ok(found)
}

/// The normaliser the kernels apply to uploaded (already log10) values: the style's fixed range,
/// else the data's finite limits `lo` and `hi` (0 and 0 when there are none, lo > hi), as
/// [`Normaliser::from_values`] finds them.
fn device_normaliser(range: Option<(f32, f32)>, lo: f32, hi: f32) -> Normaliser {
    let (lo, hi) = match range {
        Some(range) => range,
        None if lo <= hi => (lo, hi),
        None => (0.0, 0.0),
    };
    Normaliser::fixed(false, lo, hi)
}

/// Device bytes per particle of a style (position, h, and the fields it reads).
fn bytes_per_particle(fields: &Fields<'_>) -> usize {
    16 + 4 * usize::from(fields.intensity.is_some()) + 4 * usize::from(fields.colour.is_some())
}

/// Resolves every style and uploads the species resident, reordered on the device, when they
/// fit with the frame's scratch in device memory. `Ok(None)`: they do not fit (or resident data
/// are off), and the frame streams them from host arrays (data::prepare).
pub(super) fn upload_resident(
    r: &mut CudaRenderer,
    snapshot: &Snapshot,
    settings: &RenderSettings,
    progress: &Progress,
    timings: &mut Vec<StageTime>,
) -> Result<Option<Vec<LoadedSpecies>>, RenderError> {
    if !r.tuning.resident {
        return Ok(None);
    }
    let fields = settings
        .species
        .iter()
        .map(|style| resolve_fields(snapshot, style))
        .collect::<Result<Vec<_>, _>>()?;
    let total: usize = fields.iter().map(|f| f.species.len()).sum();
    let bytes: usize = fields
        .iter()
        .map(|f| f.species.len() * bytes_per_particle(f))
        .sum();
    let (free, _) = r.device.memory()?;
    let scratch = r.tuning.chunk_particles.min(total.max(1)) * 64;
    let image = settings.width as usize * settings.height as usize * 3 * 14;
    if bytes + scratch + image > free / 10 * 9 {
        return Ok(None);
    }
    let (mut knn_seconds, mut upload_seconds, mut reorder_seconds) = (0.0, 0.0, 0.0);
    let mut parts = UploadParts::default();
    let mut loaded = Vec::new();
    for (f, style) in fields.iter().zip(&settings.species) {
        let n = f.species.len();
        let start = Instant::now();
        let knn_h = if f.smoothing.is_empty() && n > 0 {
            Some(smoothing_lengths(
                Some(&r.device),
                &f.species.positions,
                settings.knn,
                snapshot.header.periodic_box(),
                progress,
            )?)
        } else {
            None
        };
        knn_seconds += start.elapsed().as_secs_f64();
        if n == 0 {
            loaded.push(empty_species(f, style));
            continue;
        }
        let u = match upload_species(r, f, style, knn_h.as_deref()) {
            Ok(u) => u,
            // Does not fit after all: stream everything.
            Err(e) if e.is_out_of_memory() => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        upload_seconds += u.upload_seconds;
        reorder_seconds += u.reorder_seconds;
        parts.add(&u.parts);
        loaded.push(LoadedSpecies {
            kind: style.kind,
            n,
            intensity_norm: u.intensity,
            colour_norm: u.colour,
            sum_inv_h: u.sum_inv_h,
            own_h: None,
            own_intensity: None,
            own_colour: None,
            resident: Some(u.arrays),
            device_order: u.device_order,
        });
    }
    for (stage, seconds) in [
        ("knn", knn_seconds),
        ("upload", upload_seconds),
        ("reorder", reorder_seconds),
        ("upload_check", parts.check),
        ("upload_alloc", parts.alloc),
        ("upload_positions", parts.positions),
        ("upload_h", parts.h),
        ("upload_fields", parts.fields),
        ("upload_wait", parts.wait),
    ] {
        timings.push(StageTime { stage, seconds });
    }
    Ok(Some(loaded))
}

/// A species with no particles: nothing on the device, its fields' normalisers kept (a colour
/// field still makes the frame an RGB one, as in the host path).
fn empty_species(f: &Fields<'_>, style: &SpeciesStyle) -> LoadedSpecies {
    let none = Normaliser::fixed(false, 0.0, 0.0);
    LoadedSpecies {
        kind: style.kind,
        n: 0,
        intensity_norm: f.intensity.as_ref().map(|_| none),
        colour_norm: f.colour.as_ref().map(|_| none),
        sum_inv_h: 0.0,
        own_h: None,
        own_intensity: None,
        own_colour: None,
        resident: None,
        device_order: None,
    }
}

/// Where the seconds of the upload stage go: the device arrays' allocation, the positions' and
/// lengths' fills and queued copies, the wait for the log10 kernel's check against the host
/// beyond them (it runs beside them), the fields' fills and copies, and the wait for the
/// copies still in flight.
#[derive(Debug, Default, Clone, Copy)]
struct UploadParts {
    check: f64,
    alloc: f64,
    positions: f64,
    h: f64,
    fields: f64,
    wait: f64,
}

impl UploadParts {
    fn add(&mut self, o: &Self) {
        self.check += o.check;
        self.alloc += o.alloc;
        self.positions += o.positions;
        self.h += o.h;
        self.fields += o.fields;
        self.wait += o.wait;
    }
}

/// Seconds since `*mark`, which moves to now.
fn lap(mark: &mut Instant) -> f64 {
    let now = Instant::now();
    let seconds = now.duration_since(*mark).as_secs_f64();
    *mark = now;
    seconds
}

/// One species on the device: its arrays (in Morton order where `device_order` is set), Σ 1/h,
/// the kernels' normalisers, and the seconds until the copies had landed and then until the
/// reorder had finished.
struct Uploaded {
    arrays: DeviceArrays,
    sum_inv_h: f64,
    intensity: Option<Normaliser>,
    colour: Option<Normaliser>,
    device_order: Option<CudaSlice<u32>>,
    upload_seconds: f64,
    parts: UploadParts,
    reorder_seconds: f64,
}

/// Where a field's limits come from: found by the host while it filled the staging buffers,
/// or by the device's log10 (read once the copy stream has finished).
enum Limits {
    Host(f32, f32),
    Device(PendingLimits),
}

/// An uploaded field: the style's fixed range (if any) and where its limits come from.
type UploadedField = Option<(Option<(f32, f32)>, Limits)>;

/// Allocates and fills one species' device arrays through the staging buffers on the copy
/// stream, and reorders them on the compute stream: the Morton keys (reorder.rs) need only the
/// positions, so they are computed while the other arrays upload. A log field's raw values are
/// copied and its log10 taken on the device where that gives the host's bits (log10.rs), else
/// the host takes it while filling.
fn upload_species(
    r: &mut CudaRenderer,
    f: &Fields<'_>,
    style: &SpeciesStyle,
    knn_h: Option<&[f32]>,
) -> Result<Uploaded, GpuError> {
    let n = f.species.len();
    let wants_device_log = [
        (&f.intensity, style.intensity_log),
        (&f.colour, style.colour_log),
    ]
    .iter()
    .any(|(choice, log)| *log && matches!(choice, Some((Values::Slice(_), _))));
    let start = Instant::now();
    let mut mark = start;
    let mut parts = UploadParts::default();
    let CudaRenderer {
        copy: stream,
        compute,
        kernels,
        log10,
        staging,
        ..
    } = r;
    let compute: &Arc<CudaStream> = compute;
    let mut arrays = alloc_arrays(stream, n, f.intensity.is_some(), f.colour.is_some())?;
    parts.alloc = lap(&mut mark);
    // The device log10's check (the first upload that wants it: a probe and the host's bits to
    // compare, with waits on both sides) runs on a thread of its own and a stream of its own
    // while the positions and lengths upload, which do not depend on its answer; only the
    // fields' upload does.
    let known = if wants_device_log {
        log10.checked()
    } else {
        Some(false)
    };
    let context = Arc::clone(compute.context());
    let checking = &mut *log10;
    let (device_log, cell_keys, sum_inv_h) = std::thread::scope(|scope| {
        let check = known
            .is_none()
            .then(|| scope.spawn(move || checking.matches_host(&context.new_stream()?)));
        let pos = Values::Slice(f.species.positions.as_flattened());
        upload_values(
            staging,
            stream,
            pos,
            3 * n,
            Transform::Copy,
            false,
            &mut arrays.pos,
        )?;
        // Queued on the compute stream, which waits for the positions' copies (cudarc orders
        // the two streams by each buffer's last write).
        let cell_keys = if n > 1 {
            reorder::start(&kernels.order, compute, &arrays.pos, n)?
        } else {
            None
        };
        parts.positions = lap(&mut mark);
        let (h, t) = match knn_h {
            // Estimated lengths are drawn as they are (resolve.rs: factor 1).
            Some(h) => (h, Transform::Scale(1.0)),
            None => (f.smoothing, Transform::Scale(f.smoothing_factor)),
        };
        let found = upload_values(
            staging,
            stream,
            Values::Slice(h),
            n,
            t,
            false,
            &mut arrays.h,
        )?;
        let sum_inv_h = found.inv_sums.iter().sum::<f64>();
        parts.h = lap(&mut mark);
        let device_log = match check {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?,
            None => known == Some(true),
        };
        // The wait for the check beyond the lengths' upload.
        parts.check = lap(&mut mark);
        Ok::<_, GpuError>((device_log, cell_keys, sum_inv_h))
    })?;
    let mut field = |choice: &crate::render::resolve::FieldChoice<'_>,
                     log: bool,
                     dst: Option<&mut CudaSlice<f32>>|
     -> Result<UploadedField, GpuError> {
        let (Some((values, range)), Some(dst)) = (choice, dst) else {
            return Ok(None);
        };
        if log && device_log && matches!(values, Values::Slice(_)) {
            upload_values(staging, stream, *values, n, Transform::Copy, false, dst)?;
            let pending = log10.launch(stream, dst.slice_mut(0..n))?;
            return Ok(Some((*range, Limits::Device(pending))));
        }
        let t = if log {
            Transform::Log10
        } else {
            Transform::Copy
        };
        let found = upload_values(staging, stream, *values, n, t, true, dst)?;
        Ok(Some((*range, Limits::Host(found.lo, found.hi))))
    };
    let intensity = field(&f.intensity, style.intensity_log, arrays.intensity.as_mut())?;
    let colour = field(&f.colour, style.colour_log, arrays.colour.as_mut())?;
    parts.fields = lap(&mut mark);
    let normaliser = |field: UploadedField| -> Result<_, GpuError> {
        let Some((range, limits)) = field else {
            return Ok(None);
        };
        let (lo, hi) = match limits {
            Limits::Host(lo, hi) => (lo, hi),
            Limits::Device(pending) => pending.read(stream)?,
        };
        Ok(Some(device_normaliser(range, lo, hi)))
    };
    let intensity = normaliser(intensity)?;
    let colour = normaliser(colour)?;
    stream.synchronize()?;
    parts.wait = lap(&mut mark);
    let upload_seconds = start.elapsed().as_secs_f64();
    let start = Instant::now();
    // Morton order; None (file order kept) when the second copy does not fit.
    let device_order = match cell_keys {
        Some(keys) => reorder::finish(&kernels.order, compute, keys, &mut arrays)?,
        None => None,
    };
    compute.synchronize()?;
    Ok(Uploaded {
        arrays,
        sum_inv_h,
        intensity,
        colour,
        device_order,
        upload_seconds,
        parts,
        reorder_seconds: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values through the staging transform, then the kernels' normaliser, as one slice.
    fn staged_n(values: &[f32], log: bool, range: Option<(f32, f32)>) -> Vec<u32> {
        let t = if log {
            Transform::Log10
        } else {
            Transform::Copy
        };
        let mut out = vec![0.0f32; values.len()];
        let (lo, hi, _) = fill_chunk(&mut out, Values::Slice(values), 0, t, true);
        let norm = device_normaliser(range, lo, hi);
        out.iter().map(|&x| norm.apply(x).to_bits()).collect()
    }

    /// The host path: limits from the raw values, then `Normaliser::apply` on each.
    fn host_n(values: &[f32], log: bool, range: Option<(f32, f32)>) -> Vec<u32> {
        let norm = match range {
            Some((lo, hi)) => Normaliser::fixed(log, lo, hi),
            None => Normaliser::from_values(values, log),
        };
        values.iter().map(|&v| norm.apply(v).to_bits()).collect()
    }

    const AWKWARD: [f32; 12] = [
        3.0,
        -2.0,
        0.0,
        1.0e-30,
        7.5e12,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.1,
        1.0,
        42.0,
        f32::MIN_POSITIVE,
    ];

    #[test]
    fn uploaded_log10_then_device_normaliser_equals_the_host_normaliser_bit_for_bit() {
        let many: Vec<f32> = (0..5000).map(|i| (i as f32 * 0.37).sin() * 1e3).collect();
        for values in [&AWKWARD[..], &many[..], &[-1.0, 0.0][..], &[5.0][..]] {
            for log in [false, true] {
                for range in [None, Some((-1.0, 2.0)), Some((0.5, 0.5))] {
                    assert_eq!(
                        staged_n(values, log, range),
                        host_n(values, log, range),
                        "log {log}, range {range:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn constant_fields_and_scaled_lengths_match_the_host_path() {
        for c in [4.0f32, -1.0, 0.0] {
            let mut out = vec![0.0f32; 3];
            let (lo, hi, _) = fill_chunk(&mut out, Values::Constant(c), 0, Transform::Log10, true);
            let norm = device_normaliser(None, lo, hi);
            let host = Normaliser::from_values(&[c], true);
            assert!(out.iter().all(|&x| norm.apply(x) == host.apply(c)));
        }
        let h = [2.0f32, 0.0, -1.0, f32::INFINITY, 0.25, 3.0e-3];
        let mut out = vec![0.0f32; h.len()];
        let (_, _, inv) = fill_chunk(&mut out, Values::Slice(&h), 0, Transform::Scale(0.7), false);
        let scaled: Vec<f32> = h.iter().map(|&x| x * 0.7).collect();
        assert_eq!(
            out.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            scaled.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        let expected: f64 = scaled
            .iter()
            .filter(|h| **h > 0.0 && h.is_finite())
            .map(|h| 1.0 / f64::from(*h))
            .sum();
        assert_eq!(inv.to_bits(), expected.to_bits());
    }
}
