//! The additive optical-depth buffer τ (f32 RGB, row-major, row 0 at the top).

/// τ per pixel and channel: `data[(row·width + column)·3 + channel]`, row 0 at the top.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TauBuffer {
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// width·height·3 values.
    pub data: Vec<f32>,
}

impl TauBuffer {
    /// A zeroed buffer.
    pub fn new(width: u32, height: u32) -> Self {
        let mut tau = Self::default();
        tau.reset(width, height);
        tau
    }

    /// Resizes to `width`×`height` and zeroes, keeping the allocation when it is big enough.
    pub fn reset(&mut self, width: u32, height: u32) {
        self.width = width;
        self.height = height;
        self.data.clear();
        self.data.resize(width as usize * height as usize * 3, 0.0);
    }

    /// Resizes to `width`×`height` without zeroing what it held (for a writer that sets every
    /// value, such as the splatter's overwrite merge): saves a pass over the whole image.
    pub fn resize_for_overwrite(&mut self, width: u32, height: u32) {
        self.width = width;
        self.height = height;
        let len = width as usize * height as usize * 3;
        if self.data.capacity() < len {
            // A fresh zeroed allocation: the allocator's zero pages, touched first by the
            // parallel writers, where growing the vector would write every value on this thread
            // (a serial pass over the image before a new renderer's first frame).
            self.data = vec![0.0; len];
        } else {
            self.data.resize(len, 0.0);
        }
    }

    /// τ (RGB) at column `column`, row `row`.
    pub fn get(&self, column: u32, row: u32) -> [f32; 3] {
        let at = (row as usize * self.width as usize + column as usize) * 3;
        [self.data[at], self.data[at + 1], self.data[at + 2]]
    }

    /// Multiplies every value by `factor` (applying a brightness after the fact).
    pub fn scale(&mut self, factor: f32) {
        self.data.iter_mut().for_each(|v| *v *= factor);
    }

    /// Adds another buffer of the same size (partial images of other back-ends).
    pub fn add(&mut self, other: &TauBuffer) -> Result<(), super::RenderError> {
        if (self.width, self.height) != (other.width, other.height) {
            return Err(super::RenderError::setting(format!(
                "cannot add a {}x{} tau buffer to a {}x{} one",
                other.width, other.height, self.width, self.height
            )));
        }
        self.data
            .iter_mut()
            .zip(&other.data)
            .for_each(|(a, b)| *a += b);
        Ok(())
    }
}
