// The CUDA driver's start on this machine: cuInit, then each device's primary context, one
// after the other or all at once on threads (twopoint's `open` stage is these steps).
//
//   nvcc -O2 -o context-probe scripts/bench/context-probe.c -lcuda -lpthread
//   ./context-probe serial|parallel [DEVICES]
//
// DEVICES defaults to every device the driver lists.
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double start;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// Retains device `arg`'s primary context and makes a first allocation in it.
static void *open_device(void *arg) {
    int ordinal = (int)(long)arg;
    CUdevice device;
    CUcontext context;
    CUdeviceptr memory;
    double before = now();
    cuDeviceGet(&device, ordinal);
    CUresult rc = cuDevicePrimaryCtxRetain(&context, device);
    double retained = now();
    cuCtxSetCurrent(context);
    cuMemAlloc(&memory, 1 << 20);
    double allocated = now();
    printf("device %d: context %.3f s (rc %d), first allocation %.3f s, done at %.3f s\n",
           ordinal, retained - before, rc, allocated - retained, allocated - start);
    return NULL;
}

int main(int argc, char **argv) {
    start = now();
    int parallel = argc > 1 && strcmp(argv[1], "parallel") == 0;
    CUresult rc = cuInit(0);
    int count = 0;
    cuDeviceGetCount(&count);
    printf("cuInit %.3f s (rc %d), %d devices\n", now() - start, rc, count);
    if (argc > 2) count = atoi(argv[2]);
    if (count > 64) count = 64;
    pthread_t threads[64];
    for (int d = 0; d < count; d++) {
        if (parallel) pthread_create(&threads[d], NULL, open_device, (void *)(long)d);
        else open_device((void *)(long)d);
    }
    if (parallel)
        for (int d = 0; d < count; d++) pthread_join(threads[d], NULL);
    printf("total %.3f s\n", now() - start);
    return 0;
}
