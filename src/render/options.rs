//! What differs between the faces' renderers ([`RendererOptions`]), in terms every back-end
//! understands: the CUDA renderer reads them into its tuning, the CPU renderer has nothing to
//! choose.

/// Where large splats are drawn when CUDA renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LargeSplats {
    /// CPU threads (the tiled CPU splatter), overlapping the GPU kernels (Rivi et al.).
    Cpu,
    /// GPU kernels: a wide-border tile pass for those that fit it, else one warp per splat
    /// with global atomics. The default: far faster than CPU threads plus the copies, and τ
    /// stays in the exact fixed-point sum.
    #[default]
    Gpu,
}

impl LargeSplats {
    /// `"cpu"` or `"gpu"`, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Gpu => "gpu",
        }
    }
}

/// What differs between the faces' renderers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RendererOptions {
    /// Where CUDA draws large splats (no effect on the CPU back-end); the GPU by default: even
    /// idle CPU threads splat large particles far slower than the GPU's wide-border pass.
    pub large: LargeSplats,
}
