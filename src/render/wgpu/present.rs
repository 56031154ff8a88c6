//! The 8-bit image in a texture on the device the window draws with, which shows it as it is:
//! the tone map's words copied into an RGBA texture from a small pool (no copy to the host and
//! back), or an image made elsewhere written into one by the render worker (so that the
//! window's thread never handles its bytes); read back only where the host needs a few pixels
//! (picking) or a test the whole image.

use super::WgpuRenderer;
use super::buffers::{READBACK, Scratch, submit_and_map};
use super::context::WgpuContext;
use super::error::WgpuError;
use super::frame::Tile;
use super::readback::{PixelPass, encode_pixel_pass};
use std::sync::Arc;

/// The texture's format: egui's own for user textures (its shader decodes sRGB itself), so the
/// window shows these bytes exactly as it shows the host image's.
pub const FRAME_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// Rows of a texture copy are whole multiples of this many pixels (256 bytes).
const ROW_PIXELS: u32 = wgpu::COPY_BYTES_PER_ROW_ALIGNMENT / 4;

/// Textures a renderer keeps: the one on screen, the one being drawn and one spare.
const POOL: usize = 3;

/// An opaque 8-bit RGBA image in a texture on the renderer's device, row 0 at the top. Cheap to
/// clone; the renderer draws into it again only once every clone is dropped.
#[derive(Clone)]
pub struct FrameTexture {
    inner: Arc<Held>,
}

/// The texture and the device it lives on.
struct Held {
    texture: wgpu::Texture,
    context: WgpuContext,
}

impl std::fmt::Debug for FrameTexture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameTexture")
            .field("width", &self.width())
            .field("height", &self.height())
            .finish_non_exhaustive()
    }
}

impl FrameTexture {
    /// The texture ([`FRAME_FORMAT`], usable as a texture binding and a copy source).
    pub fn texture(&self) -> &wgpu::Texture {
        &self.inner.texture
    }

    /// The device context it lives on.
    pub fn context(&self) -> &WgpuContext {
        &self.inner.context
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.inner.texture.width()
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.inner.texture.height()
    }

    /// Whether no clone of it is held outside the renderer's pool.
    fn is_free(&self) -> bool {
        Arc::strong_count(&self.inner) == 1
    }

    /// The RGBA bytes of the `width`×`height` rectangle at (`x0`, `y0`), row by row, clipped to
    /// the image. Waits for the device: for workers and tests, never a UI thread.
    pub fn read_rgba(
        &self,
        (x0, y0): (u32, u32),
        (width, height): (u32, u32),
    ) -> Result<Vec<u8>, WgpuError> {
        let x0 = x0.min(self.width());
        let y0 = y0.min(self.height());
        let width = width.min(self.width() - x0);
        let height = height.min(self.height() - y0);
        if width == 0 || height == 0 {
            return Ok(Vec::new());
        }
        let stride = width.next_multiple_of(ROW_PIXELS);
        let bytes = u64::from(stride) * u64::from(height) * 4;
        let context = self.context();
        let readback = Scratch::default().at_least(context, bytes, READBACK, "texture")?;
        let mut encoder = context.device.create_command_encoder(&Default::default());
        encoder.copy_texture_to_buffer(
            wgpu::TexelCopyTextureInfo {
                texture: self.texture(),
                mip_level: 0,
                origin: wgpu::Origin3d { x: x0, y: y0, z: 0 },
                aspect: wgpu::TextureAspect::All,
            },
            wgpu::TexelCopyBufferInfo {
                buffer: &readback,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(stride * 4),
                    rows_per_image: Some(height),
                },
            },
            extent(width, height),
        );
        let mapped = submit_and_map(context, encoder, &readback, bytes)?;
        let row = width as usize * 4;
        let pixels = mapped
            .chunks_exact(stride as usize * 4)
            .flat_map(|padded| &padded[..row])
            .copied()
            .collect();
        drop(mapped);
        readback.unmap();
        Ok(pixels)
    }
}

fn extent(width: u32, height: u32) -> wgpu::Extent3d {
    wgpu::Extent3d {
        width,
        height,
        depth_or_array_layers: 1,
    }
}

/// Frame textures, reused once nobody else holds them.
#[derive(Debug, Default)]
pub struct TexturePool {
    textures: Vec<FrameTexture>,
}

impl TexturePool {
    /// The opaque RGBA image `rgba` (`width`×`height`, row 0 at the top) in a texture of the
    /// pool on `context`'s device, written there and waited for. `None` when `rgba` does not
    /// hold `width`×`height` pixels.
    pub fn upload(
        &mut self,
        context: &WgpuContext,
        (width, height): (u32, u32),
        rgba: &[u8],
    ) -> Result<Option<FrameTexture>, WgpuError> {
        if width == 0 || height == 0 || rgba.len() != width as usize * height as usize * 4 {
            return Ok(None);
        }
        let target = self.take(context, width, height);
        context.queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture: target.texture(),
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            rgba,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(width * 4),
                rows_per_image: Some(height),
            },
            extent(width, height),
        );
        context.queue.submit([]);
        context.finish()?;
        Ok(Some(target))
    }

    /// A texture of `width`×`height` that no one else holds: a free one of that size, else a
    /// new one (dropping free ones of other sizes, so that at most [`POOL`] are kept).
    fn take(&mut self, context: &WgpuContext, width: u32, height: u32) -> FrameTexture {
        let fits = |t: &FrameTexture| (t.width(), t.height()) == (width, height);
        if let Some(found) = self.textures.iter().find(|t| t.is_free() && fits(t)) {
            return found.clone();
        }
        self.textures.retain(|t| !t.is_free() || fits(t));
        let texture = context.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("frame texture"),
            size: extent(width, height),
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: FRAME_FORMAT,
            usage: wgpu::TextureUsages::TEXTURE_BINDING
                | wgpu::TextureUsages::COPY_DST
                | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        let made = FrameTexture {
            inner: Arc::new(Held {
                texture,
                context: context.clone(),
            }),
        };
        if self.textures.len() < POOL {
            self.textures.push(made.clone());
        }
        made
    }
}

/// The texture a frame of `width`×`height` is toned into (see [`tone_into_texture`]).
pub(crate) fn frame_texture(renderer: &mut WgpuRenderer, width: u32, height: u32) -> FrameTexture {
    let context = renderer.context.clone();
    renderer.textures.take(&context, width, height)
}

/// Tone-maps the drawn `tile` (τ scale, gamma, contrast in `tone`) into its place in `target`,
/// as [`super::readback::read_back_image`] would into host memory, and waits for the device.
pub(crate) fn tone_into_texture(
    renderer: &mut WgpuRenderer,
    tile: Tile,
    tone: [f32; 3],
    fixed_exponent: i32,
    target: &FrameTexture,
) -> Result<(), WgpuError> {
    let context = renderer.context.clone();
    let stride = tile.width.next_multiple_of(ROW_PIXELS);
    let mut encoder = context.device.create_command_encoder(&Default::default());
    let out = encode_pixel_pass(
        renderer,
        &mut encoder,
        PixelPass::Tone8,
        tile,
        (tone, fixed_exponent),
        u64::from(stride) * u64::from(tile.height) * 4,
        stride,
    )?;
    encoder.copy_buffer_to_texture(
        wgpu::TexelCopyBufferInfo {
            buffer: &out,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(stride * 4),
                rows_per_image: Some(tile.height),
            },
        },
        wgpu::TexelCopyTextureInfo {
            texture: target.texture(),
            mip_level: 0,
            origin: wgpu::Origin3d {
                x: tile.x0,
                y: tile.y0,
                z: 0,
            },
            aspect: wgpu::TextureAspect::All,
        },
        extent(tile.width, tile.height),
    );
    context.queue.submit([encoder.finish()]);
    // The frame is whole before it is handed on, and frames never queue up behind each other.
    context.finish()
}
