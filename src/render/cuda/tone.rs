//! Step 6b: the tone map on the device, so that only the 8- or 16-bit image comes back (through
//! the renderer's pinned staging buffers).

use super::CudaRenderer;
use super::args::{Tone8Args, Tone16Args};
use crate::gpu;
use crate::render::{RenderError, ToneSettings};

/// Tone-maps the last frame's τ (times `tau_scale`) and downloads the image.
pub(super) fn tone_image(
    r: &mut CudaRenderer,
    tau_scale: f32,
    tone: &ToneSettings,
) -> Result<image::DynamicImage, RenderError> {
    let Some(image) = r.image.as_mut() else {
        return Err(RenderError::setting("no frame rendered yet"));
    };
    let (w, h) = (image.width, image.height);
    match tone.bits {
        crate::render::BitDepth::Eight => {
            let pixels = tone8(r, tau_scale, tone, 3)?;
            image::RgbImage::from_raw(w, h, pixels)
                .map(image::DynamicImage::ImageRgb8)
                .ok_or_else(|| RenderError::setting("image size mismatch"))
        }
        crate::render::BitDepth::Sixteen => {
            let stream = &r.compute;
            let n = w as u64 * h as u64 * 3;
            let cfg = gpu::per_element(n as usize, 0);
            let args = Tone16Args {
                tau: &image.tau,
                n,
                tau_scale,
                gamma: tone.gamma,
                contrast: tone.contrast,
                out: &mut image.image16,
            };
            // SAFETY: tau and image16 hold n = 3·W·H entries (ensure_image).
            unsafe { gpu::launch(stream, &r.kernels.tone16, cfg, args) }?;
            let pixels = r
                .staging
                .download(stream, &image.image16.slice(0..n as usize))?;
            image::ImageBuffer::<image::Rgb<u16>, _>::from_raw(w, h, pixels)
                .map(image::DynamicImage::ImageRgb16)
                .ok_or_else(|| RenderError::setting("image size mismatch"))
        }
    }
}

/// The last frame's 8-bit RGBA image (opaque), tone-mapped on the device as
/// [`tone_image`]'s 8-bit RGB: the window's texture layout, so no pixel is copied on the host.
pub(super) fn tone_rgba(
    r: &mut CudaRenderer,
    tau_scale: f32,
    tone: &ToneSettings,
) -> Result<Vec<u8>, RenderError> {
    tone8(r, tau_scale, tone, 4)
}

/// Tone-maps the last frame to `out_channels` (3: RGB, 4: RGBA) bytes a pixel and downloads
/// them.
fn tone8(
    r: &mut CudaRenderer,
    tau_scale: f32,
    tone: &ToneSettings,
    out_channels: u8,
) -> Result<Vec<u8>, RenderError> {
    let Some(image) = r.image.as_mut() else {
        return Err(RenderError::setting("no frame rendered yet"));
    };
    let stream = &r.compute;
    let pixels = image.width as usize * image.height as usize;
    let n = pixels * usize::from(out_channels);
    let args = Tone8Args {
        tau: &image.tau,
        pixels: pixels as u64,
        out_channels: i32::from(out_channels),
        tau_scale,
        gamma: tone.gamma,
        contrast: tone.contrast,
        out: &mut image.image8,
    };
    // SAFETY: tau holds 3·W·H values and image8 4·W·H bytes (ensure_image); one thread per
    // pixel, out_channels 3 or 4, so the kernel reads and writes within them.
    unsafe { gpu::launch(stream, &r.kernels.tone8, gpu::per_element(pixels, 0), args) }?;
    Ok(r.staging.download(stream, &image.image8.slice(0..n))?)
}
