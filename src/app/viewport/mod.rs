//! The central viewport: the widget, its orbit camera and flights, progressive rendering, the
//! renderer boundary and the Splotch renderer behind it, the overlay drawn over the image, picks
//! and off-screen screenshots.

pub mod camera;
pub mod fits_export;
pub mod glide;
pub mod overlay;
pub mod overlay_labels;
pub mod overlay_raster;
pub mod pick;
pub mod preview;
pub mod progressive;
pub mod screenshot;
pub mod splotch;
pub mod viewport_renderer;
pub mod wgpu_view;
pub mod widget;

pub use widget::{OverlayInput, Viewport};
