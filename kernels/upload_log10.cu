// log10 of an uploaded field, in place, with the finite limits of the result: the device half
// of the resident upload (src/render/cuda/log10.rs). The host's f32::log10 is glibc's log10f
// (the fdlibm reduction around the table-driven logf), which is not correctly rounded, so a
// correctly rounded device log10 would differ from the CPU reference in about 1 value in 70.
// This is the same algorithm with every operation written out in round-to-nearest intrinsics
// (no contraction into fused multiply-adds), so each result has the host's bits; the renderer
// checks that on probe values against the host before it uses it. Self-contained.

// glibc logf's 16 subintervals: 1/c and log(c) (e_logf_data.c), as IEEE double bits.
__constant__ unsigned long long LOG10_INVC[16] = {
    0x3ff661ec79f8f3beull, 0x3ff571ed4aaf883dull, 0x3ff49539f0f010b0ull, 0x3ff3c995b0b80385ull,
    0x3ff30d190c8864a5ull, 0x3ff25e227b0b8ea0ull, 0x3ff1bb4a4a1a343full, 0x3ff12358f08ae5baull,
    0x3ff0953f419900a7ull, 0x3ff0000000000000ull, 0x3fee608cfd9a47acull, 0x3feca4b31f026aa0ull,
    0x3feb2036576afce6ull, 0x3fe9c2d163a1aa2dull, 0x3fe886e6037841edull, 0x3fe767dcf5534862ull};
__constant__ unsigned long long LOG10_LOGC[16] = {
    0xbfd57bf7808caadeull, 0xbfd2bef0a7c06ddbull, 0xbfd01eae7f513a67ull, 0xbfcb31d8a68224e9ull,
    0xbfc6574f0ac07758ull, 0xbfc1aa2bc79c8100ull, 0xbfba4e76ce8c0e5eull, 0xbfb1973c5a611cccull,
    0xbfa252f438e10c1eull, 0x0000000000000000ull, 0x3faaa5aa5df25984ull, 0x3fbc5e53aa362eb4ull,
    0x3fc526e57720db08ull, 0x3fcbc2860d224770ull, 0x3fd1058bc8a07ee1ull, 0x3fd4043057b6ee09ull};

// glibc logf for a normal x in [0.5, 2) (the only arguments log10f passes it).
__device__ __forceinline__ float glibc_logf_reduced(float x) {
    unsigned int ix = __float_as_uint(x);
    if (ix == 0x3f800000u) return 0.0f;
    unsigned int tmp = ix - 0x3f330000u;
    int i = (int)((tmp >> 19) % 16u);
    int k = (int)tmp >> 23;
    unsigned int iz = ix - (tmp & (0x1ffu << 23));
    double invc = __longlong_as_double((long long)LOG10_INVC[i]);
    double logc = __longlong_as_double((long long)LOG10_LOGC[i]);
    const double a0 = __longlong_as_double((long long)0xbfd00ea348b88334ull);
    const double a1 = __longlong_as_double((long long)0x3fd5575b0be00b6aull);
    const double a2 = __longlong_as_double((long long)0xbfdffffef20a4123ull);
    const double ln2 = __longlong_as_double((long long)0x3fe62e42fefa39efull);
    double z = (double)__uint_as_float(iz);
    double r = __dadd_rn(__dmul_rn(z, invc), -1.0);
    double y0 = __dadd_rn(logc, __dmul_rn((double)k, ln2));
    double r2 = __dmul_rn(r, r);
    double y = __dadd_rn(__dmul_rn(a1, r), a2);
    y = __dadd_rn(__dmul_rn(a0, r2), y);
    y = __dadd_rn(__dmul_rn(y, r2), __dadd_rn(y0, r));
    return __double2float_rn(y);
}

// glibc log10f for x > 0 (subnormals scaled by 2^25 first, +inf returned as it is).
__device__ __forceinline__ float glibc_log10f(float x) {
    const float two25 = __int_as_float(0x4c000000);
    const float ivln10 = __int_as_float(0x3ede5bd9);
    const float log10_2hi = __int_as_float(0x3e9a2080);
    const float log10_2lo = __int_as_float(0x355427db);
    int hx = __float_as_int(x);
    int k = 0;
    if (hx < 0x00800000) {
        k -= 25;
        x = __fmul_rn(x, two25);
        hx = __float_as_int(x);
    }
    if (hx >= 0x7f800000) return __fadd_rn(x, x);
    k += (hx >> 23) - 127;
    int i = (int)(((unsigned int)k & 0x80000000u) >> 31);
    hx = (hx & 0x007fffff) | ((0x7f - i) << 23);
    float y = (float)(k + i);
    float z = __fadd_rn(__fmul_rn(y, log10_2lo),
                        __fmul_rn(ivln10, glibc_logf_reduced(__int_as_float(hx))));
    return __fadd_rn(z, __fmul_rn(y, log10_2hi));
}

// f32 bits -> u32 with the same order (negative floats reversed), for atomicMin/Max.
__device__ __forceinline__ unsigned int log10_ordered_bits(float v) {
    unsigned int b = __float_as_uint(v);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// values[i] = log10(values[i]) for values > 0, NaN otherwise (as the host's staging transform);
// limits[0] / limits[1] = ordered bits of the finite minimum / maximum of the results (start:
// 0xFFFFFFFF and 0, left so when none is finite). Grid-stride over i < n.
extern "C" __global__ void upload_log10(float* __restrict__ values, unsigned int n,
                                        unsigned int* __restrict__ limits) {
    unsigned int lo = 0xFFFFFFFFu, hi = 0u;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += gridDim.x * blockDim.x) {
        float v = values[i];
        float t = v > 0.0f ? glibc_log10f(v) : __int_as_float(0x7fc00000);
        values[i] = t;
        if (isfinite(t)) {
            unsigned int u = log10_ordered_bits(t);
            lo = u < lo ? u : lo;
            hi = u > hi ? u : hi;
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        unsigned int l = __shfl_down_sync(0xffffffffu, lo, off);
        unsigned int h = __shfl_down_sync(0xffffffffu, hi, off);
        lo = l < lo ? l : lo;
        hi = h > hi ? h : hi;
    }
    if ((threadIdx.x & 31) == 0) {
        atomicMin(&limits[0], lo);
        atomicMax(&limits[1], hi);
    }
}
