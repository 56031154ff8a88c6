//! Where halo labels go. In a dense cluster (test4.tbin) dozens of circles overlap and labels at
//! one fixed corner of each circle printed on top of each other into an unreadable smear. Each
//! label now tries the four diagonal corners of its circle in turn and is left out when all four
//! would overlap a label already placed; the selected halo is placed first and always labelled,
//! then the others in catalogue order (largest first), up to a budget.

use egui::{Align2, Pos2, Rect, Vec2, vec2};

/// Width of one label character as a fraction of the font size: egui's default proportional
/// font has digits and `#` about 0.55–0.6 em wide; 0.62 keeps a little air between labels.
const CHAR_WIDTH_EM: f32 = 0.62;

/// Estimated size in points of `text` drawn at `size` points, with its one-point shadow.
pub fn label_extent(text: &str, size: f32) -> Vec2 {
    let shadow = (size / 12.0).max(1.0);
    vec2(
        CHAR_WIDTH_EM * size * text.chars().count() as f32 + shadow,
        size + shadow,
    )
}

/// Places labels so that no two overlap.
#[derive(Debug, Clone)]
pub struct LabelPlacer {
    placed_rects: Vec<Rect>,
    budget: usize,
}

impl LabelPlacer {
    /// A placer that places at most `budget` labels besides forced ones.
    pub fn new(budget: usize) -> Self {
        Self {
            placed_rects: Vec::new(),
            budget,
        }
    }

    /// Labels placed so far.
    pub fn placed(&self) -> &[Rect] {
        &self.placed_rects
    }

    /// Where to draw a label of `extent` for a circle at `centre` with `radius` (points): the
    /// anchor point and which corner of the text sits there, or `None` when the budget is spent
    /// or every corner collides. `force` (the selected halo) ignores both limits.
    pub fn place(
        &mut self,
        centre: Pos2,
        radius: f32,
        extent: Vec2,
        force: bool,
    ) -> Option<(Pos2, Align2)> {
        if !force && self.placed_rects.len() >= self.budget {
            return None;
        }
        // 45° points on the circle: upper right first (the old fixed place), then the others.
        let d = radius * std::f32::consts::FRAC_1_SQRT_2;
        let corners = [
            (vec2(d, -d), Align2::LEFT_BOTTOM),
            (vec2(-d, -d), Align2::RIGHT_BOTTOM),
            (vec2(d, d), Align2::LEFT_TOP),
            (vec2(-d, d), Align2::RIGHT_TOP),
        ];
        let mut fallback = None;
        for (offset, anchor) in corners {
            let pos = centre + offset;
            let rect = anchor.anchor_size(pos, extent);
            fallback.get_or_insert((pos, anchor, rect));
            if !self.placed_rects.iter().any(|r| r.intersects(rect)) {
                self.placed_rects.push(rect);
                return Some((pos, anchor));
            }
        }
        if force {
            let (pos, anchor, rect) = fallback?;
            self.placed_rects.push(rect);
            return Some((pos, anchor));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use egui::pos2;

    /// The point `rect`'s `anchor` corner sits on.
    fn anchor_point(rect: Rect, anchor: Align2) -> Pos2 {
        pos2(
            match anchor.x() {
                egui::Align::Min => rect.left(),
                egui::Align::Center => rect.center().x,
                egui::Align::Max => rect.right(),
            },
            match anchor.y() {
                egui::Align::Min => rect.top(),
                egui::Align::Center => rect.center().y,
                egui::Align::Max => rect.bottom(),
            },
        )
    }

    #[test]
    fn labels_of_one_pile_of_circles_take_four_corners_then_stop() {
        let mut placer = LabelPlacer::new(40);
        let extent = label_extent("#12", 11.0);
        let centre = pos2(200.0, 200.0);
        let mut anchors = Vec::new();
        for _ in 0..6 {
            if let Some((pos, anchor)) = placer.place(centre, 20.0, extent, false) {
                anchors.push((pos, anchor));
            }
        }
        // Six halos at one place: one label per corner, the last two left out.
        assert_eq!(anchors.len(), 4);
        let rects = placer.placed();
        for (i, a) in rects.iter().enumerate() {
            for b in &rects[i + 1..] {
                assert!(!a.intersects(*b), "{a:?} overlaps {b:?}");
            }
        }
        // Each label touches its circle's 45° point with the matching corner.
        let d = 20.0 * std::f32::consts::FRAC_1_SQRT_2;
        assert_eq!(anchors[0], (centre + vec2(d, -d), Align2::LEFT_BOTTOM));
        for ((pos, anchor), rect) in anchors.iter().zip(rects) {
            assert_eq!(anchor_point(*rect, *anchor), *pos);
        }
        // The selected halo is labelled even there.
        assert!(placer.place(centre, 20.0, extent, true).is_some());
        assert_eq!(placer.placed().len(), 5);
    }

    #[test]
    fn separate_halos_keep_the_upper_right_corner_and_the_budget_holds() {
        let mut placer = LabelPlacer::new(3);
        let extent = label_extent("#1", 11.0);
        let placed: Vec<_> = (0..5)
            .map(|i| placer.place(pos2(100.0 * i as f32, 50.0), 10.0, extent, false))
            .collect();
        let d = 10.0 * std::f32::consts::FRAC_1_SQRT_2;
        for (i, p) in placed.iter().take(3).enumerate() {
            assert_eq!(
                *p,
                Some((pos2(100.0 * i as f32 + d, 50.0 - d), Align2::LEFT_BOTTOM))
            );
        }
        assert_eq!(placed[3], None);
        assert_eq!(placed[4], None);
        assert_eq!(extent, vec2(0.62 * 11.0 * 2.0 + 1.0, 12.0));
    }
    #[test]
    fn a_dense_cluster_in_build_overlay_gets_four_labels_with_the_selected_one_among_them() {
        use crate::app::viewport::camera::OrbitCamera;
        use crate::app::viewport::overlay::{
            HALO_COLOUR, HaloMarker, OverlayContent, OverlayItem, OverlayOptions, SELECTED_COLOUR,
            build_overlay,
        };
        let rect = Rect::from_min_max(pos2(0.0, 0.0), pos2(400.0, 300.0));
        // 30 halos within 1e-3 of the look-at point (as in test4's cluster), the last selected.
        let halos: Vec<HaloMarker> = (0..30)
            .map(|index| HaloMarker {
                index,
                centre_world: [1e-4 * index as f64 / 30.0, 0.0, 0.0],
                radius_world: 0.05,
            })
            .collect();
        let options = OverlayOptions {
            halos: true,
            labels: true,
            color_bar: false,
            scale_bar: false,
        };
        let content = OverlayContent {
            halos: &halos,
            selected: Some(29),
            legend: None,
            length_unit: "",
        };
        let overlay = build_overlay(rect, &OrbitCamera::default(), content, options, 1.0);
        assert_eq!(overlay.placed.len(), 30, "every circle is drawn");
        let labels: Vec<(&str, egui::Color32)> = overlay
            .items
            .iter()
            .filter_map(|item| match item {
                OverlayItem::Text { text, colour, .. }
                    if *colour == HALO_COLOUR || *colour == SELECTED_COLOUR =>
                {
                    Some((text.as_str(), *colour))
                }
                _ => None,
            })
            .collect();
        // The selected halo first, then the three largest others.
        assert_eq!(
            labels,
            vec![
                ("#29", SELECTED_COLOUR),
                ("#0", HALO_COLOUR),
                ("#1", HALO_COLOUR),
                ("#2", HALO_COLOUR)
            ]
        );
    }
}
