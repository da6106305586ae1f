// Probe: which warpgroup-to-warpgroup hand-offs through shared memory does compute-sanitizer's racecheck understand?
//
// Why: attention v3 (src/cuda/mla_attention_sm90_seesaw.cu) hands the row maxima from one warpgroup to the other with
// a producer bar.arrive and a consumer bar.sync on a named barrier (PTX ISA: when the barrier completes, the
// arriving threads' earlier memory accesses are performed relative to the waiting ones). racecheck reports hazards
// on exactly those accesses. This probe runs the same hand-off, stripped of everything else, in eight ways, so the
// tool's verdict on each can be read off one racecheck run:
//   0 arrive_sync:    producer bar.arrive / consumer bar.sync (the v3 pattern), both directions
//   1 full_sync:      both warpgroups bar.sync (the control: racecheck must call it clean)
//   2 mbar_all:       mbarriers (full / empty), all 128 threads of a warpgroup arrive (release), waiters try_wait
//   3 mbar_elected:   mbarriers, __syncwarp then one lane per warp arrives (4 arrivals a phase)
//   4 mbar_uneven:    as 2, and each warpgroup also syncs its own 128 threads on its own named barrier (bar.sync
//                     4 + wg, 128), warpgroup 0 every round and warpgroup 1 every other round (v3 does such syncs,
//                     a different number in each warpgroup: the rotation of k_pe, P visible to its own wgmma)
//   5 mbar_uneven_end: as 4, and the exchange after the rounds goes through an mbarrier (all 256 threads arrive,
//                     then wait) instead of __syncthreads
//   6 mbar_uneven_named: as 4, the exchange after the rounds through a named barrier of all 256 threads (bar.sync 1,
//                     256: the attention's piece combine, seesaw_piece_done, exchanges its flag and weights so)
//   7 mbar_even_named: as 6, but both warpgroups pass their own named barriers every round (equal counts)
// Every round the producer writes values that name the round, the consumer checks each one it reads, so the probe
// also fails (exit 1) if a hand-off does not order the accesses on the hardware. After the rounds both warpgroups
// exchange a value through __syncthreads (v3 ends the same way, and racecheck reported that exchange too).
//
// Build and run (sm_90a; not part of the library or of ctest):
//   nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I src bench/probes/racecheck_handoff.cu -o probe
//   ./probe && compute-sanitizer --tool racecheck ./probe [mode]
#include "cuda/ptx.cuh"

#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>

using namespace latte;

constexpr int kRounds = 64;

template <int kMode>
__global__ void __launch_bounds__(256, 1) handoff(int *errors) {
#if LATTE_PTX_SM90A
    __shared__ float slot[128];
    __shared__ float tail[256];
    __shared__ __align__(8) unsigned long long mbar[3];  // full, empty, end
    const int tid = threadIdx.x, wg = __shfl_sync(0xffffffffu, tid / 128, 0), wtid = tid % 128;
    const uint32_t full = ptx::smem_u32(&mbar[0]), empty = ptx::smem_u32(&mbar[1]);
    const uint32_t end = ptx::smem_u32(&mbar[2]);
    const uint32_t count = kMode == 3 ? 4u : 128u;
    if (tid == 0) {
        ptx::mbarrier_init(full, count);
        ptx::mbarrier_init(empty, count);
        ptx::mbarrier_init(end, 256);
    }
    __syncthreads();
    auto signal = [&](int named, uint32_t bar) {
        if (kMode == 0) ptx::named_bar_arrive(named, 256);
        else if (kMode == 1) ptx::named_bar_sync(named, 256);
        else if (kMode != 3) ptx::mbarrier_arrive(bar);
        else {
            __syncwarp();
            if (tid % 32 == 0) ptx::mbarrier_arrive(bar);
        }
    };
    auto await = [&](int named, uint32_t bar, uint32_t parity) {
        if (kMode <= 1) ptx::named_bar_sync(named, 256);
        else ptx::mbarrier_wait(bar, parity);
    };
    // one slot, strict ping-pong (as in v3: each hand-off has at most one signal outstanding; a named barrier could
    // not count two, and a parity wait could not tell two phases apart)
    int bad = 0;
    for (int r = 0; r < kRounds; ++r) {
        if (kMode >= 4 && (wg == 0 || r % 2 == 0 || kMode == 7)) ptx::named_bar_sync(4 + wg, 128);
        if (wg == 0) {
            if (r > 0) await(2, empty, (uint32_t)((r - 1) & 1));  // the consumer is done with the slot
            slot[wtid] = (float)(r * 1000 + wtid);
            signal(1, full);
        } else {
            await(1, full, (uint32_t)(r & 1));
            const int j = (wtid + 37) % 128;  // another thread's value
            bad += slot[j] != (float)(r * 1000 + j);
            signal(2, empty);
        }
    }
    if (wg == 0) await(2, empty, (uint32_t)((kRounds - 1) & 1));  // the last release: every signal has its wait
    tail[tid] = (float)(3 * tid);
    if (kMode == 5) {
        ptx::mbarrier_arrive(end);
        ptx::mbarrier_wait(end, 0);
    } else if (kMode >= 6) {
        ptx::named_bar_sync(1, 256);
    } else {
        __syncthreads();
    }
    bad += tail[(tid + 128) % 256] != (float)(3 * ((tid + 128) % 256));
    if (bad) atomicAdd(errors, bad);
#else
    (void)errors;
#endif
}

static const char *kNames[8] = {"arrive_sync",  "full_sync",   "mbar_all",          "mbar_elected",
                                "mbar_uneven", "mbar_uneven_end", "mbar_uneven_named", "mbar_even_named"};

template <int kMode>
static int run(int *d_errors) {
    cudaMemset(d_errors, 0, sizeof(int));
    handoff<kMode><<<8, 256>>>(d_errors);
    int h = -1;
    const cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(&h, d_errors, sizeof h, cudaMemcpyDeviceToHost);
    printf("%-15s %s (%d wrong values)\n", kNames[kMode], e == cudaSuccess && h == 0 ? "ok" : "FAIL", h);
    return e == cudaSuccess && h == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    const int only = argc > 1 ? atoi(argv[1]) : -1;
    int *d_errors = nullptr;
    if (cudaMalloc(&d_errors, sizeof(int)) != cudaSuccess) return 77;
    int fails = 0;
    if (only < 0 || only == 0) fails += run<0>(d_errors);
    if (only < 0 || only == 1) fails += run<1>(d_errors);
    if (only < 0 || only == 2) fails += run<2>(d_errors);
    if (only < 0 || only == 3) fails += run<3>(d_errors);
    if (only < 0 || only == 4) fails += run<4>(d_errors);
    if (only < 0 || only == 5) fails += run<5>(d_errors);
    if (only < 0 || only == 6) fails += run<6>(d_errors);
    if (only < 0 || only == 7) fails += run<7>(d_errors);
    cudaFree(d_errors);
    return fails ? 1 : 0;
}
