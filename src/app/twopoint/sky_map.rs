//! The event sky map: every event as a dot coloured by energy in an equal-area all-sky
//! projection, with a graticule, an energy colour bar and the energy cuts marked.

use super::sky_projection::{MAP_HALF_HEIGHT, MAP_HALF_WIDTH, SkyProjection, sky_to_map};
use crate::data::EventList;
use std::f64::consts::{FRAC_PI_2, PI};

/// Energy cuts marked on the map (top fractions, DESIGN §6); "all" is the whole bar.
pub const MARKED_CUTS: [(f64, &str); 3] =
    [(0.1, "top 10 %"), (0.01, "top 1 %"), (0.001, "top 0.1 %")];
/// Size of the rasterised map (2:1 like the projection's ellipse).
const MAP_SIZE_PX: [usize; 2] = [1024, 512];

/// matplotlib's viridis at `t` ∈ [0, 1] (the renderer's table and lookup; NaN and values
/// outside clamp to the ends), in 8 bits.
pub fn viridis(t: f64) -> egui::Color32 {
    let table = crate::render::palette::matplotlib_table("viridis").unwrap_or(&[]);
    let [r, g, b] = crate::render::palette::lookup(table, t as f32)
        .map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8);
    egui::Color32::from_rgb(r, g, b)
}

/// Range of the finite energies, `None` when there are none.
pub fn energy_range(energy: &[f64]) -> Option<(f64, f64)> {
    let finite = energy.iter().copied().filter(|e| e.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), e| {
        (lo.min(e), hi.max(e))
    });
    (lo <= hi).then_some((lo, hi))
}

/// Pixel of map point `[x, y]` in an image `size` pixels large (y up → row down).
fn map_to_pixel([x, y]: [f64; 2], size: [usize; 2]) -> Option<[usize; 2]> {
    let col = (x / MAP_HALF_WIDTH * 0.5 + 0.5) * size[0] as f64;
    let row = (0.5 - y / MAP_HALF_HEIGHT * 0.5) * size[1] as f64;
    let inside = col >= 0.0 && row >= 0.0 && col < size[0] as f64 && row < size[1] as f64;
    inside.then_some([col as usize, row as usize])
}

/// Rasterises the events: one pixel each, higher energies drawn over lower ones.
pub fn rasterise(events: &EventList, projection: SkyProjection) -> egui::ColorImage {
    let size = MAP_SIZE_PX;
    let mut image = egui::ColorImage::filled(size, egui::Color32::TRANSPARENT);
    let Some((lo, hi)) = energy_range(&events.energy) else {
        return image;
    };
    let span = (hi - lo).max(1e-12);
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by(|&a, &b| events.energy[a].total_cmp(&events.energy[b]));
    for i in order {
        let (ra, dec, energy) = (events.ra[i], events.dec[i], events.energy[i]);
        if !(ra.is_finite() && dec.is_finite()) {
            continue;
        }
        if let Some([col, row]) = map_to_pixel(sky_to_map(projection, ra, dec), size) {
            // The palette starts at 0.15 so the many low-energy events stay visible on black.
            image.pixels[row * size[0] + col] = viridis(0.15 + 0.85 * (energy - lo) / span);
        }
    }
    image
}

/// A marked cut: its threshold log10(E/GeV) and the events passing it.
type CutMark = (f64, usize);

/// The sky-map view and its cached raster.
#[derive(Default)]
pub struct SkyMap {
    cache: Option<(u64, SkyProjection, egui::TextureHandle)>,
    thresholds: Option<(u64, Vec<Option<CutMark>>)>,
}

impl SkyMap {
    /// Draws the map of `events` (document `document_id`) into all of `ui`'s space.
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        document_id: u64,
        events: &EventList,
        projection: SkyProjection,
    ) {
        let available = ui.available_rect_before_wrap();
        let bar_height = 60.0;
        let map_space = egui::Rect::from_min_max(
            available.min,
            egui::pos2(
                available.max.x,
                (available.max.y - bar_height).max(available.min.y),
            ),
        );
        // Keep the 2:1 aspect of the ellipse.
        let width = map_space.width().min(2.0 * map_space.height());
        let map_rect =
            egui::Rect::from_center_size(map_space.center(), egui::vec2(width, 0.5 * width));
        ui.allocate_rect(available, egui::Sense::hover());
        let painter = ui.painter_at(available);
        painter.rect_filled(available, 0.0, egui::Color32::from_gray(12));

        let fresh =
            matches!(&self.cache, Some((id, p, _)) if *id == document_id && *p == projection);
        if !fresh {
            let image = rasterise(events, projection);
            let texture = ui
                .ctx()
                .load_texture("sky map", image, egui::TextureOptions::NEAREST);
            self.cache = Some((document_id, projection, texture));
        }
        draw_outline_and_graticule(&painter, map_rect, projection);
        if let Some((_, _, texture)) = &self.cache {
            let uv = egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0));
            painter.image(texture.id(), map_rect, uv, egui::Color32::WHITE);
        }
        if events.is_empty() {
            painter.text(
                map_rect.center(),
                egui::Align2::CENTER_CENTER,
                "No events: open an event list (File > Open…)",
                egui::FontId::proportional(16.0),
                egui::Color32::from_gray(200),
            );
            return;
        }
        if !matches!(&self.thresholds, Some((id, _)) if *id == document_id) {
            let fractions: Vec<f64> = MARKED_CUTS.iter().map(|(f, _)| *f).collect();
            // The two-point analysis's own cut rule, so the marks are exactly its thresholds.
            let thresholds = match crate::twopoint::cuts::energy_cuts(&fractions, &events.energy) {
                Ok(cuts) => cuts.iter().map(|c| Some((c.threshold, c.n_pass))).collect(),
                Err(_) => vec![None; fractions.len()],
            };
            self.thresholds = Some((document_id, thresholds));
        }
        let thresholds = self.thresholds.as_ref().map_or(&[][..], |(_, t)| &t[..]);
        let bar_rect = egui::Rect::from_min_max(
            egui::pos2(available.min.x + 40.0, available.max.y - bar_height + 8.0),
            egui::pos2(available.max.x - 40.0, available.max.y - 28.0),
        );
        if let Some(range) = energy_range(&events.energy) {
            draw_energy_bar(&painter, bar_rect, range, thresholds);
        }
    }
}

fn draw_outline_and_graticule(
    painter: &egui::Painter,
    rect: egui::Rect,
    projection: SkyProjection,
) {
    let to_screen = |[x, y]: [f64; 2]| {
        egui::pos2(
            rect.center().x + (x / MAP_HALF_WIDTH) as f32 * 0.5 * rect.width(),
            rect.center().y - (y / MAP_HALF_HEIGHT) as f32 * 0.5 * rect.height(),
        )
    };
    let grid = egui::Stroke::new(1.0, egui::Color32::from_gray(70));
    // Parallels every 30° of declination.
    for dec_deg in [-60.0f64, -30.0, 0.0, 30.0, 60.0] {
        let points = (0..=96)
            .map(|i| sky_to_map(projection, 2.0 * PI * i as f64 / 96.0, dec_deg.to_radians()))
            .map(to_screen)
            .collect();
        painter.add(egui::Shape::line(points, grid));
    }
    // Meridians every 2 h of right ascension (the rim, RA 0h/24h, is the outline).
    for hour in (2..24).step_by(2) {
        let ra = (hour as f64 * 15.0).to_radians();
        let points = (0..=64)
            .map(|i| sky_to_map(projection, ra, -FRAC_PI_2 + PI * i as f64 / 64.0))
            .map(to_screen)
            .collect();
        painter.add(egui::Shape::line(points, grid));
        if hour % 6 == 0 {
            painter.text(
                to_screen(sky_to_map(projection, ra, 0.0)),
                egui::Align2::CENTER_TOP,
                format!("{hour}h"),
                egui::FontId::proportional(11.0),
                egui::Color32::from_gray(160),
            );
        }
    }
    let outline = (0..=128)
        .map(|i| {
            let t = 2.0 * PI * i as f64 / 128.0;
            to_screen([MAP_HALF_WIDTH * t.cos(), MAP_HALF_HEIGHT * t.sin()])
        })
        .collect();
    painter.add(egui::Shape::line(
        outline,
        egui::Stroke::new(1.5, egui::Color32::GRAY),
    ));
}

fn draw_energy_bar(
    painter: &egui::Painter,
    rect: egui::Rect,
    (lo, hi): (f64, f64),
    thresholds: &[Option<CutMark>],
) {
    let steps = 64;
    for i in 0..steps {
        let x0 = egui::lerp(rect.x_range(), i as f32 / steps as f32);
        let x1 = egui::lerp(rect.x_range(), (i + 1) as f32 / steps as f32);
        let bar = egui::Rect::from_x_y_ranges(x0..=x1, rect.y_range());
        painter.rect_filled(
            bar,
            0.0,
            viridis(0.15 + 0.85 * (i as f64 + 0.5) / steps as f64),
        );
    }
    let text_color = egui::Color32::from_gray(210);
    let font = egui::FontId::proportional(11.0);
    painter.text(
        rect.left_bottom() + egui::vec2(0.0, 2.0),
        egui::Align2::LEFT_TOP,
        format!("{lo:.2}"),
        font.clone(),
        text_color,
    );
    painter.text(
        rect.right_bottom() + egui::vec2(0.0, 2.0),
        egui::Align2::RIGHT_TOP,
        format!("{hi:.2}"),
        font.clone(),
        text_color,
    );
    painter.text(
        rect.center_bottom() + egui::vec2(0.0, 2.0),
        egui::Align2::CENTER_TOP,
        "log10(E/GeV)",
        font.clone(),
        text_color,
    );
    let span = (hi - lo).max(1e-12);
    for (index, ((_, label), threshold)) in MARKED_CUTS.iter().zip(thresholds).enumerate() {
        let Some((threshold, n_pass)) = *threshold else {
            continue;
        };
        // Alternate label heights so neighbouring cuts do not overwrite each other.
        let lift = if index % 2 == 0 { 4.0 } else { 16.0 };
        let x = egui::lerp(rect.x_range(), ((threshold - lo) / span) as f32);
        painter.line_segment(
            [
                egui::pos2(x, rect.top() - 4.0),
                egui::pos2(x, rect.bottom() + 4.0),
            ],
            egui::Stroke::new(2.0, egui::Color32::WHITE),
        );
        painter.text(
            egui::pos2(x, rect.top() - lift),
            egui::Align2::CENTER_BOTTOM,
            // The events passing, ties at the threshold included, as the two-point cuts count.
            format!(
                "{label} >= {threshold:.2} ({} events)",
                crate::twopoint::cuts::thousands(n_pass)
            ),
            font.clone(),
            text_color,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viridis_is_matplotlibs() {
        // matplotlib: (viridis([0, 0.5, 1]) * 255).round() → #440154, #21918c, #fde725.
        assert_eq!(viridis(0.0), egui::Color32::from_rgb(68, 1, 84));
        assert_eq!(viridis(1.0), egui::Color32::from_rgb(253, 231, 37));
        assert_eq!(viridis(0.5), egui::Color32::from_rgb(33, 145, 140));
        assert_eq!(viridis(f64::NAN), viridis(0.0));
        assert_eq!(viridis(2.0), viridis(1.0));
    }

    #[test]
    fn rasterise_puts_each_event_at_its_projected_pixel_higher_energy_on_top() {
        // Two events at the map centre (RA = π, Dec = 0) and one at the north pole.
        let events = EventList {
            ra: vec![PI, PI, 0.3],
            dec: vec![0.0, 0.0, FRAC_PI_2 - 1e-9],
            energy: vec![5.0, 2.0, 3.0],
            ..EventList::default()
        };
        let image = rasterise(&events, SkyProjection::HammerAitoff);
        let [w, h] = MAP_SIZE_PX;
        let lit: Vec<usize> = (0..w * h)
            .filter(|&i| image.pixels[i] != egui::Color32::TRANSPARENT)
            .collect();
        assert_eq!(lit.len(), 2);
        // Centre pixel: the brighter (5.0 → top of the range) wins over 2.0.
        assert_eq!(image.pixels[(h / 2) * w + w / 2], viridis(1.0));
        // Pole: top row, middle column, energy 3 → (3 − 2)/3 along the range, mapped into the
        // palette's visible part [0.15, 1].
        assert_eq!(image.pixels[w / 2], viridis(0.15 + 0.85 / 3.0));
    }
}
