//! The periodic box frame: which cube the coordinates live in, wrapping and minimum image.

/// A periodic cube `[lower, lower + size)` on every axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoxFrame {
    /// Lower corner on every axis (0 or −size/2).
    pub lower: f64,
    /// Side of the box.
    pub size: f64,
}

impl BoxFrame {
    /// The frame rule of DESIGN §5: `[0, L)` when no coordinate is negative, else `[−L/2, L/2)`.
    pub fn for_positions(positions: &[[f32; 3]], size: f64) -> Self {
        let any_negative = positions.iter().any(|p| p.iter().any(|&x| x < 0.0));
        Self::with_lower_rule(any_negative, size)
    }

    /// The frame rule given whether any coordinate is negative.
    pub fn with_lower_rule(any_negative: bool, size: f64) -> Self {
        let lower = if any_negative { -0.5 * size } else { 0.0 };
        Self { lower, size }
    }

    /// Upper (excluded) edge of the frame on every axis.
    pub fn upper(&self) -> f64 {
        self.lower + self.size
    }

    /// `x` moved by a whole number of box sizes into `[lower, lower + size)`.
    ///
    /// Coordinates already inside are returned unchanged (bit for bit), so that distances between
    /// them are the plain float64 differences of the file's values.
    pub fn wrap(&self, x: f64) -> f64 {
        let upper = self.upper();
        if x >= self.lower && x < upper {
            return x;
        }
        let mut y = x - self.size * ((x - self.lower) / self.size).floor();
        // The subtraction above can round onto the excluded upper edge.
        if y >= upper {
            y -= self.size;
        }
        if y < self.lower { self.lower } else { y }
    }

    /// A point with every coordinate wrapped into the frame, in float64.
    pub fn wrap_point(&self, p: &[f32; 3]) -> [f64; 3] {
        [
            self.wrap(f64::from(p[0])),
            self.wrap(f64::from(p[1])),
            self.wrap(f64::from(p[2])),
        ]
    }

    /// Minimum-image form of a difference `d` of two wrapped coordinates (|d| < size).
    pub fn min_image(&self, d: f64) -> f64 {
        let half = 0.5 * self.size;
        if d > half {
            d - self.size
        } else if d < -half {
            d + self.size
        } else {
            d
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_rule_follows_the_sign_of_the_data() {
        assert_eq!(BoxFrame::for_positions(&[[0.0, 0.5, 0.9]], 1.0).lower, 0.0);
        assert_eq!(
            BoxFrame::for_positions(&[[0.0, -0.25, 0.4]], 1.0).lower,
            -0.5
        );
    }

    #[test]
    fn wrap_moves_only_points_outside_the_frame() {
        let frame = BoxFrame {
            lower: -0.5,
            size: 1.0,
        };
        assert_eq!(frame.wrap(0.25), 0.25);
        assert_eq!(frame.wrap(-0.5), -0.5);
        assert_eq!(frame.wrap(0.5), -0.5);
        assert_eq!(frame.wrap(0.625), -0.375);
        assert_eq!(frame.wrap(-0.625), 0.375);
        assert_eq!(frame.wrap(2.75), -0.25);
        // Just below the lower edge: x + 1 rounds to 0.5, the excluded edge, and must come back.
        let y = frame.wrap(-0.5 - 1e-17);
        assert!((-0.5..0.5).contains(&y));
    }

    #[test]
    fn min_image_picks_the_nearest_copy() {
        let frame = BoxFrame {
            lower: 0.0,
            size: 10.0,
        };
        assert_eq!(frame.min_image(9.0), -1.0);
        assert_eq!(frame.min_image(-9.0), 1.0);
        assert_eq!(frame.min_image(5.0), 5.0);
        assert_eq!(frame.min_image(-4.0), -4.0);
    }
}
