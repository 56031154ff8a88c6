//! Drawing the two-point analysis: controls and counts in the Events panel, and the live plots
//! (TS and p-value versus angle per cut, the background histogram of one bin with its fit and the
//! observed value, the 4×20 significance map) in the central "Two-point" view.

use super::panel::{TwoPointPanel, TwoPointState};
use crate::app::files::documents::EventsDocument;
use crate::twopoint::{
    AngleBins, BinSignificance, FitKind, Scramble, TwoPointConfig, edges_on_grid_note,
    scramble_note,
};
use egui_plot::{Bar, BarChart, Legend, Line, Plot, PlotPoints, VLine};
use statrs::distribution::{Continuous, Gamma, Normal};

/// One colour per energy cut.
const CUT_COLOURS: [egui::Color32; 4] = [
    egui::Color32::from_rgb(120, 170, 255),
    egui::Color32::from_rgb(110, 220, 130),
    egui::Color32::from_rgb(255, 190, 80),
    egui::Color32::from_rgb(255, 100, 110),
];
/// Smallest fitted p-value plotted.
const P_FLOOR: f64 = 1e-20;
/// Significance at the top of the map's colour scale, σ.
const MAP_MAX_SIGMA: f64 = 4.0;

fn cut_colour(cut: usize) -> egui::Color32 {
    CUT_COLOURS[cut % CUT_COLOURS.len()]
}

/// The bins whose observed counts the Events panel lists: the first, one in the middle, the last.
pub fn listed_bins(n_bins: usize) -> Vec<usize> {
    let mut bins = vec![0, n_bins / 4, n_bins.saturating_sub(1)];
    bins.dedup();
    bins.retain(|&b| b < n_bins);
    bins
}

impl TwoPointPanel {
    /// Trials, seed, start/stop, progress and the observed counts. Returns true when the user
    /// asked to see the plots.
    pub fn controls_ui(&mut self, ui: &mut egui::Ui, document: Option<&EventsDocument>) -> bool {
        let mut show_plots = false;
        ui.strong("Two-point analysis");
        let running = self.is_running();
        ui.add_enabled_ui(!running, |ui| {
            egui::Grid::new("two-point settings").show(ui, |ui| {
                let label = ui.label("trials");
                ui.add(egui::DragValue::new(&mut self.trials).range(0..=1_000_000))
                    .labelled_by(label.id);
                ui.end_row();
                let label = ui.label("seed");
                ui.add(egui::DragValue::new(&mut self.seed))
                    .labelled_by(label.id);
                ui.end_row();
            });
        });
        let Some(document) = document else {
            ui.label("Open an event list to run the analysis.");
            return false;
        };
        self.scramble_ui(ui, document, running);
        ui.horizontal(|ui| {
            if running {
                if ui.button("Stop").clicked() {
                    self.stop();
                }
            } else {
                let text = if self.resumable(document.id) {
                    "Continue"
                } else {
                    "Start"
                };
                if ui
                    .button(text)
                    .on_hover_text("Count pairs, then run scrambled trials up to the number set")
                    .clicked()
                {
                    self.start(document);
                    show_plots = true;
                }
                if self.state.is_some() && ui.button("Reset").clicked() {
                    self.reset();
                }
            }
            if ui.button("Show plots").clicked() {
                show_plots = true;
            }
        });
        if let Some(run) = &self.run {
            let (fraction, text) = match &run.progress {
                Some(p) if p.total > 0 => (
                    p.done as f32 / p.total as f32,
                    format!("{} {}/{}", p.stage, p.done, p.total),
                ),
                Some(p) => (0.0, p.stage.clone()),
                None => (0.0, "starting".to_owned()),
            };
            ui.add(egui::ProgressBar::new(fraction).text(text));
        }
        if let Some(state) = self.state_of(document.id) {
            counts_ui(ui, state);
        }
        show_plots
    }

    /// The live plots for the event list `document_id`.
    pub fn plots_ui(&mut self, ui: &mut egui::Ui, document_id: Option<u64>) {
        let Some(state) = document_id.and_then(|id| self.state_of(id)).cloned() else {
            ui.centered_and_justified(|ui| {
                ui.label("No two-point results yet: press Start in the Events panel.");
            });
            return;
        };
        summary_line_ui(ui, &state);
        let height = ((ui.available_height() - 20.0) / 2.0).max(120.0);
        let width = (ui.available_width() / 2.0 - 8.0).max(160.0);
        ui.horizontal(|ui| {
            ui.vertical(|ui| {
                ui.set_width(width);
                ts_plot_ui(ui, &state, height - 18.0);
            });
            ui.vertical(|ui| {
                ui.set_width(width);
                p_plot_ui(ui, &state, height - 18.0);
            });
        });
        ui.horizontal(|ui| {
            ui.vertical(|ui| {
                ui.set_width(width);
                self.histogram_ui(ui, &state, height - 18.0);
            });
            ui.vertical(|ui| {
                ui.set_width(width);
                let chosen = (
                    self.chosen_cut.min(state.cut_names.len().saturating_sub(1)),
                    self.chosen_bin.min(state.bins_deg.len().saturating_sub(1)),
                );
                if let Some((cut, bin)) = significance_map_ui(ui, &state, chosen, height - 18.0) {
                    self.chosen_cut = cut;
                    self.chosen_bin = bin;
                }
            });
        });
    }

    fn histogram_ui(&self, ui: &mut egui::Ui, state: &TwoPointState, height: f32) {
        let (cut, bin) = (
            self.chosen_cut.min(state.cut_names.len().saturating_sub(1)),
            self.chosen_bin.min(state.bins_deg.len().saturating_sub(1)),
        );
        ui.label(format!(
            "Background of {} within {:.2} deg: {} (click the map to choose)",
            state.cut_names.get(cut).map_or("", String::as_str),
            state.bins_deg.get(bin).copied().unwrap_or(0.0),
            state.summary.significance(cut, bin).text()
        ));
        let background = state.analysis.background_histogram(cut, bin);
        let stats = state.summary.get(cut, bin).clone();
        let observed = stats.observed as f64;
        let (lo, hi) = background.range().map_or((observed, observed), |range| {
            (
                observed.min(*range.start() as f64),
                observed.max(*range.end() as f64),
            )
        });
        // Integer-aligned bins of at least one count, about 40 of them.
        let width = ((hi - lo + 1.0) / 40.0).ceil().max(1.0);
        let n_bins = ((hi - lo + 1.0) / width).ceil() as usize;
        let mut heights = vec![0.0; n_bins.max(1)];
        for (v, multiplicity) in background.iter() {
            let i = (((v as f64 - lo) / width) as usize).min(heights.len() - 1);
            heights[i] += multiplicity as f64;
        }
        let bars: Vec<Bar> = heights
            .iter()
            .enumerate()
            .map(|(i, &h)| Bar::new(lo + (i as f64 + 0.5) * width - 0.5, h).width(width))
            .collect();
        let trials = background.total() as f64;
        let fit_curve: Option<Vec<[f64; 2]>> = stats.fit.map(|fit| {
            (0..=200)
                .map(|k| {
                    let x = lo - 0.5 + (hi - lo + 1.0) * k as f64 / 200.0;
                    let density = match fit {
                        FitKind::Gamma { shape, scale } => Gamma::new(shape, 1.0 / scale)
                            .map(|g| if x > 0.0 { g.pdf(x) } else { 0.0 })
                            .unwrap_or(0.0),
                        FitKind::Gaussian { mean, sigma } => {
                            Normal::new(mean, sigma).map(|g| g.pdf(x)).unwrap_or(0.0)
                        }
                    };
                    [x, density * trials * width]
                })
                .collect()
        });
        Plot::new(("background", cut, bin))
            .height(height)
            .legend(Legend::default())
            .x_axis_label("pairs")
            .y_axis_label("trials")
            .show(ui, |plot| {
                plot.bar_chart(BarChart::new("scrambled trials", bars).color(cut_colour(cut)));
                if let Some(curve) = fit_curve {
                    let name = match stats.fit {
                        Some(FitKind::Gamma { .. }) => "gamma fit",
                        _ => "Gaussian fit",
                    };
                    plot.line(
                        Line::new(name, PlotPoints::from(curve))
                            .color(egui::Color32::WHITE)
                            .width(1.5),
                    );
                }
                plot.vline(
                    VLine::new("observed", observed)
                        .color(egui::Color32::from_rgb(255, 80, 80))
                        .width(2.0),
                );
            });
    }
}

impl TwoPointPanel {
    /// The coordinate grid, how trials draw RA, and the choice to scramble on the continuum.
    fn scramble_ui(&mut self, ui: &mut egui::Ui, document: &EventsDocument, running: bool) {
        let grid = self.coordinate_grid_of(document);
        let choice = self.scramble_choice();
        // Auto and Continuous never fail to choose.
        let scramble = Scramble::choose(choice, grid).unwrap_or(Scramble::Continuous);
        ui.label(scramble_note(grid, scramble));
        if grid.is_some() {
            ui.add_enabled(
                !running,
                egui::Checkbox::new(
                    &mut self.scramble_continuous,
                    "scramble RA on the continuum",
                ),
            )
            .on_hover_text(
                "Rounded coordinates put pairs exactly on multiples of the grid; continuous \
                 scrambles lack those ties and show a false excess at bin edges on the grid",
            );
        }
        // The bins of the results shown, else those a run would use.
        let edges_deg = match self.state_of(document.id) {
            Some(state) => state.bins_deg.clone(),
            None => {
                let config = TwoPointConfig::default();
                AngleBins::new(config.bin_step_deg, config.bin_count)
                    .map(|bins| bins.edges_deg)
                    .unwrap_or_default()
            }
        };
        if let Some(note) = edges_on_grid_note(&edges_deg, grid) {
            ui.label(note);
        }
    }
}

fn counts_ui(ui: &mut egui::Ui, state: &TwoPointState) {
    let bins = listed_bins(state.bins_deg.len());
    ui.label("Observed pairs (cumulative):");
    egui::Grid::new("observed counts")
        .striped(true)
        .show(ui, |ui| {
            ui.label("cut");
            ui.label("events");
            for &bin in &bins {
                ui.label(format!("<= {:.2} deg", state.bins_deg[bin]));
            }
            ui.end_row();
            for (cut, name) in state.cut_names.iter().enumerate() {
                ui.label(name);
                ui.label(state.cut_passing[cut].to_string());
                for &bin in &bins {
                    ui.label(state.analysis.observed.get(cut, bin).to_string());
                }
                ui.end_row();
            }
        });
    for cut in &state.cuts {
        ui.small(cut.description());
    }
}

fn summary_line_ui(ui: &mut egui::Ui, state: &TwoPointState) {
    let summary = &state.summary;
    ui.horizontal_wrapped(|ui| {
        ui.strong(format!("{} trials", summary.trials));
        ui.separator();
        ui.label(format!(
            "{:.1} trials/s on {}",
            state.trials_per_second, state.backend
        ));
        ui.separator();
        ui.label(state.post_trial.text());
        if let Some((cut, bin)) = summary.most_significant() {
            ui.separator();
            ui.label(format!(
                "best bin: {} <= {:.2} deg, {}",
                state.cut_names[cut],
                state.bins_deg[bin],
                summary.significance(cut, bin).text()
            ));
        }
    });
}

fn ts_plot_ui(ui: &mut egui::Ui, state: &TwoPointState, height: f32) {
    ui.label("TS = observed / mean background");
    Plot::new("two-point TS")
        .height(height)
        .legend(Legend::default())
        .x_axis_label("angle (deg)")
        .y_axis_label("TS")
        .show(ui, |plot| {
            for (cut, name) in state.cut_names.iter().enumerate() {
                let points: Vec<[f64; 2]> = state
                    .bins_deg
                    .iter()
                    .enumerate()
                    .map(|(bin, &deg)| [deg, state.summary.get(cut, bin).ts])
                    .filter(|p| p[1].is_finite())
                    .collect();
                plot.line(
                    Line::new(name.as_str(), PlotPoints::from(points)).color(cut_colour(cut)),
                );
            }
        });
}

fn p_plot_ui(ui: &mut egui::Ui, state: &TwoPointState, height: f32) {
    ui.label(format!(
        "p-value (log10; solid: the trials, at 1/{} only a bound; dashed: the fitted \
         background, an extrapolation, floored at 1e-20)",
        state.summary.trials + 1
    ));
    Plot::new("two-point p")
        .height(height)
        .legend(Legend::default())
        .x_axis_label("angle (deg)")
        .y_axis_label("log10 p")
        .include_y(0.0)
        .show(ui, |plot| {
            for (cut, name) in state.cut_names.iter().enumerate() {
                let trials: Vec<[f64; 2]> = state
                    .bins_deg
                    .iter()
                    .enumerate()
                    .map(|(bin, &deg)| [deg, state.summary.get(cut, bin).p_value.log10()])
                    .filter(|p| p[1].is_finite())
                    .collect();
                plot.line(
                    Line::new(name.as_str(), PlotPoints::from(trials)).color(cut_colour(cut)),
                );
                let fitted: Vec<[f64; 2]> = state
                    .bins_deg
                    .iter()
                    .enumerate()
                    .filter_map(|(bin, &deg)| {
                        let p = state.summary.get(cut, bin).p_value_fit?;
                        // Fits reach absurdly small p; the floor keeps the trials' scale visible.
                        Some([deg, p.max(P_FLOOR).log10()])
                    })
                    .collect();
                plot.line(
                    Line::new(name.as_str(), PlotPoints::from(fitted))
                        .color(cut_colour(cut))
                        .style(egui_plot::LineStyle::dashed_dense()),
                );
            }
        });
}

/// The significance of every (cut, bin) as coloured cells; returns the cell clicked.
fn significance_map_ui(
    ui: &mut egui::Ui,
    state: &TwoPointState,
    chosen: (usize, usize),
    height: f32,
) -> Option<(usize, usize)> {
    ui.label(format!(
        "Significance from the trials (sigma, 0 to {MAP_MAX_SIGMA:.0}+; '>': beyond all {} \
         trials, p < 1/{})",
        state.summary.trials,
        state.summary.trials + 1
    ));
    let n_cuts = state.cut_names.len();
    let n_bins = state.bins_deg.len();
    let (rect, response) = ui.allocate_exact_size(
        egui::vec2(ui.available_width(), height.max(60.0)),
        egui::Sense::click(),
    );
    let painter = ui.painter_at(rect);
    let label_width = 52.0;
    let axis_height = 16.0;
    let grid = egui::Rect::from_min_max(
        rect.min + egui::vec2(label_width, 0.0),
        rect.max - egui::vec2(0.0, axis_height),
    );
    let cell = egui::vec2(
        grid.width() / n_bins.max(1) as f32,
        grid.height() / n_cuts.max(1) as f32,
    );
    let text_colour = ui.visuals().text_color();
    for cut in 0..n_cuts {
        let y = grid.top() + cell.y * cut as f32;
        painter.text(
            egui::pos2(rect.left() + 2.0, y + 0.5 * cell.y),
            egui::Align2::LEFT_CENTER,
            &state.cut_names[cut],
            egui::FontId::proportional(12.0),
            text_colour,
        );
        for bin in 0..n_bins {
            let significance = state.summary.significance(cut, bin);
            let t = map_colour_position(&significance);
            let cell_rect =
                egui::Rect::from_min_size(egui::pos2(grid.left() + cell.x * bin as f32, y), cell)
                    .shrink(0.5);
            painter.rect_filled(cell_rect, 0.0, super::sky_map::viridis(t));
            // Dark text on the bright end of viridis, light on the dark end.
            let ink = if t > 0.6 {
                egui::Color32::BLACK
            } else {
                egui::Color32::WHITE
            };
            painter.text(
                cell_rect.center(),
                egui::Align2::CENTER_CENTER,
                significance.cell_text(),
                egui::FontId::proportional(10.0),
                ink,
            );
            if (cut, bin) == chosen {
                painter.rect_stroke(
                    cell_rect,
                    0.0,
                    egui::Stroke::new(2.0, egui::Color32::from_rgb(255, 80, 80)),
                    egui::StrokeKind::Inside,
                );
            }
        }
    }
    for bin in (0..n_bins).step_by(4.max(n_bins / 5)) {
        painter.text(
            egui::pos2(
                grid.left() + cell.x * (bin as f32 + 0.5),
                grid.bottom() + 2.0,
            ),
            egui::Align2::CENTER_TOP,
            format!("{:.2}", state.bins_deg[bin]),
            egui::FontId::proportional(11.0),
            text_colour,
        );
    }
    let describe = |(cut, bin): (usize, usize)| {
        let stats = state.summary.get(cut, bin);
        format!(
            "{} <= {:.2} deg: observed {}, background {:.1}, {}",
            state.cut_names[cut],
            state.bins_deg[bin],
            stats.observed,
            stats.background_mean,
            state.summary.significance(cut, bin).text()
        )
    };
    // Screen readers (and tests) read the chosen cell as the map's label.
    let chosen_text = format!("significance map, chosen {}", describe(chosen));
    response
        .widget_info(|| egui::WidgetInfo::labeled(egui::Role::Image, true, chosen_text.clone()));
    let pointer = response.hover_pos()?;
    if !grid.contains(pointer) {
        return None;
    }
    let bin = (((pointer.x - grid.left()) / cell.x) as usize).min(n_bins - 1);
    let cut = (((pointer.y - grid.top()) / cell.y) as usize).min(n_cuts - 1);
    response.clone().on_hover_text(describe((cut, bin)));
    response.clicked().then_some((cut, bin))
}

/// Where a cell sits on the map's colour scale: the trials' σ (or the bound's σ when beyond
/// all trials) over [`MAP_MAX_SIGMA`]; the fit never colours a cell.
fn map_colour_position(significance: &BinSignificance) -> f64 {
    let sigma = significance.colour_sigma();
    if sigma.is_nan() {
        0.0
    } else {
        (sigma / MAP_MAX_SIGMA).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_colours_by_the_trials_never_by_the_fit() {
        let mut stats = crate::twopoint::BinStats {
            observed: 10,
            background_mean: 5.0,
            background_variance: 4.0,
            ts: 2.0,
            trials_at_least_observed: 0,
            p_value: 1.0 / 21.0,
            significance_sigma: 1.67,
            fit: Some(FitKind::Gaussian {
                mean: 5.0,
                sigma: 2.0,
            }),
            fit_ks_distance: Some(0.1),
            p_value_fit: Some(1e-30),
            significance_sigma_fit: Some(11.3),
        };
        // Beyond all 20 trials: the bound's σ (Φ⁻¹(1 − 1/21) = 1.668), not the fit's 11.3.
        let beyond = BinSignificance::of(&stats, 20);
        let bound_sigma = crate::twopoint::stats::sigma_of_p(1.0 / 21.0);
        assert_eq!(map_colour_position(&beyond), bound_sigma / MAP_MAX_SIGMA);
        stats.trials_at_least_observed = 20;
        let resolved = BinSignificance::of(&stats, 20);
        assert_eq!(map_colour_position(&resolved), 0.0);
        assert_eq!(map_colour_position(&BinSignificance::NoTrials), 0.0);
    }

    #[test]
    fn listed_bins_are_first_quarter_and_last() {
        assert_eq!(listed_bins(20), vec![0, 5, 19]);
        assert_eq!(listed_bins(1), vec![0]);
        assert_eq!(listed_bins(2), vec![0, 1]);
    }
}
