//! The Halos section of the side panel: FoF settings, run/cancel with progress, overlay
//! switches, the sortable catalogue table and export.

use super::panel::{HaloRadius, HalosAction, HalosPanel, SortKey};
use crate::data::SpeciesKind;
use crate::halo::SeparationFrom;

/// The name of a separation choice in the settings.
fn separation_name(choice: SeparationFrom) -> &'static str {
    match choice {
        SeparationFrom::Auto => "auto",
        SeparationFrom::Mean => "mean of all",
        SeparationFrom::LowestMass => "lowest-mass",
    }
}

/// Rows of the table shown at once (the rest scroll).
const TABLE_HEIGHT: f32 = 220.0;
/// Column widths of the table, points.
const COLUMNS: [(&str, f32); 6] = [
    ("rank", 36.0),
    ("size", 52.0),
    ("mass", 70.0),
    ("x", 56.0),
    ("y", 56.0),
    ("z", 56.0),
];

impl HalosPanel {
    /// The whole section for the snapshot shown (`None`: nothing to link).
    pub fn section_ui(
        &mut self,
        ui: &mut egui::Ui,
        document: Option<&crate::app::files::documents::SnapshotDocument>,
    ) -> HalosAction {
        let Some(document) = document else {
            ui.label("Open a snapshot to find halos.");
            return HalosAction::None;
        };
        self.adopt_defaults(document);
        let running = self.running.is_some();
        ui.add_enabled_ui(!running, |ui| self.settings_ui(ui, document));
        let mut action = HalosAction::None;
        ui.horizontal(|ui| match &self.running {
            Some(run) => {
                let (fraction, text) = match &run.progress {
                    Some(p) if p.total > 0 => (
                        p.done as f32 / p.total as f32,
                        format!(
                            "{} {:.0} %",
                            p.stage,
                            100.0 * p.done as f32 / p.total as f32
                        ),
                    ),
                    Some(p) => (0.0, p.stage.clone()),
                    None => (0.0, "starting".to_owned()),
                };
                ui.add(
                    egui::ProgressBar::new(fraction)
                        .text(text)
                        .desired_width(170.0),
                );
                if ui.button("Cancel").clicked() {
                    run.handle.cancel();
                }
            }
            None => {
                let any = self.species.iter().any(|&on| on);
                if ui
                    .add_enabled(any, egui::Button::new("Find halos"))
                    .on_hover_text("Friends-of-friends on the snapshot shown")
                    .clicked()
                {
                    self.start(document);
                }
            }
        });
        // Wrapped: on one line these four widened the panel past its default width.
        ui.horizontal_wrapped(|ui| {
            ui.checkbox(&mut self.show_circles, "circles");
            ui.checkbox(&mut self.show_labels, "labels");
            ui.radio_value(&mut self.radius, HaloRadius::Rms, "rms radius");
            ui.radio_value(&mut self.radius, HaloRadius::Max, "max radius");
        });
        let Some(catalogue) = self.catalogue_of(document.id).cloned() else {
            if self.catalogue.is_some() {
                ui.label("The halos found belong to another snapshot.");
            }
            return action;
        };
        let result = &catalogue.result;
        let units = &document.snapshot.header.units;
        ui.label(format!(
            "mass in {}, x y z in {}",
            units.mass_label(),
            units.length_label(false)
        ));
        ui.label(format!(
            "{} halos of >= {} members; {} of {} particles in halos; linking length {:.4}",
            result.halos.len(),
            result.min_members,
            result.n_particles_in_groups(),
            result.n_particles,
            result.linking_length
        ));
        ui.label(format!(
            "linking length from: {}",
            result.linking_length_from.describe()
        ));
        ui.label(match result.frame {
            Some(frame) => format!(
                "periodic box of side {} from {} on every axis",
                frame.size, frame.lower
            ),
            None => "open boundaries (no periodic box)".to_owned(),
        });
        ui.horizontal(|ui| {
            let exporting = self.export_job.is_some();
            if ui
                .add_enabled(!exporting, egui::Button::new("Export catalogue..."))
                .on_hover_text("CSV or HDF5 (.csv, .hdf5)")
                .clicked()
            {
                action = HalosAction::Export;
            }
            if exporting {
                ui.spinner();
            }
        });
        if let Some(index) = self.selected
            && ui
                .button("Load region around halo")
                .on_hover_text(
                    "Open the particles within 3 radii of the selected halo from the file",
                )
                .clicked()
        {
            action = HalosAction::LoadRegion(index);
        }
        if let Some(index) = self.table_ui(ui, result) {
            action = HalosAction::FlyTo(index);
        }
        action
    }

    fn settings_ui(
        &mut self,
        ui: &mut egui::Ui,
        document: &crate::app::files::documents::SnapshotDocument,
    ) {
        egui::Grid::new("fof settings").show(ui, |ui| {
            let label = ui.label("b");
            ui.add(
                egui::DragValue::new(&mut self.b)
                    .range(0.01..=1.0)
                    .speed(0.005)
                    .max_decimals(3),
            )
            .on_hover_text("Linking length in particle separations (see \"separation\")")
            .labelled_by(label.id);
            ui.end_row();
            ui.label("separation");
            egui::ComboBox::from_id_salt("fof separation")
                .selected_text(separation_name(self.separation_from))
                .show_ui(ui, |ui| {
                    for choice in [
                        SeparationFrom::Auto,
                        SeparationFrom::Mean,
                        SeparationFrom::LowestMass,
                    ] {
                        ui.selectable_value(
                            &mut self.separation_from,
                            choice,
                            separation_name(choice),
                        );
                    }
                })
                .response
                .on_hover_text(
                    "Which particles' spacing b multiplies: auto takes the lowest-mass \
                     particles' on a zoom-in (a few discrete masses spanning more than a factor \
                     of two), else the mean separation of all particles",
                );
            ui.end_row();
            let label = ui.label("min members");
            ui.add(egui::DragValue::new(&mut self.min_members).range(1..=1_000_000))
                .labelled_by(label.id);
            ui.end_row();
            ui.label("species");
            ui.horizontal(|ui| {
                for (i, kind) in SpeciesKind::ALL.into_iter().enumerate() {
                    if document
                        .snapshot
                        .species(kind)
                        .is_some_and(|s| !s.is_empty())
                    {
                        ui.checkbox(&mut self.species[i], kind.name());
                    }
                }
            });
            ui.end_row();
            ui.checkbox(&mut self.periodic, "periodic box")
                .on_hover_text("Link across the faces of a periodic box of this side");
            let speed = 0.01 * self.box_size.max(1e-9);
            ui.add_enabled(
                self.periodic,
                egui::DragValue::new(&mut self.box_size)
                    .range(1e-9..=1e12)
                    .speed(speed)
                    .prefix("side "),
            );
            ui.end_row();
        });
        // Tipsy files record no box: without this a new user could not tell that a periodic
        // volume (test4.tbin, lambs, cube300) is linked as an isolated one.
        if self.periodic_proposed && self.periodic && self.box_size == 1.0 {
            ui.label(
                egui::RichText::new(
                    "periodic box of side 1 assumed: particles fill the unit box \
                     (untick for open boundaries)",
                )
                .small(),
            );
        } else if crate::halo::snapshot_box_size(&document.snapshot).is_none() {
            ui.label(
                egui::RichText::new(
                    "This file records no periodic box. For a cosmological volume tick \
                     \"periodic box\" (tipsy boxes are usually side 1, centred on 0).",
                )
                .small()
                .weak(),
            );
        }
    }

    /// The table in a horizontal scroll area: its columns are wider than the side panel's
    /// default width, and laid out directly they widened the panel (and shifted the viewport)
    /// the moment a catalogue arrived. Returns the catalogue index of a clicked row.
    fn table_ui(&mut self, ui: &mut egui::Ui, result: &crate::halo::FofResult) -> Option<usize> {
        egui::ScrollArea::horizontal()
            .id_salt("halo table columns")
            .show(ui, |ui| self.table_columns_ui(ui, result))
            .inner
    }

    /// Header and rows of the table.
    fn table_columns_ui(
        &mut self,
        ui: &mut egui::Ui,
        result: &crate::halo::FofResult,
    ) -> Option<usize> {
        let mut clicked = None;
        let mut sort = None;
        ui.horizontal(|ui| {
            for (i, (name, width)) in COLUMNS.into_iter().enumerate() {
                let key = match i {
                    0 | 1 => SortKey::Size,
                    2 => SortKey::Mass,
                    axis => SortKey::Position(axis - 3),
                };
                let arrow = if self.sort == key && i != 0 {
                    if self.descending { " v" } else { " ^" }
                } else {
                    ""
                };
                let button = egui::Button::new(format!("{name}{arrow}")).small();
                if ui
                    .add_sized([width, 18.0], button)
                    .on_hover_text("Sort by this column")
                    .clicked()
                {
                    sort = Some(key);
                }
            }
        });
        if let Some(key) = sort {
            self.sort_by(key);
        }
        let row_height = ui.text_style_height(&egui::TextStyle::Body) + 4.0;
        let order = self.table_order().to_vec();
        egui::ScrollArea::vertical()
            .id_salt("halo table")
            .max_height(TABLE_HEIGHT)
            .show_rows(ui, row_height, order.len(), |ui, rows| {
                for &index in &order[rows] {
                    let Some(halo) = result.halos.get(index) else {
                        continue;
                    };
                    let selected = self.selected == Some(index);
                    ui.horizontal(|ui| {
                        let cells = [
                            // The rank column of the exported CSV (0-based), so the two agree.
                            format!("{index}"),
                            halo.size.to_string(),
                            format!("{:.4e}", halo.mass),
                            format!("{:.4}", halo.com[0]),
                            format!("{:.4}", halo.com[1]),
                            format!("{:.4}", halo.com[2]),
                        ];
                        for (cell, (_, width)) in cells.into_iter().zip(COLUMNS) {
                            let label = egui::Button::selectable(selected, cell).small();
                            if ui.add_sized([width, row_height - 2.0], label).clicked() {
                                clicked = Some(index);
                            }
                        }
                    });
                }
            });
        clicked
    }
}
