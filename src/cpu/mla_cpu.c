/* MLA decode layer, CPU backend. (stub: being written) */
#include "internal.h"
latte_status latte_cpu_mla_plan_init(struct latte_mla_plan_s *plan, const latte_mla_weights *w) {
    return latte_set_error(LATTE_STATUS_NOT_SUPPORTED, "mla: CPU backend not written yet");
}
void latte_cpu_mla_plan_free(struct latte_mla_plan_s *plan) {}
size_t latte_cpu_mla_workspace_size(const struct latte_mla_plan_s *plan, int64_t batch, int64_t max_cache_len) { return 0; }
latte_status latte_cpu_mla_run(struct latte_mla_plan_s *plan, const latte_mla_run_args *a, void *workspace, size_t workspace_bytes) {
    return latte_set_error(LATTE_STATUS_NOT_SUPPORTED, "mla: CPU backend not written yet");
}
latte_status latte_cpu_mla_bad_lengths(struct latte_mla_plan_s *plan, int64_t *count, int reset) {
    return latte_set_error(LATTE_STATUS_NOT_SUPPORTED, "mla: CPU backend not written yet");
}
latte_status latte_cpu_rope_tables(latte_rope_kind kind, int64_t max_pos, int64_t rope_dim, float base, uint16_t *rope_cos,
                                   uint16_t *rope_sin) {
    return latte_set_error(LATTE_STATUS_NOT_SUPPORTED, "rope: CPU backend not written yet");
}
