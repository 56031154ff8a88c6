//! The CPU back-end: projection and classification of every particle, then the tiled splatter
//! draws every class (small, medium, large) into τ.
//!
//! Files by job, each standing above what it imports: [`frame`] (the renderer: normalise,
//! project, bin, draw, expose), [`lanes`] (the projection's tail, eight particles at a time),
//! [`splat`] (the splatter: chunks, bins, draw), [`sink`] (one chunk's splats in input order),
//! [`records`] (small records and their staging), [`bins`] (a chunk sorted by tile), [`draw`]
//! (tiles and bands into τ), [`tile`] (one tile's pixels), `chord` (a general splat's rows
//! walked over the disc's chord, AVX2), [`grid`] (tile layout and footprints), [`exp`] (the
//! vectorisable exp and the instruction sets).

mod bins;
#[cfg(target_arch = "x86_64")]
mod chord;
mod draw;
pub mod exp;
mod frame;
mod grid;
pub mod lanes;
mod records;
mod sink;
mod splat;
mod tile;

#[cfg(test)]
mod lanes_tests;
#[cfg(test)]
mod splat_tests;

pub use draw::{Merge, SplatProfile};
pub use exp::{Isa, exp_f32};
pub use frame::{CpuRenderer, render_cpu};
pub use grid::{SMALL_SIDE, TILE_PX};
pub use sink::ChunkSink;
pub use splat::{Channels, Splatter, chunk_len, splat_into};
