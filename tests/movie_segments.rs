//! The MP4 encoder codes key-frame segments on several threads: the movie must still hold every
//! frame in order, with an IDR frame exactly at each key-frame interval, and decode back to the
//! frames it was given.

mod movie_common;

use haloscope::movie::Mp4Settings;
use haloscope::movie::encode::Mp4Encoder;
use image::{Rgb, RgbImage};
use movie_common::{decode_frames, psnr, read_mp4, samples};

/// A frame that differs from every other: a background shade from the index and a square whose
/// place moves with it.
fn frame(index: usize, width: u32, height: u32) -> RgbImage {
    let shade = (index * 9 % 200) as u8 + 20;
    let (x0, y0) = (
        (index as u32 * 5) % (width - 16),
        (index as u32 * 3) % (height - 16),
    );
    RgbImage::from_fn(width, height, |x, y| {
        if (x0..x0 + 16).contains(&x) && (y0..y0 + 16).contains(&y) {
            Rgb([250, 240, 30])
        } else {
            Rgb([shade, 255 - shade, (x * 2) as u8])
        }
    })
}

/// The NAL unit types of one AVC sample (4-byte length prefixes).
fn nal_types(sample: &[u8]) -> Vec<u8> {
    let mut types = Vec::new();
    let mut at = 0;
    while at + 4 < sample.len() {
        let len = u32::from_be_bytes(sample[at..at + 4].try_into().expect("4 bytes")) as usize;
        types.push(sample[at + 4] & 0x1f);
        at += 4 + len;
    }
    types
}

#[test]
fn segments_coded_side_by_side_make_one_movie_in_order() {
    let (width, height, n) = (96, 64, 23);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("segments.mp4");
    let settings = Mp4Settings {
        keyframe_interval: 4,
    };
    let mut encoder = Mp4Encoder::create(&path, width, height, 24.0, &settings).expect("create");
    let originals: Vec<RgbImage> = (0..n).map(|i| frame(i, width, height)).collect();
    for original in &originals {
        encoder.push_frame(original).expect("push");
    }
    let summary = encoder.finish().expect("finish");
    assert_eq!(summary.frames, n);

    let bytes = std::fs::read(&path).expect("mp4");
    let facts = read_mp4(&bytes);
    assert_eq!(facts.sample_count as usize, n);
    // An IDR slice (type 5) opens every segment and nothing else.
    for (i, sample) in samples(&bytes, &facts).into_iter().enumerate() {
        let types = nal_types(sample);
        assert_eq!(
            types.contains(&5),
            i % 4 == 0,
            "sample {i} has NAL types {types:?}"
        );
    }
    let decoded = decode_frames(&bytes);
    assert_eq!(decoded.len(), n);
    for (i, frame) in decoded.iter().enumerate() {
        let own = psnr(&originals[i], frame);
        assert!(own > 25.0, "frame {i}: PSNR {own:.1} dB");
        let best = originals
            .iter()
            .enumerate()
            .max_by(|a, b| psnr(a.1, frame).total_cmp(&psnr(b.1, frame)))
            .map(|(j, _)| j);
        assert_eq!(best, Some(i), "decoded frame {i} looks like frame {best:?}");
    }
}

#[test]
fn one_key_frame_only_is_one_segment() {
    let (width, height, n) = (64, 48, 7);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("single.mp4");
    let settings = Mp4Settings {
        keyframe_interval: 0,
    };
    let mut encoder = Mp4Encoder::create(&path, width, height, 30.0, &settings).expect("create");
    for i in 0..n {
        encoder.push_frame(&frame(i, width, height)).expect("push");
    }
    encoder.finish().expect("finish");
    let bytes = std::fs::read(&path).expect("mp4");
    let facts = read_mp4(&bytes);
    let idr: Vec<bool> = samples(&bytes, &facts)
        .into_iter()
        .map(|s| nal_types(s).contains(&5))
        .collect();
    assert_eq!(idr, [true, false, false, false, false, false, false]);
    assert_eq!(decode_frames(&bytes).len(), n);
}
