//! Closing a document ends the work tied to it: its friends-of-friends run or its two-point
//! trials are cancelled (and said so), never left running under another file's name.

use super::files::documents::Notice;
use super::haloscope_app::HaloscopeApp;

impl HaloscopeApp {
    /// Closes snapshot `index`, cancelling a halo search running on it.
    pub fn close_snapshot_document(&mut self, index: usize) {
        let Some(document) = self.documents.snapshots.get(index) else {
            return;
        };
        let (id, name) = (document.id, document.name.clone());
        if let Some(run) = self.halos.running.as_ref().filter(|r| r.document_id == id) {
            run.handle.cancel();
            self.notify(Notice::Info(format!(
                "{}: cancelled, {name} was closed",
                run.handle.label
            )));
        }
        self.documents.close_snapshot(index);
    }

    /// Closes event list `index`, cancelling its two-point trials and dropping their results.
    pub fn close_events_document(&mut self, index: usize) {
        let Some(document) = self.documents.events.get(index) else {
            return;
        };
        let (id, name) = (document.id, document.name.clone());
        if let Some(label) = self.twopoint.forget(id) {
            self.notify(Notice::Info(format!(
                "{label}: cancelled, {name} was closed"
            )));
        }
        self.documents.close_events(index);
    }
}
