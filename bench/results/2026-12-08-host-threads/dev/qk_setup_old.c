/* HEAD's qk_setup_make, for qk_setup_cmp.c (see there) */
#include "qknorm_test_common.h"
int old_make(qk_setup *s, const qk_case *c, uint64_t seed, uint64_t *next) { test_rng_state = seed; int r = qk_setup_make(s, c); *next = test_rng_u64(); return r; }
