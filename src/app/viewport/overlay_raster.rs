//! Rasterises an overlay into an RGBA image on the CPU, for off-screen screenshots at any size.
//!
//! egui's own tessellator turns circles, lines, rectangles and text (through a private font
//! atlas) into anti-aliased triangle meshes in premultiplied sRGBA; this module fills those
//! triangles with barycentric interpolation and blends them "over" the image, as the GPU
//! would with egui's premultiplied-alpha blend state.

use super::overlay::OverlayItem;
use egui::epaint::text::{Fonts, TextOptions};
use egui::epaint::{ClippedShape, Color32, ColorImage, Mesh, Primitive, Shape, Tessellator};
use egui::{FontDefinitions, FontId, Pos2, Rect};

/// Draws `items` (in points, `pixels_per_point` pixels each) over `rgba`, an image of
/// `width_px`×`height_px` opaque or straight-alpha pixels, row 0 at the top.
pub fn rasterise_overlay(
    items: &[OverlayItem],
    rgba: &mut [u8],
    width_px: u32,
    height_px: u32,
    pixels_per_point: f32,
) {
    if items.is_empty() || rgba.len() != width_px as usize * height_px as usize * 4 {
        return;
    }
    let options = TextOptions {
        max_texture_side: 8192,
        ..TextOptions::default()
    };
    let mut fonts = Fonts::new(options, FontDefinitions::default());
    let mut shapes = Vec::with_capacity(items.len());
    {
        let mut view = fonts.with_pixels_per_point(pixels_per_point);
        for item in items {
            let shape = match item {
                OverlayItem::Circle {
                    centre,
                    radius,
                    stroke,
                } => Shape::circle_stroke(*centre, *radius, *stroke),
                OverlayItem::Line { points, stroke } => Shape::line_segment(*points, *stroke),
                OverlayItem::Rect { rect, fill } => Shape::rect_filled(*rect, 0.0, *fill),
                OverlayItem::Text {
                    pos,
                    anchor,
                    text,
                    size,
                    colour,
                } => Shape::text(
                    &mut view,
                    *pos,
                    *anchor,
                    text,
                    FontId::proportional(*size),
                    *colour,
                ),
            };
            shapes.push(ClippedShape::new(Rect::EVERYTHING, shape));
        }
    }
    // The atlas after every glyph was laid out.
    let atlas = fonts.image();
    let mut tessellator = Tessellator::new(
        pixels_per_point,
        Default::default(),
        fonts.font_image_size(),
        fonts.texture_atlas().prepared_discs(),
    );
    let canvas = Canvas {
        rgba,
        width: width_px as usize,
        height: height_px as usize,
        pixels_per_point,
        atlas: &atlas,
    };
    let mut canvas = canvas;
    for primitive in tessellator.tessellate_shapes(shapes) {
        if let Primitive::Mesh(mesh) = primitive.primitive {
            canvas.fill_mesh(&mesh);
        }
    }
}

struct Canvas<'a> {
    rgba: &'a mut [u8],
    width: usize,
    height: usize,
    pixels_per_point: f32,
    atlas: &'a ColorImage,
}

impl Canvas<'_> {
    fn fill_mesh(&mut self, mesh: &Mesh) {
        for triangle in mesh.indices.chunks_exact(3) {
            let [a, b, c] = [triangle[0], triangle[1], triangle[2]].map(|i| i as usize);
            if let (Some(a), Some(b), Some(c)) = (
                mesh.vertices.get(a),
                mesh.vertices.get(b),
                mesh.vertices.get(c),
            ) {
                self.fill_triangle([a, b, c]);
            }
        }
    }

    /// Fills one triangle: pixel centres inside it get the interpolated colour times the atlas
    /// texel (both premultiplied), blended over the image.
    fn fill_triangle(&mut self, v: [&egui::epaint::Vertex; 3]) {
        let p: [Pos2; 3] = v.map(|v| (v.pos.to_vec2() * self.pixels_per_point).to_pos2());
        let area = edge(p[0], p[1], p[2]);
        if area.abs() < 1e-12 || !area.is_finite() {
            return;
        }
        let min_x = p.iter().map(|q| q.x).fold(f32::INFINITY, f32::min).floor();
        let max_x = p
            .iter()
            .map(|q| q.x)
            .fold(f32::NEG_INFINITY, f32::max)
            .ceil();
        let min_y = p.iter().map(|q| q.y).fold(f32::INFINITY, f32::min).floor();
        let max_y = p
            .iter()
            .map(|q| q.y)
            .fold(f32::NEG_INFINITY, f32::max)
            .ceil();
        let x0 = min_x.max(0.0) as usize;
        let y0 = min_y.max(0.0) as usize;
        let x1 = (max_x.max(0.0) as usize).min(self.width);
        let y1 = (max_y.max(0.0) as usize).min(self.height);
        let colours = v.map(|v| v.color.to_array().map(f32::from));
        let [atlas_w, atlas_h] = self.atlas.size;
        for y in y0..y1 {
            for x in x0..x1 {
                let q = Pos2::new(x as f32 + 0.5, y as f32 + 0.5);
                let w = [
                    edge(p[1], p[2], q) / area,
                    edge(p[2], p[0], q) / area,
                    edge(p[0], p[1], q) / area,
                ];
                if w.iter().any(|&wi| wi < 0.0) {
                    continue;
                }
                let u = w[0] * v[0].uv.x + w[1] * v[1].uv.x + w[2] * v[2].uv.x;
                let t = w[0] * v[0].uv.y + w[1] * v[1].uv.y + w[2] * v[2].uv.y;
                let tx = ((u * atlas_w as f32) as usize).min(atlas_w.saturating_sub(1));
                let ty = ((t * atlas_h as f32) as usize).min(atlas_h.saturating_sub(1));
                let texel = self
                    .atlas
                    .pixels
                    .get(ty * atlas_w + tx)
                    .copied()
                    .unwrap_or(Color32::WHITE)
                    .to_array()
                    .map(|c| f32::from(c) / 255.0);
                let src: [f32; 4] = std::array::from_fn(|k| {
                    (w[0] * colours[0][k] + w[1] * colours[1][k] + w[2] * colours[2][k]) * texel[k]
                });
                let alpha = src[3] / 255.0;
                if alpha <= 0.0 {
                    continue;
                }
                let offset = (y * self.width + x) * 4;
                let dst = &mut self.rgba[offset..offset + 4];
                for k in 0..3 {
                    let value = src[k] + f32::from(dst[k]) * (1.0 - alpha);
                    dst[k] = value.round().clamp(0.0, 255.0) as u8;
                }
                let a = src[3] + f32::from(dst[3]) * (1.0 - alpha);
                dst[3] = a.round().clamp(0.0, 255.0) as u8;
            }
        }
    }
}

/// Twice the signed area of (a, b, c): positive when c is left of a→b.
fn edge(a: Pos2, b: Pos2, c: Pos2) -> f32 {
    (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use egui::{Align2, Stroke, pos2};

    fn black(w: u32, h: u32) -> Vec<u8> {
        [0, 0, 0, 255].repeat((w * h) as usize)
    }

    fn pixel(rgba: &[u8], w: u32, x: u32, y: u32) -> [u8; 4] {
        let i = ((y * w + x) * 4) as usize;
        [rgba[i], rgba[i + 1], rgba[i + 2], rgba[i + 3]]
    }

    #[test]
    fn rectangles_fill_exactly_and_scale_with_pixels_per_point() {
        let items = [OverlayItem::Rect {
            rect: Rect::from_min_max(pos2(2.0, 3.0), pos2(6.0, 5.0)),
            fill: Color32::from_rgb(255, 0, 0),
        }];
        let mut rgba = black(20, 20);
        rasterise_overlay(&items, &mut rgba, 20, 20, 2.0);
        // Points (2..6, 3..5) are pixels (4..12, 6..10); the centre is pure red.
        assert_eq!(pixel(&rgba, 20, 8, 8), [255, 0, 0, 255]);
        assert_eq!(pixel(&rgba, 20, 2, 8), [0, 0, 0, 255]);
        assert_eq!(pixel(&rgba, 20, 8, 12), [0, 0, 0, 255]);
        let red = rgba.chunks(4).filter(|p| p[0] > 128).count();
        // 8×4 pixels, give or take the anti-aliased edge.
        assert!((28..=40).contains(&red), "{red}");
    }

    #[test]
    fn circles_and_text_leave_marks_where_expected() {
        let items = [
            OverlayItem::Circle {
                centre: pos2(30.0, 30.0),
                radius: 20.0,
                stroke: Stroke::new(2.0, Color32::WHITE),
            },
            OverlayItem::Text {
                pos: pos2(70.0, 30.0),
                anchor: Align2::LEFT_CENTER,
                text: "Halo 12".to_owned(),
                size: 14.0,
                colour: Color32::WHITE,
            },
        ];
        let mut rgba = black(140, 60);
        rasterise_overlay(&items, &mut rgba, 140, 60, 1.0);
        // On the ring (radius 20 about x = 30: columns near 10 and 50), not at its centre.
        let ring = |x0: u32, x1: u32| (x0..x1).map(|x| pixel(&rgba, 140, x, 30)[0]).max();
        assert!(ring(8, 12) > Some(200), "{:?}", ring(8, 12));
        assert!(ring(48, 52) > Some(200), "{:?}", ring(48, 52));
        assert_eq!(pixel(&rgba, 140, 30, 30), [0, 0, 0, 255]);
        // The text lit some pixels right of x = 70 and none beyond where it could reach.
        let lit = |x0: u32, x1: u32| {
            (x0..x1)
                .flat_map(|x| (0..60).map(move |y| (x, y)))
                .filter(|&(x, y)| pixel(&rgba, 140, x, y)[0] > 100)
                .count()
        };
        assert!(lit(70, 130) > 30, "text drew {} pixels", lit(70, 130));
        assert_eq!(lit(135, 140), 0);
    }
}
