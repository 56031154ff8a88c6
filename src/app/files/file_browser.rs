//! Haloscope's own file chooser, used when the system one cannot be shown (rfd needs
//! xdg-desktop-portal or zenity on Linux; without them it returns "nothing chosen" at once and
//! the menu item seemed to do nothing). A window with the folder, its entries (folders first),
//! a path field and, for saving, a file name. Folders are listed on a worker thread, so a slow
//! disk never stalls the UI. Opening takes several files (Ctrl-click adds one, Shift-click a
//! range); Enter chooses, as the Open or Save button does.

use crate::jobs::Waker;
use crossbeam_channel::Receiver;
use std::path::{Path, PathBuf};

/// Most entries listed per folder (the rest are counted, not shown).
const MAX_ENTRIES: usize = 5000;

/// What the chosen path is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrowsePurpose {
    /// Open snapshots or event lists.
    Open,
    /// Save a screenshot (PNG).
    SaveScreenshot,
    /// Export the halo catalogue (CSV or HDF5).
    ExportCatalogue,
}

impl BrowsePurpose {
    fn title(self) -> &'static str {
        match self {
            Self::Open => "Open snapshot or event list",
            Self::SaveScreenshot => "Save screenshot",
            Self::ExportCatalogue => "Export halo catalogue",
        }
    }

    fn default_name(self) -> &'static str {
        match self {
            Self::Open => "",
            Self::SaveScreenshot => "haloscope.png",
            Self::ExportCatalogue => "halos.csv",
        }
    }
}

/// One entry of a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntryInfo {
    /// File or folder name.
    pub name: String,
    /// A folder (or a link to one).
    pub is_dir: bool,
    /// Size in bytes (0 for folders).
    pub size_bytes: u64,
}

/// A folder's listing: entries shown and how many more there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// Folders first, then files, each by name ignoring case; hidden entries left out.
    pub entries: Vec<DirEntryInfo>,
    /// Entries beyond [`MAX_ENTRIES`].
    pub more: usize,
}

/// Lists `dir`: folders first, then files, by name ignoring case, without hidden (dot) entries.
pub fn list_dir(dir: &Path) -> Result<Listing, String> {
    let read = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut entries: Vec<DirEntryInfo> = read
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                return None;
            }
            // Follows links, so a link to a folder opens like a folder.
            let meta = std::fs::metadata(entry.path()).ok();
            let is_dir = meta.as_ref().is_some_and(std::fs::Metadata::is_dir);
            let size_bytes = meta.filter(|m| m.is_file()).map_or(0, |m| m.len());
            Some(DirEntryInfo {
                name,
                is_dir,
                size_bytes,
            })
        })
        .collect();
    entries.sort_by(|a, b| {
        b.is_dir
            .cmp(&a.is_dir)
            .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
    });
    let more = entries.len().saturating_sub(MAX_ENTRIES);
    entries.truncate(MAX_ENTRIES);
    Ok(Listing { entries, more })
}

/// What the user did in the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrowseOutcome {
    /// Paths chosen (one for saving).
    Chosen(Vec<PathBuf>),
    /// Closed without choosing.
    Cancelled,
}

/// The file chooser window's state.
pub struct FileBrowser {
    /// What it is for.
    pub purpose: BrowsePurpose,
    /// The folder shown.
    pub dir: PathBuf,
    /// The file name typed or clicked.
    pub file_name: String,
    /// Files picked for opening, in listing order (Ctrl/Shift-click picks more than one).
    pub selected: Vec<String>,
    /// Listing index of the last plain or Ctrl click: where a Shift-click range starts.
    anchor: Option<usize>,
    path_text: String,
    listing: Option<Result<Listing, String>>,
    pending: Option<Receiver<Result<Listing, String>>>,
    waker: Waker,
}

impl FileBrowser {
    /// A chooser for `purpose` showing `dir`; listings wake the UI through `waker`.
    pub fn new(purpose: BrowsePurpose, dir: PathBuf, waker: Waker) -> Self {
        let mut browser = Self {
            purpose,
            dir: PathBuf::new(),
            file_name: purpose.default_name().to_owned(),
            selected: Vec::new(),
            anchor: None,
            path_text: String::new(),
            listing: None,
            pending: None,
            waker,
        };
        browser.navigate(dir);
        browser
    }

    /// Shows `dir`, listing it on a worker thread.
    pub fn navigate(&mut self, dir: PathBuf) {
        self.path_text = dir.display().to_string();
        self.dir = dir.clone();
        self.listing = None;
        self.selected.clear();
        self.anchor = None;
        let (tx, rx) = crossbeam_channel::bounded(1);
        let waker = self.waker.clone();
        let spawned = std::thread::Builder::new()
            .name("list folder".into())
            .spawn(move || {
                let _ = tx.send(list_dir(&dir));
                waker();
            });
        match spawned {
            Ok(_) => self.pending = Some(rx),
            Err(err) => self.listing = Some(Err(format!("could not list the folder: {err}"))),
        }
    }

    /// The listing of the folder shown, once it has arrived.
    pub fn listing(&mut self) -> Option<&Result<Listing, String>> {
        if let Some(rx) = &self.pending
            && let Ok(listing) = rx.try_recv()
        {
            self.listing = Some(listing);
            self.pending = None;
        }
        self.listing.as_ref()
    }

    /// Draws the window; returns what the user did, once they did it.
    pub fn window_ui(&mut self, ctx: &egui::Context) -> Option<BrowseOutcome> {
        let mut open = true;
        let mut outcome = None;
        egui::Window::new(self.purpose.title())
            .open(&mut open)
            .collapsible(false)
            .default_size([520.0, 420.0])
            .show(ctx, |ui| outcome = self.contents_ui(ui));
        if !open {
            outcome = Some(BrowseOutcome::Cancelled);
        }
        outcome
    }

    fn contents_ui(&mut self, ui: &mut egui::Ui) -> Option<BrowseOutcome> {
        let mut go_to = None;
        let mut outcome = None;
        ui.horizontal(|ui| {
            if ui.button("Up").on_hover_text("The parent folder").clicked()
                && let Some(parent) = self.dir.parent()
            {
                go_to = Some(parent.to_path_buf());
            }
            let label = ui.label("Folder");
            let field = ui
                .add(
                    egui::TextEdit::singleline(&mut self.path_text)
                        .desired_width(f32::INFINITY)
                        .hint_text("folder or file path, then Enter"),
                )
                .labelled_by(label.id);
            if field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                let typed = PathBuf::from(self.path_text.trim());
                if typed.is_dir() {
                    go_to = Some(typed);
                } else if let Some(name) = typed.file_name() {
                    // A file path: choose it (for opening) or take its name (for saving).
                    self.file_name = name.to_string_lossy().into_owned();
                    if let Some(parent) = typed.parent().filter(|p| p.is_dir()) {
                        self.dir = parent.to_path_buf();
                    }
                    if self.purpose == BrowsePurpose::Open {
                        outcome = Some(BrowseOutcome::Chosen(vec![typed]));
                    }
                }
            }
        });
        ui.separator();
        let row_height = ui.text_style_height(&egui::TextStyle::Body) + 4.0;
        let list_height = (ui.available_height() - 70.0).max(120.0);
        let mut double_clicked = None;
        match self.listing() {
            None => {
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.label("Reading the folder...");
                });
            }
            Some(Err(error)) => {
                ui.colored_label(ui.visuals().error_fg_color, error.clone());
            }
            Some(Ok(listing)) => {
                let listing = listing.clone();
                let mut picked = None;
                egui::ScrollArea::vertical()
                    .max_height(list_height)
                    .auto_shrink([false, true])
                    .show_rows(ui, row_height, listing.entries.len(), |ui, rows| {
                        for (index, entry) in listing.entries[rows.clone()]
                            .iter()
                            .enumerate()
                            .map(|(i, e)| (i + rows.start, e))
                        {
                            let text = if entry.is_dir {
                                format!("{}/", entry.name)
                            } else {
                                format!("{}    {}", entry.name, format_size(entry.size_bytes))
                            };
                            let selected = !entry.is_dir
                                && (entry.name == self.file_name
                                    || self.selected.contains(&entry.name));
                            let row = ui.selectable_label(selected, text);
                            if entry.is_dir && row.clicked() {
                                go_to = Some(self.dir.join(&entry.name));
                            } else if row.clicked() {
                                picked = Some((index, ui.input(|i| i.modifiers)));
                            }
                            if !entry.is_dir && row.double_clicked() {
                                double_clicked = Some(self.dir.join(&entry.name));
                            }
                        }
                    });
                if let Some((index, modifiers)) = picked {
                    self.pick(&listing, index, modifiers);
                }
                if listing.more > 0 {
                    ui.small(format!("{} more entries not shown", listing.more));
                }
                if listing.entries.is_empty() {
                    ui.label("This folder is empty.");
                }
            }
        }
        ui.separator();
        ui.horizontal(|ui| {
            let label = ui.label(if self.purpose == BrowsePurpose::Open {
                "File"
            } else {
                "Save as"
            });
            let typed = ui
                .add(egui::TextEdit::singleline(&mut self.file_name).desired_width(260.0))
                .labelled_by(label.id);
            if typed.changed() {
                self.selected.clear();
            }
            let verb = if self.purpose == BrowsePurpose::Open {
                "Open"
            } else {
                "Save"
            };
            let chosen = self.chosen();
            let button = ui.add_enabled(!chosen.is_empty(), egui::Button::new(verb));
            // Enter chooses too, unless the folder field takes it (it navigates there).
            let enter = ui.input(|i| i.key_pressed(egui::Key::Enter)) && go_to.is_none();
            if (button.clicked() || (enter && outcome.is_none())) && !chosen.is_empty() {
                outcome = Some(BrowseOutcome::Chosen(chosen));
            }
            if ui.button("Cancel").clicked() {
                outcome = Some(BrowseOutcome::Cancelled);
            }
        });
        if let Some(dir) = go_to {
            self.navigate(dir);
        }
        // Double-clicking a file opens it (or saves over it, as system dialogs do).
        outcome.or_else(|| double_clicked.map(|path| BrowseOutcome::Chosen(vec![path])))
    }
}

impl FileBrowser {
    /// A click on file `index` of `listing`: alone, added or removed with Ctrl (Cmd), the range
    /// from the last click with Shift; several only when opening.
    fn pick(&mut self, listing: &Listing, index: usize, modifiers: egui::Modifiers) {
        let Some(entry) = listing.entries.get(index) else {
            return;
        };
        let multiple = self.purpose == BrowsePurpose::Open;
        if multiple && modifiers.shift {
            let from = self.anchor.unwrap_or(index);
            let (low, high) = (from.min(index), from.max(index));
            self.selected = listing.entries[low..=high]
                .iter()
                .filter(|e| !e.is_dir)
                .map(|e| e.name.clone())
                .collect();
        } else if multiple && modifiers.command {
            if let Some(at) = self.selected.iter().position(|n| n == &entry.name) {
                self.selected.remove(at);
            } else {
                self.selected.push(entry.name.clone());
                // Keep the listing's order, so files open in the order shown.
                let order = |name: &String| listing.entries.iter().position(|e| &e.name == name);
                self.selected.sort_by_key(order);
            }
            self.anchor = Some(index);
        } else {
            self.selected = vec![entry.name.clone()];
            self.anchor = Some(index);
        }
        self.file_name = match self.selected.as_slice() {
            [one] => one.clone(),
            [] if !multiple => entry.name.clone(),
            [] => String::new(),
            many => format!("{} files", many.len()),
        };
        if !multiple {
            self.selected.clear();
        }
    }

    /// The paths the Open or Save button (or Enter) would choose now.
    pub fn chosen(&self) -> Vec<PathBuf> {
        if self.purpose == BrowsePurpose::Open && self.selected.len() > 1 {
            return self.selected.iter().map(|n| self.dir.join(n)).collect();
        }
        let name = self.file_name.trim();
        if name.is_empty() {
            Vec::new()
        } else {
            vec![self.dir.join(name)]
        }
    }
}

/// A file size for people: bytes, kB, MB or GB (powers of 1000).
pub fn format_size(bytes: u64) -> String {
    let b = bytes as f64;
    if b < 1e3 {
        format!("{bytes} B")
    } else if b < 1e6 {
        format!("{:.1} kB", b / 1e3)
    } else if b < 1e9 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.2} GB", b / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_come_first_by_name_and_hidden_entries_are_left_out() {
        let dir = tempfile::tempdir().expect("temp dir");
        for name in ["b.hdf5", "A.tbin", ".hidden"] {
            std::fs::write(dir.path().join(name), b"12345").expect("write");
        }
        for name in ["zeta", "Alpha", ".git"] {
            std::fs::create_dir(dir.path().join(name)).expect("mkdir");
        }
        let listing = list_dir(dir.path()).expect("listed");
        let names: Vec<(&str, bool, u64)> = listing
            .entries
            .iter()
            .map(|e| (e.name.as_str(), e.is_dir, e.size_bytes))
            .collect();
        assert_eq!(
            names,
            vec![
                ("Alpha", true, 0),
                ("zeta", true, 0),
                ("A.tbin", false, 5),
                ("b.hdf5", false, 5)
            ]
        );
        assert_eq!(listing.more, 0);
        let missing = dir.path().join("nope");
        let err = list_dir(&missing).expect_err("no such folder");
        assert!(err.starts_with(&missing.display().to_string()), "{err}");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(format_size(999), "999 B");
        assert_eq!(format_size(1_500), "1.5 kB");
        assert_eq!(format_size(416_000_000), "416.0 MB");
        assert_eq!(format_size(2_340_000_000), "2.34 GB");
    }
}
