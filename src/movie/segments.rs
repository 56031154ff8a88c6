//! H.264 segments encoded in parallel: the movie is cut at its key frames, each segment (one
//! key-frame interval) gets its own OpenH264 encoder on a worker thread, and the MP4 writer takes
//! the segments back in order. One OpenH264 encoder codes a single-slice frame on one core, so
//! without this a 1080p movie is capped by one core's encoding rate.

use super::encode::EncodeError;
use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use openh264::OpenH264API;
use openh264::encoder::{Encoder, EncoderConfig};
use openh264::formats::YUVBuffer;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

/// H.264 NAL unit types (ITU-T H.264 Table 7-1).
const NAL_IDR_SLICE: u8 = 5;
const NAL_SPS: u8 = 7;
const NAL_PPS: u8 = 8;

/// Memory the frames waiting in open segments may take (YUV 4:2:0, 1.5 bytes a pixel): it sets
/// how many segments are encoded at once (a 1080p frame is 3.1 MB, so 60-frame segments allow
/// four).
const QUEUED_FRAME_BYTES: usize = 768 << 20;
/// Frames queued for the one encoder thread when segments are not coded side by side.
const SERIAL_QUEUE_FRAMES: usize = 4;
/// Most encoder threads: beyond this the renderer, not the encoder, limits every export.
const MAX_ENCODER_THREADS: usize = 6;

/// One frame coded as an MP4 sample: its NAL units, each prefixed by its 4-byte big-endian
/// length (ISO/IEC 14496-15 §5.3.2), and whether it is a key (IDR) frame.
#[derive(Debug)]
pub struct CodedFrame {
    /// The sample's bytes.
    pub data: Vec<u8>,
    /// An IDR frame (a sync sample).
    pub is_sync: bool,
}

/// A segment's coded frames and the parameter sets its encoder wrote.
#[derive(Debug)]
pub struct CodedSegment {
    /// Sequence parameter set (without start code).
    pub sps: Option<Vec<u8>>,
    /// Picture parameter set (without start code).
    pub pps: Option<Vec<u8>>,
    /// The frames in order.
    pub frames: Vec<CodedFrame>,
}

/// Frames of one segment, in order, and where the segment starts in the movie.
struct SegmentJob {
    index: usize,
    first_frame: usize,
    frames: Receiver<YUVBuffer>,
}

/// Encodes the movie's frames in segments of `segment_len` on worker threads and hands the
/// coded segments back in order.
pub struct SegmentPipeline {
    path: PathBuf,
    segment_len: usize,
    in_flight_limit: usize,
    jobs: Option<Sender<SegmentJob>>,
    results: Receiver<(usize, Result<CodedSegment, EncodeError>)>,
    workers: Vec<JoinHandle<()>>,
    open: Option<Sender<YUVBuffer>>,
    /// The movie's index of the first frame pushed.
    first_frame: usize,
    pushed: usize,
    started_segments: usize,
    done: BTreeMap<usize, CodedSegment>,
    next_to_hand_out: usize,
}

impl std::fmt::Debug for SegmentPipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentPipeline")
            .field("segment_len", &self.segment_len)
            .field("workers", &self.workers.len())
            .field("pushed", &self.pushed)
            .finish_non_exhaustive()
    }
}

impl SegmentPipeline {
    /// Starts the encoder threads for `width`×`height` frames (even sizes) cut into segments of
    /// `segment_len` frames (`None`: one segment, i.e. one key frame at the start only), each
    /// coded with `config` (whose intra period must be the segment length or 0). The first
    /// frame pushed is frame `first_frame` of the movie (a multiple of `segment_len` where a
    /// process codes only its part of a movie), which numbers the frames' timestamps.
    pub fn start(
        path: &Path,
        config: EncoderConfig,
        (width, height): (usize, usize),
        segment_len: Option<usize>,
        first_frame: usize,
    ) -> Self {
        let segment_len = segment_len.filter(|&n| n > 0).unwrap_or(usize::MAX);
        let frame_bytes = width * height * 3 / 2;
        let by_memory = QUEUED_FRAME_BYTES / frame_bytes.saturating_mul(segment_len).max(1);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = if segment_len == usize::MAX {
            1
        } else {
            by_memory.clamp(1, MAX_ENCODER_THREADS).min(cores.max(1))
        };
        let (jobs, job_receiver) = unbounded::<SegmentJob>();
        let (result_sender, results) = unbounded();
        let workers = (0..threads)
            .map(|_| {
                let jobs = job_receiver.clone();
                let results = result_sender.clone();
                let path = path.to_path_buf();
                std::thread::spawn(move || {
                    for job in jobs {
                        let coded = encode_segment(&path, config, &job);
                        if results.send((job.index, coded)).is_err() {
                            return;
                        }
                    }
                })
            })
            .collect();
        Self {
            path: path.to_path_buf(),
            segment_len,
            in_flight_limit: threads,
            jobs: Some(jobs),
            results,
            workers,
            open: None,
            first_frame,
            pushed: 0,
            started_segments: 0,
            done: BTreeMap::new(),
            next_to_hand_out: 0,
        }
    }

    /// Queues the next frame; `ready` gets every segment that is complete and next in order.
    /// Blocks while as many segments as there are encoder threads are still being coded.
    pub fn push(
        &mut self,
        frame: YUVBuffer,
        mut ready: impl FnMut(CodedSegment) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        if self.pushed.is_multiple_of(self.segment_len) {
            self.open = None;
            while self.started_segments - self.next_to_hand_out >= self.in_flight_limit {
                self.wait_for_one(&mut ready)?;
            }
            // Room for a whole segment when segments are coded side by side (the next one
            // must start while this one is still being coded); a short queue otherwise.
            let capacity = if self.in_flight_limit > 1 {
                self.segment_len
            } else {
                SERIAL_QUEUE_FRAMES
            };
            let (sender, receiver) = bounded(capacity);
            let job = SegmentJob {
                index: self.started_segments,
                first_frame: self.first_frame + self.pushed,
                frames: receiver,
            };
            let sent = self.jobs.as_ref().map(|jobs| jobs.send(job));
            if !matches!(sent, Some(Ok(()))) {
                return Err(self.workers_gone());
            }
            self.started_segments += 1;
            self.open = Some(sender);
        }
        let sent = self.open.as_ref().map(|open| open.send(frame));
        if !matches!(sent, Some(Ok(()))) {
            // The worker stopped early: its error is on its way in the results.
            self.open = None;
            while self.next_to_hand_out < self.started_segments {
                self.wait_for_one(&mut ready)?;
            }
            return Err(self.workers_gone());
        }
        self.pushed += 1;
        Ok(())
    }

    /// Closes the last segment, waits for every worker and hands the remaining segments over
    /// in order.
    pub fn finish(
        mut self,
        mut ready: impl FnMut(CodedSegment) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        self.open = None;
        self.jobs = None;
        while self.next_to_hand_out < self.started_segments {
            self.wait_for_one(&mut ready)?;
        }
        for worker in std::mem::take(&mut self.workers) {
            if worker.join().is_err() {
                return Err(self.workers_gone());
            }
        }
        Ok(())
    }

    /// Receives one finished segment and hands over all that are now next in order.
    fn wait_for_one(
        &mut self,
        ready: &mut impl FnMut(CodedSegment) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        let (index, coded) = self.results.recv().map_err(|_| self.workers_gone())?;
        self.done.insert(index, coded?);
        while let Some(segment) = self.done.remove(&self.next_to_hand_out) {
            self.next_to_hand_out += 1;
            ready(segment)?;
        }
        Ok(())
    }

    fn workers_gone(&self) -> EncodeError {
        EncodeError::H264 {
            path: self.path.clone(),
            message: "an encoder thread stopped unexpectedly".into(),
        }
    }
}

impl Drop for SegmentPipeline {
    fn drop(&mut self) {
        // Closing the channels ends the workers; the ones still coding finish their segment
        // and find nobody listening.
        self.open = None;
        self.jobs = None;
    }
}

/// Codes the frames of one segment with a fresh encoder (so it starts with an IDR frame and
/// its own parameter sets).
fn encode_segment(
    path: &Path,
    config: EncoderConfig,
    job: &SegmentJob,
) -> Result<CodedSegment, EncodeError> {
    let h264_error = |err: openh264::Error| EncodeError::H264 {
        path: path.to_path_buf(),
        message: err.to_string(),
    };
    let mut encoder =
        Encoder::with_api_config(OpenH264API::from_source(), config).map_err(h264_error)?;
    let mut segment = CodedSegment {
        sps: None,
        pps: None,
        frames: Vec::new(),
    };
    for (offset, yuv) in job.frames.iter().enumerate() {
        let frame = job.first_frame + offset;
        // Only the order matters to the coder (rate control is off); milliseconds at 1 kHz
        // keep the timestamps increasing.
        let timestamp = openh264::Timestamp::from_millis(frame as u64);
        let bitstream = encoder.encode_at(&yuv, timestamp).map_err(h264_error)?;
        let mut data = Vec::new();
        let mut is_sync = false;
        for layer_index in 0..bitstream.num_layers() {
            let Some(layer) = bitstream.layer(layer_index) else {
                continue;
            };
            for nal_index in 0..layer.nal_count() {
                let Some(nal) = layer.nal_unit(nal_index).map(strip_start_code) else {
                    continue;
                };
                let Some(&header) = nal.first() else {
                    continue;
                };
                match header & 0x1f {
                    // Parameter sets go into the avcC box, not the samples.
                    NAL_SPS => segment.sps = Some(nal.to_vec()),
                    NAL_PPS => segment.pps = Some(nal.to_vec()),
                    nal_type => {
                        is_sync |= nal_type == NAL_IDR_SLICE;
                        let length = u32::try_from(nal.len()).map_err(|_| EncodeError::Mp4 {
                            path: path.to_path_buf(),
                            message: format!("NAL unit of {} bytes", nal.len()),
                        })?;
                        data.extend_from_slice(&length.to_be_bytes());
                        data.extend_from_slice(nal);
                    }
                }
            }
        }
        if data.is_empty() {
            return Err(EncodeError::EmptyFrame {
                path: path.to_path_buf(),
                frame,
            });
        }
        segment.frames.push(CodedFrame { data, is_sync });
    }
    Ok(segment)
}

/// The NAL unit without its Annex B start code (00 00 01 or 00 00 00 01).
pub fn strip_start_code(nal: &[u8]) -> &[u8] {
    let zeros = nal.iter().take_while(|&&b| b == 0).count();
    if zeros >= 2 && nal.get(zeros) == Some(&1) {
        &nal[zeros + 1..]
    } else {
        nal
    }
}

/// `sample` with `sps` and `pps` in front of its NAL units (length-prefixed), for a segment whose
/// encoder wrote other parameter sets than the ones in the MP4's avcC box.
pub fn with_parameter_sets(sps: &[u8], pps: &[u8], sample: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(sps.len() + pps.len() + 8 + sample.len());
    for nal in [sps, pps] {
        out.extend_from_slice(&(nal.len() as u32).to_be_bytes());
        out.extend_from_slice(nal);
    }
    out.extend_from_slice(sample);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_codes_of_both_lengths_are_stripped() {
        assert_eq!(strip_start_code(&[0, 0, 0, 1, 0x67, 9]), &[0x67, 9]);
        assert_eq!(strip_start_code(&[0, 0, 1, 0x68]), &[0x68]);
        assert_eq!(strip_start_code(&[0x65, 1]), &[0x65, 1]);
    }

    #[test]
    fn parameter_sets_are_prefixed_with_their_lengths() {
        let out = with_parameter_sets(&[0x67, 1], &[0x68], &[0, 0, 0, 1, 0x65]);
        assert_eq!(
            out,
            [0, 0, 0, 2, 0x67, 1, 0, 0, 0, 1, 0x68, 0, 0, 0, 1, 0x65]
        );
    }
}
