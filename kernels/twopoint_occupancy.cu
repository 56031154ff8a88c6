// Occupancy variants of the batched-load kernel (issue 6, BENCHMARKS.md session 4): appended to
// kernels/twopoint.cu after twopoint_groups.cu by src/twopoint/count_cuda.rs. tp_count_batch2
// uses 64 registers (8 blocks of 128 threads per SM, 50 % occupancy) and the counting kernels
// are latency-bound (session 3: half the resident warps, twice the time), so these trade a few
// register spills (outside the candidate loop, to L1) for more resident warps. Same code and
// edge rule as tp_count_batch2: only the register cap differs.
// ptxas -v (sm_90): b2o10 48 registers (76 B spilled), b2o12 40 (92 B), b1o12 40 (80 B),
// b1o16 32 (112 B).
DEFINE_COUNT_BATCHED(tp_count_b2o10, 2, 10)
DEFINE_COUNT_BATCHED(tp_count_b2o12, 2, 12)
DEFINE_COUNT_BATCHED(tp_count_b1o12, 1, 12)
DEFINE_COUNT_BATCHED(tp_count_b1o16, 1, 16)
