//! What is drawn over the render: halo circles and labels, the colour bar and the scale bar.
//!
//! The overlay is plain data ([`OverlayItem`]s in points inside a rectangle), built by one
//! function for the window and for off-screen screenshots; [`paint`] draws it with egui, and
//! [`super::overlay_raster`] rasterises it into a screenshot at any resolution.

use super::camera::OrbitCamera;
use super::overlay_labels::{LabelPlacer, label_extent};
use super::splotch::render_camera;
use super::viewport_renderer::Legend;
use egui::{Align2, Color32, Pos2, Rect, Stroke, pos2, vec2};

/// At most this many halo labels, largest halos first, none overlapping another (circles are
/// not limited).
pub const MAX_LABELS: usize = 40;
/// Colour of halo circles.
pub const HALO_COLOUR: Color32 = Color32::from_rgb(80, 220, 255);
/// Colour of the selected halo.
pub const SELECTED_COLOUR: Color32 = Color32::from_rgb(255, 210, 60);

/// One thing to draw, in points.
#[derive(Debug, Clone, PartialEq)]
pub enum OverlayItem {
    /// A circle outline.
    Circle {
        /// Centre.
        centre: Pos2,
        /// Radius.
        radius: f32,
        /// Line.
        stroke: Stroke,
    },
    /// A line segment.
    Line {
        /// Ends.
        points: [Pos2; 2],
        /// Line.
        stroke: Stroke,
    },
    /// A filled rectangle.
    Rect {
        /// Where.
        rect: Rect,
        /// Fill colour.
        fill: Color32,
    },
    /// One line of text.
    Text {
        /// Anchor point.
        pos: Pos2,
        /// Which corner or edge of the text sits at `pos`.
        anchor: Align2,
        /// The text (ASCII: the only font has few other glyphs).
        text: String,
        /// Font size in points.
        size: f32,
        /// Colour.
        colour: Color32,
    },
}

/// A halo to mark: catalogue index, centre and radius in world units, label.
#[derive(Debug, Clone, PartialEq)]
pub struct HaloMarker {
    /// Index in the catalogue.
    pub index: usize,
    /// Centre of mass (world).
    pub centre_world: [f64; 3],
    /// Radius drawn (rms or max member distance, world).
    pub radius_world: f64,
}

/// A halo circle as placed on screen (for clicks and tests).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlacedHalo {
    /// Index in the catalogue.
    pub index: usize,
    /// Centre in points.
    pub centre: Pos2,
    /// Radius in points.
    pub radius: f32,
}

/// What to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverlayOptions {
    /// Halo circles.
    pub halos: bool,
    /// Halo labels.
    pub labels: bool,
    /// Colour bar.
    pub color_bar: bool,
    /// Scale bar.
    pub scale_bar: bool,
}

/// The overlay of one view.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overlay {
    /// Items in drawing order.
    pub items: Vec<OverlayItem>,
    /// Halo circles drawn.
    pub placed: Vec<PlacedHalo>,
}

/// World → points for an orbit camera shown in `rect`, with the renderer's conventions
/// (render::project: x_px = W/2 + s·x_c, y_px = H/2 − s·y_c, s = scale/depth).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScreenProjector {
    look_at: [f64; 3],
    x_hat: [f64; 3],
    y_hat: [f64; 3],
    z_hat: [f64; 3],
    distance: f64,
    perspective: bool,
    /// Points per world unit at depth 1: (H/2)/tan(fov_y/2) (= (W/2)/tan(fov_x/2)).
    scale: f64,
    centre: Pos2,
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

impl ScreenProjector {
    /// The projector of `camera` in `rect`; `None` when the camera defines no view.
    pub fn new(camera: &OrbitCamera, rect: Rect) -> Option<Self> {
        let (w, h) = (rect.width().max(1.0), rect.height().max(1.0));
        let render_cam = render_camera(camera, w.round() as u32, h.round() as u32);
        let basis = render_cam.basis().ok()?;
        let tan_half_y = (0.5 * f64::from(camera.fov_y_deg)).to_radians().tan();
        let perspective = render_cam.projection == crate::render::Projection::Perspective;
        let per_depth = 0.5 * f64::from(h) / tan_half_y;
        Some(Self {
            look_at: render_cam.lookat,
            x_hat: basis.x_hat,
            y_hat: basis.y_hat,
            z_hat: basis.z_hat,
            distance: basis.distance,
            perspective,
            scale: if perspective {
                per_depth
            } else {
                per_depth / basis.distance
            },
            centre: rect.center(),
        })
    }

    /// Screen position, depth along the view and points per world unit at that depth; `None`
    /// behind the camera.
    pub fn project(&self, p_world: [f64; 3]) -> Option<(Pos2, f64, f64)> {
        let q = [
            p_world[0] - self.look_at[0],
            p_world[1] - self.look_at[1],
            p_world[2] - self.look_at[2],
        ];
        let depth = self.distance - dot(q, self.z_hat);
        if !(depth > 0.0 && depth.is_finite()) {
            return None;
        }
        let s = if self.perspective {
            self.scale / depth
        } else {
            self.scale
        };
        let pos = pos2(
            self.centre.x + (s * dot(q, self.x_hat)) as f32,
            self.centre.y - (s * dot(q, self.y_hat)) as f32,
        );
        Some((pos, depth, s))
    }

    /// The world point at `depth` on the ray through the screen point `pos`.
    pub fn unproject(&self, pos: Pos2, depth: f64) -> [f64; 3] {
        let s = if self.perspective {
            self.scale / depth
        } else {
            self.scale
        };
        let x_c = f64::from(pos.x - self.centre.x) / s;
        let y_c = -f64::from(pos.y - self.centre.y) / s;
        let along = self.distance - depth;
        std::array::from_fn(|i| {
            self.look_at[i] + x_c * self.x_hat[i] + y_c * self.y_hat[i] + along * self.z_hat[i]
        })
    }
}

/// What an overlay shows, where [`OverlayOptions`] lets it.
#[derive(Clone, Copy)]
pub struct OverlayContent<'a> {
    /// Halos in catalogue order (largest first).
    pub halos: &'a [HaloMarker],
    /// Index of the selected halo.
    pub selected: Option<usize>,
    /// The colour bar's palette and range.
    pub legend: Option<&'a Legend>,
    /// Unit of the scale bar's length.
    pub length_unit: &'a str,
}

/// Builds the overlay of `rect` for `camera`: halo circles (radius projected at each halo's
/// depth) with labels, the colour bar of the legend and a scale bar in the length unit. Sizes
/// of text and bars scale with `ui_scale`.
pub fn build_overlay(
    rect: Rect,
    camera: &OrbitCamera,
    content: OverlayContent<'_>,
    options: OverlayOptions,
    ui_scale: f32,
) -> Overlay {
    let OverlayContent {
        halos,
        selected,
        legend,
        length_unit,
    } = content;
    let mut overlay = Overlay::default();
    if options.halos
        && let Some(projector) = ScreenProjector::new(camera, rect)
    {
        // Labels after every circle (drawn on top), the selected halo's first so that it
        // always gets one; placed without overlaps by overlay_labels.
        let mut labels = Vec::new();
        for halo in halos {
            let Some((centre, _depth, s)) = projector.project(halo.centre_world) else {
                continue;
            };
            if !rect.contains(centre) {
                continue;
            }
            let radius = ((halo.radius_world * s) as f32).clamp(2.0 * ui_scale, 1e5);
            let is_selected = selected == Some(halo.index);
            let colour = if is_selected {
                SELECTED_COLOUR
            } else {
                HALO_COLOUR
            };
            let width = if is_selected { 2.5 } else { 1.2 } * ui_scale;
            overlay.items.push(OverlayItem::Circle {
                centre,
                radius,
                stroke: Stroke::new(width, colour),
            });
            overlay.placed.push(PlacedHalo {
                index: halo.index,
                centre,
                radius,
            });
            if options.labels {
                labels.push((is_selected, halo.index, centre, radius, colour));
            }
        }
        labels.sort_by_key(|&(is_selected, ..)| !is_selected);
        let size = 11.0 * ui_scale;
        let mut placer = LabelPlacer::new(MAX_LABELS);
        for (is_selected, index, centre, radius, colour) in labels {
            let text = format!("#{index}"); // the table's and the exported CSV's 0-based rank
            let extent = label_extent(&text, size);
            if let Some((pos, anchor)) = placer.place(centre, radius, extent, is_selected) {
                push_text(&mut overlay.items, pos, anchor, text, size, colour);
            }
        }
    }
    if options.color_bar
        && let Some(legend) = legend
    {
        color_bar(&mut overlay.items, rect, legend, ui_scale);
    }
    if options.scale_bar {
        scale_bar(&mut overlay.items, rect, camera, length_unit, ui_scale);
    }
    overlay
}

/// Text with a one-point dark shadow, readable on any render.
fn push_text(
    items: &mut Vec<OverlayItem>,
    pos: Pos2,
    anchor: Align2,
    text: String,
    size: f32,
    colour: Color32,
) {
    let shadow = (size / 12.0).max(1.0);
    items.push(OverlayItem::Text {
        pos: pos + vec2(shadow, shadow),
        anchor,
        text: text.clone(),
        size,
        colour: Color32::from_black_alpha(200),
    });
    items.push(OverlayItem::Text {
        pos,
        anchor,
        text,
        size,
        colour,
    });
}

/// A vertical palette strip at the right edge with its limits and what it shows.
fn color_bar(items: &mut Vec<OverlayItem>, rect: Rect, legend: &Legend, ui_scale: f32) {
    let Ok(palette) = crate::render::Palette::by_name(&legend.palette) else {
        return;
    };
    let width = 14.0 * ui_scale;
    let height = (0.4 * rect.height()).min(260.0 * ui_scale);
    let right = rect.right() - 16.0 * ui_scale;
    let top = rect.top() + 36.0 * ui_scale;
    let steps = 64;
    let step = height / steps as f32;
    for i in 0..steps {
        // Top of the bar is the high end of the palette.
        let x = 1.0 - (i as f32 + 0.5) / steps as f32;
        let [r, g, b] = palette.sample_rgb8(x);
        let y = top + i as f32 * step;
        items.push(OverlayItem::Rect {
            rect: Rect::from_min_max(pos2(right - width, y), pos2(right, y + step + 0.5)),
            fill: Color32::from_rgb(r, g, b),
        });
    }
    let size = 11.0 * ui_scale;
    let text_x = right - width - 4.0 * ui_scale;
    for (y, value) in [(top, legend.hi), (top + height, legend.lo)] {
        push_text(
            items,
            pos2(text_x, y),
            Align2::RIGHT_CENTER,
            format_value(value),
            size,
            Color32::WHITE,
        );
    }
    push_text(
        items,
        pos2(right, top + height + 6.0 * ui_scale),
        Align2::RIGHT_TOP,
        legend.label.clone(),
        size,
        Color32::WHITE,
    );
}

/// A bar of a round length at the look-at depth in the bottom-right corner.
fn scale_bar(
    items: &mut Vec<OverlayItem>,
    rect: Rect,
    camera: &OrbitCamera,
    length_unit: &str,
    ui_scale: f32,
) {
    let world_per_point = camera.world_per_point(rect.height());
    if !(world_per_point.is_finite() && world_per_point > 0.0) {
        return;
    }
    let length_world = nice_length(world_per_point * rect.width() * 0.2);
    let length_points = length_world / world_per_point;
    let right = rect.right_bottom() + vec2(-16.0, -16.0) * ui_scale;
    let left = right - vec2(length_points, 0.0);
    let stroke = Stroke::new(2.0 * ui_scale, Color32::WHITE);
    items.push(OverlayItem::Line {
        points: [left, right],
        stroke,
    });
    for end in [left, right] {
        items.push(OverlayItem::Line {
            points: [end, end - vec2(0.0, 6.0 * ui_scale)],
            stroke,
        });
    }
    let unit = if length_unit.is_empty() {
        String::new()
    } else {
        format!(" {length_unit}")
    };
    push_text(
        items,
        pos2(0.5 * (left.x + right.x), left.y - 8.0 * ui_scale),
        Align2::CENTER_BOTTOM,
        format!("{}{unit}", format_length(length_world)),
        12.0 * ui_scale,
        Color32::WHITE,
    );
}

/// Draws `items` with egui.
pub fn paint(painter: &egui::Painter, items: &[OverlayItem]) {
    for item in items {
        match item {
            OverlayItem::Circle {
                centre,
                radius,
                stroke,
            } => {
                painter.circle_stroke(*centre, *radius, *stroke);
            }
            OverlayItem::Line { points, stroke } => {
                painter.line_segment(*points, *stroke);
            }
            OverlayItem::Rect { rect, fill } => {
                painter.rect_filled(*rect, 0.0, *fill);
            }
            OverlayItem::Text {
                pos,
                anchor,
                text,
                size,
                colour,
            } => {
                painter.text(
                    *pos,
                    *anchor,
                    text,
                    egui::FontId::proportional(*size),
                    *colour,
                );
            }
        }
    }
}

/// The halo under `pos`, if any: the smallest circle containing it (small halos sit inside
/// big ones), or the nearest centre within a few points.
pub fn halo_at(placed: &[PlacedHalo], pos: Pos2) -> Option<usize> {
    placed
        .iter()
        .filter(|p| p.centre.distance(pos) <= p.radius.max(6.0))
        .min_by(|a, b| a.radius.total_cmp(&b.radius))
        .map(|p| p.index)
}

/// The largest 1, 2 or 5 × 10ⁿ not above `length` (1 for non-positive input).
pub fn nice_length(length: f32) -> f32 {
    if !(length.is_finite() && length > 0.0) {
        return 1.0;
    }
    let magnitude = 10f32.powf(length.log10().floor());
    let mantissa = length / magnitude;
    let nice = if mantissa >= 5.0 {
        5.0
    } else if mantissa >= 2.0 {
        2.0
    } else {
        1.0
    };
    nice * magnitude
}

/// A length without trailing zeros ("0.02", "1000", "5e6").
pub fn format_length(length: f32) -> String {
    if (1e-3..1e5).contains(&length.abs()) {
        let text = format!("{length:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        format!("{length:.0e}")
    }
}

/// A colour-bar limit with three significant digits.
pub fn format_value(value: f32) -> String {
    if value == 0.0 || (1e-2..1e4).contains(&value.abs()) {
        format!("{value:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    } else {
        format!("{value:.2e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECT: Rect = Rect {
        min: pos2(100.0, 50.0),
        max: pos2(500.0, 350.0),
    };

    fn marker(index: usize, centre_world: [f64; 3], radius_world: f64) -> HaloMarker {
        HaloMarker {
            index,
            centre_world,
            radius_world,
        }
    }

    #[test]
    fn projection_matches_the_renderer_convention_and_inverts() {
        let camera = OrbitCamera::default();
        let projector = ScreenProjector::new(&camera, RECT).expect("view");
        // The look-at point is the rectangle's centre, at depth 3.
        let (pos, depth, s) = projector.project([0.0, 0.0, 0.0]).expect("in front");
        assert_eq!(pos, RECT.center());
        assert!((depth - 3.0).abs() < 1e-12);
        // (H/2)/tan(22.5°)/depth points per world unit.
        let expected = 150.0 / 22.5f64.to_radians().tan() / 3.0;
        assert!((s - expected).abs() < 1e-9);
        // +x is right, +y is up.
        let (right, _, _) = projector.project([0.1, 0.0, 0.0]).expect("in front");
        let (up, _, _) = projector.project([0.0, 0.1, 0.0]).expect("in front");
        assert!((right.x - pos.x - (0.1 * expected) as f32).abs() < 1e-3);
        assert!((pos.y - up.y - (0.1 * expected) as f32).abs() < 1e-3);
        let back = projector.unproject(right, 3.0);
        assert!((back[0] - 0.1).abs() < 1e-6 && back[1].abs() < 1e-6 && back[2].abs() < 1e-6);
        assert!(
            projector.project([0.0, 0.0, 4.0]).is_none(),
            "behind the eye"
        );
    }

    #[test]
    fn circles_only_for_halos_in_view_with_projected_radius() {
        let camera = OrbitCamera::default();
        let halos = [
            marker(0, [0.0, 0.0, 0.0], 0.1),
            marker(1, [0.0, 0.0, 1.5], 0.1),
            marker(2, [50.0, 0.0, 0.0], 0.1),
            marker(3, [0.0, 0.0, 5.0], 0.1),
        ];
        let options = OverlayOptions {
            halos: true,
            labels: true,
            color_bar: false,
            scale_bar: false,
        };
        let content = OverlayContent {
            halos: &halos,
            selected: Some(1),
            legend: None,
            length_unit: "",
        };
        let overlay = build_overlay(RECT, &camera, content, options, 1.0);
        let indices: Vec<usize> = overlay.placed.iter().map(|p| p.index).collect();
        assert_eq!(
            indices,
            vec![0, 1],
            "off-screen and behind-camera halos are skipped"
        );
        // Same radius at half the depth: twice the size on screen.
        let ratio = overlay.placed[1].radius / overlay.placed[0].radius;
        assert!((ratio - 2.0).abs() < 1e-4, "{ratio}");
        let circles = overlay
            .items
            .iter()
            .filter(|i| matches!(i, OverlayItem::Circle { .. }))
            .count();
        assert_eq!(circles, 2);
        assert!(overlay.items.iter().any(|i| matches!(i,
            OverlayItem::Text { text, colour, .. } if text == "#1" && *colour == SELECTED_COLOUR)));
        // The click picks the smaller circle when they nest.
        assert_eq!(halo_at(&overlay.placed, RECT.center()), Some(0));
        assert_eq!(halo_at(&overlay.placed, RECT.min), None);
    }

    #[test]
    fn bars_and_number_formats() {
        let legend = Legend {
            palette: "viridis".to_owned(),
            lo: -1.5,
            hi: 2.25,
            label: "gas log10 Density".to_owned(),
        };
        let options = OverlayOptions {
            halos: false,
            labels: false,
            color_bar: true,
            scale_bar: true,
        };
        let camera = OrbitCamera::default();
        let content = OverlayContent {
            halos: &[],
            selected: None,
            legend: Some(&legend),
            length_unit: "kpc",
        };
        let overlay = build_overlay(RECT, &camera, content, options, 1.0);
        let texts: Vec<&str> = overlay
            .items
            .iter()
            .filter_map(|i| match i {
                OverlayItem::Text { text, colour, .. } if *colour == Color32::WHITE => {
                    Some(text.as_str())
                }
                _ => None,
            })
            .collect();
        // World per point 2·3·tan(22.5°)/300; a fifth of the width (80 points) is 0.663 → 0.5.
        assert_eq!(texts, vec!["2.25", "-1.5", "gas log10 Density", "0.5 kpc"]);
        let strips = overlay
            .items
            .iter()
            .filter(|i| matches!(i, OverlayItem::Rect { .. }))
            .count();
        assert_eq!(strips, 64);
        assert!((nice_length(7.3) - 5.0).abs() < 1e-6);
        assert!((nice_length(0.031) - 0.02).abs() < 1e-8);
        assert_eq!(nice_length(0.0), 1.0);
        assert_eq!(format_length(1000.0), "1000");
        assert_eq!(format_length(5e6), "5e6");
        assert_eq!(format_value(1.23456e-5), "1.23e-5");
    }
}
