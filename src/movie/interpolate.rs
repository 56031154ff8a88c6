//! Smooth interpolation of camera paths.
//!
//! - Positions and look-at points: centripetal Catmull–Rom curves (knot spacing |ΔX|^½; Yuksel,
//!   Schaefer & Keyser 2011, "Parameterization and applications of Catmull–Rom curves",
//!   Computer-Aided Design 43(7)), which have no cusps or self-intersections inside a segment.
//!   Each segment is the cubic Hermite with the Catmull–Rom knot tangents (their eq. for the
//!   non-uniform tangent, written as the weighted mean of the two neighbouring difference
//!   quotients). The curve parameter s is tied to keyframe time τ by a monotone C¹ cubic through
//!   (t_i, s_i) (Fritsch & Butland 1984, the PCHIP slopes), so X(τ) = curve(s(τ)) passes every
//!   keyframe at its own time and is C¹ in time.
//! - Orientation: unit quaternions through the keyframes with Shoemake's squad (SIGGRAPH 1985,
//!   "Animating rotation with quaternion curves"), neighbours forced into one hemisphere so the
//!   camera never turns the long way round; the up vector is then made orthogonal to the
//!   interpolated view direction.
//! - Field of view and brightness: the same monotone cubic (no overshoot, no negative values).
//! - Easing: path time t maps to keyframe time τ through E(t), flat (zero velocity) at both ends
//!   and the identity in between (E(t) = t₀ + w·x²(2 − x), x = (t − t₀)/w, whose slope is 0 at
//!   the end and 1 where it meets the identity, so the motion stays C¹).
//! - Constant speed: τ(t) = L⁻¹(L_total·(E(t) − t₀)/T) with L(τ) the arc length of the position
//!   curve (5-point Gauss–Legendre per sub-interval, inverted by safeguarded Newton).

use super::keyframe::{CameraPose, Keyframe, PathError, RenderSettings, Timing};
use glam::{DQuat, DVec3};

/// Arc-length table resolution: sub-intervals per keyframe segment.
const ARC_SUBINTERVALS_PER_SEGMENT: usize = 32;

/// 5-point Gauss–Legendre nodes and weights on [−1, 1] (Abramowitz & Stegun 25.4.30).
const GAUSS_LEGENDRE_5: [(f64, f64); 5] = [
    (0.0, 0.568_888_888_888_888_9),
    (-0.538_469_310_105_683_1, 0.478_628_670_499_366_5),
    (0.538_469_310_105_683_1, 0.478_628_670_499_366_5),
    (-0.906_179_845_938_664, 0.236_926_885_056_189_1),
    (0.906_179_845_938_664, 0.236_926_885_056_189_1),
];

/// The camera and render settings at one moment of a path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathSample {
    /// Path time asked for (seconds), clamped to the path.
    pub time_s: f64,
    /// Keyframe time τ the camera is at (differs from `time_s` under easing and constant speed).
    pub keyframe_time_s: f64,
    /// The camera.
    pub pose: CameraPose,
    /// Interpolated render settings.
    pub settings: RenderSettings,
}

/// Monotone piecewise-cubic Hermite interpolant (PCHIP): C¹, and monotone wherever the data are.
#[derive(Debug, Clone)]
pub(crate) struct MonotoneCubic {
    knots: Vec<f64>,
    values: Vec<f64>,
    slopes: Vec<f64>,
}

impl MonotoneCubic {
    /// Interpolates `values` at strictly increasing `knots` (at least one). With `periodic`,
    /// the end slopes treat the last segment as the one before the first (a closed loop; the
    /// values themselves need not repeat, e.g. a curve parameter that keeps growing).
    pub(crate) fn new(knots: Vec<f64>, values: Vec<f64>, periodic: bool) -> Self {
        let n = knots.len();
        let mut slopes = vec![0.0; n];
        if n >= 2 {
            let secant = |k: usize| (values[k + 1] - values[k]) / (knots[k + 1] - knots[k]);
            let width = |k: usize| knots[k + 1] - knots[k];
            // Fritsch & Butland (1984) weighted harmonic mean of the neighbouring secants;
            // zero at a local extremum or beside a flat segment, which keeps monotonicity.
            let slope = |(before, h_before): (f64, f64), (after, h_after): (f64, f64)| {
                if before * after <= 0.0 {
                    return 0.0;
                }
                let w1 = 2.0 * h_after + h_before;
                let w2 = h_after + 2.0 * h_before;
                (w1 + w2) / (w1 / before + w2 / after)
            };
            if periodic && n >= 3 {
                let wrap = slope((secant(n - 2), width(n - 2)), (secant(0), width(0)));
                slopes[0] = wrap;
                slopes[n - 1] = wrap;
            } else {
                slopes[0] = secant(0);
                slopes[n - 1] = secant(n - 2);
            }
            for (k, slot) in slopes.iter_mut().enumerate().take(n - 1).skip(1) {
                *slot = slope((secant(k - 1), width(k - 1)), (secant(k), width(k)));
            }
        }
        Self {
            knots,
            values,
            slopes,
        }
    }

    /// Value and derivative at `x` (clamped to the knot range).
    pub(crate) fn eval(&self, x: f64) -> (f64, f64) {
        let n = self.knots.len();
        if n < 2 {
            return (self.values.first().copied().unwrap_or(0.0), 0.0);
        }
        let k = segment_index(&self.knots, x);
        let h = self.knots[k + 1] - self.knots[k];
        let u = ((x - self.knots[k]) / h).clamp(0.0, 1.0);
        let (basis, basis_du) = hermite_basis(u);
        let value = basis[0] * self.values[k]
            + basis[1] * h * self.slopes[k]
            + basis[2] * self.values[k + 1]
            + basis[3] * h * self.slopes[k + 1];
        let derivative = (basis_du[0] * self.values[k]
            + basis_du[1] * h * self.slopes[k]
            + basis_du[2] * self.values[k + 1]
            + basis_du[3] * h * self.slopes[k + 1])
            / h;
        (value, derivative)
    }
}

/// Cubic Hermite basis h00, h10, h01, h11 at `u` and their derivatives.
fn hermite_basis(u: f64) -> ([f64; 4], [f64; 4]) {
    let u2 = u * u;
    let u3 = u2 * u;
    (
        [
            2.0 * u3 - 3.0 * u2 + 1.0,
            u3 - 2.0 * u2 + u,
            -2.0 * u3 + 3.0 * u2,
            u3 - u2,
        ],
        [
            6.0 * u2 - 6.0 * u,
            3.0 * u2 - 4.0 * u + 1.0,
            -6.0 * u2 + 6.0 * u,
            3.0 * u2 - 2.0 * u,
        ],
    )
}

/// Index k of the segment [knots[k], knots[k+1]] holding `x` (clamped to the first/last).
fn segment_index(knots: &[f64], x: f64) -> usize {
    let last_segment = knots.len().saturating_sub(2);
    knots
        .partition_point(|&knot| knot <= x)
        .saturating_sub(1)
        .min(last_segment)
}

/// A centripetal Catmull–Rom curve through 3-D points, timed by keyframe time.
#[derive(Debug, Clone)]
struct TimedCurve {
    times: Vec<f64>,
    points: Vec<DVec3>,
    /// Centripetal knots s_i (cumulative |ΔX|^½).
    knots: Vec<f64>,
    /// Tangents dX/ds at the knots.
    tangents: Vec<DVec3>,
    /// s(τ).
    clock: MonotoneCubic,
}

impl TimedCurve {
    fn new(times: &[f64], points: Vec<DVec3>) -> Self {
        let n = points.len();
        let mut knots = vec![0.0; n];
        for i in 1..n {
            knots[i] = knots[i - 1] + points[i].distance(points[i - 1]).sqrt();
        }
        // Difference quotient on segment i; a zero-length segment contributes no direction (the
        // limit of |ΔX|^½·unit(ΔX) as ΔX → 0).
        let quotient = |i: usize| {
            let ds = knots[i + 1] - knots[i];
            if ds > 0.0 {
                (points[i + 1] - points[i]) / ds
            } else {
                DVec3::ZERO
            }
        };
        // Catmull–Rom tangent between segments `before` and `after`: the difference quotients
        // weighted by the other segment's knot span.
        let blend = |before: usize, after: usize| {
            let span_before = knots[before + 1] - knots[before];
            let span_after = knots[after + 1] - knots[after];
            if span_before + span_after > 0.0 {
                (quotient(before) * span_after + quotient(after) * span_before)
                    / (span_before + span_after)
            } else {
                DVec3::ZERO
            }
        };
        let scale = points
            .iter()
            .map(|p| p.abs().max_element())
            .fold(0.0, f64::max);
        let closed = n >= 3 && points[0].distance(points[n - 1]) <= 1e-12 * scale.max(1.0);
        let mut tangents = vec![DVec3::ZERO; n];
        if n >= 2 {
            if closed {
                // A loop (e.g. a full orbit): the last segment precedes the first, so the
                // motion is C¹ across the seam too.
                tangents[0] = blend(n - 2, 0);
                tangents[n - 1] = tangents[0];
            } else {
                // Ends: the reflected phantom point X₋₁ = 2X₀ − X₁ makes the end tangent the
                // segment's own difference quotient.
                tangents[0] = quotient(0);
                tangents[n - 1] = quotient(n - 2);
            }
            for (i, slot) in tangents.iter_mut().enumerate().take(n - 1).skip(1) {
                *slot = blend(i - 1, i);
            }
        }
        let clock = MonotoneCubic::new(times.to_vec(), knots.clone(), closed);
        Self {
            times: times.to_vec(),
            points,
            knots,
            tangents,
            clock,
        }
    }

    /// Position and velocity dX/dτ at keyframe time `tau`.
    fn eval(&self, tau: f64) -> (DVec3, DVec3) {
        if self.points.len() < 2 {
            return (
                self.points.first().copied().unwrap_or(DVec3::ZERO),
                DVec3::ZERO,
            );
        }
        let i = segment_index(&self.times, tau);
        let (s, ds_dtau) = self.clock.eval(tau);
        let span = self.knots[i + 1] - self.knots[i];
        if span <= 0.0 {
            return (self.points[i], DVec3::ZERO);
        }
        let u = ((s - self.knots[i]) / span).clamp(0.0, 1.0);
        let (basis, basis_du) = hermite_basis(u);
        let (p0, p1) = (self.points[i], self.points[i + 1]);
        let (m0, m1) = (self.tangents[i] * span, self.tangents[i + 1] * span);
        let position = p0 * basis[0] + m0 * basis[1] + p1 * basis[2] + m1 * basis[3];
        let dx_du = p0 * basis_du[0] + m0 * basis_du[1] + p1 * basis_du[2] + m1 * basis_du[3];
        (position, dx_du / span * ds_dtau)
    }
}

/// Quaternion log of a unit quaternion: the pure quaternion (axis·half-angle) as a vector.
fn quat_log(q: DQuat) -> DVec3 {
    let v = DVec3::new(q.x, q.y, q.z);
    let sin_half = v.length();
    if sin_half < 1e-12 {
        return v;
    }
    v * (sin_half.atan2(q.w) / sin_half)
}

/// Quaternion exp of a pure quaternion given as a vector.
fn quat_exp(v: DVec3) -> DQuat {
    let half = v.length();
    if half < 1e-12 {
        return DQuat::from_xyzw(v.x, v.y, v.z, 1.0).normalize();
    }
    let axis = v * (half.sin() / half);
    DQuat::from_xyzw(axis.x, axis.y, axis.z, half.cos())
}

/// Keyframe orientations and their squad control points.
#[derive(Debug, Clone)]
struct OrientationCurve {
    rotations: Vec<DQuat>,
    controls: Vec<DQuat>,
}

impl OrientationCurve {
    fn new(keyframes: &[Keyframe]) -> Self {
        let mut rotations: Vec<DQuat> = Vec::with_capacity(keyframes.len());
        for key in keyframes {
            let mut q = key.orientation();
            // q and −q are the same rotation; pick the one nearer the previous keyframe so
            // interpolation takes the short way round.
            if let Some(previous) = rotations.last()
                && previous.dot(q) < 0.0
            {
                q = -q;
            }
            rotations.push(q);
        }
        let n = rotations.len();
        let controls = (0..n)
            .map(|i| {
                if i == 0 || i + 1 == n {
                    return rotations[i];
                }
                // Shoemake's inner control point a_i = q_i·exp(−(log(q_i⁻¹q_{i+1}) +
                // log(q_i⁻¹q_{i−1}))/4).
                let inverse = rotations[i].inverse();
                let next = quat_log(inverse * rotations[i + 1]);
                let previous = quat_log(inverse * rotations[i - 1]);
                (rotations[i] * quat_exp(-(next + previous) / 4.0)).normalize()
            })
            .collect();
        Self {
            rotations,
            controls,
        }
    }

    /// Orientation on segment `i` at fraction `u` ∈ [0, 1].
    fn eval(&self, i: usize, u: f64) -> DQuat {
        let (q0, q1) = (self.rotations[i], self.rotations[i + 1]);
        let (a0, mut a1) = (self.controls[i], self.controls[i + 1]);
        if a0.dot(a1) < 0.0 {
            a1 = -a1;
        }
        let outer = slerp_direct(q0, q1, u);
        let inner = slerp_direct(a0, a1, u);
        slerp_direct(outer, inner, 2.0 * u * (1.0 - u)).normalize()
    }
}

/// Spherical linear interpolation along the arc from `from` to `to` as given, without glam's
/// switch to the shorter arc: squad blends two moving quaternions, and switching arcs while
/// they move would make the camera jump (Shoemake 1985 uses plain slerp here).
fn slerp_direct(from: DQuat, to: DQuat, u: f64) -> DQuat {
    let cos_angle = from.dot(to).clamp(-1.0, 1.0);
    let angle = cos_angle.acos();
    let sin_angle = angle.sin();
    if sin_angle < 1e-9 {
        // (Nearly) the same rotation: linear blend is exact to first order.
        return (from * (1.0 - u) + to * u).normalize();
    }
    let w_from = ((1.0 - u) * angle).sin() / sin_angle;
    let w_to = (u * angle).sin() / sin_angle;
    from * w_from + to * w_to
}

/// Arc length of the position curve against keyframe time, for constant speed.
#[derive(Debug, Clone)]
struct ArcLengthTable {
    taus: Vec<f64>,
    lengths: Vec<f64>,
}

impl ArcLengthTable {
    fn new(curve: &TimedCurve) -> Self {
        let mut taus = vec![curve.times[0]];
        let mut lengths = vec![0.0];
        for window in curve.times.windows(2) {
            let step = (window[1] - window[0]) / ARC_SUBINTERVALS_PER_SEGMENT as f64;
            for j in 0..ARC_SUBINTERVALS_PER_SEGMENT {
                let from = window[0] + step * j as f64;
                let to = if j + 1 == ARC_SUBINTERVALS_PER_SEGMENT {
                    window[1]
                } else {
                    from + step
                };
                let total = lengths.last().copied().unwrap_or(0.0);
                lengths.push(total + gauss_legendre_length(curve, from, to));
                taus.push(to);
            }
        }
        Self { taus, lengths }
    }

    fn total(&self) -> f64 {
        self.lengths.last().copied().unwrap_or(0.0)
    }

    /// The keyframe time at which the arc length reaches `target`.
    fn invert(&self, curve: &TimedCurve, target: f64) -> f64 {
        let j = segment_index(&self.lengths, target);
        let (mut low, mut high) = (self.taus[j], self.taus[j + 1]);
        let (len_low, len_high) = (self.lengths[j], self.lengths[j + 1]);
        if len_high <= len_low {
            return low; // camera at rest here: every τ in the bracket has this length
        }
        let tolerance = 1e-13 * self.total().max(f64::MIN_POSITIVE);
        let mut tau = low + (target - len_low) / (len_high - len_low) * (high - low);
        for _ in 0..50 {
            let residual = len_low + gauss_legendre_length(curve, self.taus[j], tau) - target;
            if residual.abs() <= tolerance {
                break;
            }
            if residual > 0.0 {
                high = tau;
            } else {
                low = tau;
            }
            let speed = curve.eval(tau).1.length();
            let newton = tau - residual / speed;
            tau = if speed > 0.0 && newton > low && newton < high {
                newton
            } else {
                0.5 * (low + high)
            };
        }
        tau
    }
}

/// ∫ |dX/dτ| dτ over [from, to] by 5-point Gauss–Legendre.
fn gauss_legendre_length(curve: &TimedCurve, from: f64, to: f64) -> f64 {
    let half = 0.5 * (to - from);
    let middle = 0.5 * (to + from);
    GAUSS_LEGENDRE_5
        .iter()
        .map(|&(node, weight)| weight * curve.eval(middle + half * node).1.length())
        .sum::<f64>()
        * half
}

/// Everything precomputed to sample a camera path.
#[derive(Debug, Clone)]
pub(crate) struct PathInterpolator {
    times: Vec<f64>,
    position: TimedCurve,
    look_at: TimedCurve,
    orientation: OrientationCurve,
    fov: MonotoneCubic,
    brightness: Option<MonotoneCubic>,
    ease_start_s: f64,
    ease_end_s: f64,
    arc_length: Option<ArcLengthTable>,
}

impl PathInterpolator {
    /// Prepares interpolation of validated keyframes.
    pub(crate) fn new(keyframes: &[Keyframe], timing: &Timing) -> Result<Self, PathError> {
        let n = keyframes.len();
        if n < 2 {
            return Err(PathError::TooFewKeyframes { count: n });
        }
        let times: Vec<f64> = keyframes.iter().map(|k| k.time_s).collect();
        let duration = times[n - 1] - times[0];
        let position = TimedCurve::new(
            &times,
            keyframes.iter().map(|k| DVec3::from(k.position)).collect(),
        );
        let look_at = TimedCurve::new(
            &times,
            keyframes.iter().map(|k| DVec3::from(k.look_at)).collect(),
        );
        let fov = MonotoneCubic::new(
            times.clone(),
            keyframes.iter().map(|k| k.fov_deg).collect(),
            false,
        );
        let (bright_times, bright_values): (Vec<f64>, Vec<f64>) = keyframes
            .iter()
            .filter_map(|k| k.settings.brightness.map(|b| (k.time_s, b)))
            .unzip();
        let brightness = (!bright_times.is_empty())
            .then(|| MonotoneCubic::new(bright_times, bright_values, false));
        let half = 0.5 * duration;
        let (ease_start_s, ease_end_s, arc_length) = if timing.constant_speed {
            let table = ArcLengthTable::new(&position);
            if table.total() <= 0.0 {
                return Err(PathError::ConstantSpeedWithoutMotion);
            }
            let ease = timing.ease_s.min(half);
            (ease, ease, Some(table))
        } else {
            (
                timing.ease_s.min(half).min(times[1] - times[0]),
                timing.ease_s.min(half).min(times[n - 1] - times[n - 2]),
                None,
            )
        };
        Ok(Self {
            orientation: OrientationCurve::new(keyframes),
            times,
            position,
            look_at,
            fov,
            brightness,
            ease_start_s,
            ease_end_s,
            arc_length,
        })
    }

    /// E(t): path time with the ends eased, still in [t₀, t₁].
    fn eased(&self, time_s: f64) -> f64 {
        let start = self.times[0];
        let end = self.times[self.times.len() - 1];
        let t = time_s.clamp(start, end);
        // e(x) = x²(2 − x): e(0) = 0, e'(0) = 0, e(1) = 1, e'(1) = 1.
        let ease = |x: f64| x * x * (2.0 - x);
        if self.ease_start_s > 0.0 && t < start + self.ease_start_s {
            start + self.ease_start_s * ease((t - start) / self.ease_start_s)
        } else if self.ease_end_s > 0.0 && t > end - self.ease_end_s {
            end - self.ease_end_s * ease((end - t) / self.ease_end_s)
        } else {
            t
        }
    }

    /// Keyframe time τ at path time `time_s`.
    pub(crate) fn keyframe_clock(&self, time_s: f64) -> f64 {
        let eased = self.eased(time_s);
        let Some(table) = &self.arc_length else {
            return eased;
        };
        let start = self.times[0];
        let duration = self.times[self.times.len() - 1] - start;
        let fraction = if duration > 0.0 {
            (eased - start) / duration
        } else {
            0.0
        };
        table.invert(&self.position, fraction * table.total())
    }

    /// Pose and settings at path time `time_s`.
    pub(crate) fn sample(
        &self,
        keyframes: &[Keyframe],
        time_s: f64,
        orthographic: bool,
    ) -> PathSample {
        let start = self.times[0];
        let end = self.times[self.times.len() - 1];
        let time_s = time_s.clamp(start, end);
        let tau = self.keyframe_clock(time_s);
        let (position, _) = self.position.eval(tau);
        let (mut look_at, _) = self.look_at.eval(tau);
        let i = segment_index(&self.times, tau);
        let u = ((tau - self.times[i]) / (self.times[i + 1] - self.times[i])).clamp(0.0, 1.0);
        let rotation = self.orientation.eval(i, u);
        let mut forward = (look_at - position).normalize_or_zero();
        if forward == DVec3::ZERO {
            // The look-at track crosses the eye: look where the interpolated orientation looks.
            forward = rotation * DVec3::NEG_Z;
            let distance = keyframes[i].look_at_distance().max(f64::MIN_POSITIVE);
            look_at = position + forward * distance;
        }
        let rotated_up = rotation * DVec3::Y;
        let mut up = (rotated_up - forward * rotated_up.dot(forward)).normalize_or_zero();
        if up == DVec3::ZERO {
            up = rotated_up;
        }
        let settings = RenderSettings {
            brightness: self.brightness.as_ref().map(|curve| curve.eval(tau).0),
        };
        PathSample {
            time_s,
            keyframe_time_s: tau,
            pose: CameraPose {
                position: position.to_array(),
                look_at: look_at.to_array(),
                up: up.to_array(),
                fov_deg: self.fov.eval(tau).0,
                orthographic,
            },
            settings,
        }
    }
}

impl Keyframe {
    /// Distance from the eye to the look-at point.
    fn look_at_distance(&self) -> f64 {
        DVec3::from(self.look_at).distance(DVec3::from(self.position))
    }
}

#[cfg(test)]
#[path = "interpolate_tests.rs"]
mod tests;
