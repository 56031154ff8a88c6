//! Helpers for the movie tests: an ISO-BMFF (MP4) box walker and a test-only frame painter.
#![allow(dead_code)]

use haloscope::movie::CameraPose;
use image::{Rgb, RgbImage};

/// What the tests read back from an MP4 container.
#[derive(Debug, Clone, PartialEq)]
pub struct Mp4Facts {
    /// Top-level box types in file order.
    pub top_level: Vec<String>,
    /// `stsz` sample count of the (single) track.
    pub sample_count: u32,
    /// `tkhd` width and height (16.16 fixed point, integer part).
    pub tkhd_size: (u32, u32),
    /// `avc1` sample entry width and height.
    pub avc1_size: (u16, u16),
    /// `mdhd` timescale and duration.
    pub timescale: u32,
    /// Track duration in `timescale` units.
    pub duration: u64,
    /// Sample sizes from `stsz`.
    pub sample_sizes: Vec<u32>,
    /// Chunk offsets from `stco`/`co64`.
    pub chunk_offsets: Vec<u64>,
    /// Samples per chunk from the first `stsc` entry.
    pub samples_per_chunk: Vec<(u32, u32)>,
    /// The avcC record (SPS/PPS).
    pub avcc: Vec<u8>,
}

fn be32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn be64(bytes: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// Splits `bytes` into (type, body) boxes, following ISO/IEC 14496-12 §4.2 (32-bit size,
/// size 1 = 64-bit largesize, size 0 = to the end).
pub fn boxes(bytes: &[u8]) -> Vec<(String, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let size32 = be32(bytes, at) as usize;
        let kind = String::from_utf8_lossy(&bytes[at + 4..at + 8]).into_owned();
        let (header, size) = match size32 {
            0 => (8, bytes.len() - at),
            1 => (16, be64(bytes, at + 8) as usize),
            n => (8, n),
        };
        assert!(
            size >= header && at + size <= bytes.len(),
            "box {kind} overruns the file"
        );
        out.push((kind, &bytes[at + header..at + size]));
        at += size;
    }
    assert_eq!(at, bytes.len(), "trailing bytes after the last box");
    out
}

fn child<'a>(body: &'a [u8], kind: &str) -> &'a [u8] {
    boxes(body)
        .into_iter()
        .find(|(k, _)| k == kind)
        .unwrap_or_else(|| panic!("no {kind} box"))
        .1
}

/// Walks an MP4 file and reads the facts the tests check.
pub fn read_mp4(bytes: &[u8]) -> Mp4Facts {
    let top = boxes(bytes);
    let top_level = top.iter().map(|(k, _)| k.clone()).collect();
    let moov = top.iter().find(|(k, _)| k == "moov").expect("no moov").1;
    let traks: Vec<_> = boxes(moov)
        .into_iter()
        .filter(|(k, _)| k == "trak")
        .collect();
    assert_eq!(traks.len(), 1, "expected one track");
    let trak = traks[0].1;
    let tkhd = child(trak, "tkhd");
    // tkhd: version/flags(4), then v0 times are 32-bit (v1: 64-bit); width/height are the last
    // 8 bytes, 16.16 fixed point.
    let n = tkhd.len();
    let tkhd_size = (be32(tkhd, n - 8) >> 16, be32(tkhd, n - 4) >> 16);
    let mdia = child(trak, "mdia");
    let mdhd = child(mdia, "mdhd");
    let (timescale, duration) = if mdhd[0] == 1 {
        (be32(mdhd, 20), be64(mdhd, 24))
    } else {
        (be32(mdhd, 12), u64::from(be32(mdhd, 16)))
    };
    let stbl = child(child(mdia, "minf"), "stbl");
    let stsd = child(stbl, "stsd");
    // stsd: version/flags(4), entry_count(4), then sample entries (boxes).
    assert_eq!(be32(stsd, 4), 1, "one sample entry");
    let entries = boxes(&stsd[8..]);
    let (kind, avc1) = &entries[0];
    assert_eq!(kind, "avc1");
    // VisualSampleEntry: reserved(6) dref index(2) predefined/reserved(16) width(2) height(2)
    // ... 78 bytes before the child boxes.
    let avc1_size = (
        u16::from_be_bytes([avc1[24], avc1[25]]),
        u16::from_be_bytes([avc1[26], avc1[27]]),
    );
    let avcc = child(&avc1[78..], "avcC").to_vec();
    let stsz = child(stbl, "stsz");
    let uniform = be32(stsz, 4);
    let sample_count = be32(stsz, 8);
    let sample_sizes = if uniform != 0 {
        vec![uniform; sample_count as usize]
    } else {
        (0..sample_count as usize)
            .map(|i| be32(stsz, 12 + 4 * i))
            .collect()
    };
    let chunk_offsets = match boxes(stbl).iter().find(|(k, _)| k == "stco" || k == "co64") {
        Some((k, body)) if k == "stco" => (0..be32(body, 4) as usize)
            .map(|i| u64::from(be32(body, 8 + 4 * i)))
            .collect(),
        Some((_, body)) => (0..be32(body, 4) as usize)
            .map(|i| be64(body, 8 + 8 * i))
            .collect(),
        None => panic!("no chunk offsets"),
    };
    let stsc = child(stbl, "stsc");
    let samples_per_chunk = (0..be32(stsc, 4) as usize)
        .map(|i| (be32(stsc, 8 + 12 * i), be32(stsc, 12 + 12 * i)))
        .collect();
    Mp4Facts {
        top_level,
        sample_count,
        tkhd_size,
        avc1_size,
        timescale,
        duration,
        sample_sizes,
        chunk_offsets,
        samples_per_chunk,
        avcc,
    }
}

/// The samples of the track as byte slices (follows stsc/stco/stsz).
pub fn samples<'a>(bytes: &'a [u8], facts: &Mp4Facts) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut sample = 0usize;
    for (chunk_index, &offset) in facts.chunk_offsets.iter().enumerate() {
        let chunk_number = chunk_index as u32 + 1;
        let per_chunk = facts
            .samples_per_chunk
            .iter()
            .rev()
            .find(|(first, _)| *first <= chunk_number)
            .map(|(_, n)| *n)
            .expect("stsc entry");
        let mut at = offset as usize;
        for _ in 0..per_chunk {
            let size = facts.sample_sizes[sample] as usize;
            out.push(&bytes[at..at + size]);
            at += size;
            sample += 1;
        }
    }
    out
}

/// Decodes every sample with OpenH264 (AVC length-prefixed NALs → Annex B) into RGB frames.
pub fn decode_frames(bytes: &[u8]) -> Vec<RgbImage> {
    use openh264::decoder::Decoder;
    let facts = read_mp4(bytes);
    let avcc = &facts.avcc;
    // avcC (ISO/IEC 14496-15 §5.3.3.1): 5 header bytes, numSPS & 0x1f, then (len16, sps)...,
    // numPPS, then (len16, pps)...
    let mut annex_b = Vec::new();
    let mut at = 5;
    for _ in 0..2 {
        let count = avcc[at] & 0x1f;
        at += 1;
        for _ in 0..count {
            let len = u16::from_be_bytes([avcc[at], avcc[at + 1]]) as usize;
            annex_b.extend_from_slice(&[0, 0, 0, 1]);
            annex_b.extend_from_slice(&avcc[at + 2..at + 2 + len]);
            at += 2 + len;
        }
    }
    let mut decoder = Decoder::new().expect("decoder");
    let mut frames = Vec::new();
    for (i, sample) in samples(bytes, &facts).into_iter().enumerate() {
        let mut packet = if i == 0 { annex_b.clone() } else { Vec::new() };
        let mut at = 0;
        while at < sample.len() {
            let len = be32(sample, at) as usize;
            packet.extend_from_slice(&[0, 0, 0, 1]);
            packet.extend_from_slice(&sample[at + 4..at + 4 + len]);
            at += 4 + len;
        }
        if let Some(yuv) = decoder.decode(&packet).expect("decodes") {
            frames.push(to_rgb(&yuv));
        }
    }
    for yuv in decoder.flush_remaining().expect("flush") {
        frames.push(to_rgb(&yuv));
    }
    frames
}

fn to_rgb(yuv: &openh264::decoder::DecodedYUV<'_>) -> RgbImage {
    use openh264::formats::YUVSource;
    let (w, h) = yuv.dimensions();
    let mut rgb = vec![0u8; w * h * 3];
    yuv.write_rgb8(&mut rgb);
    RgbImage::from_raw(w as u32, h as u32, rgb).expect("size")
}

/// Test-only frame painter: projects points through a pinhole camera and paints them white on a
/// background whose colour encodes the frame index (so frames are easy to tell apart).
pub fn paint_points(
    pose: &CameraPose,
    points: &[[f32; 3]],
    width: u32,
    height: u32,
    index: usize,
) -> RgbImage {
    let background = Rgb([(index * 23 % 256) as u8, 40, (255 - index * 23 % 256) as u8]);
    let mut image = RgbImage::from_pixel(width, height, background);
    let eye = glam::DVec3::from(pose.position);
    let forward = pose.forward();
    let up = pose.orthonormal_up();
    let right = forward.cross(up);
    let scale = f64::from(width) / 2.0 / (pose.fov_deg.to_radians() / 2.0).tan();
    for p in points {
        let rel = glam::DVec3::new(f64::from(p[0]), f64::from(p[1]), f64::from(p[2])) - eye;
        let depth = rel.dot(forward);
        if depth <= 1e-9 {
            continue;
        }
        let x = f64::from(width) / 2.0 + scale * rel.dot(right) / depth;
        let y = f64::from(height) / 2.0 - scale * rel.dot(up) / depth;
        if x >= 0.0 && y >= 0.0 && x < f64::from(width) && y < f64::from(height) {
            image.put_pixel(x as u32, y as u32, Rgb([255, 255, 255]));
        }
    }
    image
}

/// Peak signal-to-noise ratio of `decoded` against `original` (dB).
pub fn psnr(original: &RgbImage, decoded: &RgbImage) -> f64 {
    assert_eq!(original.dimensions(), decoded.dimensions());
    let mse = original
        .as_raw()
        .iter()
        .zip(decoded.as_raw())
        .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
        .sum::<f64>()
        / original.as_raw().len() as f64;
    10.0 * (255.0 * 255.0 / mse.max(1e-12)).log10()
}

/// PSNR of the luma (Rec. 601 weights) only: 4:2:0 video keeps luma at full resolution but
/// halves chroma, so isolated coloured pixels are judged fairly by their brightness.
pub fn luma_psnr(original: &RgbImage, decoded: &RgbImage) -> f64 {
    assert_eq!(original.dimensions(), decoded.dimensions());
    let luma = |p: &image::Rgb<u8>| {
        0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2])
    };
    let mse = original
        .pixels()
        .zip(decoded.pixels())
        .map(|(a, b)| (luma(a) - luma(b)).powi(2))
        .sum::<f64>()
        / f64::from(original.width() * original.height());
    10.0 * (255.0 * 255.0 / mse.max(1e-12)).log10()
}

/// Asserts that `path` got the permission bits of a file created the usual way in its folder
/// (0666 less the umask), not a temporary file's 0600.
pub fn assert_usual_file_mode(path: &std::path::Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let folder = path.parent().expect("a folder");
        let probe = folder.join(".mode-probe");
        std::fs::File::create(&probe).expect("probe file");
        let mode = |p: &std::path::Path| {
            std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777
        };
        let (want, got) = (mode(&probe), mode(path));
        std::fs::remove_file(&probe).expect("remove probe");
        assert_eq!(
            got,
            want,
            "{} has mode {got:o}, not {want:o}",
            path.display()
        );
    }
}
