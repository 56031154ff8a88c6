//! What survives between runs (eframe storage): settings, recent files, the last session's
//! files, camera and panel state.

use super::movie::panel::SavedMovie;
use super::twopoint::sky_projection::SkyProjection;
use super::viewport::camera::{Bookmark, OrbitCamera};
use super::viewport::viewport_renderer::ViewStyle;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The eframe storage key of the [`Session`].
pub const STORAGE_KEY: &str = "haloscope.session";

/// Which side-panel sections are open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PanelState {
    /// The side panel itself.
    pub side_panel: bool,
    /// File section.
    pub file: bool,
    /// Render section.
    pub render: bool,
    /// Halos section.
    pub halos: bool,
    /// Events section.
    pub events: bool,
    /// Movie section.
    #[serde(default)]
    pub movie: bool,
    /// Scroll the side panel to the Movie section on the next frame (asked for by the menu).
    #[serde(skip)]
    pub scroll_to_movie: bool,
}

impl Default for PanelState {
    fn default() -> Self {
        Self {
            side_panel: true,
            file: true,
            render: true,
            halos: false,
            events: false,
            movie: false,
            scroll_to_movie: false,
        }
    }
}

/// Which view fills the central area.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum CentralView {
    /// The particle render.
    #[default]
    Viewport,
    /// The event sky map.
    SkyMap,
    /// The two-point plots.
    TwoPoint,
}

/// Everything saved between runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Session {
    /// Recently opened files, newest first.
    pub recent_files: Vec<PathBuf>,
    /// Files open when the application closed.
    pub open_files: Vec<PathBuf>,
    /// Camera of the snapshot shown when the application closed.
    pub camera: Option<OrbitCamera>,
    /// Saved views.
    pub bookmarks: Vec<Bookmark>,
    /// Render settings.
    pub style: ViewStyle,
    /// Side-panel sections.
    pub panels: PanelState,
    /// Central view.
    pub central: CentralView,
    /// Sky-map projection.
    pub sky_projection: Option<SkyProjection>,
    /// Movie keyframes and render settings.
    pub movie: SavedMovie,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_round_trips_through_json_and_tolerates_missing_fields() {
        let mut session = Session {
            recent_files: vec![PathBuf::from("/data/test4.tbin")],
            open_files: vec![PathBuf::from("/data/IC40_exp.csv")],
            camera: Some(OrbitCamera::home([0.0; 3], [1.0; 3])),
            central: CentralView::SkyMap,
            sky_projection: Some(SkyProjection::Mollweide),
            ..Session::default()
        };
        session.style.min_radius_px = 2.5;
        session.panels.halos = true;
        session.panels.movie = true;
        session.movie.render.width_px = 640;
        session.movie.path.ease_s = 0.5;
        session.bookmarks.push(Bookmark {
            name: "cluster".to_owned(),
            camera: OrbitCamera::default(),
        });
        let text = serde_json::to_string(&session).expect("serialises");
        let back: Session = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, session);
        // An older save without most fields still loads, with defaults for the rest.
        let old: Session = serde_json::from_str(r#"{"recent_files":["/a.tbin"]}"#).expect("parses");
        assert_eq!(old.recent_files, vec![PathBuf::from("/a.tbin")]);
        assert_eq!(old.style, ViewStyle::default());
        // Panels saved before the Movie section existed still load.
        let panels = r#"{"panels":{"side_panel":true,"file":false,"render":true,"halos":false,"events":true}}"#;
        let old: Session = serde_json::from_str(panels).expect("parses");
        assert!(!old.panels.file && old.panels.events && !old.panels.movie);
    }
}
