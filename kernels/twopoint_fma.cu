// Fused-multiply-add variants of tp_count_batch2 (issue 6, BENCHMARKS.md session 4, second
// pass): appended to kernels/twopoint.cu by src/twopoint/count_cuda.rs. The counter is bound by
// the instructions it runs per candidate (session 4: occupancy changed nothing), so these cut
// them:
//   - C2_FMA: f32 c² = fma(dx, dx, fma(dy, dy, dz·dz)): 3 instructions instead of 5 under
//     --fmad=false. Three roundings of partial sums ≤ c² (dz², the inner and the outer fma; the
//     products inside an fma are exact), the same γ₃·c² as the plain sum (Higham §3.1), so the
//     f32 bands of cuda_tables.rs still hold (see its module notes);
//   - LOOKUP_DIRECT: a lookup cell that lies inside one bin's certain band (LUT_DIRECT, decided
//     on the host) gives the bin with no bin search and no band check.
// Both are modes of twopoint.cu's count_pair_recompute, and the loop is its
// DEFINE_COUNT_BATCHED: only the instantiations live here.
// tp_count_b2fd (both): 1 % faster than batch2 on an H200, exact; the default until session 5
// (now tp_count_flats2, twopoint_flat.cu), and the fallback where its cell table does not apply.
// Measured and rejected (session 4, run 3; code in git history): warp-aggregated shared atomics
// (__match_any_sync, the leader adds the peer count): 1.36× slower; ncu showed 3.2 M bank
// conflicts for 127 M shared atomics in batch2, so same-address serialisation was not a cost;
// an 8× finer direct table read through L1 (b2fx, run 4; commit 299a7c4): 13 % fewer warp
// instructions but 70 registers (7 blocks per SM) and no faster than b2fd.
// Counts are those of tp_count_batch2 exactly (same edge rule, same host list).

// ptxas -v (sm_90): 64 registers (8 blocks per SM), no spills.
DEFINE_COUNT_BATCHED(tp_count_b2f, 2, 8, (count_pair_recompute<C2_FMA, LOOKUP_SEARCH>))
DEFINE_COUNT_BATCHED(tp_count_b2fd, 2, 8, (count_pair_recompute<C2_FMA, LOOKUP_DIRECT>))
