//! Render settings per open snapshot: species on/off, fields, palettes and ranges belong to the
//! file they were set for, so switching a family off in one file never hides it in another.
//!
//! `HaloscopeApp::style` stays the style of the snapshot shown (every panel and worker reads it
//! there); this module swaps it in and out when the snapshot shown changes.

use super::haloscope_app::HaloscopeApp;
use super::viewport::viewport_renderer::{SpeciesStyle, ViewStyle};
use crate::data::SpeciesKind;
use std::collections::HashMap;

/// The styles of the snapshots not shown, and which snapshot `HaloscopeApp::style` belongs to.
#[derive(Debug, Default)]
pub struct DocumentStyles {
    /// Styles of snapshots shown before, by document id.
    saved: HashMap<u64, ViewStyle>,
    /// The document whose style is `HaloscopeApp::style` now.
    current: Option<u64>,
    /// Whether a snapshot took the restored session's style already (only the first does).
    session_style_used: bool,
}

/// The style a snapshot shown for the first time starts with: the view-wide settings (radius,
/// resolution, exposure, bars) of `from`, every family at its defaults (switched on).
pub fn fresh_style(from: &ViewStyle) -> ViewStyle {
    ViewStyle {
        species: SpeciesKind::ALL
            .into_iter()
            .map(SpeciesStyle::default_for)
            .collect(),
        ..from.clone()
    }
}

impl HaloscopeApp {
    /// Makes `self.style` the style of the snapshot shown, keeping the previous snapshot's.
    /// Called before anything reads the style in a frame (and again after the panels, where the
    /// user may pick another snapshot).
    pub fn sync_document_style(&mut self) {
        let shown = self.documents.shown_snapshot().map(|d| d.id);
        let styles = &mut self.document_styles;
        if shown == styles.current {
            return;
        }
        // The first snapshot of a session takes the saved session's style whole.
        let first = !styles.session_style_used;
        if let Some(previous) = styles.current {
            styles.saved.insert(previous, self.style.clone());
        }
        if let Some(id) = shown {
            self.style = match styles.saved.remove(&id) {
                Some(style) => style,
                None if first => self.style.clone(),
                None => fresh_style(&self.style),
            };
        }
        // Styles of closed snapshots go with them.
        let open: Vec<u64> = self.documents.snapshots.iter().map(|d| d.id).collect();
        styles.saved.retain(|id, _| open.contains(id));
        styles.current = shown;
        styles.session_style_used |= shown.is_some();
    }
}
