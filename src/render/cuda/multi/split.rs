//! How one frame's particles are shared out over several devices, and what every device must
//! take from the whole snapshot rather than from its share, so that the summed fixed-point
//! images equal one device's bit for bit: the normalisation ranges (found over every particle,
//! as `Normaliser::from_values` finds them), the kNN smoothing lengths (computed on every
//! particle of a species), and Σ 1/h of each species (summed in the chunks and order one device
//! sums them), from which every device derives the same fixed-point scale.

use crate::cluster::even_share;
use crate::data::{Masses, Snapshot, Species};
use crate::jobs::Progress;
use crate::render::knn::smoothing_lengths;
use crate::render::normalise::Normaliser;
use crate::render::resolve::{FieldChoice, Values, resolve_fields};
use crate::render::{RenderError, RenderSettings};
use rayon::prelude::*;
use std::ops::Range;

/// Particles per Σ 1/h partial sum, as one device sums them (staged.rs, data.rs): the partial
/// sums are added in chunk order.
pub(super) const SUM_CHUNK: usize = 1 << 16;

/// Particles `[n·part/parts, n·(part+1)/parts)`: consecutive shares in file order, even by count
/// (they differ by at most one particle), covering `0..n` once.
pub(crate) fn share_range(n: usize, part: usize, parts: usize) -> Range<usize> {
    let share = even_share(n as u64, part, parts);
    share.start as usize..share.end as usize
}

/// Σ 1/(h·factor) over the drawn lengths that are finite and > 0, summed as one device sums
/// them: f64 partial sums of [`SUM_CHUNK`] particles, added in chunk order.
pub(crate) fn sum_inv_h(h: &[f32], factor: f32) -> f64 {
    let chunk_sums: Vec<f64> = h
        .par_chunks(SUM_CHUNK)
        .map(|chunk| {
            chunk
                .iter()
                .map(|&x| x * factor)
                .filter(|h| *h > 0.0 && h.is_finite())
                .map(|h| 1.0 / f64::from(h))
                .sum::<f64>()
        })
        .collect();
    chunk_sums.iter().sum()
}

/// A field's normalisation range (lo, hi), when fixed.
type Range32 = Option<(f32, f32)>;

/// What every device takes from the whole snapshot (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Whole {
    /// Per style, the intensity and colour ranges: fixed ones as given, the others as one
    /// device finds them in the whole snapshot's data.
    pub(crate) ranges: Vec<(Range32, Range32)>,
    /// Σ 1/h of the drawn lengths of each style's species.
    pub(crate) sum_inv_h: Vec<f64>,
    /// kNN smoothing lengths of each style's species that has none in the file.
    pub(crate) knn_h: Vec<Option<Vec<f32>>>,
}

impl Whole {
    /// Resolves every style against the whole snapshot (the same errors as one device), finds
    /// the ranges, computes kNN lengths where a species has none (on `device` when given) and
    /// sums 1/h.
    pub(crate) fn of(
        snapshot: &Snapshot,
        settings: &RenderSettings,
        device: Option<&crate::gpu::GpuDevice>,
        progress: &Progress,
    ) -> Result<Self, RenderError> {
        let ranges = settings
            .species
            .iter()
            .map(|style| -> Result<_, RenderError> {
                let fields = resolve_fields(snapshot, style)?;
                let n = fields.species.len();
                let range = |choice: &FieldChoice<'_>, log: bool| {
                    choice.as_ref().map(|(values, range)| {
                        range.unwrap_or_else(|| {
                            let norm = match values {
                                Values::Slice(v) => Normaliser::from_values(v, log),
                                Values::Constant(c) => {
                                    Normaliser::from_values(&[*c][..n.min(1)], log)
                                }
                            };
                            (norm.lo, norm.hi)
                        })
                    })
                };
                Ok((
                    range(&fields.intensity, style.intensity_log),
                    range(&fields.colour, style.colour_log),
                ))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut sums = Vec::new();
        let mut knn = Vec::new();
        for style in &settings.species {
            let fields = resolve_fields(snapshot, style)?;
            let n = fields.species.len();
            if fields.smoothing.is_empty() && n > 0 {
                let h = smoothing_lengths(
                    device,
                    &fields.species.positions,
                    settings.knn,
                    snapshot.header.periodic_box(),
                    progress,
                )?;
                // Estimated lengths are drawn as they are (factor 1).
                sums.push(sum_inv_h(&h, 1.0));
                knn.push(Some(h));
            } else {
                sums.push(sum_inv_h(fields.smoothing, fields.smoothing_factor));
                knn.push(None);
            }
        }
        Ok(Self {
            ranges,
            sum_inv_h: sums,
            knn_h: knn,
        })
    }

    /// `settings` with the whole snapshot's ranges where one device would find them in the data.
    pub(crate) fn settings(&self, settings: &RenderSettings) -> RenderSettings {
        let mut out = settings.clone();
        for (style, (intensity, colour)) in out.species.iter_mut().zip(&self.ranges) {
            style.intensity_range = *intensity;
            style.colour_range = *colour;
        }
        out
    }

    /// Share `part` of `parts` of every drawn species: its particles, masses, fields and drawn
    /// smoothing lengths (the file's with their convention, or the whole species' kNN lengths
    /// as estimates), with the header and source of `snapshot`.
    pub(crate) fn part(
        &self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        part: usize,
        parts: usize,
    ) -> Snapshot {
        let species = snapshot
            .species
            .iter()
            .filter_map(|s| {
                let style = settings.species.iter().position(|st| st.kind == s.kind)?;
                let knn = self.knn_h.get(style).and_then(Option::as_deref);
                Some(share_of(s, knn, share_range(s.len(), part, parts)))
            })
            .collect();
        Snapshot {
            header: snapshot.header.clone(),
            species,
            source: snapshot.source.clone(),
        }
    }
}

/// Particles `range` of `species`; `knn_h` (lengths of every particle) replaces missing
/// smoothing lengths, as estimates in the drawing convention.
fn share_of(species: &Species, knn_h: Option<&[f32]>, range: Range<usize>) -> Species {
    let slice = |v: &Vec<f32>| {
        v.get(range.clone())
            .map(<[f32]>::to_vec)
            .unwrap_or_default()
    };
    let (smoothing_lengths, kernel_support) = match (&species.smoothing_lengths, knn_h) {
        (Some(h), _) => (Some(slice(h)), species.kernel_support),
        (None, Some(h)) => (
            Some(h.get(range.clone()).unwrap_or_default().to_vec()),
            None,
        ),
        (None, None) => (None, species.kernel_support),
    };
    Species {
        kind: species.kind,
        positions: species
            .positions
            .get(range.clone())
            .unwrap_or_default()
            .to_vec(),
        masses: match &species.masses {
            Masses::Uniform(m) => Masses::Uniform(*m),
            Masses::PerParticle(m) => Masses::PerParticle(slice(m)),
        },
        velocities: None,
        ids: None,
        smoothing_lengths,
        kernel_support,
        fields: species
            .fields
            .iter()
            .map(|f| crate::data::Field {
                values: slice(&f.values),
                ..f.clone()
            })
            .collect(),
        left_out: species.left_out.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::SpeciesKind;
    use crate::render::synthetic::clustered_snapshot;
    use crate::render::{Camera, SpeciesStyle};

    #[test]
    fn shares_are_the_even_shares_in_particle_indices() {
        assert_eq!(share_range(10, 1, 3), 3..6);
        assert_eq!(share_range(usize::MAX, 1, 2).end, usize::MAX);
    }

    #[test]
    fn sum_of_inverse_lengths_is_the_chunked_sum_over_finite_positive_lengths() {
        let mut h: Vec<f32> = (0..150_000)
            .map(|i| 0.01 + (i % 977) as f32 * 1e-3)
            .collect();
        h[3] = 0.0;
        h[70_000] = -1.0;
        h[80_000] = f32::NAN;
        h[90_000] = f32::INFINITY;
        let factor = 0.7f32;
        let mut expected = 0.0f64;
        for chunk in h.chunks(SUM_CHUNK) {
            let mut part = 0.0f64;
            for &x in chunk {
                let d = x * factor;
                if d > 0.0 && d.is_finite() {
                    part += 1.0 / f64::from(d);
                }
            }
            expected += part;
        }
        assert_eq!(sum_inv_h(&h, factor).to_bits(), expected.to_bits());
        assert_eq!(sum_inv_h(&[], 1.0), 0.0);
    }

    fn settings_for() -> RenderSettings {
        let mut style = SpeciesStyle::new(SpeciesKind::Dark);
        style.intensity = Some("Density".into());
        style.intensity_log = true;
        style.colour = Some("Density".into());
        style.colour_range = Some((-1.0, 2.0));
        let camera = Camera::look_at([0.5, 0.5, 3.0], [0.5; 3], [0.0, 1.0, 0.0], 45.0);
        RenderSettings::new(64, 64, camera, vec![style])
    }

    #[test]
    fn shares_joined_are_the_whole_and_ranges_come_from_every_particle() {
        let snapshot = clustered_snapshot(10_007, 3);
        let settings = settings_for();
        let whole = Whole::of(&snapshot, &settings, None, &Progress::none()).expect("whole");
        let dark = snapshot.species(SpeciesKind::Dark).expect("dark");
        let density = &dark.field("Density").expect("density").values;
        let norm = Normaliser::from_values(density, true);
        assert_eq!(
            whole.ranges,
            vec![(Some((norm.lo, norm.hi)), Some((-1.0, 2.0)))]
        );
        let h = dark.smoothing_lengths.as_ref().expect("h");
        assert_eq!(whole.sum_inv_h[0].to_bits(), sum_inv_h(h, 1.0).to_bits());
        assert_eq!(whole.knn_h, vec![None]);
        let fixed = whole.settings(&settings);
        assert_eq!(fixed.species[0].intensity_range, Some((norm.lo, norm.hi)));
        let parts: Vec<Snapshot> = (0..3)
            .map(|p| whole.part(&snapshot, &settings, p, 3))
            .collect();
        let joined = |get: &dyn Fn(&Species) -> Vec<f32>| -> Vec<f32> {
            parts
                .iter()
                .flat_map(|p| get(p.species(SpeciesKind::Dark).expect("dark")))
                .collect()
        };
        assert_eq!(
            joined(&|s| s.positions.as_flattened().to_vec()),
            dark.positions.as_flattened()
        );
        assert_eq!(
            &joined(&|s| s.smoothing_lengths.clone().unwrap_or_default()),
            h
        );
        assert_eq!(
            &joined(&|s| s
                .field("Density")
                .map(|f| f.values.clone())
                .unwrap_or_default()),
            density
        );
        for p in &parts {
            let share = p.species(SpeciesKind::Dark).expect("dark");
            assert_eq!(share.kernel_support, dark.kernel_support);
            assert!((3335..=3336).contains(&share.len()), "{}", share.len());
        }
    }

    #[test]
    fn species_without_lengths_get_the_whole_species_knn_lengths_as_estimates() {
        let mut snapshot = clustered_snapshot(3_001, 8);
        let dark = snapshot.species_mut(SpeciesKind::Dark).expect("dark");
        dark.smoothing_lengths = None;
        dark.kernel_support = Some(2.0);
        let settings = settings_for();
        let whole = Whole::of(&snapshot, &settings, None, &Progress::none()).expect("whole");
        let positions = &snapshot.species(SpeciesKind::Dark).expect("dark").positions;
        let expected = crate::render::smoothing::knn_smoothing_lengths(
            positions,
            settings.knn,
            snapshot.header.periodic_box(),
            &Progress::none(),
        )
        .expect("knn");
        assert_eq!(whole.knn_h, vec![Some(expected.clone())]);
        assert_eq!(
            whole.sum_inv_h[0].to_bits(),
            sum_inv_h(&expected, 1.0).to_bits()
        );
        let joined: Vec<f32> = (0..2)
            .flat_map(|p| {
                let part = whole.part(&snapshot, &settings, p, 2);
                let share = part.species(SpeciesKind::Dark).expect("dark").clone();
                assert_eq!(
                    share.kernel_support, None,
                    "estimates are drawn as they are"
                );
                share.smoothing_lengths.unwrap_or_default()
            })
            .collect();
        assert_eq!(joined, expected);
    }

    #[test]
    fn an_unknown_field_is_the_error_one_device_gives() {
        let snapshot = clustered_snapshot(100, 1);
        let mut settings = settings_for();
        settings.species[0].intensity = Some("Nope".into());
        let err = Whole::of(&snapshot, &settings, None, &Progress::none()).expect_err("nope");
        assert!(err.to_string().contains("Nope"), "{err}");
    }
}
