//! Typed kernel launches: one argument struct per kernel (declared with [`kernel_args!`]) whose
//! fields are pushed in declaration order, so a launch reads as a struct literal instead of a
//! chain of `.arg()` calls, and grid helpers shared by every room.

use super::GpuError;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchArgs, LaunchConfig,
    PushKernelArg,
};

/// Threads per block of the one-thread-per-element kernels.
pub const BLOCK: u32 = 256;

/// Blocks of `per_block` threads covering `n` elements (at least one).
pub fn grid(n: usize, per_block: usize) -> u32 {
    n.div_ceil(per_block.max(1)).max(1) as u32
}

/// One thread per element of `n`, [`BLOCK`] threads a block, `shared` bytes of shared memory.
pub fn per_element(n: usize, shared: usize) -> LaunchConfig {
    blocks(grid(n, BLOCK as usize), shared)
}

/// `blocks` blocks of [`BLOCK`] threads with `shared` bytes of dynamic shared memory.
pub fn blocks(blocks: u32, shared: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: shared as u32,
    }
}

/// One field of a kernel's argument struct.
pub trait KernelArg<'b> {
    /// Pushes the field as the next kernel parameter.
    fn push_to(&'b mut self, args: &mut LaunchArgs<'b>);
}

impl<'b, 'c: 'b, T> KernelArg<'b> for &'c CudaSlice<T> {
    fn push_to(&'b mut self, args: &mut LaunchArgs<'b>) {
        args.arg(*self);
    }
}

impl<'b, 'c: 'b, T> KernelArg<'b> for &'c mut CudaSlice<T> {
    fn push_to(&'b mut self, args: &mut LaunchArgs<'b>) {
        args.arg(&mut **self);
    }
}

impl<'b, 'c: 'b, T> KernelArg<'b> for CudaView<'c, T> {
    fn push_to(&'b mut self, args: &mut LaunchArgs<'b>) {
        args.arg(&*self);
    }
}

impl<'b, 'c: 'b, T> KernelArg<'b> for CudaViewMut<'c, T> {
    fn push_to(&'b mut self, args: &mut LaunchArgs<'b>) {
        args.arg(self);
    }
}

/// Implements [`KernelArg`] for types passed to kernels by value (scalars and `#[repr(C)]`
/// parameter blocks that implement `DeviceRepr`).
#[macro_export]
macro_rules! kernel_arg_by_value {
    ($($ty:ty),* $(,)?) => {$(
        impl<'b> $crate::gpu::KernelArg<'b> for $ty {
            fn push_to(&'b mut self, args: &mut cudarc::driver::LaunchArgs<'b>) {
                use cudarc::driver::PushKernelArg as _;
                args.arg(&*self);
            }
        }
    )*};
}

kernel_arg_by_value!(u8, i8, u16, i16, u32, i32, u64, i64, usize, f32, f64);

/// A kernel's arguments, pushed in the kernel's parameter order.
pub trait KernelArgs {
    /// Pushes every field, in declaration order.
    fn push_all<'b>(&'b mut self, args: &mut LaunchArgs<'b>);
}

/// Declares a kernel's argument struct: the fields, in the kernel's parameter order, are
/// device buffers (`&CudaSlice`, `&mut CudaSlice`, views) and values (scalars, parameter
/// blocks registered with [`kernel_arg_by_value!`]).
#[macro_export]
macro_rules! kernel_args {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident<$lt:lifetime> {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name<$lt> {
            $( $(#[$fmeta])* $fvis $field: $ty, )*
        }

        impl<$lt> $crate::gpu::KernelArgs for $name<$lt> {
            fn push_all<'b>(&'b mut self, args: &mut cudarc::driver::LaunchArgs<'b>) {
                $( $crate::gpu::KernelArg::push_to(&mut self.$field, args); )*
            }
        }
    };
}

/// Launches `function` on `stream` with `config` and the typed arguments `args`.
///
/// # Safety
/// `args` must match the kernel's parameters in number, order and type, and every buffer must
/// hold at least the elements the kernel reads or writes for `config`'s grid (each caller's
/// argument struct documents the sizes it relies on).
pub unsafe fn launch<A: KernelArgs>(
    stream: &CudaStream,
    function: &CudaFunction,
    config: LaunchConfig,
    mut args: A,
) -> Result<(), GpuError> {
    let mut builder = stream.launch_builder(function);
    args.push_all(&mut builder);
    // SAFETY: the caller guarantees the arguments match the kernel (see above).
    unsafe { builder.launch(config) }?;
    Ok(())
}
