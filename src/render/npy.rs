//! NumPy `.npy` (format version 1.0) for τ buffers: little-endian float32, C order, shape
//! (H, W, 3), row 0 at the top. Spec: numpy.lib.format (NEP 1).

use super::RenderError;
use super::tau::TauBuffer;
use crate::output::write_atomically;
use std::io::Write;
use std::path::Path;

const MAGIC: &[u8] = b"\x93NUMPY";

/// The header of a version 1.0 file: magic, version, length, dict padded with spaces and a
/// newline so that the data start at a multiple of 64 bytes.
fn header(shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape_text = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape_text}, }}");
    let unpadded = MAGIC.len() + 2 + 2 + dict.len() + 1;
    dict.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    dict.push('\n');
    let mut out = Vec::with_capacity(unpadded.next_multiple_of(64));
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

/// Writes `tau` as a float32 array of shape (H, W, 3) to `path`, atomically.
pub fn write_tau_npy(path: &Path, tau: &TauBuffer) -> Result<(), RenderError> {
    let shape = [tau.height as usize, tau.width as usize, 3];
    write_atomically(path, |writer| {
        let io = |error| RenderError::Io {
            path: path.to_path_buf(),
            error,
        };
        writer.write_all(&header(&shape)).map_err(io)?;
        let mut bytes = Vec::with_capacity(tau.data.len().min(1 << 20) * 4);
        for block in tau.data.chunks(1 << 20) {
            bytes.clear();
            bytes.extend(block.iter().flat_map(|v| v.to_le_bytes()));
            writer.write_all(&bytes).map_err(io)?;
        }
        Ok(())
    })
}

/// Reads a little-endian float32 C-order `.npy` file: (shape, values).
pub fn read_npy_f32(path: &Path) -> Result<(Vec<usize>, Vec<f32>), RenderError> {
    let bytes = std::fs::read(path).map_err(|error| RenderError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    let bad = |message: &str| RenderError::Encode {
        path: path.to_path_buf(),
        message: message.to_owned(),
    };
    if bytes.len() < 10 || &bytes[..6] != MAGIC || bytes[6] != 1 {
        return Err(bad("not a version 1 .npy file"));
    }
    let header_len = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    let data_start = 10 + header_len;
    let dict = bytes
        .get(10..data_start)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or_else(|| bad("truncated header"))?;
    if !dict.contains("'descr': '<f4'") || !dict.contains("'fortran_order': False") {
        return Err(bad("expected little-endian float32 in C order"));
    }
    let shape_text = dict
        .split("'shape': (")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .ok_or_else(|| bad("no shape in header"))?;
    let shape: Vec<usize> = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| bad("bad shape in header"))?;
    let count = shape.iter().try_fold(1usize, |a, &b| a.checked_mul(b));
    let data = &bytes[data_start..];
    if count.and_then(|c| c.checked_mul(4)) != Some(data.len()) {
        return Err(bad("data size does not match the shape"));
    }
    let values = data
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok((shape, values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_aligned_and_round_trips() {
        let h = header(&[3, 5, 3]);
        assert_eq!(h.len() % 64, 0);
        assert_eq!(*h.last().expect("non-empty"), b'\n');
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tau.npy");
        let mut tau = TauBuffer::new(5, 3);
        tau.data
            .iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v = i as f32 * 0.5);
        write_tau_npy(&path, &tau).expect("write");
        let (shape, values) = read_npy_f32(&path).expect("read");
        assert_eq!(shape, vec![3, 5, 3]);
        assert_eq!(values, tau.data);
        let text = std::fs::read(&path).expect("bytes");
        assert!(String::from_utf8_lossy(&text[..h.len()]).contains("'shape': (3, 5, 3)"));
    }

    #[test]
    fn unwritable_folder_is_an_error_and_leaves_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("missing").join("tau.npy");
        let err = write_tau_npy(&path, &TauBuffer::new(2, 2)).expect_err("no folder");
        assert!(err.to_string().contains("tau.npy"));
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
    }
}
