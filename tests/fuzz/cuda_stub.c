/*
 * The CUDA backend's entry points for host-only fuzz builds (tests/fuzz/build.sh): the library's C sources
 * are compiled straight into the fuzzer, without the .cu files. Every entry reports "no device", exactly as
 * the real backend does on a machine without a GPU, so the CPU backend and the validation layer are what
 * gets fuzzed.
 */
#include "internal.h"

int latte_cuda_count_devices(void) { return 0; }
latte_status latte_cuda_require_device(void) {
    return latte_set_error(LATTE_STATUS_NO_DEVICE, "CUDA backend: not built into this fuzz target");
}
int latte_cuda_pointer_is_device(const void *ptr) { return 0; }

static latte_status no_device(void) { return latte_cuda_require_device(); }
latte_status latte_cuda_qknorm(const latte_qknorm_params *p, latte_stream_t stream) { return no_device(); }
latte_status latte_cuda_rope_tables(latte_rope_kind kind, int64_t max_pos, int64_t rope_dim, float base, void *rope_cos,
                                    void *rope_sin, latte_stream_t stream) {
    return no_device();
}
latte_status latte_cuda_mla_plan_init(struct latte_mla_plan_s *plan, const latte_mla_weights *w, latte_stream_t stream) {
    return no_device();
}
void latte_cuda_mla_plan_free(struct latte_mla_plan_s *plan) {}
size_t latte_cuda_mla_workspace_size(const struct latte_mla_plan_s *plan, int64_t batch, int64_t max_cache_len) {
    return 0;
}
latte_status latte_cuda_mla_run(struct latte_mla_plan_s *plan, const latte_mla_run_args *a, void *workspace,
                                size_t workspace_bytes, latte_stream_t stream, void *const *events) {
    return no_device();
}
latte_status latte_cuda_mla_bad_lengths(struct latte_mla_plan_s *plan, int64_t *count, int reset,
                                        latte_stream_t stream) {
    return no_device();
}
latte_status latte_cuda_mla_plan_tune(struct latte_mla_plan_s *plan, int64_t batch, int64_t max_cache_len,
                                      void *workspace, size_t workspace_bytes, latte_stream_t stream) {
    return no_device();
}
latte_status latte_cuda_mla_plan_describe(struct latte_mla_plan_s *plan, int64_t batch, char *buf, size_t buf_bytes) {
    return no_device();
}
