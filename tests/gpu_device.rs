//! CUDA infrastructure on a real device. Ignored here (no GPU); run on the GPU machine with
//! `--ignored`.

use haloscope::backend::{Backend, BackendChoice, BackendKind};
use haloscope::gpu::GpuDevice;

const AXPY: &str = r#"
extern "C" __global__ void axpy(float a, const float* __restrict__ x, float* __restrict__ y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

#[test]
fn auto_backend_never_fails_and_cuda_backend_fails_cleanly_without_a_gpu() {
    let auto = Backend::resolve(BackendChoice::Auto).expect("auto must always resolve");
    match auto.kind() {
        BackendKind::Cpu => {
            assert!(
                auto.fallback_reason().is_some(),
                "auto fell back without saying why"
            );
            let err = Backend::resolve(BackendChoice::Cuda).expect_err("no GPU, yet cuda resolved");
            assert!(!err.to_string().is_empty());
        }
        BackendKind::Cuda => {
            let device = auto.device().expect("a CUDA back-end has a device");
            assert!(!device.info().name.is_empty());
        }
        BackendKind::Wgpu => {
            let context = auto.wgpu_context().expect("a wgpu back-end has a device");
            assert!(!context.is_software(), "auto chose a software adapter");
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn compiles_to_cubin_caches_and_launches() {
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    let cache_dir = tempfile::tempdir().expect("temp dir");
    // SAFETY of set_var: single-threaded at this point of the test.
    unsafe { std::env::set_var("HALOSCOPE_KERNEL_CACHE", cache_dir.path()) };
    let device = GpuDevice::open(0).expect("open device 0");
    eprintln!("device: {}", device.info());
    let module = device.module("axpy.cu", AXPY).expect("compile");
    let cached = std::fs::read_dir(cache_dir.path())
        .expect("cache dir")
        .count();
    assert_eq!(cached, 1, "the CUBIN was not cached on disk");
    let function = module.load_function("axpy").expect("function");
    let stream = device.stream();
    let n = 1000u32;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x_dev = stream.clone_htod(&x).expect("upload");
    let mut y_dev = stream.alloc_zeros::<f32>(n as usize).expect("alloc");
    let mut launch = stream.launch_builder(&function);
    launch.arg(&2.0f32).arg(&x_dev).arg(&mut y_dev).arg(&n);
    // SAFETY: the kernel reads n floats of x and writes n floats of y; both hold n.
    unsafe { launch.launch(LaunchConfig::for_num_elems(n)) }.expect("launch");
    let y = stream.clone_dtoh(&y_dev).expect("download");
    assert!(y.iter().enumerate().all(|(i, v)| *v == 2.0 * i as f32));

    let bad = device.module(
        "broken.cu",
        "extern \"C\" __global__ void k() { undefined_thing; }",
    );
    let err = bad.expect_err("broken source compiled");
    assert!(
        err.to_string().contains("undefined_thing"),
        "NVRTC log missing: {err}"
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn memory_mapped_into_the_pool_stays_free_to_the_process() {
    const GIB: usize = 1 << 30;
    let device = GpuDevice::open(0).expect("open device 0");
    let driver_free = || device.context().mem_get_info().expect("driver memory").0;
    let (free_before, _) = device.memory().expect("memory");
    let driver_before = driver_free();
    haloscope::gpu::reserve_pool(device.stream(), 2 * GIB).expect("reserve");
    // The driver now counts the mapped 2 GiB as used; the process can still take them.
    assert!(
        driver_free() + GIB < driver_before,
        "the reserve mapped nothing: driver free {} -> {}",
        driver_before,
        driver_free()
    );
    let (free_after, _) = device.memory().expect("memory");
    assert!(
        free_after.abs_diff(free_before) < GIB / 4,
        "free to the process {free_before} -> {free_after} after a reserve"
    );
    // An allocation inside the reserve comes from the pool: the driver maps nothing more.
    let driver_reserved = driver_free();
    let block = haloscope::gpu::alloc::<u8>(device.stream(), GIB).expect("alloc");
    device.stream().synchronize().expect("sync");
    assert!(
        driver_free() + GIB / 4 > driver_reserved,
        "the allocation mapped fresh memory"
    );
    let (free_in_use, _) = device.memory().expect("memory");
    assert!(
        free_in_use + GIB / 2 < free_after,
        "an allocation of 1 GiB left free to the process at {free_in_use} of {free_after}"
    );
    drop(block);
}
