//! "Save FITS…" of the Screenshot window: the current view rendered off-screen by the library
//! renderer on the window's back-end and written as FITS (τ and the tone-mapped image, with the
//! camera and settings in the header; `render::fits`). Overlays are not drawn: FITS holds data.

use super::splotch::render_settings;
use super::viewport_renderer::ViewRequest;
use crate::jobs::Progress;
use crate::render::fits::{RenderFacts, write_render_fits};
use crate::render::{Renderer, RendererOptions};
use anyhow::Context as _;
use std::path::{Path, PathBuf};

/// Whether `path` names a FITS file (`.fits`, `.fit`, `.fts`, any case).
pub fn is_fits_path(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        ["fits", "fit", "fts"]
            .iter()
            .any(|f| e.eq_ignore_ascii_case(f))
    })
}

/// Renders `request` and writes it to `path` as FITS. Runs on a worker.
pub fn save_fits(
    request: &ViewRequest,
    path: &Path,
    progress: &Progress,
) -> anyhow::Result<PathBuf> {
    let settings = render_settings(request).map_err(anyhow::Error::msg)?;
    progress.report("rendering", 0, 2);
    let mut renderer = Renderer::new(crate::app::window_backend(), RendererOptions::default())?;
    let output = renderer
        .render(&request.snapshot, &settings, progress)
        .with_context(|| format!("rendering {}x{}", settings.width, settings.height))?;
    progress.check()?;
    progress.report("writing", 1, 2);
    let facts = RenderFacts {
        header: &request.snapshot.header,
        source: &request.snapshot.source,
        settings: &settings,
        stats: &output.stats,
        backend: renderer.kind().name(),
    };
    write_render_fits(path, &output, &facts)?;
    progress.report("writing", 2, 2);
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_paths_are_told_by_their_extension() {
        assert!(is_fits_path(Path::new("a/view.fits")));
        assert!(is_fits_path(Path::new("view.FIT")));
        assert!(is_fits_path(Path::new("view.fts")));
        assert!(!is_fits_path(Path::new("view.png")));
        assert!(!is_fits_path(Path::new("fits")));
    }
}
