//! Tests of camera-path interpolation (`interpolate.rs`).

use super::*;

#[test]
fn monotone_cubic_hits_knots_and_never_overshoots() {
    let curve = MonotoneCubic::new(vec![0.0, 1.0, 2.0, 5.0], vec![0.0, 1.0, 1.0, 4.0], false);
    for (x, y) in [(0.0, 0.0), (1.0, 1.0), (2.0, 1.0), (5.0, 4.0)] {
        assert_eq!(curve.eval(x).0, y);
    }
    // Flat between 1 and 2: no bump above 1 (PCHIP keeps the data's monotonicity).
    for i in 0..=100 {
        let x = 1.0 + f64::from(i) / 100.0;
        assert!((curve.eval(x).0 - 1.0).abs() < 1e-15, "at {x}");
    }
    let mut previous = f64::NEG_INFINITY;
    for i in 0..=500 {
        let y = curve.eval(f64::from(i) / 100.0).0;
        assert!(y >= previous, "not monotone at {i}");
        previous = y;
    }
}

#[test]
fn quaternion_exp_inverts_log() {
    let q = DQuat::from_axis_angle(DVec3::new(1.0, 2.0, -0.5).normalize(), 2.3);
    let back = quat_exp(quat_log(q));
    assert!(back.dot(q) > 1.0 - 1e-12, "{back:?} vs {q:?}");
    assert!((quat_log(q).length() - 1.15).abs() < 1e-12);
}
