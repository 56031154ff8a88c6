//! The Movie panel's state: the keyframe editor, the timeline, the Render movie window, and
//! loading and saving the TOML path file through file dialogs. Drawn by `ui.rs`.

use super::edit::{MovieEditor, SavedPath};
use super::render::{MovieRender, MovieRenderSettings};
use super::timeline::Timeline;
use crate::app::files::documents::Notice;
use crate::jobs::Waker;
use crate::movie::{CameraPath, load_path, save_path};
use crossbeam_channel::{Receiver, Sender};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What the session keeps of the Movie panel.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SavedMovie {
    /// The keyframes and timing.
    pub path: SavedPath,
    /// The Render movie window's settings.
    pub render: MovieRenderSettings,
}

/// What a movie file-dialog thread sends back (`None` when the user cancelled).
enum MovieDialog {
    /// A path file to load.
    Load(Option<PathBuf>),
    /// Where to save the path file.
    Save(Option<PathBuf>),
    /// The output folder of the frames.
    OutDir(Option<PathBuf>),
}

/// The Movie panel's state.
pub struct MoviePanel {
    /// The keyframes.
    pub editor: MovieEditor,
    /// Scrubber and preview.
    pub timeline: Timeline,
    /// The Render movie window and its worker.
    pub render: MovieRender,
    /// Length of the paths the presets make, seconds.
    pub preset_duration_s: f64,
    /// How many of the largest halos "Fly along halos" visits.
    pub fly_halos: usize,
    /// The panel's latest message (a preset or file error, a saved file).
    pub message: Option<Notice>,
    /// A preset waiting for the user to confirm it may replace hand-made keyframes.
    pub pending_preset: Option<CameraPath>,
    /// The keyframes before the last preset replaced them (one level of undo).
    pub undo: Option<MovieEditor>,
    /// The keyframes the last preset made, while unchanged they go without asking.
    pub preset_keys: Option<crate::movie::PathKeyframes>,
    dialog_tx: Sender<MovieDialog>,
    dialog_rx: Receiver<MovieDialog>,
    dialog_open: bool,
    waker: Waker,
}

impl MoviePanel {
    /// The panel restoring `saved`; workers and dialogs wake the UI through `waker`.
    pub fn new(saved: &SavedMovie, waker: Waker) -> Self {
        let (dialog_tx, dialog_rx) = crossbeam_channel::unbounded();
        Self {
            editor: MovieEditor::from_saved(&saved.path),
            timeline: Timeline::default(),
            render: MovieRender::new(saved.render.clone(), waker.clone()),
            preset_duration_s: 10.0,
            fly_halos: 5,
            message: None,
            pending_preset: None,
            undo: None,
            preset_keys: None,
            dialog_tx,
            dialog_rx,
            dialog_open: false,
            waker,
        }
    }

    /// What the session keeps.
    pub fn saved(&self) -> SavedMovie {
        SavedMovie {
            path: self.editor.saved(),
            render: self.render.settings.clone(),
        }
    }

    /// Width over height of the movie: relates the viewport's field of view to the keyframes'.
    pub fn aspect(&self) -> f64 {
        self.render.settings.aspect()
    }

    /// Replaces the keyframes with those of `path` and puts the scrubber at its start.
    pub fn use_path(&mut self, path: &CameraPath) {
        self.editor = MovieEditor::from_path(path);
        self.timeline.pause();
        self.timeline.time_s = path.start_s();
    }

    /// Whether a preset would replace keyframes the user made (by hand or from a file) rather
    /// than the unchanged output of the previous preset.
    pub fn replacing_needs_confirmation(&self) -> bool {
        let keys = self.editor.keys();
        !keys.keyframes.is_empty() && self.preset_keys.as_ref() != Some(keys)
    }

    /// Shows an rfd dialog on its own thread; its answer arrives through `poll_dialogs`.
    fn dialog(&mut self, make: impl FnOnce() -> MovieDialog + Send + 'static) {
        if self.dialog_open {
            return;
        }
        self.dialog_open = true;
        let tx = self.dialog_tx.clone();
        let waker = self.waker.clone();
        let spawned = std::thread::Builder::new()
            .name("movie dialog".into())
            .spawn(move || {
                let _ = tx.send(make());
                waker();
            });
        if let Err(err) = spawned {
            self.dialog_open = false;
            self.message = Some(Notice::Error(format!("could not open the dialog: {err}")));
        }
    }

    /// Asks for a camera path file to load.
    pub fn load_dialog(&mut self) {
        self.dialog(|| {
            MovieDialog::Load(
                rfd::FileDialog::new()
                    .set_title("Load camera path")
                    .add_filter("Camera path (TOML)", &["toml"])
                    .pick_file(),
            )
        });
    }

    /// Asks where to save the camera path file.
    pub fn save_dialog(&mut self) {
        self.dialog(|| {
            MovieDialog::Save(
                rfd::FileDialog::new()
                    .set_title("Save camera path")
                    .set_file_name("camera.toml")
                    .add_filter("Camera path (TOML)", &["toml"])
                    .save_file(),
            )
        });
    }

    /// Asks for the output folder of the frames.
    pub fn out_dir_dialog(&mut self) {
        self.dialog(|| {
            MovieDialog::OutDir(
                rfd::FileDialog::new()
                    .set_title("Folder for the movie frames")
                    .pick_folder(),
            )
        });
    }

    /// Loads the path file `file` into the editor.
    pub fn load_from(&mut self, file: &std::path::Path) {
        self.message = Some(match load_path(file) {
            Ok(path) => {
                self.use_path(&path);
                Notice::Info(format!(
                    "loaded {} keyframes from {}",
                    path.keyframes().len(),
                    file.display()
                ))
            }
            Err(err) => Notice::Error(err.to_string()),
        });
    }

    /// Saves the editor's path to `file` as TOML.
    pub fn save_to(&mut self, file: &std::path::Path) {
        self.message = Some(match self.editor.path() {
            Ok(path) => match save_path(path, file) {
                Ok(()) => Notice::Info(format!("saved {}", file.display())),
                Err(err) => Notice::Error(err.to_string()),
            },
            Err(err) => Notice::Error(format!("nothing to save: {err}")),
        });
    }

    /// Handles the answers of the file dialogs that have closed; a camera path is never saved
    /// over one of the window's `open_files`.
    pub(super) fn poll_dialogs(&mut self, open_files: &[std::path::PathBuf]) {
        while let Ok(answer) = self.dialog_rx.try_recv() {
            self.dialog_open = false;
            match answer {
                MovieDialog::Load(Some(file)) => self.load_from(&file),
                MovieDialog::Save(Some(file)) => {
                    match crate::output::OutputPlan::check_against_open_files(
                        "camera path",
                        &file,
                        open_files,
                    ) {
                        Ok(()) => self.save_to(&file),
                        Err(err) => self.message = Some(Notice::Error(err.to_string())),
                    }
                }
                MovieDialog::OutDir(Some(dir)) => {
                    self.render.settings.out_dir = dir.display().to_string();
                }
                MovieDialog::Load(None) | MovieDialog::Save(None) | MovieDialog::OutDir(None) => {}
            }
        }
    }
}
