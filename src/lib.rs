//! Haloscope: explore cosmological simulation snapshots and neutrino event lists.
//!
//! Rooms (see ARCHITECTURE.md): `data` (models and readers), `order` (space-filling curves),
//! `render` (Splotch renderer), `halo` (friends-of-friends), `twopoint` (event autocorrelation),
//! `gpu` (CUDA infrastructure), `backend` (the one back-end model: CPU, CUDA devices or a wgpu
//! device, resolved once, and when to fall back to the CPU), `cluster` (the process group: one
//! process or the ranks of an MPI job), `movie` (camera paths and export), `output` (the one
//! rule of every writer: no output over an input, temporary file and rename; inputs must be
//! regular files), `jobs` (progress and cancellation), `app` (desktop UI) and `cli` (headless
//! subcommands).

pub mod app;
pub mod backend;
pub mod cli;
pub mod cluster;
pub mod data;
pub mod gpu;
pub mod halo;
pub mod huge_pages;
pub mod jobs;
pub mod movie;
pub mod order;
pub mod output;
pub mod render;
pub mod twopoint;
