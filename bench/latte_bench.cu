/*
 * latte-bench: how close latte's operations come to what the GPU can do, measured in one run.
 *
 *   1. Ceilings of this GPU: device-to-device copy bandwidth (cudaMemcpyAsync of 1 GiB, bytes read + written)
 *      and cuBLAS bf16 GEMM 8192^3 (fp32 accumulation). Every floor below uses THESE numbers, not a datasheet.
 *   2. QK RMSNorm across heads at the peer's shapes and at the shapes only latte accepts (GQA widths,
 *      column slices of a fused qkv buffer, fp16/fp32).
 *   3. The MLA decode layer (DeepSeek-R1 sizes, batch 128) at cache lengths 512..6144, with a per-phase
 *      breakdown (latte_mla_run_with_events): first "len 512 untuned" (the projections' heuristic / default
 *      GEMM choices), then latte_mla_plan_tune once per plan (its choices printed) and every case tuned.
 *
 * Method: every time is the median of many CUDA-graph replays bracketed by CUDA events, after warm-up.
 * Small operations are captured K times back to back in one graph (time / K), each call on another buffer
 * set, with enough sets that the data touched exceeds about 3x the L2 cache: nothing is timed from L2.
 *
 * Peers: --peers PATH reads the JSON the PyTorch oracle wrote in the same GPU session (every key optional);
 * the SGLang and cuBLAS+FlashMLA figures are the H200 anchors of shared/anchors.md (not of this run) and are
 * labelled as such.
 *
 *   latte-bench [--json PATH] [--peers PATH] [--only mla|qknorm|ceilings] [--quick]
 *   LATTE_BENCH_QKNORM_VARIANTS=1,2,3 latte-bench ...: the QK-norm table also per kernel variant
 *   (LATTE_QKNORM_VARIANT, src/cuda/qknorm.cu), each measured in a child process.
 * Exit: 0 ok, 1 a latte call or CUDA failed, 2 no CUDA device or bad usage.
 */
#include "latte.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstddef>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#define CUDA_CHECK(call)                                                                                   \
    do {                                                                                                   \
        cudaError_t e_ = (call);                                                                           \
        if (e_ != cudaSuccess) {                                                                           \
            fprintf(stderr, "latte-bench: %s:%d: %s -> %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                                       \
        }                                                                                                  \
    } while (0)

static int g_failures = 0; /* latte calls that failed for a reason other than "not supported" */

/* ---------------------------------------------------------------------------------------------- */
/* A small JSON reader for --peers (objects, arrays, strings, numbers, literals).                   */
/* ---------------------------------------------------------------------------------------------- */
struct JVal {
    enum Kind { NUL, NUM, STR, BOOL, ARR, OBJ } kind = NUL;
    double num = NAN;
    std::string str;
    std::vector<std::pair<std::string, JVal>> obj;
    std::vector<JVal> arr;
    const JVal *get(const char *key) const {
        if (kind != OBJ) return nullptr;
        for (auto &kv : obj)
            if (kv.first == key) return &kv.second;
        return nullptr;
    }
};

struct JParser {
    const char *p, *end;
    bool ok = true;
    void ws() { while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++; }
    bool lit(const char *s) {
        size_t n = strlen(s);
        if ((size_t)(end - p) >= n && !strncmp(p, s, n)) { p += n; return true; }
        return false;
    }
    std::string string() {
        std::string s;
        p++; /* opening quote */
        while (p < end && *p != '"') {
            if (*p == '\\' && p + 1 < end) {
                p++;
                char c = *p;
                if (c == 'n') s += '\n'; else if (c == 't') s += '\t';
                else if (c == 'u') { s += '?'; p += std::min<std::ptrdiff_t>(4, end - p - 1); }
                else s += c;
                p++;
            } else s += *p++;
        }
        if (p >= end) ok = false; else p++;
        return s;
    }
    JVal value(int depth) {
        JVal v;
        ws();
        if (p >= end || depth > 64) { ok = false; return v; }
        if (*p == '{') {
            v.kind = JVal::OBJ; p++; ws();
            if (p < end && *p == '}') { p++; return v; }
            while (ok) {
                ws();
                if (p >= end || *p != '"') { ok = false; break; }
                std::string k = string();
                ws();
                if (p >= end || *p != ':') { ok = false; break; }
                p++;
                v.obj.emplace_back(k, value(depth + 1));
                ws();
                if (p < end && *p == ',') { p++; continue; }
                if (p < end && *p == '}') { p++; break; }
                ok = false;
            }
        } else if (*p == '[') {
            v.kind = JVal::ARR; p++; ws();
            if (p < end && *p == ']') { p++; return v; }
            while (ok) {
                v.arr.push_back(value(depth + 1));
                ws();
                if (p < end && *p == ',') { p++; continue; }
                if (p < end && *p == ']') { p++; break; }
                ok = false;
            }
        } else if (*p == '"') {
            v.kind = JVal::STR; v.str = string();
        } else if (lit("true")) { v.kind = JVal::BOOL; v.num = 1;
        } else if (lit("false")) { v.kind = JVal::BOOL; v.num = 0;
        } else if (lit("null")) { v.kind = JVal::NUL;
        } else if (lit("NaN")) { v.kind = JVal::NUM; v.num = NAN;     /* Python's json.dump writes these */
        } else if (lit("Infinity")) { v.kind = JVal::NUM; v.num = INFINITY;
        } else {
            char *q = nullptr;
            v.num = strtod(p, &q);
            if (q == p) { ok = false; return v; }
            v.kind = JVal::NUM; p = q;
        }
        return v;
    }
};

static bool read_json_file(const char *path, JVal *out) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    std::string text;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    fclose(f);
    JParser jp{text.data(), text.data() + text.size()};
    *out = jp.value(0);
    return jp.ok;
}

/* root[k1][k2] as a number, NaN when any part is missing */
static double peer_number(const JVal &root, const char *k1, const char *k2) {
    const JVal *a = root.get(k1);
    const JVal *b = a ? a->get(k2) : nullptr;
    return b && b->kind == JVal::NUM ? b->num : NAN;
}

/* ---------------------------------------------------------------------------------------------- */
/* Output: JSON records and the closing table                                                      */
/* ---------------------------------------------------------------------------------------------- */
/* A JSON object built as text: {"key": value, ...}. NaN and inf become null. */
struct JObj {
    std::string body;
    JObj &raw(const char *k, const std::string &v) {
        if (!body.empty()) body += ", ";
        body += "\"" + std::string(k) + "\": " + v;
        return *this;
    }
    JObj &num(const char *k, double v) {
        char b[64];
        if (std::isfinite(v)) snprintf(b, sizeof b, "%.6g", v); else snprintf(b, sizeof b, "null");
        return raw(k, b);
    }
    JObj &str(const char *k, const std::string &v) {
        std::string e;
        for (char c : v) {
            if (c == '"' || c == '\\') e += '\\';
            if ((unsigned char)c >= 0x20) e += c;
        }
        return raw(k, "\"" + e + "\"");
    }
    JObj &obj(const char *k, const JObj &o) { return raw(k, o.text()); }
    std::string text() const { return "{" + body + "}"; }
};

struct Device {
    std::string name;
    int sm_count = 0, cc_major = 0, cc_minor = 0;
    size_t l2_bytes = 0;
};
struct Ceilings {
    double copy_TBps = NAN, gemm_TFLOPs = NAN;
};

static std::vector<std::string> g_records; /* JSON text of each record */
static std::vector<std::string> g_table;   /* lines of the closing table */

static void table(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void table(const char *fmt, ...) {
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    g_table.push_back(b);
}

/* "12.3x" for peer_us / ours, "-" when the peer is unknown */
static std::string speedup(double peer_us, double ours_us) {
    if (!std::isfinite(peer_us) || !std::isfinite(ours_us) || ours_us <= 0) return "-";
    char b[32];
    snprintf(b, sizeof b, "%.2fx", peer_us / ours_us);
    return b;
}

/* ---------------------------------------------------------------------------------------------- */
/* Random data on the GPU: a counter-based hash (splitmix64) and Box-Muller, value = offset + scale*N(0,1) */
/* ---------------------------------------------------------------------------------------------- */
__device__ __forceinline__ uint64_t splitmix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half(v); }
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }

template <typename T>
__global__ void fill_normal_kernel(T *p, size_t n, uint64_t seed, float scale, float offset) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t h = splitmix64(seed * 0x632be59bd9b4e019ull + i);
        float u1 = ((uint32_t)(h >> 40) + 1u) * (1.0f / 16777217.0f); /* (0, 1] */
        float u2 = (uint32_t)(h & 0xffffffu) * (1.0f / 16777216.0f);  /* [0, 1) */
        float z = sqrtf(-2.0f * __logf(u1)) * __cosf(6.2831853f * u2);
        p[i] = from_float<T>(offset + scale * z);
    }
}

static void fill_normal(void *p, latte_dtype dt, size_t n, uint64_t seed, float scale, float offset, cudaStream_t s) {
    const int threads = 256, blocks = 4096;
    if (dt == LATTE_DTYPE_BF16)
        fill_normal_kernel<<<blocks, threads, 0, s>>>((__nv_bfloat16 *)p, n, seed, scale, offset);
    else if (dt == LATTE_DTYPE_F16)
        fill_normal_kernel<<<blocks, threads, 0, s>>>((__half *)p, n, seed, scale, offset);
    else
        fill_normal_kernel<<<blocks, threads, 0, s>>>((float *)p, n, seed, scale, offset);
    CUDA_CHECK(cudaGetLastError());
}

static size_t dtype_size(latte_dtype d) { return d == LATTE_DTYPE_F32 ? 4 : 2; }
static const char *dtype_name(latte_dtype d) {
    return d == LATTE_DTYPE_BF16 ? "bf16" : d == LATTE_DTYPE_F16 ? "f16" : "f32";
}

static void *dev_alloc(size_t bytes) {
    void *p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
}

/* ---------------------------------------------------------------------------------------------- */
/* Timing                                                                                          */
/* ---------------------------------------------------------------------------------------------- */
static double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Timing {
    latte_status status = LATTE_STATUS_SUCCESS;
    double us = NAN; /* median per call */
    bool graph = true;
};

/* Times `calls` back-to-back enqueues (enqueue(i) for i < calls) as one CUDA graph, replayed `reps` times;
 * returns the median replay time / calls. One eager round first checks the status and warms up. If the
 * capture fails (an operation that is not capturable), times eager rounds instead and says so. */
static Timing time_calls(cudaStream_t s, int calls, int reps, const std::function<latte_status(int)> &enqueue) {
    Timing t;
    for (int i = 0; i < calls; i++) {
        t.status = enqueue(i);
        if (t.status != LATTE_STATUS_SUCCESS) return t;
    }
    CUDA_CHECK(cudaStreamSynchronize(s));

    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    latte_status st = LATTE_STATUS_SUCCESS;
    for (int i = 0; i < calls && st == LATTE_STATUS_SUCCESS; i++) st = enqueue(i);
    cudaError_t ce = cudaStreamEndCapture(s, &graph);
    if (st == LATTE_STATUS_SUCCESS && ce == cudaSuccess && graph)
        ce = cudaGraphInstantiate(&exec, graph, 0);
    if (st != LATTE_STATUS_SUCCESS || ce != cudaSuccess || !exec) {
        fprintf(stderr, "  note: graph capture failed (%s%s%s); timing eager calls instead\n",
                st ? latte_status_string(st) : "", st ? " " : "", ce ? cudaGetErrorString(ce) : "");
        (void)cudaGetLastError();
        if (exec) cudaGraphExecDestroy(exec);
        exec = nullptr;
        t.graph = false;
    }
    if (graph) cudaGraphDestroy(graph);

    auto round = [&]() {
        if (exec) {
            CUDA_CHECK(cudaGraphLaunch(exec, s));
        } else {
            for (int i = 0; i < calls; i++) enqueue(i);
        }
    };
    for (int w = 0; w < 3; w++) round();
    CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<double> us;
    for (int r = 0; r < reps; r++) {
        CUDA_CHECK(cudaEventRecord(a, s));
        round();
        CUDA_CHECK(cudaEventRecord(b, s));
        CUDA_CHECK(cudaEventSynchronize(b));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
        us.push_back(ms * 1e3 / calls);
    }
    t.us = median(us);
    if (exec) cudaGraphExecDestroy(exec);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return t;
}

/* ---------------------------------------------------------------------------------------------- */
/* Ceilings                                                                                        */
/* ---------------------------------------------------------------------------------------------- */
static Ceilings measure_ceilings(cudaStream_t s, bool quick) {
    Ceilings c;
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    auto time_eager = [&](int warm, int reps, const std::function<void()> &fn) {
        for (int i = 0; i < warm; i++) fn();
        std::vector<double> us;
        for (int r = 0; r < reps; r++) {
            CUDA_CHECK(cudaEventRecord(a, s));
            fn();
            CUDA_CHECK(cudaEventRecord(b, s));
            CUDA_CHECK(cudaEventSynchronize(b));
            float ms = 0;
            CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
            us.push_back(ms * 1e3);
        }
        return median(us);
    };

    /* copy bandwidth: 1 GiB device to device, bytes read + written */
    const size_t bytes = (size_t)1 << 30;
    void *src = dev_alloc(bytes), *dst = dev_alloc(bytes);
    fill_normal(src, LATTE_DTYPE_BF16, bytes / 2, 1, 1.0f, 0.0f, s);
    double us = time_eager(3, quick ? 10 : 20, [&] { CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s)); });
    c.copy_TBps = 2.0 * bytes / (us * 1e-6) / 1e12;
    CUDA_CHECK(cudaFree(src));
    CUDA_CHECK(cudaFree(dst));

    /* cuBLAS bf16 GEMM 8192^3, fp32 accumulation, random data */
    const int n = 8192;
    void *A = dev_alloc((size_t)n * n * 2), *B = dev_alloc((size_t)n * n * 2), *C = dev_alloc((size_t)n * n * 2);
    fill_normal(A, LATTE_DTYPE_BF16, (size_t)n * n, 2, 1.0f, 0.0f, s);
    fill_normal(B, LATTE_DTYPE_BF16, (size_t)n * n, 3, 1.0f, 0.0f, s);
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "latte-bench: cublasCreate failed; no GEMM ceiling\n");
    } else {
        cublasSetStream(h, s);
        const float alpha = 1.0f, beta = 0.0f;
        cublasStatus_t cs = CUBLAS_STATUS_SUCCESS;
        us = time_eager(3, quick ? 5 : 10, [&] {
            cublasStatus_t r = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, A, CUDA_R_16BF, n, B,
                                            CUDA_R_16BF, n, &beta, C, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT);
            if (r != CUBLAS_STATUS_SUCCESS) cs = r;
        });
        if (cs == CUBLAS_STATUS_SUCCESS)
            c.gemm_TFLOPs = 2.0 * n * (double)n * n / (us * 1e-6) / 1e12;
        else
            fprintf(stderr, "latte-bench: cublasGemmEx failed (status %d); no GEMM ceiling\n", (int)cs);
        cublasDestroy(h);
    }
    CUDA_CHECK(cudaFree(A));
    CUDA_CHECK(cudaFree(B));
    CUDA_CHECK(cudaFree(C));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return c;
}

/* ---------------------------------------------------------------------------------------------- */
/* QK RMSNorm across heads                                                                         */
/* ---------------------------------------------------------------------------------------------- */
struct QkCase {
    int64_t n, dq, dk;
    latte_dtype dtype;
    bool in_place;
    bool qkv_slices; /* q and k are column slices of one [n, dq + 2 dk] qkv buffer */
};

/* SGLang's kernel on an H200 (anchors.md), bf16, q and k both [N, D], in place */
static double sglang_anchor_us(const QkCase &c) {
    if (c.dtype != LATTE_DTYPE_BF16 || !c.in_place || c.qkv_slices || c.dq != c.dk) return NAN;
    if (c.n == 256 && c.dq == 1024) return 7.6;
    if (c.n == 1024 && c.dq == 4096) return 20.4;
    if (c.n == 2048 && c.dq == 8192) return 79.9;
    if (c.n == 8192 && c.dq == 8192) return 293.9;
    return NAN;
}

static void bench_qknorm(cudaStream_t s, const Device &dev, const Ceilings &ceil, const JVal &peers, bool quick) {
    const int reps = quick ? 20 : 100;
    std::vector<QkCase> cases;
    const int64_t shapes[4][2] = {{256, 1024}, {1024, 4096}, {2048, 8192}, {8192, 8192}};
    for (int ip = 1; ip >= 0; ip--)
        for (auto &sh : shapes) cases.push_back({sh[0], sh[1], sh[1], LATTE_DTYPE_BF16, ip == 1, false});
    cases.push_back({8192, 6144, 1024, LATTE_DTYPE_BF16, true, false});
    cases.push_back({8192, 4096, 4096, LATTE_DTYPE_BF16, true, true});
    cases.push_back({2048, 8192, 8192, LATTE_DTYPE_F16, true, false});
    cases.push_back({2048, 8192, 8192, LATTE_DTYPE_F32, true, false});

    const char *variant = getenv("LATTE_QKNORM_VARIANT");
    table("QK RMSNorm across heads (median of graph replays; floor = bytes at this run's copy bandwidth)%s%s",
          variant && *variant ? ", LATTE_QKNORM_VARIANT=" : "", variant && *variant ? variant : "");
    table("  %-34s %9s %9s %7s %7s %8s %9s %10s %10s", "case", "us", "floor us", "xfloor", "TB/s", "%copy",
          "copy us", "vs SGLang", "vs t.comp");
    for (const QkCase &c : cases) {
        const size_t es = dtype_size(c.dtype);
        const int64_t row = c.qkv_slices ? c.dq + 2 * c.dk : 0; /* qkv row stride */
        const size_t set_elems = c.qkv_slices ? (size_t)(c.n * row) : (size_t)(c.n * (c.dq + c.dk));
        const size_t touched = (size_t)c.n * (c.dq + c.dk) * es * (c.in_place ? 1 : 2);
        /* enough buffer sets that one graph round touches > 3x L2 */
        int sets = (int)std::max<size_t>(2, (3 * dev.l2_bytes + touched - 1) / touched);
        sets = std::min(sets, 512);
        const int calls = sets * ((8 + sets - 1) / sets);

        struct Set { void *in, *out; };
        std::vector<Set> bufs(sets);
        for (int i = 0; i < sets; i++) {
            bufs[i].in = dev_alloc(set_elems * es);
            fill_normal(bufs[i].in, c.dtype, set_elems, 100 + i, 1.0f, 0.0f, s);
            bufs[i].out = nullptr;
            if (!c.in_place) bufs[i].out = dev_alloc((size_t)c.n * (c.dq + c.dk) * es);
        }
        void *wq = dev_alloc((size_t)c.dq * es), *wk = dev_alloc((size_t)c.dk * es);
        fill_normal(wq, c.dtype, (size_t)c.dq, 7, 0.1f, 1.0f, s);
        fill_normal(wk, c.dtype, (size_t)c.dk, 8, 0.1f, 1.0f, s);
        CUDA_CHECK(cudaStreamSynchronize(s));

        auto params_for = [&](int i) {
            const Set &b = bufs[i % sets];
            char *base = (char *)b.in;
            latte_qknorm_params p = latte_qknorm_params_default(c.n, base, c.dq, base + (size_t)c.n * c.dq * es, c.dk,
                                                                wq, wk, c.dtype);
            if (c.qkv_slices) {
                p.k = base + (size_t)c.dq * es;
                p.q_row_stride = p.k_row_stride = row;
            }
            if (!c.in_place) {
                p.q_out = b.out;
                p.q_out_row_stride = c.dq;
                p.k_out = (char *)b.out + (size_t)c.n * c.dq * es;
                p.k_out_row_stride = c.dk;
            }
            return p;
        };
        Timing t = time_calls(s, calls, reps, [&](int i) {
            latte_qknorm_params p = params_for(i);
            return latte_qknorm_across_heads(&p, LATTE_BACKEND_CUDA, s);
        });

        /* What a plain device-to-device copy of the same bytes (read + write) takes in the same setting
         * (graph of back-to-back calls, rotated buffers): the reachable figure at this size, where the
         * 1 GiB copy ceiling hides the per-kernel ramp and drain. */
        const size_t act_bytes = (size_t)c.n * (c.dq + c.dk) * es;
        Timing tcopy = time_calls(s, calls, reps, [&](int i) {
            const Set &b = bufs[i % sets];
            void *dst = b.out ? b.out : bufs[(i + 1) % sets].in;
            return cudaMemcpyAsync(dst, b.in, act_bytes, cudaMemcpyDeviceToDevice, s) == cudaSuccess
                       ? LATTE_STATUS_SUCCESS : LATTE_STATUS_CUDA_ERROR;
        });
        const double copy_same_us = tcopy.status == LATTE_STATUS_SUCCESS ? tcopy.us : NAN;

        char label[96], width[40];
        if (c.dq == c.dk) snprintf(width, sizeof width, "%lld", (long long)c.dq);
        else snprintf(width, sizeof width, "%lld+%lld", (long long)c.dq, (long long)c.dk);
        snprintf(label, sizeof label, "%s (%lld, %s) %s%s", dtype_name(c.dtype), (long long)c.n, width,
                 c.in_place ? "in place" : "out of place", c.qkv_slices ? " qkv" : "");

        for (auto &b : bufs) {
            CUDA_CHECK(cudaFree(b.in));
            if (b.out) CUDA_CHECK(cudaFree(b.out));
        }
        CUDA_CHECK(cudaFree(wq));
        CUDA_CHECK(cudaFree(wk));

        if (t.status != LATTE_STATUS_SUCCESS) {
            if (t.status != LATTE_STATUS_NOT_SUPPORTED) g_failures++;
            printf("qknorm %s: %s (%s)\n", label, latte_status_string(t.status), latte_last_error());
            table("  %-34s %s", label, t.status == LATTE_STATUS_NOT_SUPPORTED ? "not supported" : "FAILED");
            continue;
        }
        const double bytes = 2.0 * c.n * (c.dq + c.dk) * es + (double)(c.dq + c.dk) * es;
        const double floor_us = bytes / (ceil.copy_TBps * 1e12) * 1e6;
        const double tbps = bytes / (t.us * 1e-6) / 1e12;
        const double sg = sglang_anchor_us(c);
        char key[64];
        snprintf(key, sizeof key, "(%lld, %lld)", (long long)c.n, (long long)c.dq);
        const bool peer_shape = c.dtype == LATTE_DTYPE_BF16 && c.in_place && !c.qkv_slices && c.dq == c.dk;
        double tcomp = NAN;
        if (peer_shape) {
            const JVal *q = peers.get("qknorm");
            const JVal *e = q ? q->get(key) : nullptr;
            const JVal *v = e ? e->get("torch_compile_us") : nullptr;
            if (v && v->kind == JVal::NUM) tcomp = v->num;
        }
        printf("qknorm %s: %.1f us, %.2f TB/s (%.0f%% of copy), floor %.1f us, same-size copy %.1f us%s\n", label, t.us,
               tbps, 100.0 * tbps / ceil.copy_TBps, floor_us, copy_same_us, t.graph ? "" : " [eager]");
        table("  %-34s %9.1f %9.1f %7.2f %7.2f %7.0f%% %9.1f %10s %10s%s", label, t.us, floor_us, t.us / floor_us, tbps,
              100.0 * tbps / ceil.copy_TBps, copy_same_us, speedup(sg, t.us).c_str(), speedup(tcomp, t.us).c_str(),
              t.graph ? "" : " [eager]");

        JObj params, peer, rec;
        params.num("n_tokens", (double)c.n).num("q_width", (double)c.dq).num("k_width", (double)c.dk)
            .str("dtype", dtype_name(c.dtype)).str("weight_dtype", dtype_name(c.dtype)).raw("in_place", c.in_place ? "true" : "false")
            .str("layout", c.qkv_slices ? "qkv_slices" : "contiguous").num("row_stride", (double)(c.qkv_slices ? row : c.dq))
            .num("buffer_sets", sets).num("calls_per_graph", calls).num("bytes", bytes);
        if (std::isfinite(sg))
            peer.obj("sglang", JObj().num("us", sg).str("source", "anchors.md, H200, not this run").num("speedup", sg / t.us));
        if (std::isfinite(tcomp))
            peer.obj("torch_compile", JObj().num("us", tcomp).str("source", "--peers, this GPU session").num("speedup", tcomp / t.us));
        rec.str("impl", "latte").str("op", "qknorm").obj("params", params).str("device", dev.name).num("median_us", t.us)
            .num("floor_us", floor_us).num("ratio_to_floor", t.us / floor_us).num("TBps", tbps)
            .num("pct_copy_bw", 100.0 * tbps / ceil.copy_TBps).num("copy_same_bytes_us", copy_same_us).num("TFLOPs", NAN).raw("graph", t.graph ? "true" : "false")
            .obj("peers", peer);
        g_records.push_back(rec.text());
    }
    table("  vs SGLang: SGLang's kernel on an H200 (anchors.md, not this run) / ours; vs t.comp: torch.compile (--peers) / ours");
}

/* LATTE_BENCH_QKNORM_VARIANTS="1,2,3": the QK-norm table once more per listed kernel variant. The library
 * reads LATTE_QKNORM_VARIANT once per process, so each variant runs in a child latte-bench (--only qknorm,
 * its own ceilings); the child's output is passed through prefixed with the variant, and its closing
 * table joins ours. The children's records do not go into --json. */
static void bench_qknorm_variants(bool quick) {
    const char *list = getenv("LATTE_BENCH_QKNORM_VARIANTS");
    if (!list || !*list) return;
    char exe[4096];
    const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        fprintf(stderr, "latte-bench: LATTE_BENCH_QKNORM_VARIANTS: cannot find this program (/proc/self/exe)\n");
        g_failures++;
        return;
    }
    exe[len] = '\0';
    std::string items(list);
    size_t pos = 0;
    while (pos <= items.size()) {
        size_t comma = items.find(',', pos);
        if (comma == std::string::npos) comma = items.size();
        std::string v = items.substr(pos, comma - pos);
        pos = comma + 1;
        if (v.empty()) continue;
        if (v.find_first_not_of("0123456789") != std::string::npos) {
            fprintf(stderr, "latte-bench: LATTE_BENCH_QKNORM_VARIANTS: '%s' is not a number; skipped\n", v.c_str());
            continue;
        }
        std::string cmd = "LATTE_QKNORM_VARIANT=" + v + " LATTE_BENCH_QKNORM_VARIANTS= '" + exe + "' --only qknorm" +
                          (quick ? " --quick" : "") + " 2>&1";
        fflush(stdout);
        FILE *p = popen(cmd.c_str(), "r");
        if (!p) {
            fprintf(stderr, "latte-bench: cannot run %s\n", cmd.c_str());
            g_failures++;
            continue;
        }
        char line[1024];
        bool closing = false; /* past the child's "==== latte-bench:" line: its closing table */
        while (fgets(line, sizeof line, p)) {
            line[strcspn(line, "\n")] = '\0';
            printf("[variant %s] %s\n", v.c_str(), line);
            if (!strncmp(line, "==== latte-bench:", 17)) closing = true;
            else if (closing && (!strncmp(line, "QK RMSNorm", 10) || !strncmp(line, "  ", 2))) g_table.push_back(line);
        }
        const int rc = pclose(p);
        if (rc != 0) {
            printf("latte-bench: the child for LATTE_QKNORM_VARIANT=%s exited with status %d\n", v.c_str(), rc);
            g_failures++;
        }
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* MLA decode layer                                                                                */
/* ---------------------------------------------------------------------------------------------- */
/* cuBLAS + FlashMLA (keys stored rotated), H200, anchors.md */
static double flashmla_anchor_us(int64_t len) {
    switch (len) {
    case 512: return 295; case 1024: return 320; case 2048: return 369; case 4096: return 477; case 6144: return 597;
    default: return NAN;
    }
}

struct MlaSizes {
    int64_t dim, dq, R, P, dn, dv, H;
    double weight_elems() const {
        return (double)dq * dim + (double)(R + P) * dim + (double)H * (dn + P) * dq + (double)H * (dn + dv) * R +
               (double)dim * H * dv;
    }
};

static void bench_mla(cudaStream_t s, const Device &dev, const Ceilings &ceil, const JVal &peers, bool quick) {
    const int reps = quick ? 20 : 50, phase_reps = quick ? 10 : 20;
    const int64_t batch = 128, capacity = 8192;
    const int64_t lens[] = {512, 1024, 2048, 4096, 6144};
    latte_mla_config cfg = latte_mla_config_deepseek_r1();
    const MlaSizes z{cfg.dim, cfg.q_lora_rank, cfg.kv_lora_rank, cfg.rope_dim, cfg.nope_dim, cfg.v_dim, cfg.n_heads};
    const int64_t row = z.R + z.P;

    /* weights randn / sqrt(fan_in), x and the cache randn, as the reference */
    struct W { void *p; int64_t rows, cols; } w[5] = {
        {nullptr, z.dq, z.dim}, {nullptr, row, z.dim}, {nullptr, z.H * (z.dn + z.P), z.dq},
        {nullptr, z.H * (z.dn + z.dv), z.R}, {nullptr, z.dim, z.H * z.dv}};
    for (int i = 0; i < 5; i++) {
        w[i].p = dev_alloc((size_t)(w[i].rows * w[i].cols) * 2);
        fill_normal(w[i].p, LATTE_DTYPE_BF16, (size_t)(w[i].rows * w[i].cols), 1000 + i, 1.0f / sqrtf((float)w[i].cols), 0.0f, s);
    }
    latte_mla_weights weights = {w[0].p, w[1].p, w[2].p, w[3].p, w[4].p};
    void *x = dev_alloc((size_t)(batch * z.dim) * 2), *y = dev_alloc((size_t)(batch * z.dim) * 2);
    void *cache = dev_alloc((size_t)(batch * capacity * row) * 2);
    fill_normal(x, LATTE_DTYPE_BF16, (size_t)(batch * z.dim), 2000, 1.0f, 0.0f, s);
    fill_normal(cache, LATTE_DTYPE_BF16, (size_t)(batch * capacity * row), 2001, 1.0f, 0.0f, s);
    int32_t *lens_dev = (int32_t *)dev_alloc(batch * sizeof(int32_t));
    void *cos = dev_alloc((size_t)(capacity * z.P) * 2), *sin = dev_alloc((size_t)(capacity * z.P) * 2);
    void *ws = nullptr;
    size_t ws_bytes = 0;
    cudaEvent_t ev[LATTE_MLA_N_PHASE_EVENTS];
    for (auto &e : ev) CUDA_CHECK(cudaEventCreate(&e));
    CUDA_CHECK(cudaStreamSynchronize(s));

    table("MLA decode layer, DeepSeek-R1 sizes, batch %lld (median of graph replays; floor as shared/anchors.md with this run's ceilings)",
          (long long)batch);
    table("  %-22s %9s %9s %7s %7s %8s %12s %12s %12s", "case", "us", "floor us", "xfloor", "TB/s", "TFLOP/s",
          "vs torch", "vs torch-rot", "vs cuBLAS+FM");

    latte_status st = latte_rope_tables(LATTE_ROPE_BF16_REFERENCE, capacity, z.P, 10000.0f, cos, sin, LATTE_BACKEND_CUDA, s);
    if (st != LATTE_STATUS_SUCCESS) {
        if (st != LATTE_STATUS_NOT_SUPPORTED) g_failures++;
        printf("mla: latte_rope_tables: %s (%s); MLA skipped\n", latte_status_string(st), latte_last_error());
        table("  rope tables %s: MLA skipped", st == LATTE_STATUS_NOT_SUPPORTED ? "not supported" : "FAILED");
    }

    /* the reference convention at every length, then the production convention at 4096; first, at 512, the
     * untuned plan (the projections' heuristic / default choices), for comparison: every other case runs
     * after latte_mla_plan_tune for this batch */
    struct Run { latte_mla_key_convention conv; int64_t len; bool untuned; };
    std::vector<Run> runs;
    runs.push_back({LATTE_MLA_KEYS_ROTATED_AT_READ, 512, true});
    for (int64_t L : lens) runs.push_back({LATTE_MLA_KEYS_ROTATED_AT_READ, L, false});
    runs.push_back({LATTE_MLA_KEYS_STORED_ROTATED, 4096, false});

    latte_mla_plan plan = nullptr;
    int plan_conv = -1;
    bool plan_tuned = false;
    for (size_t ri = 0; ri < runs.size() && st == LATTE_STATUS_SUCCESS; ri++) {
        const Run &r = runs[ri];
        const bool rot = r.conv == LATTE_MLA_KEYS_STORED_ROTATED;
        char label[64];
        snprintf(label, sizeof label, "len %lld%s%s", (long long)r.len, rot ? " stored-rotated" : "",
                 r.untuned ? " untuned" : "");
        if (plan_conv != (int)r.conv) {
            latte_mla_plan_destroy(plan);
            plan = nullptr;
            cfg.key_convention = r.conv;
            latte_status ps = latte_mla_plan_create(&plan, &cfg, &weights, LATTE_BACKEND_CUDA, s);
            if (ps != LATTE_STATUS_SUCCESS) {
                if (ps != LATTE_STATUS_NOT_SUPPORTED) g_failures++;
                printf("mla: latte_mla_plan_create: %s (%s)\n", latte_status_string(ps), latte_last_error());
                table("  %-22s plan %s", label, ps == LATTE_STATUS_NOT_SUPPORTED ? "not supported" : "FAILED");
                plan = nullptr;
                plan_conv = (int)r.conv;
                continue;
            }
            plan_conv = (int)r.conv;
            plan_tuned = false;
        }
        if (!plan) {
            table("  %-22s skipped (no plan)", label);
            continue;
        }
        size_t need = 0;
        latte_status s2 = latte_mla_workspace_size(plan, batch, r.len, &need);
        if (s2 != LATTE_STATUS_SUCCESS) {
            g_failures++;
            printf("mla %s: latte_mla_workspace_size: %s (%s)\n", label, latte_status_string(s2), latte_last_error());
            continue;
        }
        if (need > ws_bytes) {
            if (ws) CUDA_CHECK(cudaFree(ws));
            ws = dev_alloc(need);
            ws_bytes = need;
        }
        /* tune once per plan and batch, before the first tuned case (not a run: it synchronizes and allocates) */
        if (!r.untuned && !plan_tuned) {
            plan_tuned = true;
            const auto t0 = std::chrono::steady_clock::now();
            const latte_status ts = latte_mla_plan_tune(plan, batch, r.len, ws, ws_bytes, s);
            const double tune_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (ts != LATTE_STATUS_SUCCESS) {
                if (ts != LATTE_STATUS_NOT_SUPPORTED) g_failures++;
                printf("mla: latte_mla_plan_tune: %s (%s); the untuned choices stay\n", latte_status_string(ts),
                       latte_last_error());
                table("  tune %s (untuned choices)", ts == LATTE_STATUS_NOT_SUPPORTED ? "not supported" : "FAILED");
            } else {
                char desc[2048];
                if (latte_mla_plan_describe(plan, batch, desc, sizeof desc) != LATTE_STATUS_SUCCESS)
                    snprintf(desc, sizeof desc, "(describe failed: %s)\n", latte_last_error());
                printf("mla: tuned batch %lld (%s keys) in %.2f s:\n%s", (long long)batch,
                       rot ? "stored-rotated" : "rotated-at-read", tune_s, desc);
                table("  projections tuned for batch %lld (%s keys) in %.2f s:", (long long)batch,
                      rot ? "stored-rotated" : "rotated-at-read", tune_s);
                for (char *line = strtok(desc, "\n"); line; line = strtok(nullptr, "\n")) table("    %s", line);
            }
        }
        std::vector<int32_t> lens_host(batch, (int32_t)r.len);
        CUDA_CHECK(cudaMemcpyAsync(lens_dev, lens_host.data(), batch * sizeof(int32_t), cudaMemcpyHostToDevice, s));
        CUDA_CHECK(cudaStreamSynchronize(s));

        latte_mla_run_args a;
        memset(&a, 0, sizeof a);
        a.batch = batch;
        a.x = x;
        a.kv_cache.data = cache;
        a.kv_cache.batch_stride = capacity * row;
        a.kv_cache.row_stride = row;
        a.kv_cache.capacity = capacity;
        a.cache_lens = lens_dev;
        a.max_cache_len = r.len;
        a.rope_cos = cos;
        a.rope_sin = sin;
        a.rope_max_pos = capacity;
        a.y = y;
        /* one call per graph: weights (374 MB) and the cache already exceed L2 many times */
        Timing t = time_calls(s, 1, reps, [&](int) { return latte_mla_run(plan, &a, ws, ws_bytes, s); });
        if (t.status != LATTE_STATUS_SUCCESS) {
            if (t.status != LATTE_STATUS_NOT_SUPPORTED) g_failures++;
            printf("mla %s: %s (%s)\n", label, latte_status_string(t.status), latte_last_error());
            table("  %-22s %s", label, t.status == LATTE_STATUS_NOT_SUPPORTED ? "not supported" : "FAILED");
            continue;
        }

        /* phase breakdown: eager runs with events between the phases */
        static const char *phase_names[LATTE_MLA_N_PHASE_EVENTS - 1] = {"down_append", "up_absorb", "attention",
                                                                         "combine", "wuv_output"};
        std::vector<double> ph[LATTE_MLA_N_PHASE_EVENTS - 1];
        void *evp[LATTE_MLA_N_PHASE_EVENTS];
        for (int i = 0; i < LATTE_MLA_N_PHASE_EVENTS; i++) evp[i] = (void *)ev[i];
        latte_status pst = LATTE_STATUS_SUCCESS;
        for (int rep = 0; rep < phase_reps + 2 && pst == LATTE_STATUS_SUCCESS; rep++) {
            pst = latte_mla_run_with_events(plan, &a, ws, ws_bytes, s, evp);
            if (pst != LATTE_STATUS_SUCCESS) break;
            CUDA_CHECK(cudaStreamSynchronize(s));
            if (rep < 2) continue; /* warm-up */
            for (int i = 0; i + 1 < LATTE_MLA_N_PHASE_EVENTS; i++) {
                float ms = 0;
                if (cudaEventElapsedTime(&ms, ev[i], ev[i + 1]) != cudaSuccess) {
                    (void)cudaGetLastError();
                    ms = NAN;
                }
                ph[i].push_back(ms * 1e3);
            }
        }
        JObj phases;
        std::string phase_line;
        if (pst == LATTE_STATUS_SUCCESS) {
            for (int i = 0; i + 1 < LATTE_MLA_N_PHASE_EVENTS; i++) {
                double m = median(ph[i]);
                phases.num(phase_names[i], m);
                char b[64];
                snprintf(b, sizeof b, "%s%s %.1f", i ? ", " : "", phase_names[i], m);
                phase_line += b;
            }
        } else {
            if (pst != LATTE_STATUS_NOT_SUPPORTED) g_failures++;
            phase_line = std::string("phases: ") + latte_status_string(pst);
        }

        int64_t bad = 0;
        if (latte_mla_plan_bad_lengths(plan, &bad, 1, s) == LATTE_STATUS_SUCCESS && bad) {
            g_failures++;
            printf("mla %s: the plan rejected %lld sequence lengths (expected 0)\n", label, (long long)bad);
        }

        /* floor and rates, exactly as the oracle's floor_us, with this run's ceilings */
        const double T = (double)r.len + 1;
        const double wbytes = 2.0 * z.weight_elems();
        const double kv_bytes = (double)batch * T * row * 2;
        const double attn_flops = 2.0 * batch * z.H * T * ((z.R + z.P) + z.R);
        const double proj_flops = 2.0 * batch * z.weight_elems();
        const double floor_us = wbytes / ceil.copy_TBps * 1e-6 +
                                std::max(kv_bytes / ceil.copy_TBps * 1e-6, attn_flops / ceil.gemm_TFLOPs * 1e-6);
        const double tbps = (wbytes + kv_bytes) / (t.us * 1e-6) / 1e12;
        const double tflops = (attn_flops + proj_flops) / (t.us * 1e-6) / 1e12;

        char lkey[32];
        snprintf(lkey, sizeof lkey, "len%lld", (long long)r.len);
        const double torch_ref = rot ? NAN : peer_number(peers, lkey, "torch_absorbed_us");
        const double torch_rot = peer_number(peers, lkey, "torch_absorbed_prerotated_us");
        const double fm = flashmla_anchor_us(r.len);

        printf("mla %s: %.1f us (floor %.1f, x%.2f), %.2f TB/s, %.0f TFLOP/s%s | %s\n", label, t.us, floor_us,
               t.us / floor_us, tbps, tflops, t.graph ? "" : " [eager]", phase_line.c_str());
        table("  %-22s %9.1f %9.1f %7.2f %7.2f %8.0f %12s %12s %12s%s", label, t.us, floor_us, t.us / floor_us, tbps, tflops,
              speedup(torch_ref, t.us).c_str(), speedup(torch_rot, t.us).c_str(), speedup(fm, t.us).c_str(),
              t.graph ? "" : " [eager]");
        table("  %-22s phases us: %s", "", phase_line.c_str());

        JObj params, peer, rec;
        params.num("batch", (double)batch).num("cache_len", (double)r.len).num("capacity", (double)capacity)
            .num("n_heads", (double)z.H).str("key_convention", rot ? "stored_rotated" : "rotated_at_read")
            .str("rope", "bf16_reference").str("projections", r.untuned ? "untuned" : "tuned").num("weight_bytes", wbytes).num("cache_bytes", kv_bytes)
            .num("attention_flops", attn_flops).num("projection_flops", proj_flops);
        if (std::isfinite(torch_ref))
            peer.obj("torch_absorbed", JObj().num("us", torch_ref).str("source", "--peers, this GPU session").num("speedup", torch_ref / t.us));
        if (std::isfinite(torch_rot))
            peer.obj("torch_absorbed_prerotated",
                     JObj().num("us", torch_rot).str("source", "--peers, this GPU session").num("speedup", torch_rot / t.us));
        if (std::isfinite(fm))
            peer.obj("cublas_flashmla", JObj().num("us", fm).str("source", "anchors.md, H200, keys stored rotated, not this run")
                                           .num("speedup", fm / t.us));
        rec.str("impl", "latte").str("op", "mla_decode").obj("params", params).str("device", dev.name).num("median_us", t.us)
            .num("floor_us", floor_us).num("ratio_to_floor", t.us / floor_us).num("TBps", tbps).num("TFLOPs", tflops)
            .raw("graph", t.graph ? "true" : "false").obj("phases_us", phases).obj("peers", peer);
        g_records.push_back(rec.text());
    }
    table("  vs torch / torch-rot: PyTorch absorbed (reference / stored-rotated keys, --peers) over ours;"
          " vs cuBLAS+FM: cuBLAS+FlashMLA on an H200 (anchors.md, not this run) over ours");

    latte_mla_plan_destroy(plan);
    for (auto &e : ev) cudaEventDestroy(e);
    for (auto &m : w) CUDA_CHECK(cudaFree(m.p));
    for (void *p : {x, y, cache, (void *)lens_dev, cos, sin}) CUDA_CHECK(cudaFree(p));
    if (ws) CUDA_CHECK(cudaFree(ws));
}

/* ---------------------------------------------------------------------------------------------- */
static void usage(FILE *f) {
    fprintf(f, "usage: latte-bench [--json PATH] [--peers PATH] [--only mla|qknorm|ceilings] [--quick]\n"
               "  --json PATH    write the records as JSON\n"
               "  --peers PATH   JSON from the PyTorch oracle of the same GPU session (torch figures)\n"
               "  --only WHAT    ceilings are always measured; WHAT picks the operations (ceilings: none)\n"
               "  --quick        fewer repetitions\n");
}

int main(int argc, char **argv) {
    const char *json_path = nullptr, *peers_path = nullptr, *only = nullptr;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
        else if (!strcmp(argv[i], "--peers") && i + 1 < argc) peers_path = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        else { usage(stderr); return 2; }
    }
    if (only && strcmp(only, "mla") && strcmp(only, "qknorm") && strcmp(only, "ceilings")) { usage(stderr); return 2; }

    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1 || latte_cuda_device_count() < 1) {
        (void)cudaGetLastError();
        fprintf(stderr, "latte-bench: no CUDA device\n");
        return 2;
    }

    JVal peers;
    if (peers_path) {
        if (!read_json_file(peers_path, &peers)) {
            fprintf(stderr, "latte-bench: --peers %s: unreadable or not JSON; going on without peers\n", peers_path);
            peers = JVal();
        }
    }

    Device dev;
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    dev.name = prop.name;
    dev.sm_count = prop.multiProcessorCount;
    dev.cc_major = prop.major;
    dev.cc_minor = prop.minor;
    dev.l2_bytes = (size_t)prop.l2CacheSize;
    printf("latte-bench: %s, %d SMs, L2 %.0f MB, cc %d.%d, latte %d%s\n", dev.name.c_str(), dev.sm_count,
           dev.l2_bytes / 1e6, dev.cc_major, dev.cc_minor, latte_version(), quick ? " (quick)" : "");

    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    Ceilings ceil = measure_ceilings(s, quick);
    printf("ceilings: copy %.2f TB/s (read + write), cuBLAS bf16 GEMM %.0f TFLOP/s\n", ceil.copy_TBps, ceil.gemm_TFLOPs);
    if (peers.get("copy_TBps") && peers.get("copy_TBps")->kind == JVal::NUM)
        printf("          (oracle in this session: copy %.2f TB/s, GEMM %.0f TFLOP/s)\n", peers.get("copy_TBps")->num,
               peers.get("gemm_TFLOPs") ? peers.get("gemm_TFLOPs")->num : NAN);

    if (!only || !strcmp(only, "qknorm")) bench_qknorm(s, dev, ceil, peers, quick);
    if (!only || !strcmp(only, "qknorm")) bench_qknorm_variants(quick);
    if (!only || !strcmp(only, "mla")) bench_mla(s, dev, ceil, peers, quick);

    /* the readable table comes last: the GPU tool shows only the tail of the output */
    printf("\n==== latte-bench: %s (%d SMs, L2 %.0f MB) ====\n", dev.name.c_str(), dev.sm_count, dev.l2_bytes / 1e6);
    printf("ceilings measured now: copy %.2f TB/s, cuBLAS bf16 GEMM 8192^3 %.0f TFLOP/s\n", ceil.copy_TBps, ceil.gemm_TFLOPs);
    for (auto &l : g_table) printf("%s\n", l.c_str());
    if (g_failures) printf("latte-bench: %d latte call(s) FAILED (see above)\n", g_failures);

    if (json_path) {
        char date[64];
        time_t now = time(nullptr);
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        const char *git = getenv("LATTE_GIT_REV");
        JObj devj, ceilj, root;
        devj.str("name", dev.name).num("sm_count", dev.sm_count).num("l2_bytes", (double)dev.l2_bytes)
            .str("cc", std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor));
        ceilj.num("copy_TBps", ceil.copy_TBps).num("gemm_bf16_TFLOPs", ceil.gemm_TFLOPs);
        std::string recs = "[";
        for (size_t i = 0; i < g_records.size(); i++) recs += (i ? ",\n  " : "\n  ") + g_records[i];
        recs += "\n]";
        root.obj("device", devj).obj("ceilings", ceilj).str("date", date);
        if (git && *git) root.str("git", git); else root.raw("git", "null");
        root.num("latte_version", latte_version()).raw("quick", quick ? "true" : "false").raw("records", recs);
        FILE *f = fopen(json_path, "w");
        if (!f) {
            fprintf(stderr, "latte-bench: cannot write %s\n", json_path);
            return 1;
        }
        fprintf(f, "%s\n", root.text().c_str());
        fclose(f);
        printf("latte-bench: wrote %s\n", json_path);
    }
    cudaStreamDestroy(s);
    return g_failures ? 1 : 0;
}
