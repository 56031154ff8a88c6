//! NumPy `.npy` files through the ndarray-npy crate, written atomically: τ buffers
//! (little-endian float32, C order, shape (H, W, 3), row 0 at the top) and any other array a
//! room exports (halo labels, positions). Spec: numpy.lib.format (NEP 1).

use super::RenderError;
use super::tau::TauBuffer;
use crate::output::write_atomically;
use ndarray::{ArrayD, ArrayView, Dimension, ShapeError};
use ndarray_npy::{ReadNpyExt, WritableElement, WriteNpyExt};
use std::path::Path;

/// Writes `array` to `path` as `.npy` (C order), atomically.
pub fn write_npy<A: WritableElement, D: Dimension>(
    path: &Path,
    array: ArrayView<'_, A, D>,
) -> Result<(), RenderError> {
    write_atomically(path, |writer| {
        array.write_npy(writer).map_err(|e| match e {
            ndarray_npy::WriteNpyError::Io(error) => RenderError::Io {
                path: path.to_path_buf(),
                error,
            },
            other => RenderError::Encode {
                path: path.to_path_buf(),
                message: format!(".npy: {other}"),
            },
        })
    })
}

/// The error for an array whose length does not fit its shape (a caller's bug, named anyway).
fn shape_error(path: &Path, error: ShapeError) -> RenderError {
    RenderError::Encode {
        path: path.to_path_buf(),
        message: format!(".npy: {error}"),
    }
}

/// Writes `values` as a C-order array of `shape` to `path`, atomically.
pub fn write_f32_npy(path: &Path, shape: &[usize], values: &[f32]) -> Result<(), RenderError> {
    let view = ArrayView::from_shape(shape, values).map_err(|e| shape_error(path, e))?;
    write_npy(path, view)
}

/// Writes `values` as a C-order int32 array of `shape` to `path`, atomically.
pub fn write_i32_npy(path: &Path, shape: &[usize], values: &[i32]) -> Result<(), RenderError> {
    let view = ArrayView::from_shape(shape, values).map_err(|e| shape_error(path, e))?;
    write_npy(path, view)
}

/// Writes `tau` as a float32 array of shape (H, W, 3) to `path`, atomically.
pub fn write_tau_npy(path: &Path, tau: &TauBuffer) -> Result<(), RenderError> {
    let shape = [tau.height as usize, tau.width as usize, 3];
    write_f32_npy(path, &shape, &tau.data)
}

/// Reads a float32 `.npy` file: (shape, values in C order).
pub fn read_npy_f32(path: &Path) -> Result<(Vec<usize>, Vec<f32>), RenderError> {
    let file = std::fs::File::open(path).map_err(|error| RenderError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    let array = ArrayD::<f32>::read_npy(std::io::BufReader::new(file)).map_err(|e| {
        RenderError::Encode {
            path: path.to_path_buf(),
            message: format!("not a float32 .npy file: {e}"),
        }
    })?;
    Ok((array.shape().to_vec(), array.iter().copied().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tau_round_trips_with_numpys_version_1_header() {
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
        let bytes = std::fs::read(&path).expect("bytes");
        // Magic, version 1.0, header length 118: data start at byte 128, a multiple of 64.
        assert_eq!(&bytes[..10], b"\x93NUMPY\x01\x00\x76\x00");
        let header = String::from_utf8_lossy(&bytes[10..128]);
        assert!(
            header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5, 3)}"),
            "{header}"
        );
        assert!(header.ends_with(" \n"));
        assert_eq!(bytes.len(), 128 + 45 * 4);
        assert_eq!(&bytes[128 + 4..128 + 8], &0.5f32.to_le_bytes());
    }

    #[test]
    fn unwritable_folder_is_an_error_and_leaves_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("missing").join("tau.npy");
        let err = write_tau_npy(&path, &TauBuffer::new(2, 2)).expect_err("no folder");
        assert!(err.to_string().contains("tau.npy"));
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
    }

    #[test]
    fn a_non_float_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("labels.npy");
        write_i32_npy(&path, &[2], &[1, -1]).expect("write");
        let err = read_npy_f32(&path).expect_err("int32");
        assert!(err.to_string().contains("labels.npy"), "{err}");
        let err = write_f32_npy(&path, &[3], &[1.0]).expect_err("shape");
        assert!(err.to_string().contains("labels.npy"), "{err}");
    }
}
