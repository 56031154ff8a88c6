//! `--region` and `--region-box`, shared by render, fof, movie and info.

use crate::data::region::{Region, read_region};
use crate::data::{LoadOptions, Snapshot, load_snapshot};
use crate::jobs::Progress;
use clap::Args;
use std::path::Path;

/// Region options of the commands that load a snapshot.
#[derive(Debug, Clone, Args)]
pub struct RegionArgs {
    /// Load only the particles inside `box:x0,y0,z0,x1,y1,z1` or `sphere:x,y,z,r` (file length
    /// units); periodic files wrap it across the boundary, positions stay as in the file.
    #[arg(long, value_name = "SPEC", value_parser = parse_region)]
    pub region: Option<Region>,
    /// Periodic box side that --region wraps by (tipsy records none); default: a Gadget file's
    /// BoxSize when periodic, else no wrapping.
    #[arg(long, value_name = "L", requires = "region")]
    pub region_box: Option<f64>,
}

/// clap's parser for `--region`.
fn parse_region(text: &str) -> Result<Region, String> {
    Region::parse(text).map_err(|e| e.rule)
}

impl RegionArgs {
    /// Loads `path`: the region only when one is given, else through `load_snapshot` with
    /// `options` (a subsample cannot be combined with a region).
    pub fn load(
        &self,
        path: &Path,
        options: &LoadOptions,
        progress: &Progress,
    ) -> anyhow::Result<Snapshot> {
        match &self.region {
            None => Ok(load_snapshot(path, options, progress)?),
            Some(region) => {
                if options.max_particles.is_some() {
                    anyhow::bail!("--region cannot be combined with --max-particles");
                }
                Ok(read_region(path, region, self.region_box, progress)?)
            }
        }
    }
}
