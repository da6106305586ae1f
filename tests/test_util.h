/*
 * Small helpers shared by the test programs: a seeded RNG, bf16/f16 conversions, element-wise
 * comparison that counts and reports every miss, and the closing "N passed, N failed" line.
 *
 * Exit codes: 0 all passed, 1 a check failed, 77 skipped (GPU test with no GPU; ctest reports it as
 * skipped). With LATTE_REQUIRE_GPU=1 in the environment (make gpu-test) a missing GPU is a failure.
 */
#ifndef LATTE_TEST_UTIL_H
#define LATTE_TEST_UTIL_H

#include "latte.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TEST_SKIP 77

static int test_passed_count = 0, test_failed_count = 0;

/* one named check: prints only on failure */
#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (cond) {                                                                          \
            test_passed_count++;                                                             \
        } else {                                                                             \
            test_failed_count++;                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                             \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fprintf(stderr, "\n");                                                           \
        }                                                                                    \
    } while (0)

/* a latte call that must succeed */
#define CHECK_OK(call)                                                                       \
    do {                                                                                     \
        latte_status st_ = (call);                                                           \
        CHECK(st_ == LATTE_STATUS_SUCCESS, "%s -> %s (%s)", #call, latte_status_string(st_), \
              latte_last_error());                                                           \
    } while (0)

/* prints the closing line and returns the exit code */
static inline int test_finish(const char *name) {
    printf("%s: %d passed, %d failed\n", name, test_passed_count, test_failed_count);
    return test_failed_count ? 1 : 0;
}

/* GPU tests call this first: returns 1 to run, 0 to skip (the caller returns TEST_SKIP). */
static inline int test_gpu_available(const char *name) {
    if (latte_cuda_device_count() > 0) return 1;
    const char *req = getenv("LATTE_REQUIRE_GPU");
    if (req && req[0] == '1') {
        fprintf(stderr, "%s: LATTE_REQUIRE_GPU=1 but no CUDA device is usable\n", name);
        exit(1);
    }
    printf("%s: skipped, no CUDA device\n", name);
    return 0;
}

/* ---- RNG: splitmix64, fresh seed per run unless LATTE_TEST_SEED is set ----
 * splitmix64 is a counter: the draw k (0-based) after state s is test_rng_mix(s + (k + 1) * golden). A fill that
 * runs on several threads computes each value from its position (test_rng_at) and then moves the state past all
 * of them (test_rng_skip): the same numbers, bit for bit, as the one-thread loop of test_rng_u64, for any thread
 * count, so a seed reproduces a run whatever machine it ran on. */
#define TEST_RNG_GOLDEN 0x9e3779b97f4a7c15ull
static uint64_t test_rng_state = TEST_RNG_GOLDEN;
static inline uint64_t test_rng_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline uint64_t test_rng_u64(void) { return test_rng_mix(test_rng_state += TEST_RNG_GOLDEN); }
/* the draw k places ahead of state `base` (k = 0: what test_rng_u64 returns next), without moving the state */
static inline uint64_t test_rng_at(uint64_t base, uint64_t k) { return test_rng_mix(base + (k + 1) * TEST_RNG_GOLDEN); }
/* moves the state past n draws (after a fill made of test_rng_at(base, 0 .. n-1)) */
static inline void test_rng_skip(uint64_t n) { test_rng_state += n * TEST_RNG_GOLDEN; }
static inline uint64_t test_seed(const char *name) {
    const char *s = getenv("LATTE_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    test_rng_state = seed;
    printf("%s: seed %llu (LATTE_TEST_SEED=%llu reproduces)\n", name, (unsigned long long)seed,
           (unsigned long long)seed);
    return seed;
}
static inline double test_uniform(void) { return (double)(test_rng_u64() >> 11) * (1.0 / 9007199254740992.0); }
static inline double test_normal(void) {
    double u1 = test_uniform(), u2 = test_uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
static inline int64_t test_randint(int64_t lo, int64_t hi) { /* inclusive */
    return lo + (int64_t)(test_rng_u64() % (uint64_t)(hi - lo + 1));
}

/* memcpy in 1 MiB pieces on every host thread (OpenMP where the test is built with it): the GPU tests' arenas are
 * hundreds of MB of fresh pages, whose first touch is most of a one-thread copy's time */
static inline void test_memcpy_parallel(void *dst, const void *src, size_t n) {
    const size_t piece = (size_t)1 << 20;
    const int64_t n_pieces = (int64_t)((n + piece - 1) / piece);
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t i = 0; i < n_pieces; i++) {
        const size_t at = (size_t)i * piece;
        memcpy((char *)dst + at, (const char *)src + at, n - at < piece ? n - at : piece);
    }
}

/* ---- bf16 / f16 ---- */
static inline float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static inline float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }
static inline float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    if (exp == 0x1f) u = sign | 0x7f800000u | (man << 13);
    else if (exp == 0) {
        if (man == 0) u = sign;
        else { int e = -1; do { man <<= 1; e++; } while (!(man & 0x400u)); u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13); }
    } else u = sign | ((exp + 112) << 23) | (man << 13);
    float f; memcpy(&f, &u, 4); return f;
}
static inline uint16_t f32_to_f16(float f) { /* round to nearest even via the compiler's _Float16 */
    _Float16 g = (_Float16)f;
    uint16_t h;
    memcpy(&h, &g, 2);
    return h;
}
#define BF16_NAN ((uint16_t)0x7fc0)

/* fill n bf16 with normal(0,1)*scale */
static inline void fill_bf16(uint16_t *p, size_t n, double scale) {
    for (size_t i = 0; i < n; i++) p[i] = f32_to_bf16((float)(test_normal() * scale));
}

/* |got - ref| <= atol + rtol*|ref|, NaN patterns equal. Counts misses, prints the first few. */
static inline size_t compare_close(const char *what, const float *got, const double *ref, size_t n, double atol,
                                   double rtol) {
    size_t miss = 0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], r = ref[i];
        int bad = isnan(g) != isnan(r) || (!isnan(r) && !(fabs(g - r) <= atol + rtol * fabs(r)));
        if (isinf(r) && g == r) bad = 0;
        if (bad) {
            if (miss < 5) fprintf(stderr, "  %s[%zu]: got %.8g, expected %.8g\n", what, i, g, r);
            miss++;
        }
    }
    return miss;
}

#endif
