// ---------------------------------------------------------------------------------------------
// 6. The halo catalogue's sums on the device (appended to kernels/fof.cu by the loader; uses its
//    types and min_image). The kept particles are listed in sorted-cell order, stably sorted by
//    halo rank, and cut into chunks that never straddle two halos; each chunk's sums are taken
//    sequentially in that fixed order and the host adds the chunks of a halo in chunk order, so
//    the result is deterministic (run to run); it differs from the CPU's member-index order
//    only by float64 rounding (src/halo/cuda/catalogue.rs states the tolerance).

// Per sorted position: its halo rank (all ones when not kept) and a 0/1 kept flag for the scan.
extern "C" __global__ void fof_sorted_ranks(const u32* __restrict__ cell_start,
                                            const u32* __restrict__ parent,
                                            const u32* __restrict__ rank_of_cell, u32 n_cells,
                                            u32* __restrict__ sorted_rank,
                                            u32* __restrict__ kept_flag) {
    u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    u32 rank = rank_of_cell[parent[c]];
    u32 flag = rank != 0xffffffffu ? 1u : 0u;
    for (u32 s = cell_start[c]; s < cell_start[c + 1]; s++) {
        sorted_rank[s] = rank;
        kept_flag[s] = flag;
    }
}

// The kept sorted positions, in order, with their rank as the sort key.
extern "C" __global__ void fof_compact_members(const u32* __restrict__ sorted_rank,
                                               const u32* __restrict__ kept_offset, u32 n,
                                               u64* __restrict__ keys, u32* __restrict__ values) {
    u32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n) return;
    u32 rank = sorted_rank[s];
    if (rank == 0xffffffffu) return;
    keys[kept_offset[s]] = rank;
    values[kept_offset[s]] = s;
}

// Per chunk: mass, mass-weighted offset from the halo's reference member (minimum image) and
// momentum, summed in member order (the CPU's halo_of, same operations): 7 doubles per chunk.
extern "C" __global__ void fof_halo_sums(const u32* __restrict__ members,
                                         const u32* __restrict__ chunk_first,
                                         const u32* __restrict__ chunk_halo, u32 n_chunks,
                                         const u32* __restrict__ order,
                                         const double* __restrict__ sx,
                                         const double* __restrict__ sy,
                                         const double* __restrict__ sz,
                                         const double* __restrict__ reference, int periodic,
                                         double box_size, const float* __restrict__ masses,
                                         int per_particle_mass, double uniform_mass,
                                         const float* __restrict__ velocities, int has_velocities,
                                         double* __restrict__ partial) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n_chunks) return;
    u32 h = chunk_halo[k];
    double ref[3] = {reference[3 * h], reference[3 * h + 1], reference[3 * h + 2]};
    double mass = 0.0;
    double moment[3] = {0.0, 0.0, 0.0};
    double momentum[3] = {0.0, 0.0, 0.0};
    for (u32 j = chunk_first[k]; j < chunk_first[k + 1]; j++) {
        u32 s = members[j];
        u32 i = order[s];
        double m = per_particle_mass ? (double)masses[i] : uniform_mass;
        double p[3] = {sx[s], sy[s], sz[s]};
        mass += m;
        for (int a = 0; a < 3; a++) {
            double d = p[a] - ref[a];
            if (periodic) d = min_image(d, box_size);
            moment[a] += m * d;
        }
        if (has_velocities) {
            for (int a = 0; a < 3; a++) momentum[a] += m * (double)velocities[3 * (u64)i + a];
        }
    }
    double* out = partial + 7 * (u64)k;
    out[0] = mass;
    for (int a = 0; a < 3; a++) {
        out[1 + a] = moment[a];
        out[4 + a] = momentum[a];
    }
}

// Per chunk: sum and maximum of the squared member distances from the halo's centre (minimum
// image): 2 doubles per chunk.
extern "C" __global__ void fof_halo_radii(const u32* __restrict__ members,
                                          const u32* __restrict__ chunk_first,
                                          const u32* __restrict__ chunk_halo, u32 n_chunks,
                                          const double* __restrict__ sx,
                                          const double* __restrict__ sy,
                                          const double* __restrict__ sz,
                                          const double* __restrict__ com, int periodic,
                                          double box_size, double* __restrict__ partial) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n_chunks) return;
    u32 h = chunk_halo[k];
    double centre[3] = {com[3 * h], com[3 * h + 1], com[3 * h + 2]};
    double sum_r2 = 0.0;
    double max_r2 = 0.0;
    for (u32 j = chunk_first[k]; j < chunk_first[k + 1]; j++) {
        u32 s = members[j];
        double p[3] = {sx[s], sy[s], sz[s]};
        double d[3];
        for (int a = 0; a < 3; a++) {
            d[a] = p[a] - centre[a];
            if (periodic) d[a] = min_image(d[a], box_size);
        }
        double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        sum_r2 += r2;
        max_r2 = r2 > max_r2 ? r2 : max_r2;
    }
    partial[2 * (u64)k] = sum_r2;
    partial[2 * (u64)k + 1] = max_r2;
}
