/* Bytes per second of the collectives haloscope moves particles with (MPI_Alltoallv,
 * MPI_Gatherv, MPI_Bcast), between the ranks of one host, for picking Open MPI's transport
 * (scripts/bench/mpi-transport.sh runs it under several settings).
 *
 *   mpicc -O2 -o mpi-bandwidth scripts/bench/mpi-bandwidth.c
 *   mpirun -n 2 [--mca ...] ./mpi-bandwidth [MIB_PER_RANK] [REPEATS]
 *
 * Every rank sends MIB_PER_RANK MiB to every rank (itself included) in one MPI_Alltoallv, then
 * MIB_PER_RANK MiB to rank 0 in one MPI_Gatherv, then rank 0 broadcasts MIB_PER_RANK MiB; each
 * REPEATS times, the slowest rank's time per call. The bytes received are checked. Rank 0
 * prints one line: `alltoallv GB/s gatherv GB/s bcast GB/s` counting the bytes that crossed
 * between ranks (a rank's message to itself is not counted), best of the repeats. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double slowest(double t) {
    double worst;
    MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long mib = argc > 1 ? atol(argv[1]) : 256;
    int repeats = argc > 2 ? atoi(argv[2]) : 2;
    int per = (int)(mib << 20);
    if ((long)per * size > 0x7fffffffL) {
        if (rank == 0) fprintf(stderr, "MIB_PER_RANK x ranks must stay below 2 GiB\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *send = malloc((size_t)per * size), *recv = malloc((size_t)per * size);
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    if (!send || !recv || !counts || !displs) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int d = 0; d < size; d++) {
        counts[d] = per;
        displs[d] = d * per;
        memset(send + (size_t)d * per, 1 + rank + 16 * d, per);
    }
    double best[3] = {1e30, 1e30, 1e30};
    int bad = 0;
    for (int r = 0; r < repeats; r++) {
        memset(recv, 0, (size_t)per * size);
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        MPI_Alltoallv(send, counts, displs, MPI_BYTE, recv, counts, displs, MPI_BYTE,
                      MPI_COMM_WORLD);
        t = slowest(MPI_Wtime() - t);
        if (t < best[0]) best[0] = t;
        for (int s = 0; s < size; s++) {
            char want = (char)(1 + s + 16 * rank);
            if (recv[(size_t)s * per] != want || recv[(size_t)s * per + per - 1] != want) bad = 1;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        MPI_Gatherv(send, per, MPI_BYTE, recv, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
        t = slowest(MPI_Wtime() - t);
        if (t < best[1]) best[1] = t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        MPI_Bcast(recv, per, MPI_BYTE, 0, MPI_COMM_WORLD);
        t = slowest(MPI_Wtime() - t);
        if (t < best[2]) best[2] = t;
    }
    int any_bad;
    MPI_Reduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double crossed = (double)per * size * (size - 1);
        double one_way = (double)per * (size - 1);
        printf("ranks %d MiB %ld alltoallv %.3f GB/s gatherv %.3f GB/s bcast %.3f GB/s%s\n",
               size, mib, crossed / best[0] / 1e9, one_way / best[1] / 1e9,
               one_way / best[2] / 1e9, any_bad ? " DATA WRONG" : "");
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
