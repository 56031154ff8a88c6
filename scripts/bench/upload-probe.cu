// Upload and allocation probe for a 2-GPU host: pinned-staging upload rates
// one device vs two at once, cudaHostRegister cost and DMA from registered memory, and the
// cost of fresh device allocations (pool release threshold 0) vs kept pages.
// Build and run on the GPU machine: nvcc -O2 -std=c++17 -o /tmp/probe scripts/bench/upload-probe.cu -lpthread && /tmp/probe
// (what BENCHMARKS.md "Several GPUs and MPI ranks" quotes for FoF on spatial domains).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
#include <chrono>
#include <cstdlib>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

// Staged upload: host copy (nthreads threads) into two pinned buffers alternating, DMA each.
double staged(int dev, const char* src, size_t bytes, size_t chunk, int nthreads, int nbuf) {
    CK(cudaSetDevice(dev));
    char* d; CK(cudaMalloc(&d, bytes));
    std::vector<char*> pin(nbuf); std::vector<cudaEvent_t> ev(nbuf);
    for (int i = 0; i < nbuf; i++) { CK(cudaMallocHost(&pin[i], chunk)); CK(cudaEventCreate(&ev[i])); }
    cudaStream_t s; CK(cudaStreamCreate(&s));
    std::vector<bool> used(nbuf, false);
    CK(cudaDeviceSynchronize());
    double t0 = now();
    for (size_t off = 0, k = 0; off < bytes; off += chunk, k++) {
        size_t n = std::min(chunk, bytes - off); int b = k % nbuf;
        if (used[b]) CK(cudaEventSynchronize(ev[b]));
        std::vector<std::thread> th;
        for (int t = 0; t < nthreads; t++) th.emplace_back([&, t] { size_t a = n * t / nthreads, z = n * (t + 1) / nthreads; memcpy(pin[b] + a, src + off + a, z - a); });
        for (auto& x : th) x.join();
        CK(cudaMemcpyAsync(d + off, pin[b], n, cudaMemcpyHostToDevice, s)); CK(cudaEventRecord(ev[b], s)); used[b] = true;
    }
    CK(cudaStreamSynchronize(s));
    double t = now() - t0;
    for (int i = 0; i < nbuf; i++) CK(cudaFreeHost(pin[i]));
    CK(cudaFree(d));
    return t;
}

int main() {
    size_t G = 1ull << 30; size_t bytes = 2400ull * 1000 * 1000;
    char* src = (char*)malloc(2 * bytes);
    #pragma omp parallel for
    for (size_t i = 0; i < 2 * bytes; i += 4096) src[i] = (char)i;
    memset(src, 1, 2 * bytes);
    for (int dev = 0; dev < 2; dev++) { CK(cudaSetDevice(dev)); CK(cudaFree(0)); }
    for (int nt : {8, 16}) for (size_t chunk : {8ull << 20, 64ull << 20}) for (int nbuf : {2, 4}) {
        double one = staged(0, src, bytes, chunk, nt, nbuf);
        double t0 = now(); double a = 0, b = 0;
        std::thread x([&] { a = staged(0, src, bytes, chunk, nt, nbuf); });
        std::thread y([&] { b = staged(1, src + bytes, bytes, chunk, nt, nbuf); });
        x.join(); y.join(); double both = now() - t0;
        printf("staged threads %d chunk %zu MiB bufs %d: one device %.1f GB/s, two at once %.1f + %.1f GB/s (wall %.3f s for 2x2.4 GB)\n", nt, chunk >> 20, nbuf, bytes / one / 1e9, bytes / a / 1e9, bytes / b / 1e9, both);
    }
    // Registered memory: cost of cudaHostRegister of 2.4 GB, then DMA straight from it.
    for (int rep = 0; rep < 2; rep++) {
        double t0 = now();
        std::thread x([&] { CK(cudaSetDevice(0)); CK(cudaHostRegister(src, bytes, cudaHostRegisterDefault)); });
        std::thread y([&] { CK(cudaSetDevice(1)); CK(cudaHostRegister(src + bytes, bytes, cudaHostRegisterDefault)); });
        x.join(); y.join();
        double reg = now() - t0;
        double ta = 0, tb = 0; t0 = now();
        std::thread p([&] { CK(cudaSetDevice(0)); char* d; CK(cudaMalloc(&d, bytes)); double s = now(); CK(cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice)); ta = now() - s; CK(cudaFree(d)); });
        std::thread q([&] { CK(cudaSetDevice(1)); char* d; CK(cudaMalloc(&d, bytes)); double s = now(); CK(cudaMemcpy(d, src + bytes, bytes, cudaMemcpyHostToDevice)); tb = now() - s; CK(cudaFree(d)); });
        p.join(); q.join();
        double dma = now() - t0;
        t0 = now(); CK(cudaHostUnregister(src)); CK(cudaHostUnregister(src + bytes)); double unreg = now() - t0;
        printf("register 2x2.4 GB (two threads) %.3f s, DMA from registered %.1f + %.1f GB/s (wall %.3f), unregister %.3f s\n", reg, bytes / ta / 1e9, bytes / tb / 1e9, dma, unreg);
    }
    // Fresh allocations: cudaMallocAsync of 30 GB with release threshold 0 (freed back at sync) vs kept.
    for (int keep = 0; keep < 2; keep++) for (int devs = 1; devs <= 2; devs++) {
        for (int dev = 0; dev < devs; dev++) { CK(cudaSetDevice(dev)); cudaMemPool_t pool; CK(cudaDeviceGetDefaultMemPool(&pool, dev)); unsigned long long thr = keep ? ~0ull : 0; CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr)); }
        for (int rep = 0; rep < 2; rep++) {
            double t0 = now();
            std::vector<std::thread> th;
            for (int dev = 0; dev < devs; dev++) th.emplace_back([dev, G] {
                CK(cudaSetDevice(dev)); cudaStream_t s; CK(cudaStreamCreate(&s));
                std::vector<void*> p(30);
                for (auto& q : p) { CK(cudaMallocAsync(&q, G, s)); CK(cudaMemsetAsync(q, 0, 1, s)); }
                CK(cudaStreamSynchronize(s));
                for (auto& q : p) CK(cudaFreeAsync(q, s));
                CK(cudaStreamSynchronize(s)); CK(cudaStreamDestroy(s)); });
            for (auto& x : th) x.join();
            printf("alloc+touch+free 30 x 1 GiB on %d device(s) at once, pool %s, rep %d: %.3f s\n", devs, keep ? "keeps pages" : "releases", rep, now() - t0);
        }
    }
    return 0;
}
