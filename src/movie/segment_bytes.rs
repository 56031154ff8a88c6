//! A byte form of coded H.264 segments, so that the processes of an MPI job can send the
//! segments of their part of a movie to the one that writes the MP4.
//!
//! Layout (little-endian): segment count (u32); per segment: SPS and PPS each as a presence
//! byte and, when present, a u32 length and the bytes; frame count (u32); per frame: a sync
//! byte, a u32 length and the sample's bytes.

use super::encode::EncodeError;
use super::segments::{CodedFrame, CodedSegment};
use std::path::Path;

/// `segments` in the byte form.
pub fn encode_segments(segments: &[CodedSegment]) -> Vec<u8> {
    let mut out = Vec::new();
    let put_len = |out: &mut Vec<u8>, len: usize| {
        out.extend_from_slice(&(len as u32).to_le_bytes());
    };
    put_len(&mut out, segments.len());
    for segment in segments {
        for set in [&segment.sps, &segment.pps] {
            match set {
                Some(bytes) => {
                    out.push(1);
                    put_len(&mut out, bytes.len());
                    out.extend_from_slice(bytes);
                }
                None => out.push(0),
            }
        }
        put_len(&mut out, segment.frames.len());
        for frame in &segment.frames {
            out.push(u8::from(frame.is_sync));
            put_len(&mut out, frame.data.len());
            out.extend_from_slice(&frame.data);
        }
    }
    out
}

/// The segments of [`encode_segments`]'s bytes; a truncated or malformed message is an error
/// naming the MP4 `path` the segments belong to.
pub fn decode_segments(bytes: &[u8], path: &Path) -> Result<Vec<CodedSegment>, EncodeError> {
    let mut reader = Reader { bytes, at: 0 };
    let bad = || EncodeError::Mp4 {
        path: path.to_path_buf(),
        message: format!(
            "a rank sent {} bytes that are not coded segments",
            bytes.len()
        ),
    };
    let count = reader.len().ok_or_else(bad)?;
    let mut segments = Vec::new();
    for _ in 0..count {
        let mut sets = [None, None];
        for set in &mut sets {
            *set = match reader.byte().ok_or_else(bad)? {
                0 => None,
                1 => Some(reader.block().ok_or_else(bad)?.to_vec()),
                _ => return Err(bad()),
            };
        }
        let [sps, pps] = sets;
        let n_frames = reader.len().ok_or_else(bad)?;
        let mut frames = Vec::new();
        for _ in 0..n_frames {
            let is_sync = match reader.byte().ok_or_else(bad)? {
                0 => false,
                1 => true,
                _ => return Err(bad()),
            };
            let data = reader.block().ok_or_else(bad)?.to_vec();
            frames.push(CodedFrame { data, is_sync });
        }
        segments.push(CodedSegment { sps, pps, frames });
    }
    if reader.at != bytes.len() {
        return Err(bad());
    }
    Ok(segments)
}

/// Reads the byte form front to back; `None` past the end.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let slice = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn len(&mut self) -> Option<usize> {
        let word: [u8; 4] = self.take(4)?.try_into().ok()?;
        Some(u32::from_le_bytes(word) as usize)
    }

    /// A u32 length and that many bytes.
    fn block(&mut self) -> Option<&'a [u8]> {
        let n = self.len()?;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_survive_the_byte_form_and_damage_is_refused() {
        let segments = vec![
            CodedSegment {
                sps: Some(vec![0x67, 1, 2]),
                pps: Some(vec![0x68, 3]),
                frames: vec![
                    CodedFrame {
                        data: vec![0, 0, 0, 2, 0x65, 9],
                        is_sync: true,
                    },
                    CodedFrame {
                        data: vec![0, 0, 0, 1, 0x41],
                        is_sync: false,
                    },
                ],
            },
            CodedSegment {
                sps: None,
                pps: None,
                frames: Vec::new(),
            },
        ];
        let bytes = encode_segments(&segments);
        let path = Path::new("movie.mp4");
        let back = decode_segments(&bytes, path).expect("decode");
        assert_eq!(back.len(), 2);
        assert_eq!(encode_segments(&back), bytes);
        assert_eq!(back[0].sps.as_deref(), Some(&[0x67, 1, 2][..]));
        assert_eq!(back[0].frames[1].data, [0, 0, 0, 1, 0x41]);
        assert!(back[0].frames[0].is_sync && !back[0].frames[1].is_sync);
        assert!(back[1].pps.is_none() && back[1].frames.is_empty());
        assert_eq!(
            decode_segments(&encode_segments(&[]), path)
                .expect("empty")
                .len(),
            0
        );
        let err = decode_segments(&bytes[..bytes.len() - 1], path).expect_err("truncated");
        assert!(err.to_string().contains("movie.mp4"), "{err}");
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_segments(&longer, path).is_err());
    }
}
