// The sum of several devices' fixed-point τ images (src/render/cuda/multi/reduce.rs): integer
// addition, so the total does not depend on the order in which the partial images arrive.
extern "C" __global__ void tau_fixed_add(unsigned long long* __restrict__ dst,
                                         const unsigned long long* __restrict__ src,
                                         unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] += src[i];
}
