/* gpu_mla's parallel fills (weights; per-sequence cache rows) against one-thread fills, bit for bit, and the RNG state after.
 * gcc -O2 -fopenmp -Itests -Iinclude fillcheck.c -lm -o fillcheck && OMP_NUM_THREADS=7 ./fillcheck  (2026-12-08: 1, 2, 7 threads: 0) */
#include "test_util.h"
#include <omp.h>
#define ROW 576
static inline uint16_t normal_bf16_of(uint64_t r, float scale) {
    const float s = (float)((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48)) * (1.0f / 65536.0f);
    return f32_to_bf16((s - 2.0f) * 1.7320508f * scale);
}
static void fill_serial(uint16_t *p, size_t n, float scale) { for (size_t i = 0; i < n; i++) p[i] = normal_bf16_of(test_rng_u64(), scale); }
static void fill_fast(uint16_t *p, size_t n, float scale) {
    const uint64_t base = test_rng_state;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < (int64_t)n; i++) p[i] = normal_bf16_of(test_rng_at(base, (uint64_t)i), scale);
    test_rng_skip(n);
}
int main(void) {
    int bad = 0;
    for (int trial = 0; trial < 20; trial++) {
        uint64_t seed = 12345 + trial * 7919;
        size_t n = 1 + (trial * 104729) % 300000;
        uint16_t *a = malloc(n * 2), *b = malloc(n * 2);
        test_rng_state = seed; fill_serial(a, n, 0.3f); uint64_t na = test_rng_u64();
        test_rng_state = seed; fill_fast(b, n, 0.3f); uint64_t nb = test_rng_u64();
        bad += memcmp(a, b, n * 2) != 0 || na != nb;
        /* cache: B sequences, rows lens[b], row stride rs, batch stride bs */
        int64_t B = 1 + trial % 9, rs = ROW + (trial % 3), cap = 40, bs = cap * rs;
        int64_t lens[16]; for (int64_t q = 0; q < B; q++) lens[q] = (q * 13 + trial) % cap;
        uint16_t *c1 = calloc(B * bs, 2), *c2 = calloc(B * bs, 2);
        test_rng_state = seed;
        for (int64_t q = 0; q < B; q++) for (int64_t t = 0; t < lens[q]; t++) fill_serial(c1 + q * bs + t * rs, ROW, 2.0f);
        na = test_rng_u64();
        test_rng_state = seed;
        int64_t row0[17]; row0[0] = 0; for (int64_t q = 0; q < B; q++) row0[q + 1] = row0[q] + lens[q];
        const uint64_t base = test_rng_state;
#pragma omp parallel for schedule(dynamic, 1)
        for (int64_t q = 0; q < B; q++) for (int64_t t = 0; t < row0[q + 1] - row0[q]; t++) for (int64_t j = 0; j < ROW; j++)
            c2[q * bs + t * rs + j] = normal_bf16_of(test_rng_at(base, (uint64_t)((row0[q] + t) * ROW + j)), 2.0f);
        test_rng_skip((uint64_t)(row0[B] * ROW));
        nb = test_rng_u64();
        bad += memcmp(c1, c2, B * bs * 2) != 0 || na != nb;
        free(a); free(b); free(c1); free(c2);
    }
    printf("threads %d: %d mismatches\n", omp_get_max_threads(), bad);
    return bad != 0;
}
