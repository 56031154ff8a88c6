//! The left side panel: File, Render (with camera), Halos, Events and Movie sections.

use super::haloscope_app::HaloscopeApp;
use super::session::CentralView;
use super::twopoint::sky_projection::SkyProjection;
use super::viewport::camera::{Bookmark, Projection};
use crate::data::SpeciesKind;

/// Colours per palette preview swatch.
const SWATCH_STOPS: usize = 24;

/// Every palette the renderer knows with a few colours for its preview (made once).
fn palette_swatches() -> &'static [(String, Vec<egui::Color32>)] {
    static SWATCHES: std::sync::OnceLock<Vec<(String, Vec<egui::Color32>)>> =
        std::sync::OnceLock::new();
    SWATCHES.get_or_init(|| {
        crate::render::palette::palette_names()
            .into_iter()
            .filter_map(|name| {
                let palette = crate::render::Palette::by_name(name).ok()?;
                let colours = (0..SWATCH_STOPS)
                    .map(|i| {
                        let x = (i as f32 + 0.5) / SWATCH_STOPS as f32;
                        let [r, g, b] = palette.sample_rgb8(x);
                        egui::Color32::from_rgb(r, g, b)
                    })
                    .collect();
                Some((name.to_owned(), colours))
            })
            .collect()
    })
}

/// A small horizontal strip of `colours`.
fn swatch_ui(ui: &mut egui::Ui, colours: &[egui::Color32]) {
    let (rect, _) = ui.allocate_exact_size(egui::vec2(60.0, 12.0), egui::Sense::hover());
    let step = rect.width() / colours.len().max(1) as f32;
    for (i, colour) in colours.iter().enumerate() {
        let x = rect.left() + step * i as f32;
        let cell = egui::Rect::from_min_max(
            egui::pos2(x, rect.top()),
            egui::pos2(x + step + 0.5, rect.bottom()),
        );
        ui.painter().rect_filled(cell, 0.0, *colour);
    }
}

/// A collapsible section whose open state lives in `open` (saved with the session).
fn section_ui(
    ui: &mut egui::Ui,
    title: &str,
    open: &mut bool,
    body: impl FnOnce(&mut egui::Ui),
) -> egui::Response {
    let response = egui::CollapsingHeader::new(egui::RichText::new(title).strong())
        .id_salt(title)
        .open(Some(*open))
        .show(ui, body);
    if response.header_response.clicked() {
        *open = !*open;
    }
    response.header_response
}

/// What a click on an open file's row asks for.
enum RowClick {
    None,
    Show,
    Close,
}

/// One open file: its close button, then its name, cut with "…" to the panel's width (long
/// names such as `lambs.00200_subsamp_30K (30000 particles)` widened the side panel and moved
/// the viewport); the whole name shows on hover.
fn document_row_ui(ui: &mut egui::Ui, shown: bool, text: String) -> RowClick {
    let mut click = RowClick::None;
    ui.horizontal(|ui| {
        if ui.small_button("x").on_hover_text("Close").clicked() {
            click = RowClick::Close;
        }
        let name = egui::Button::selectable(shown, text.as_str()).truncate();
        if ui.add(name).on_hover_text(text.as_str()).clicked() {
            click = RowClick::Show;
        }
    });
    click
}

impl HaloscopeApp {
    /// Every section of the side panel.
    pub(super) fn side_panel_ui(&mut self, ui: &mut egui::Ui) {
        let mut panels = self.panels;
        section_ui(ui, "File", &mut panels.file, |ui| self.file_section_ui(ui));
        section_ui(ui, "Render", &mut panels.render, |ui| {
            self.render_section_ui(ui)
        });
        section_ui(ui, "Halos", &mut panels.halos, |ui| {
            self.halos_section_ui(ui)
        });
        section_ui(ui, "Events", &mut panels.events, |ui| {
            self.events_section_ui(ui)
        });
        let movie = section_ui(ui, "Movie", &mut panels.movie, |ui| {
            self.movie_section_ui(ui)
        });
        // Opened from the menu: bring it into view, it is the last section.
        if std::mem::take(&mut panels.scroll_to_movie) {
            movie.scroll_to_me(Some(egui::Align::TOP));
        }
        self.panels = panels;
    }

    fn file_section_ui(&mut self, ui: &mut egui::Ui) {
        if ui
            .button("Open…")
            .on_hover_text("Snapshots (tipsy, Gadget HDF5) or event lists")
            .clicked()
        {
            self.open_dialog();
        }
        for load in &self.documents.pending {
            ui.horizontal(|ui| {
                let (fraction, text) = match &load.progress {
                    Some(p) if p.total > 0 => {
                        let f = p.done as f32 / p.total as f32;
                        (
                            f,
                            format!("{} {}: {:.0} %", load.source.label(), p.stage, 100.0 * f),
                        )
                    }
                    Some(p) => (0.0, format!("{} {}", load.source.label(), p.stage)),
                    None => (0.0, format!("{}: starting", load.source.label())),
                };
                ui.add(
                    egui::ProgressBar::new(fraction)
                        .text(text)
                        .desired_width(200.0),
                );
                if ui.button("Cancel").clicked() {
                    load.handle.cancel();
                }
            });
        }
        ui.label("Snapshots");
        let mut close = None;
        for (index, document) in self.documents.snapshots.iter().enumerate() {
            let shown = self.documents.shown_snapshot == Some(index);
            let text = format!(
                "{} ({} particles)",
                document.name,
                document.snapshot.n_particles()
            );
            match document_row_ui(ui, shown, text) {
                RowClick::Show => {
                    self.documents.shown_snapshot = Some(index);
                    self.central = CentralView::Viewport;
                }
                RowClick::Close => close = Some(index),
                RowClick::None => {}
            }
        }
        if let Some(index) = close {
            self.close_snapshot_document(index);
        }
        if let Some(document) = self.documents.shown_snapshot() {
            let header = &document.snapshot.header;
            let mut facts = Vec::new();
            for species in &document.snapshot.species {
                facts.push(format!("{} {}", species.len(), species.kind));
            }
            if let Some(z) = header.redshift {
                facts.push(format!("z = {z:.3}"));
            }
            if let Some(box_size) = header.box_size {
                facts.push(format!(
                    "box {box_size}{}",
                    if header.periodic { " (periodic)" } else { "" }
                ));
            }
            ui.small(facts.join(" · "));
        }
        ui.label("Event lists");
        let mut close = None;
        for (index, document) in self.documents.events.iter().enumerate() {
            let shown = self.documents.shown_events == Some(index);
            let text = format!("{} ({} events)", document.name, document.events.len());
            match document_row_ui(ui, shown, text) {
                RowClick::Show => {
                    self.documents.shown_events = Some(index);
                    self.central = CentralView::SkyMap;
                }
                RowClick::Close => close = Some(index),
                RowClick::None => {}
            }
        }
        if let Some(index) = close {
            self.close_events_document(index);
        }
    }

    fn render_section_ui(&mut self, ui: &mut egui::Ui) {
        let present: Vec<(SpeciesKind, Vec<String>)> = self
            .documents
            .shown_snapshot()
            .map(|d| {
                d.snapshot
                    .species
                    .iter()
                    .map(|s| (s.kind, s.field_names()))
                    .collect()
            })
            .unwrap_or_default();
        if self.documents.shown_snapshot().is_none() {
            ui.label("No snapshot shown.");
        } else if present.is_empty() {
            ui.label("This snapshot has no particles.");
        }
        for (kind, fields) in present {
            let Some(style) = self.style.species_mut(kind) else {
                continue;
            };
            ui.checkbox(&mut style.enabled, format!("{kind}"));
            if !style.enabled {
                continue;
            }
            ui.indent(kind.name(), |ui| {
                field_combo_ui(
                    ui,
                    (kind, "intensity"),
                    "Intensity",
                    &mut style.intensity_field,
                    &fields,
                    "uniform",
                );
                let has_intensity = style.intensity_field.is_some();
                ui.add_enabled(
                    has_intensity,
                    egui::Checkbox::new(&mut style.intensity_log, "log intensity"),
                );
                field_combo_ui(
                    ui,
                    (kind, "colour"),
                    "Colour",
                    &mut style.color_field,
                    &fields,
                    "= intensity",
                );
                let has_colour = has_intensity || style.color_field.is_some();
                ui.add_enabled(
                    has_colour,
                    egui::Checkbox::new(&mut style.color_log, "log colour"),
                );
                if !has_colour {
                    ui.small("No colour field: drawn white.");
                }
                ui.add_enabled_ui(has_colour, |ui| {
                    ui.horizontal(|ui| {
                        let name_label = ui.label("Palette");
                        egui::ComboBox::from_id_salt((kind, "palette"))
                            .selected_text(style.palette.clone())
                            .show_ui(ui, |ui| {
                                for (name, colours) in palette_swatches() {
                                    ui.horizontal(|ui| {
                                        swatch_ui(ui, colours);
                                        ui.selectable_value(&mut style.palette, name.clone(), name);
                                    });
                                }
                            })
                            .response
                            .labelled_by(name_label.id);
                        if let Some((_, colours)) =
                            palette_swatches().iter().find(|(n, _)| *n == style.palette)
                        {
                            swatch_ui(ui, colours);
                        }
                    })
                });
                let mut auto = style.color_range.is_none();
                ui.horizontal(|ui| {
                    ui.checkbox(&mut auto, "auto range");
                    if auto {
                        style.color_range = None;
                    } else {
                        let range = style.color_range.get_or_insert([0.0, 1.0]);
                        ui.add(
                            egui::DragValue::new(&mut range[0])
                                .speed(0.01)
                                .prefix("min "),
                        );
                        ui.add(
                            egui::DragValue::new(&mut range[1])
                                .speed(0.01)
                                .prefix("max "),
                        );
                    }
                });
                ui.add(
                    egui::Slider::new(&mut style.brightness, 0.01..=100.0)
                        .logarithmic(true)
                        .text("brightness"),
                );
                ui.add(
                    egui::Slider::new(&mut style.size_factor, 0.1..=10.0)
                        .logarithmic(true)
                        .text("size factor"),
                );
                ui.horizontal(|ui| {
                    let mut own = style.kernel_support.is_some();
                    ui.checkbox(&mut own, "kernel support").on_hover_text(
                        "Override the file's SPH convention: support radius = factor × h \
                         (tipsy 2, Gadget/AREPO 1, SWIFT cubic spline 1.83)",
                    );
                    style.kernel_support = own.then(|| {
                        let mut k = style.kernel_support.unwrap_or(2.0);
                        ui.add(egui::Slider::new(&mut k, 0.5..=3.0).suffix("·h"));
                        k
                    });
                });
            });
        }
        ui.separator();
        ui.add(egui::Slider::new(&mut self.style.min_radius_px, 0.0..=4.0).text("min radius px"));
        ui.add(egui::Slider::new(&mut self.style.resolution_scale, 0.25..=2.0).text("resolution"));
        ui.checkbox(&mut self.style.auto_exposure, "auto exposure");
        ui.add(
            egui::Slider::new(&mut self.style.exposure, 0.01..=100.0)
                .logarithmic(true)
                .text("exposure"),
        );
        ui.horizontal(|ui| {
            ui.checkbox(&mut self.style.show_color_bar, "colour bar");
            ui.checkbox(&mut self.style.show_scale_bar, "scale bar");
        });
        ui.separator();
        self.camera_ui(ui);
    }

    fn camera_ui(&mut self, ui: &mut egui::Ui) {
        ui.strong("Camera");
        let Some(document) = self.documents.shown_snapshot_mut() else {
            ui.label("No snapshot shown.");
            return;
        };
        let camera = &mut document.camera;
        let speed = (camera.distance() * 0.01).max(1e-6);
        for (label, value) in [
            ("eye", &mut camera.eye_world),
            ("look at", &mut camera.look_at_world),
            ("up", &mut camera.up_world),
        ] {
            ui.horizontal(|ui| {
                let name = ui.label(label);
                for (axis, v) in ["x ", "y ", "z "].into_iter().zip(value.iter_mut()) {
                    ui.add(
                        egui::DragValue::new(v)
                            .speed(speed)
                            .max_decimals(4)
                            .prefix(axis),
                    )
                    .labelled_by(name.id);
                }
            });
        }
        ui.add(egui::Slider::new(&mut camera.fov_y_deg, 5.0..=120.0).text("fov °"));
        ui.horizontal(|ui| {
            ui.radio_value(
                &mut camera.projection,
                Projection::Perspective,
                "perspective",
            );
            ui.radio_value(
                &mut camera.projection,
                Projection::Orthographic,
                "orthographic",
            );
        });
        let camera = *camera;
        ui.horizontal(|ui| {
            ui.add(
                egui::TextEdit::singleline(&mut self.bookmark_name)
                    .hint_text("view name")
                    .desired_width(120.0),
            );
            if ui.button("Bookmark").clicked() {
                let name = if self.bookmark_name.trim().is_empty() {
                    format!("view {}", self.bookmarks.len() + 1)
                } else {
                    self.bookmark_name.trim().to_owned()
                };
                self.bookmarks.push(Bookmark { name, camera });
                self.bookmark_name.clear();
            }
        });
        let mut remove = None;
        let mut go_to = None;
        for (index, bookmark) in self.bookmarks.iter().enumerate() {
            ui.horizontal(|ui| {
                if ui.button(&bookmark.name).clicked() {
                    go_to = Some(bookmark.camera);
                }
                if ui.small_button("x").clicked() {
                    remove = Some(index);
                }
            });
        }
        if let Some(camera) = go_to
            && let Some(document) = self.documents.shown_snapshot_mut()
        {
            document.camera = camera;
        }
        if let Some(index) = remove {
            self.bookmarks.remove(index);
        }
    }

    fn halos_section_ui(&mut self, ui: &mut egui::Ui) {
        let document = self.documents.shown_snapshot().cloned();
        let action = self.halos.section_ui(ui, document.as_ref());
        self.halos_action(action);
    }

    fn events_section_ui(&mut self, ui: &mut egui::Ui) {
        if ui.button("Show sky map").clicked() {
            self.central = CentralView::SkyMap;
        }
        ui.horizontal(|ui| {
            for projection in [SkyProjection::HammerAitoff, SkyProjection::Mollweide] {
                ui.radio_value(&mut self.sky_projection, projection, projection.label());
            }
        });
        if let Some(document) = self.documents.shown_events() {
            let events = &document.events;
            ui.label(format!("{}: {} events", document.name, events.len()));
            if let Some((lo, hi)) = super::twopoint::sky_map::energy_range(&events.energy) {
                ui.label(format!("log10(E/GeV) from {lo:.2} to {hi:.2}"));
            }
        } else {
            ui.label("No event list open.");
        }
        if self.documents.event_files_open() >= 2
            && ui
                .button("Combine open lists")
                .on_hover_text(
                    "One list with every open event list in order, e.g. the IC86-2011 \
                     upgoing and downgoing files, for the sky map and the two-point analysis",
                )
                .clicked()
        {
            self.documents.combine_event_lists();
        }
        ui.separator();
        let document = self.documents.shown_events().cloned();
        if self.twopoint.controls_ui(ui, document.as_ref()) {
            self.central = CentralView::TwoPoint;
        }
    }
}

/// A combo box choosing one of `fields` or none (shown as `none_label`).
fn field_combo_ui(
    ui: &mut egui::Ui,
    id: (SpeciesKind, &str),
    label: &str,
    value: &mut Option<String>,
    fields: &[String],
    none_label: &str,
) {
    ui.horizontal(|ui| {
        let name_label = ui.label(label);
        egui::ComboBox::from_id_salt(id)
            .selected_text(value.clone().unwrap_or_else(|| none_label.to_owned()))
            .show_ui(ui, |ui| {
                ui.selectable_value(value, None, none_label);
                for name in fields {
                    ui.selectable_value(value, Some(name.clone()), name);
                }
            })
            .response
            .labelled_by(name_label.id);
    });
}
