// MLA decode layer, CUDA backend. (stub: being written)
#include "internal.h"
extern "C" latte_status latte_cuda_mla_plan_init(struct latte_mla_plan_s *plan, const latte_mla_weights *w, latte_stream_t stream) {
    return latte_set_error(LATTE_STATUS_NOT_SUPPORTED, "mla: CUDA backend not written yet");
}
extern "C" void latte_cuda_mla_plan_free(struct latte_mla_plan_s *plan) {}
extern "C" size_t latte_cuda_mla_workspace_size(const struct latte_mla_plan_s *plan, int64_t batch, int64_t max_cache_len) { return 0; }
extern "C" latte_status latte_cuda_mla_run(struct latte_mla_plan_s *plan, const latte_mla_run_args *a, void *workspace,
                                           size_t workspace_bytes, latte_stream_t stream, void *const *events) {
    return latte_set_error(LATTE_STATUS_NOT_SUPPORTED, "mla: CUDA backend not written yet");
}
extern "C" latte_status latte_cuda_mla_bad_lengths(struct latte_mla_plan_s *plan, int64_t *count, int reset, latte_stream_t stream) {
    return latte_set_error(LATTE_STATUS_NOT_SUPPORTED, "mla: CUDA backend not written yet");
}
extern "C" latte_status latte_cuda_rope_tables(latte_rope_kind kind, int64_t max_pos, int64_t rope_dim, float base,
                                               void *rope_cos, void *rope_sin, latte_stream_t stream) {
    return latte_set_error(LATTE_STATUS_NOT_SUPPORTED, "rope: CUDA backend not written yet");
}
