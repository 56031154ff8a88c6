//! Frame export and MP4: 10 frames → 10 PNGs and a 10-sample MP4 of the requested size that
//! decodes back to the frames; resume without re-rendering; no MP4 left behind on failure.

mod movie_common;

use haloscope::data::demo::demo_snapshot;
use haloscope::jobs::{CancelToken, Progress};
use haloscope::movie::encode::Mp4Encoder;
use haloscope::movie::{
    CameraPath, ExportError, FramePlan, Keyframe, Mp4Settings, Timing, export_frames,
    frame_file_name,
};
use image::RgbImage;
use movie_common::{
    assert_usual_file_mode, decode_frames, luma_psnr, paint_points, psnr, read_mp4,
};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

fn demo_path() -> CameraPath {
    let keyframes = vec![
        Keyframe::new(0.0, [0.5, 0.5, 2.5], [0.5, 0.5, 0.5]),
        Keyframe::new(1.0, [1.8, 0.6, 1.2], [0.5, 0.5, 0.5]),
        Keyframe::new(2.0, [0.9, 0.5, 0.9], [0.4, 0.45, 0.4]),
    ];
    CameraPath::new(
        keyframes,
        Timing {
            constant_speed: false,
            ease_s: 0.3,
        },
        false,
    )
    .expect("valid")
}

fn demo_points() -> Vec<[f32; 3]> {
    demo_snapshot(20_000, 7)
        .species
        .iter()
        .flat_map(|s| s.positions.iter().copied())
        .collect()
}

fn plan(width: u32, height: u32) -> FramePlan {
    FramePlan {
        n_frames: 10,
        fps: 25.0,
        width,
        height,
    }
}

fn pngs_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn ten_frames_make_ten_pngs_and_a_ten_frame_mp4() {
    let points = demo_points();
    let path = demo_path();
    let dir = tempfile::tempdir().expect("tempdir");
    let frames_dir = dir.path().join("frames");
    let mp4 = dir.path().join("movie.mp4");
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    let progress = Progress::new(
        move |u| {
            sink.lock()
                .expect("lock")
                .push((u.stage.clone(), u.done, u.total))
        },
        CancelToken::new(),
    );
    let mut times = Vec::new();
    let summary = export_frames(
        &path,
        &plan(96, 64),
        &frames_dir,
        Some((&mp4, &Mp4Settings::default())),
        |sample, index| {
            times.push(sample.time_s);
            Ok::<_, std::io::Error>(paint_points(&sample.pose, &points, 96, 64, index))
        },
        &progress,
    )
    .expect("export");
    assert_eq!(
        (summary.n_frames, summary.rendered, summary.skipped),
        (10, 10, 0)
    );
    // The frames sample the whole path evenly, both ends included.
    for (i, t) in times.iter().enumerate() {
        assert!((t - 2.0 * i as f64 / 9.0).abs() < 1e-12);
    }
    let expected: Vec<String> = (0..10).map(frame_file_name).collect();
    assert_eq!(pngs_in(&frames_dir), expected);
    assert_eq!(expected[3], "frame_00003.png");
    // PNGs hold exactly what the renderer returned.
    let originals: Vec<RgbImage> = (0..10)
        .map(|i| {
            let sample = path.sample(plan(96, 64).time_of_frame(&path, i));
            paint_points(&sample.pose, &points, 96, 64, i)
        })
        .collect();
    for (i, original) in originals.iter().enumerate() {
        let png = image::open(frames_dir.join(frame_file_name(i)))
            .expect("png")
            .into_rgb8();
        assert_eq!(&png, original, "frame {i}");
    }
    // The container: ftyp, then media data and the index; one video track of 10 samples.
    let bytes = std::fs::read(&mp4).expect("mp4 written");
    assert_usual_file_mode(&mp4);
    let facts = read_mp4(&bytes);
    assert_eq!(facts.top_level.first().map(String::as_str), Some("ftyp"));
    assert!(facts.top_level.iter().any(|k| k == "mdat"));
    assert!(facts.top_level.iter().any(|k| k == "moov"));
    assert_eq!(facts.sample_count, 10);
    assert_eq!(facts.tkhd_size, (96, 64));
    assert_eq!(facts.avc1_size, (96, 64));
    assert_eq!(facts.timescale, 90_000);
    assert_eq!(facts.duration, 10 * 90_000 / 25);
    assert_eq!(summary.mp4.as_ref().map(|m| m.frames), Some(10));
    assert_eq!(
        summary.mp4.as_ref().map(|m| m.bytes),
        Some(bytes.len() as u64)
    );
    // Decoding gives the frames back (lossy, but close).
    let decoded = decode_frames(&bytes);
    assert_eq!(decoded.len(), 10);
    for (i, (frame, original)) in decoded.iter().zip(&originals).enumerate() {
        assert_eq!(frame.dimensions(), (96, 64));
        // Single-pixel dots are the worst case for 4:2:0 video; still well above noise, and
        // each decoded frame matches its own original better than any other frame.
        let db = luma_psnr(original, frame);
        assert!(db > 25.0, "frame {i}: luma PSNR {db:.1} dB");
        let best = originals
            .iter()
            .enumerate()
            .max_by(|a, b| psnr(a.1, frame).total_cmp(&psnr(b.1, frame)))
            .map(|(j, _)| j);
        assert_eq!(best, Some(i), "decoded frame {i} looks like frame {best:?}");
    }
    // Progress: rendering 0..10 of 10, then encoding.
    let reports = reports.lock().expect("lock");
    let rendering: Vec<u64> = reports
        .iter()
        .filter(|r| r.0 == "rendering")
        .map(|r| r.1)
        .collect();
    assert_eq!(rendering, (0..=10).collect::<Vec<u64>>());
    assert_eq!(reports.last(), Some(&("encoding".to_owned(), 1, 1)));
    // Nothing temporary is left behind.
    assert!(pngs_in(dir.path()).iter().all(|n| !n.ends_with(".part")));
}

#[test]
fn an_interrupted_export_resumes_without_re_rendering() {
    let dir = tempfile::tempdir().expect("tempdir");
    let frames_dir = dir.path().join("frames");
    let mp4 = dir.path().join("movie.mp4");
    let path = demo_path();
    let flat = |index: usize| RgbImage::from_pixel(64, 48, image::Rgb([index as u8 * 20, 90, 30]));

    // First run: the renderer fails at frame 4.
    let calls = AtomicUsize::new(0);
    let err = export_frames(
        &path,
        &plan(64, 48),
        &frames_dir,
        Some((&mp4, &Mp4Settings::default())),
        |_, index| {
            calls.fetch_add(1, Ordering::Relaxed);
            if index == 4 {
                Err(std::io::Error::other("GPU fell off the bus"))
            } else {
                Ok(flat(index))
            }
        },
        &Progress::none(),
    )
    .expect_err("render failure");
    assert!(matches!(err, ExportError::Render { frame: 4, .. }), "{err}");
    assert!(err.to_string().contains("GPU fell off the bus"));
    assert_eq!(calls.load(Ordering::Relaxed), 5);
    assert_eq!(
        pngs_in(&frames_dir),
        (0..4).map(frame_file_name).collect::<Vec<_>>()
    );
    // No MP4 under the final name, and no temporary file either.
    assert!(!mp4.exists());
    assert_eq!(pngs_in(dir.path()), vec!["frames".to_owned()]);

    // Second run: cancelled after frame 6 is rendered.
    let cancel = CancelToken::new();
    let rendered = Mutex::new(Vec::new());
    let err = export_frames(
        &path,
        &plan(64, 48),
        &frames_dir,
        Some((&mp4, &Mp4Settings::default())),
        |_, index| {
            rendered.lock().expect("lock").push(index);
            if index == 6 {
                cancel.cancel();
            }
            Ok::<_, std::io::Error>(flat(index))
        },
        &Progress::with_cancel(cancel.clone()),
    )
    .expect_err("cancelled");
    assert!(matches!(err, ExportError::Cancelled(_)), "{err}");
    assert_eq!(*rendered.lock().expect("lock"), vec![4, 5, 6]);
    assert!(!mp4.exists());
    assert_eq!(
        pngs_in(&frames_dir),
        (0..7).map(frame_file_name).collect::<Vec<_>>()
    );

    // A frame of the wrong size on disk is not a finished frame.
    flat(0)
        .save(frames_dir.join(frame_file_name(8)))
        .expect("write");
    image::RgbImage::new(10, 10)
        .save(frames_dir.join(frame_file_name(8)))
        .expect("write");

    // Third run: only frames 7, 8, 9 are rendered; the MP4 holds all 10.
    let rendered = Mutex::new(Vec::new());
    let summary = export_frames(
        &path,
        &plan(64, 48),
        &frames_dir,
        Some((&mp4, &Mp4Settings::default())),
        |_, index| {
            rendered.lock().expect("lock").push(index);
            Ok::<_, std::io::Error>(flat(index))
        },
        &Progress::none(),
    )
    .expect("resumed");
    assert_eq!(*rendered.lock().expect("lock"), vec![7, 8, 9]);
    assert_eq!((summary.rendered, summary.skipped), (3, 7));
    let bytes = std::fs::read(&mp4).expect("mp4");
    let facts = read_mp4(&bytes);
    assert_eq!(facts.sample_count, 10);
    let decoded = decode_frames(&bytes);
    assert_eq!(decoded.len(), 10);
    for (i, frame) in decoded.iter().enumerate() {
        assert!(psnr(&flat(i), frame) > 30.0, "frame {i}");
    }

    // Fourth run without MP4: nothing left to render.
    let summary = export_frames(
        &path,
        &plan(64, 48),
        &frames_dir,
        None,
        |_, _| -> Result<RgbImage, std::io::Error> { panic!("nothing should be rendered") },
        &Progress::none(),
    )
    .expect("all on disk");
    assert_eq!((summary.rendered, summary.skipped), (0, 10));
}

#[test]
fn a_failed_export_keeps_an_older_mp4_intact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mp4 = dir.path().join("movie.mp4");
    std::fs::write(&mp4, b"previous movie").expect("write");
    let err = export_frames(
        &demo_path(),
        &plan(64, 48),
        &dir.path().join("frames"),
        Some((&mp4, &Mp4Settings::default())),
        |_, index| {
            // Wrong size at frame 2: the export stops there.
            let width = if index == 2 { 66 } else { 64 };
            Ok::<_, std::io::Error>(RgbImage::new(width, 48))
        },
        &Progress::none(),
    )
    .expect_err("wrong size");
    assert!(
        err.to_string()
            .contains("frame 2: renderer returned 66×48, expected 64×48"),
        "{err}"
    );
    assert_eq!(std::fs::read(&mp4).expect("still there"), b"previous movie");
    let leftovers: Vec<String> = pngs_in(dir.path());
    assert_eq!(leftovers, vec!["frames".to_owned(), "movie.mp4".to_owned()]);
}

#[test]
fn odd_frame_sizes_are_padded_to_even() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mp4 = dir.path().join("odd.mp4");
    let mut encoder =
        Mp4Encoder::create(&mp4, 33, 17, 30.0, &Mp4Settings::default()).expect("encoder");
    assert_eq!(encoder.encoded_size(), (34, 18));
    for i in 0..3u8 {
        encoder
            .push_frame(&RgbImage::from_pixel(
                33,
                17,
                image::Rgb([i * 60, 100, 200]),
            ))
            .expect("frame");
    }
    assert!(!mp4.exists(), "the MP4 appears only when finished");
    let summary = encoder.finish().expect("finish");
    assert_eq!((summary.width, summary.height, summary.frames), (34, 18, 3));
    let bytes = std::fs::read(&mp4).expect("mp4");
    let facts = read_mp4(&bytes);
    assert_eq!(
        (facts.sample_count, facts.tkhd_size, facts.avc1_size),
        (3, (34, 18), (34, 18))
    );
    assert_eq!(facts.duration, 3 * 3000);
}

#[test]
fn bad_plans_and_sizes_are_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = FramePlan {
        n_frames: 0,
        fps: 30.0,
        width: 8,
        height: 8,
    };
    let err = export_frames(
        &demo_path(),
        &bad,
        dir.path(),
        None,
        |_, _| Ok::<_, std::io::Error>(RgbImage::new(8, 8)),
        &Progress::none(),
    )
    .expect_err("no frames");
    assert!(matches!(err, ExportError::InvalidPlan(_)));
    let err = Mp4Encoder::create(
        &dir.path().join("x.mp4"),
        0,
        10,
        30.0,
        &Mp4Settings::default(),
    )
    .expect_err("zero width");
    assert!(
        err.to_string().contains("x.mp4: cannot encode 0×10"),
        "{err}"
    );
    let err = Mp4Encoder::create(
        &dir.path().join("x.mp4"),
        8,
        8,
        0.0,
        &Mp4Settings::default(),
    )
    .expect_err("zero fps");
    assert!(err.to_string().contains("0 frames/s"), "{err}");
    let missing_dir = dir.path().join("no/such/dir/x.mp4");
    let err = Mp4Encoder::create(&missing_dir, 8, 8, 30.0, &Mp4Settings::default())
        .expect_err("no folder");
    assert!(
        err.to_string()
            .starts_with(&missing_dir.display().to_string()),
        "{err}"
    );
}

#[test]
fn real_time_plans_cover_the_path_at_the_frame_rate() {
    let path = demo_path();
    let plan = FramePlan::real_time(&path, 30.0, 8, 8);
    assert_eq!(plan.n_frames, 61);
    assert!((plan.time_of_frame(&path, 30) - 1.0).abs() < 1e-12);
    assert_eq!(plan.time_of_frame(&path, 60), 2.0);
    let stretched = FramePlan::with_duration(5.0, 24.0, 8, 8);
    assert_eq!(stretched.n_frames, 120);
    assert_eq!(stretched.time_of_frame(&path, 119), 2.0);
}
