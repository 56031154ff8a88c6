// Step 6 of the pipeline: tau = fixed-point GPU tau * 2^-k + the CPU threads' tau (large
// splats), then the tone map of src/render/tone.rs (`tone_value`): contrast * (1 - exp(-B tau))^gamma,
// clamped, quantised by round-to-nearest to 8 or 16 bits. Self-contained.

extern "C" __global__ void compose(const unsigned long long* __restrict__ tau_fixed,
                                   const float* __restrict__ tau_cpu, int has_cpu,
                                   int channels, unsigned long long n,
                                   double inv_scale, float* __restrict__ tau) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    // One fixed-point value per pixel (grey frame) serves all three channels.
    unsigned long long fixed = channels == 1 ? tau_fixed[i / 3] : tau_fixed[i];
    float v = (float)((double)fixed * inv_scale);
    if (has_cpu) v = v + tau_cpu[i];
    tau[i] = v;
}

__device__ __forceinline__ float tone_value(float t, float tau_scale, float gamma, float contrast) {
    float v = 1.0f - expf(-(t * tau_scale));
    if (gamma != 1.0f) v = powf(v > 0.0f ? v : 0.0f, gamma);
    v = contrast * v;
    if (isnan(v)) return 0.0f;
    return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
}

// One thread per pixel: out_channels bytes of RGB (out_channels 3) or of RGBA with an opaque
// alpha (out_channels 4, the window's texture layout) from its three τ values; `pixels` pixels.
// (One thread per byte took a 64-bit division by out_channels per byte: 47 us for a 2048^2
// image on an H200, issue-bound.)
extern "C" __global__ void tone8(const float* __restrict__ tau, unsigned long long pixels,
                                 int out_channels, float tau_scale, float gamma, float contrast,
                                 unsigned char* __restrict__ out) {
    unsigned long long pixel = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (pixel >= pixels) return;
    unsigned char* o = out + pixel * (unsigned long long)out_channels;
#pragma unroll
    for (int c = 0; c < 3; ++c) {
        o[c] = (unsigned char)roundf(tone_value(tau[3 * pixel + c], tau_scale, gamma, contrast) *
                                     255.0f);
    }
    if (out_channels == 4) o[3] = (unsigned char)255;
}

extern "C" __global__ void tone16(const float* __restrict__ tau, unsigned long long n,
                                  float tau_scale, float gamma, float contrast,
                                  unsigned short* __restrict__ out) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = (unsigned short)roundf(tone_value(tau[i], tau_scale, gamma, contrast) * 65535.0f);
}

// Auto exposure on the device (src/render/exposure.rs): per pixel the largest of the three
// channels (fmaxf drops a NaN as Rust's f32::max does), kept when > 0 and finite. The bits of
// positive finite floats sort as the values do, so two 16-bit histograms (the high half, then
// the low half within the chosen high bin) find the nearest-rank percentile exactly.
extern "C" __global__ void exposure_hist(const float* __restrict__ tau, unsigned long long pixels,
                                         int low_pass, unsigned int high,
                                         unsigned int* __restrict__ hist) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= pixels) return;
    float m = fmaxf(fmaxf(tau[3 * i], tau[3 * i + 1]), tau[3 * i + 2]);
    if (!(m > 0.0f) || isinf(m)) return;
    unsigned int bits = __float_as_uint(m);
    if (!low_pass) {
        atomicAdd(&hist[bits >> 16], 1u);
    } else if ((bits >> 16) == high) {
        atomicAdd(&hist[bits & 0xffffu], 1u);
    }
}
