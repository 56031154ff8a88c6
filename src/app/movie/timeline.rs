//! The movie timeline: a scrubber over the camera path's time and a real-time play/pause
//! preview (with loop) that drives the viewport camera.

/// Where the scrubber is and whether it plays.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Timeline {
    /// Path time under the scrubber, seconds.
    pub time_s: f64,
    /// Whether the preview plays.
    pub playing: bool,
    /// Whether playing starts over at the end.
    pub looping: bool,
    /// UI clock (seconds) of the previous playback step.
    last_tick_s: Option<f64>,
}

impl Timeline {
    /// Starts the preview at the UI clock `now_s`; from the start when the scrubber is at the end.
    pub fn play(&mut self, now_s: f64, range: (f64, f64)) {
        if self.time_s >= range.1 {
            self.time_s = range.0;
        }
        self.playing = true;
        self.last_tick_s = Some(now_s);
    }

    /// Stops the preview where it is.
    pub fn pause(&mut self) {
        self.playing = false;
        self.last_tick_s = None;
    }

    /// Moves the scrubber to `time_s`, clamped to `range`.
    pub fn seek(&mut self, time_s: f64, range: (f64, f64)) {
        self.time_s = time_s.clamp(range.0, range.1.max(range.0));
    }

    /// One playback step at the UI clock `now_s`: the scrubber advances by the real time since
    /// the previous step, wrapping at the end when looping, else stopping there. Returns whether
    /// the time changed.
    pub fn advance(&mut self, now_s: f64, range: (f64, f64)) -> bool {
        if !self.playing {
            return false;
        }
        let (start_s, end_s) = range;
        let duration_s = end_s - start_s;
        if duration_s <= 0.0 {
            self.pause();
            return false;
        }
        let dt = (now_s - self.last_tick_s.unwrap_or(now_s)).max(0.0);
        self.last_tick_s = Some(now_s);
        let before = self.time_s;
        let mut time_s = self.time_s.max(start_s) + dt;
        if time_s > end_s {
            if self.looping {
                time_s = start_s + (time_s - start_s) % duration_s;
            } else {
                time_s = end_s;
                self.pause();
            }
        }
        self.time_s = time_s;
        self.time_s != before
    }

    /// Play/pause, loop and the scrubber. Returns whether the user moved the scrubber (the
    /// caller then moves the camera); playing itself is stepped by [`Self::advance`].
    pub fn ui(&mut self, ui: &mut egui::Ui, range: (f64, f64)) -> bool {
        let now_s = ui.input(|i| i.time);
        let usable = range.1 > range.0;
        let mut moved = false;
        ui.horizontal(|ui| {
            let label = if self.playing { "Pause" } else { "Play" };
            let button = ui
                .add_enabled(usable, egui::Button::new(label))
                .on_hover_text("Preview the path in the viewport in real time");
            if button.clicked() {
                if self.playing {
                    self.pause();
                } else {
                    self.play(now_s, range);
                }
            }
            ui.checkbox(&mut self.looping, "Loop");
            if ui
                .add_enabled(usable, egui::Button::new("To start"))
                .on_hover_text("Scrubber to the first keyframe")
                .clicked()
            {
                self.seek(range.0, range);
                moved = true;
            }
        });
        ui.horizontal(|ui| {
            let name = ui.label("Time");
            // Kept in range here, so the slider's own clamping never reads as a user's move
            // (after the last keyframe was deleted, say).
            self.time_s = self.time_s.clamp(range.0, range.1.max(range.0));
            let mut time_s = self.time_s;
            let slider = ui
                .add_enabled(
                    usable,
                    // Shown with two decimals but never rounded: a rounding slider reports
                    // every played time off the 0.01 s grid as the user's move, which paused
                    // playback a frame or two after Play.
                    egui::Slider::new(&mut time_s, range.0..=range.1.max(range.0))
                        .suffix(" s")
                        .custom_formatter(|value, _| format!("{value:.2}")),
                )
                .labelled_by(name.id);
            if slider.changed() {
                self.seek(time_s, range);
                self.pause();
                moved = true;
            }
        });
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn playing_advances_in_real_time_and_stops_at_the_end() {
        let mut timeline = Timeline::default();
        let range = (0.0, 2.0);
        timeline.play(10.0, range);
        assert!(timeline.advance(10.5, range));
        assert_eq!(timeline.time_s, 0.5);
        assert!(timeline.advance(11.0, range));
        assert_eq!(timeline.time_s, 1.0);
        assert!(timeline.advance(13.0, range));
        assert_eq!(timeline.time_s, 2.0);
        assert!(!timeline.playing);
        assert!(!timeline.advance(14.0, range));
        // Play again from the end: back to the start.
        timeline.play(20.0, range);
        assert_eq!(timeline.time_s, 0.0);
    }

    #[test]
    fn looping_wraps_around_the_path() {
        let mut timeline = Timeline {
            looping: true,
            ..Timeline::default()
        };
        let range = (1.0, 3.0);
        timeline.seek(2.5, range);
        timeline.play(0.0, range);
        assert!(timeline.advance(1.0, range));
        // 2.5 + 1 = 3.5 → 1 + (2.5 % 2) = 1.5.
        assert_eq!(timeline.time_s, 1.5);
        assert!(timeline.playing);
    }

    #[test]
    fn an_empty_range_cannot_play() {
        let mut timeline = Timeline::default();
        timeline.play(0.0, (0.0, 0.0));
        assert!(!timeline.advance(1.0, (0.0, 0.0)));
        assert!(!timeline.playing);
        timeline.seek(5.0, (0.0, 2.0));
        assert_eq!(timeline.time_s, 2.0);
    }
}
