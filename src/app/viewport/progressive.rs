//! When to render what: a quick low-resolution preview every frame the view changes, the full
//! render once the view has rested (Topsy's progressive rendering, in spirit).

use std::time::{Duration, Instant};

/// How long the view must stay unchanged before the full-resolution render is asked for.
pub const REST_BEFORE_FULL: Duration = Duration::from_millis(150);
/// Preview renders use this fraction of the full resolution in each direction.
pub const PREVIEW_SCALE: f32 = 0.25;

/// Which render to ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quality {
    /// Low resolution, while the view moves.
    Preview,
    /// Full resolution, once the view rests.
    Full,
}

impl Quality {
    /// Image size for a viewport of `full` pixels (never below 8×8 for a preview).
    pub fn size_px(self, full: [u32; 2]) -> [u32; 2] {
        match self {
            Self::Full => full,
            Self::Preview => {
                full.map(|n| ((n as f32 * PREVIEW_SCALE).round() as u32).max(8).min(n))
            }
        }
    }
}

/// Decides, frame by frame, which render the view `K` needs.
#[derive(Debug, Clone)]
pub struct ProgressiveScheduler<K> {
    view: Option<K>,
    changed_at: Option<Instant>,
    full_requested: bool,
}

impl<K> Default for ProgressiveScheduler<K> {
    fn default() -> Self {
        Self {
            view: None,
            changed_at: None,
            full_requested: false,
        }
    }
}

impl<K: PartialEq + Clone> ProgressiveScheduler<K> {
    /// Called once per frame with the current view; returns the render to ask for now, if any.
    /// A new view gets a preview at once; a view unchanged for [`REST_BEFORE_FULL`] gets one
    /// full render.
    pub fn poll(&mut self, view: &K, now: Instant) -> Option<Quality> {
        if self.view.as_ref() != Some(view) {
            self.view = Some(view.clone());
            self.changed_at = Some(now);
            self.full_requested = false;
            return Some(Quality::Preview);
        }
        let rested = self
            .changed_at
            .is_some_and(|t| now.duration_since(t) >= REST_BEFORE_FULL);
        if rested && !self.full_requested {
            self.full_requested = true;
            return Some(Quality::Full);
        }
        None
    }

    /// How long until a full render falls due (for scheduling a repaint), if one is pending.
    pub fn time_to_full(&self, now: Instant) -> Option<Duration> {
        if self.full_requested {
            return None;
        }
        let changed_at = self.changed_at?;
        Some(REST_BEFORE_FULL.saturating_sub(now.duration_since(changed_at)))
    }

    /// Forgets the view so the next poll starts again with a preview (e.g. after an error was
    /// cleared or the renderer changed).
    pub fn invalidate(&mut self) {
        self.view = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_while_moving_then_one_full_render_after_rest() {
        let start = Instant::now();
        let mut scheduler = ProgressiveScheduler::default();
        let at = |ms: u64| start + Duration::from_millis(ms);
        assert_eq!(scheduler.poll(&1, at(0)), Some(Quality::Preview));
        assert_eq!(scheduler.poll(&1, at(16)), None);
        assert_eq!(scheduler.poll(&2, at(33)), Some(Quality::Preview));
        assert_eq!(scheduler.poll(&2, at(100)), None);
        assert_eq!(
            scheduler.time_to_full(at(100)),
            Some(Duration::from_millis(83))
        );
        assert_eq!(scheduler.poll(&2, at(183)), Some(Quality::Full));
        assert_eq!(scheduler.poll(&2, at(500)), None);
        assert_eq!(scheduler.time_to_full(at(500)), None);
        scheduler.invalidate();
        assert_eq!(scheduler.poll(&2, at(501)), Some(Quality::Preview));
    }

    #[test]
    fn preview_size_is_a_quarter_with_a_floor() {
        assert_eq!(Quality::Preview.size_px([1024, 600]), [256, 150]);
        assert_eq!(Quality::Preview.size_px([20, 4]), [8, 4]);
        assert_eq!(Quality::Full.size_px([1024, 600]), [1024, 600]);
    }
}
