// tp_count_b2fd: the counting kernel wherever tp_count_flats2's one-step cell table does not
// apply (cuda/tables.rs `one_step` false, e.g. a bin narrower than a lookup cell). Appended to
// kernels/twopoint.cu by src/twopoint/cuda/count.rs; the loop is its DEFINE_COUNT_BATCHED and
// the pair test its count_pair_recompute, in two modes that cut the instructions per candidate
// (the counter is bound by them):
//   - C2_FMA: f32 c² = fma(dx, dx, fma(dy, dy, dz·dz)): 3 instructions instead of 5 under
//     --fmad=false. Three roundings of partial sums ≤ c² (dz², the inner and the outer fma; the
//     products inside an fma are exact), the same γ₃·c² as the plain sum (Higham §3.1), so the
//     f32 bands of cuda/tables.rs hold (see its module notes);
//   - LOOKUP_DIRECT: a lookup cell that lies inside one bin's certain band (LUT_DIRECT, decided
//     on the host) gives the bin with no bin search and no band check.
// Counts equal the CPU's exactly (same edge rule, same host list).

// ptxas -v (sm_90): 64 registers (8 blocks per SM), no spills.
DEFINE_COUNT_BATCHED(tp_count_b2fd, 2, 8, (count_pair_recompute<C2_FMA, LOOKUP_DIRECT>))
