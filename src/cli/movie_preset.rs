//! `haloscope movie --preset`: a camera path from the data (and its halos), and the check that
//! frames show something.

use crate::backend::Backend;
use crate::data::Snapshot;
use crate::halo::finders::{
    SubfindTable, looks_like_catalogue, read_catalogue, read_fof_catalogue,
};
use crate::halo::{self, FofParams, Halo, snapshot_box_size};
use crate::jobs::Progress;
use crate::movie::{CameraPath, DataBounds, DataPreset, DataPresetOptions, data_preset_path};
use anyhow::Context;
use clap::{Args, ValueEnum};
use image::RgbImage;
use std::path::{Path, PathBuf};

/// `--preset` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PresetChoice {
    /// One turn around the data's bounding box.
    Orbit,
    /// From outside the data into its most massive halo.
    ZoomToHalo,
    /// Past the most massive halos.
    FlyAlongHalos,
}

/// Preset options of `haloscope movie`.
#[derive(Debug, Clone, Args)]
pub struct PresetArgs {
    /// Build the camera path from the data instead of --path.
    #[arg(long, value_enum, conflicts_with = "path")]
    pub preset: Option<PresetChoice>,
    /// Halos for the halo presets: a SUBFIND, Rockstar or AHF catalogue, or a `haloscope fof`
    /// CSV/HDF5 catalogue; default: friends-of-friends on the fly (b = 0.2, 20 members).
    #[arg(long, value_name = "FILE", requires = "preset")]
    pub halos: Option<PathBuf>,
    /// Halos visited by --preset fly-along-halos.
    #[arg(long, default_value_t = 6, value_name = "N", requires = "preset")]
    pub halo_count: usize,
    /// Length of the preset path in seconds.
    #[arg(long, default_value_t = 10.0, value_name = "S", requires = "preset")]
    pub preset_seconds: f64,
    /// Exit with an error when any rendered frame is empty (nothing of the data in view).
    #[arg(long)]
    pub strict: bool,
}

impl PresetArgs {
    /// The preset's path for `snapshot` (`file` names it in messages).
    pub fn path(
        &self,
        preset: PresetChoice,
        snapshot: &Snapshot,
        file: &str,
        backend: &Backend,
        progress: &Progress,
    ) -> anyhow::Result<CameraPath> {
        let preset = match preset {
            PresetChoice::Orbit => DataPreset::Orbit,
            PresetChoice::ZoomToHalo => DataPreset::ZoomToHalo,
            PresetChoice::FlyAlongHalos => DataPreset::FlyAlongHalos,
        };
        let bounds = DataBounds::of(snapshot)
            .with_context(|| format!("{file}: no particles to build --preset from"))?;
        let halos = if preset.needs_halos() {
            self.halos(snapshot, file, backend, progress)?
        } else {
            Vec::new()
        };
        let options = DataPresetOptions {
            duration_s: self.preset_seconds,
            n_halos: self.halo_count,
            ..DataPresetOptions::default()
        };
        data_preset_path(preset, &bounds, &halos, &options)
            .with_context(|| format!("{file}: --preset"))
    }

    /// The halos of --halos, or of friends-of-friends run now on the dark matter (all
    /// particles where there is none).
    fn halos(
        &self,
        snapshot: &Snapshot,
        file: &str,
        backend: &Backend,
        progress: &Progress,
    ) -> anyhow::Result<Vec<Halo>> {
        if let Some(path) = &self.halos {
            return read_halos(path, snapshot);
        }
        let dark = crate::data::SpeciesKind::Dark;
        let species = if snapshot.species(dark).is_some_and(|s| !s.is_empty()) {
            vec![dark]
        } else {
            crate::data::SpeciesKind::ALL.to_vec()
        };
        let params = FofParams {
            box_size: snapshot_box_size(snapshot),
            ..FofParams::default()
        };
        let result = halo::fof_snapshot(snapshot, &species, &params, backend, progress)
            .map_err(|e| anyhow::anyhow!("{file}: friends-of-friends for --preset: {e}"))?;
        Ok(result.halos)
    }
}

/// Halos from another finder's catalogue (placed in the snapshot's length unit) or from a
/// haloscope FoF catalogue (already in it).
fn read_halos(path: &Path, snapshot: &Snapshot) -> anyhow::Result<Vec<Halo>> {
    if looks_like_catalogue(path)? {
        let catalogue = read_catalogue(path, SubfindTable::Groups)?;
        let factor = catalogue.length_factor(&snapshot.header)?;
        Ok(catalogue.to_halos(factor))
    } else {
        Ok(read_fof_catalogue(path)?)
    }
}

/// Whether a frame shows nothing: every pixel the same colour.
pub fn is_empty_frame(image: &RgbImage) -> bool {
    let mut pixels = image.pixels();
    match pixels.next() {
        Some(first) => pixels.all(|p| p == first),
        None => true,
    }
}
