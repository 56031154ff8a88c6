//! Camera path interpolation: keyframes hit exactly, C¹ positions, no orientation flips,
//! constant speed within 1 %, eased ends, presets.

use glam::DVec3;
use haloscope::movie::presets::{self, HaloStop, Orbit, Zoom};
use haloscope::movie::{CameraPath, Keyframe, RenderSettings, Timing};

/// An irregular path: uneven times, uneven distances, a sharp turn, rolls and fov changes.
fn irregular_keyframes() -> Vec<Keyframe> {
    let key = |t: f64, p: [f64; 3], l: [f64; 3], up: [f64; 3], fov: f64, b: Option<f64>| Keyframe {
        time_s: t,
        position: p,
        look_at: l,
        up,
        fov_deg: fov,
        settings: RenderSettings { brightness: b },
    };
    vec![
        key(
            0.0,
            [0.0, 0.0, 10.0],
            [0.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            45.0,
            Some(1.0),
        ),
        key(
            1.5,
            [4.0, 1.0, 8.0],
            [0.5, 0.0, 0.0],
            [0.2, 1.0, 0.0],
            40.0,
            None,
        ),
        key(
            2.0,
            [5.0, 1.5, 7.5],
            [1.0, 0.5, 0.0],
            [1.0, 1.0, 0.0],
            30.0,
            Some(2.0),
        ),
        key(
            4.5,
            [9.0, -3.0, 1.0],
            [1.0, 0.0, -1.0],
            [0.0, 0.0, 1.0],
            60.0,
            None,
        ),
        key(
            5.0,
            [9.5, -3.0, 0.0],
            [2.0, 0.0, -1.0],
            [-1.0, 0.2, 1.0],
            50.0,
            Some(0.5),
        ),
        key(
            8.0,
            [0.0, 0.0, -10.0],
            [0.0, 0.0, 0.0],
            [0.0, -1.0, 0.0],
            45.0,
            None,
        ),
    ]
}

fn path(constant_speed: bool, ease_s: f64) -> CameraPath {
    CameraPath::new(
        irregular_keyframes(),
        Timing {
            constant_speed,
            ease_s,
        },
        false,
    )
    .expect("valid path")
}

fn position(path: &CameraPath, t: f64) -> DVec3 {
    DVec3::from(path.sample(t).pose.position)
}

fn look_at(path: &CameraPath, t: f64) -> DVec3 {
    DVec3::from(path.sample(t).pose.look_at)
}

#[test]
fn keyframes_are_passed_exactly_at_their_times() {
    for ease_s in [0.0, 0.7] {
        let path = path(false, ease_s);
        for key in path.keyframes() {
            let sample = path.sample(key.time_s);
            let p = DVec3::from(sample.pose.position);
            let l = DVec3::from(sample.pose.look_at);
            assert!(
                p.distance(DVec3::from(key.position)) < 1e-12,
                "{p} vs {key:?}"
            );
            assert!(
                l.distance(DVec3::from(key.look_at)) < 1e-12,
                "{l} vs {key:?}"
            );
            assert!((sample.pose.fov_deg - key.fov_deg).abs() < 1e-12);
            if let Some(b) = key.settings.brightness {
                assert!((sample.settings.brightness.expect("brightness") - b).abs() < 1e-12);
            }
            // The keyframe's own up, made orthogonal to its view direction.
            let forward = (DVec3::from(key.look_at) - DVec3::from(key.position)).normalize();
            let up = DVec3::from(key.up);
            let expected_up = (up - forward * up.dot(forward)).normalize();
            let got_up = DVec3::from(sample.pose.up);
            assert!(
                got_up.distance(expected_up) < 1e-9,
                "up {got_up} vs {expected_up}"
            );
        }
    }
}

#[test]
fn constant_speed_still_passes_every_keyframe_position() {
    let path = path(true, 0.5);
    for key in path.keyframes() {
        // The keyframe clock is monotone: find the path time at which it reaches the keyframe.
        let (mut low, mut high) = (path.start_s(), path.end_s());
        for _ in 0..200 {
            let mid = 0.5 * (low + high);
            if path.keyframe_clock(mid) < key.time_s {
                low = mid;
            } else {
                high = mid;
            }
        }
        let p = position(&path, high);
        assert!(
            p.distance(DVec3::from(key.position)) < 1e-6,
            "{p} vs {key:?}"
        );
    }
}

/// One-sided difference quotients on both sides of every interior keyframe agree to O(h).
#[test]
fn positions_and_look_at_are_c1_at_the_knots() {
    let h = 1e-6;
    for (constant_speed, ease_s) in [(false, 0.0), (false, 1.0), (true, 0.0), (true, 1.0)] {
        let path = path(constant_speed, ease_s);
        let knots: Vec<f64> = if constant_speed {
            // The knots in path time: where the keyframe clock reaches each keyframe time.
            path.keyframes()[1..path.keyframes().len() - 1]
                .iter()
                .map(|key| {
                    let (mut low, mut high) = (path.start_s(), path.end_s());
                    for _ in 0..200 {
                        let mid = 0.5 * (low + high);
                        if path.keyframe_clock(mid) < key.time_s {
                            low = mid;
                        } else {
                            high = mid;
                        }
                    }
                    high
                })
                .collect()
        } else {
            path.keyframes()[1..path.keyframes().len() - 1]
                .iter()
                .map(|k| k.time_s)
                .collect()
        };
        for t in knots {
            for channel in [position, look_at] {
                let left = (channel(&path, t) - channel(&path, t - h)) / h;
                let right = (channel(&path, t + h) - channel(&path, t)) / h;
                let scale = left.length().max(right.length()).max(1.0);
                assert!(
                    (left - right).length() < 1e-3 * scale,
                    "kink at t = {t} (constant_speed {constant_speed}, ease {ease_s}): {left} vs {right}"
                );
            }
        }
    }
}

#[test]
fn a_kinked_polyline_would_fail_the_c1_check() {
    // Guard on the check above: a piecewise-linear motion through the same knot has a jump in
    // velocity far above the tolerance.
    let h = 1e-6;
    let linear = |t: f64| {
        if t < 1.5 {
            DVec3::new(4.0, 1.0, -2.0) * t / 1.5
        } else {
            DVec3::new(4.0, 1.0, -2.0) + DVec3::new(1.0, 0.5, -0.5) * (t - 1.5) / 0.5
        }
    };
    let left = (linear(1.5) - linear(1.5 - h)) / h;
    let right = (linear(1.5 + h) - linear(1.5)) / h;
    assert!((left - right).length() > 1e-3 * left.length().max(right.length()));
}

#[test]
fn the_up_vector_never_flips() {
    // Keyframes whose orientations lie in opposite quaternion hemispheres and roll by up to 180°.
    let mut keyframes = irregular_keyframes();
    keyframes.push(Keyframe {
        time_s: 9.0,
        position: [0.0, 0.5, -11.0],
        look_at: [0.0, 0.0, 0.0],
        up: [0.0, 1.0, 0.0],
        fov_deg: 45.0,
        settings: RenderSettings::default(),
    });
    for constant_speed in [false, true] {
        let path = CameraPath::new(
            keyframes.clone(),
            Timing {
                constant_speed,
                ease_s: 0.5,
            },
            false,
        )
        .expect("valid");
        let n = 4000;
        let mut previous: Option<DVec3> = None;
        let mut min_dot: f64 = 1.0;
        for i in 0..=n {
            let t = path.start_s() + path.duration_s() * f64::from(i) / f64::from(n);
            let pose = path.sample(t).pose;
            let up = DVec3::from(pose.up);
            assert!((up.length() - 1.0).abs() < 1e-9, "up not unit at {t}");
            assert!(up.dot(pose.forward()).abs() < 1e-9, "up not ⟂ view at {t}");
            if let Some(previous) = previous {
                min_dot = min_dot.min(previous.dot(up));
            }
            previous = Some(up);
        }
        assert!(min_dot > 0.0, "up flipped (min dot {min_dot})");
        assert!(
            min_dot > 0.99,
            "up jumps between samples (min dot {min_dot})"
        );
    }
}

/// Speeds between consecutive samples of `path` over path times [from, to].
fn speeds(path: &CameraPath, from: f64, to: f64, n: usize) -> Vec<f64> {
    let dt = (to - from) / n as f64;
    (0..n)
        .map(|i| {
            let t = from + dt * i as f64;
            position(path, t + dt).distance(position(path, t)) / dt
        })
        .collect()
}

fn variation(speeds: &[f64]) -> f64 {
    let max = speeds.iter().copied().fold(f64::MIN, f64::max);
    let min = speeds.iter().copied().fold(f64::MAX, f64::min);
    max / min - 1.0
}

#[test]
fn constant_speed_varies_by_less_than_one_percent() {
    let steady = path(true, 0.0);
    let v = variation(&speeds(&steady, steady.start_s(), steady.end_s(), 1000));
    assert!(v < 0.01, "constant-speed variation {v}");
    // With easing, the cruise between the ease windows is steady too.
    let eased = path(true, 1.0);
    let v = variation(&speeds(
        &eased,
        eased.start_s() + 1.0,
        eased.end_s() - 1.0,
        1000,
    ));
    assert!(v < 0.01, "eased constant-speed cruise variation {v}");
    // The same keyframes on their own timing are far from steady (the check can fail).
    let timed = path(false, 0.0);
    let v = variation(&speeds(&timed, timed.start_s(), timed.end_s(), 1000));
    assert!(v > 0.5, "keyframe timing unexpectedly steady: {v}");
}

#[test]
fn easing_starts_and_stops_at_rest() {
    for constant_speed in [false, true] {
        let path = path(constant_speed, 1.0);
        let (start, end) = (path.start_s(), path.end_s());
        let h = 1e-4;
        let cruise = speeds(&path, start + 2.0, end - 2.0, 100)
            .into_iter()
            .fold(0.0, f64::max);
        let first = position(&path, start + h).distance(position(&path, start)) / h;
        let last = position(&path, end).distance(position(&path, end - h)) / h;
        assert!(
            first < 1e-3 * cruise,
            "start speed {first} vs cruise {cruise}"
        );
        assert!(last < 1e-3 * cruise, "end speed {last} vs cruise {cruise}");
    }
    // Without easing the camera is already moving at the start.
    let path = path(false, 0.0);
    let first = position(&path, 1e-4).distance(position(&path, 0.0)) / 1e-4;
    assert!(first > 1.0, "start speed {first}");
}

#[test]
fn orbit_stays_on_its_circle_and_looks_at_the_centre() {
    let orbit = Orbit {
        center: [1.0, 2.0, 3.0],
        radius: 5.0,
        axis: [0.0, 0.0, 1.0],
        start_direction: [1.0, 0.0, 0.0],
        elevation_deg: 20.0,
        turns: 1.0,
        duration_s: 12.0,
        fov_deg: 50.0,
    };
    let path = presets::orbit(&orbit, 0.0).expect("orbit");
    let centre = DVec3::from(orbit.center);
    let height = 5.0 * 20f64.to_radians().sin();
    for i in 0..=500 {
        let pose = path.sample(12.0 * f64::from(i) / 500.0).pose;
        let p = DVec3::from(pose.position);
        assert!(
            (p.distance(centre) - 5.0).abs() < 5.0 * 1e-3,
            "radius at {i}: {}",
            p.distance(centre)
        );
        assert!((p.z - centre.z - height).abs() < 1e-9, "height at {i}");
        assert!(DVec3::from(pose.look_at).distance(centre) < 1e-12);
    }
    let v = variation(&speeds(&path, 0.0, 12.0, 600));
    assert!(v < 0.01, "orbit speed variation {v}");
    // A full turn ends where it started.
    assert!(position(&path, 0.0).distance(position(&path, 12.0)) < 1e-9);
}

#[test]
fn zoom_ends_at_the_framing_distance_without_overshoot() {
    let zoom = Zoom {
        center: [10.0, 0.0, 0.0],
        radius: 0.5,
        direction: [0.0, 1.0, 1.0],
        start_distance: 100.0,
        end_distance: None,
        up: [0.0, 0.0, 1.0],
        duration_s: 6.0,
        fov_deg: 45.0,
    };
    let path = presets::zoom_to_halo(&zoom, 1.0).expect("zoom");
    let end = presets::framing_distance(0.5, 45.0);
    let centre = DVec3::from(zoom.center);
    let mut previous = f64::INFINITY;
    for i in 0..=300 {
        let d = position(&path, 6.0 * f64::from(i) / 300.0).distance(centre);
        assert!(d <= previous + 1e-12, "distance grows at {i}");
        assert!(d >= end - 1e-9, "overshoot at {i}: {d} < {end}");
        previous = d;
    }
    assert!((previous - end).abs() < 1e-9);
    // Framing: the halo's diameter is half the view width at the end.
    let pose = path.sample(6.0).pose;
    assert!((pose.view_width() - 4.0 * 0.5).abs() < 1e-9);
}

#[test]
fn fly_along_halos_looks_at_each_halo_in_turn() {
    let halos = [
        HaloStop {
            center: [0.0, 0.0, 0.0],
            radius: 1.0,
        },
        HaloStop {
            center: [20.0, 5.0, 0.0],
            radius: 2.0,
        },
        HaloStop {
            center: [40.0, 0.0, 3.0],
            radius: 0.5,
        },
    ];
    let path = presets::fly_along_halos(&halos, [0.0, 0.0, 1.0], 45.0, 20.0, 1.0).expect("fly");
    for (key, halo) in path.keyframes().iter().zip(&halos) {
        assert_eq!(key.look_at, halo.center);
        let d = DVec3::from(key.position).distance(DVec3::from(halo.center));
        assert!((d - presets::framing_distance(halo.radius, 45.0)).abs() < 1e-9);
    }
    let v = variation(&speeds(&path, 1.0, 19.0, 500));
    assert!(v < 0.01, "fly-by speed variation {v}");
}

#[test]
fn presets_reject_impossible_parameters() {
    let mut orbit = Orbit {
        center: [0.0; 3],
        radius: 1.0,
        axis: [0.0, 0.0, 1.0],
        start_direction: [0.0, 0.0, 1.0],
        elevation_deg: 0.0,
        turns: 1.0,
        duration_s: 1.0,
        fov_deg: 45.0,
    };
    let err = presets::orbit(&orbit, 0.0).expect_err("start along axis");
    assert!(err.to_string().contains("start_direction"), "{err}");
    orbit.start_direction = [1.0, 0.0, 0.0];
    orbit.radius = 0.0;
    let err = presets::orbit(&orbit, 0.0).expect_err("zero radius");
    assert!(err.to_string().contains("radius"), "{err}");
    let err = presets::fly_along_halos(&[], [0.0, 0.0, 1.0], 45.0, 1.0, 0.0).expect_err("none");
    assert!(err.to_string().contains("at least 2"), "{err}");
}
