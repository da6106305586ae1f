/*
 * RoPE tables, CPU backend: cos, sin [max_pos][P] bf16, row t = [c_0..c_{P/2-1}, c_0..c_{P/2-1}]
 * (NeoX half split, both halves equal).
 *
 * LATTE_ROPE_BF16_REFERENCE reproduces, bit for bit, the tables the reference builds with PyTorch in bf16
 * (spec/mla-decode.md, oracle rope_tables("bf16_reference")):
 *
 *     theta = base ** (-torch.arange(0, P/2, dtype=bf16) / (P/2))
 *     ang   = torch.einsum('s,d->sd', torch.arange(max_pos), theta)      # int64 x bf16 -> bf16
 *     cos, sin = ang.cos(), ang.sin()                                    # bf16
 *
 * which, op by op (each bf16 op computes in fp32 and rounds its result to bf16):
 *     e_i     = bf16(float(-i) * (1.0f / (P/2)))   arange is exact (i < 2^8) for P <= 512; CUDA divides a
 *                                                  tensor by a CPU scalar as a multiply by its fp32 reciprocal
 *                                                  (exact, and equal to the division, when P/2 is a power of 2)
 *     b       = bf16(base)                         the Python scalar base takes the tensor's dtype: 10000 -> 9984
 *                                                  (checked against torch: with the unrounded base, 4 of the
 *                                                  32 thetas differ and 20% of the table elements)
 *     theta_i = bf16(powf(b, e_i))                 pow in fp32 (here: double pow rounded to float)
 *     t_b     = bf16(t)                            type promotion turns the int64 positions into bf16 first,
 *                                                  so positions above 256 are rounded (t=257 -> 256)
 *     angle   = bf16(t_b * theta_i)                product in fp32, rounded
 *     cos     = bf16(cosf(angle)), sin = bf16(sinf(angle))
 *                                                  here: cos/sin in double of the float angle, rounded to
 *                                                  float then bf16 (a correctly rounded cosf)
 *
 * LATTE_ROPE_FP32: theta_i = base^(-i/(P/2)) in double, angle = float(t * theta_i) (double product),
 * cos/sin in double of that float angle, rounded to bf16 at the store.
 */
#include "internal.h"

static uint16_t bf16_of_double(double v) { return latte_f32_to_bf16((float)v); }

/* The frequencies of both kinds, shared with the CUDA builder (src/cuda/rope_tables.cu) so the two tables
 * are bitwise equal. For the reference kind every theta is exactly a bf16 value. */
void latte_rope_thetas(latte_rope_kind kind, int64_t rope_dim, float base, double *theta) {
    const int64_t half = rope_dim / 2;
    for (int64_t i = 0; i < half; i++) {
        if (kind == LATTE_ROPE_BF16_REFERENCE) {
            const float inv_half = 1.0f / (float)half;
            const float e = latte_round_bf16(latte_round_bf16(-(float)i) * inv_half);
            const float base_b = latte_round_bf16(base); /* BASE ROUNDING: the scalar becomes bf16 (torch promotion) */
            theta[i] = (double)latte_round_bf16((float)pow((double)base_b, (double)e));
        } else {
            theta[i] = pow((double)base, -(double)i / (double)half);
        }
    }
}

latte_status latte_cpu_rope_tables(latte_rope_kind kind, int64_t max_pos, int64_t rope_dim, float base, uint16_t *rope_cos,
                                   uint16_t *rope_sin) {
    const int64_t half = rope_dim / 2;
    const int ref = kind == LATTE_ROPE_BF16_REFERENCE;
    /* theta per frequency; half <= 2048 (the API checks rope_dim <= 4096) */
    double theta[2048]; /* exactly a bf16 value for the reference kind */
    latte_rope_thetas(kind, rope_dim, base, theta);
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < max_pos; t++) {
        uint16_t *c = rope_cos + t * rope_dim, *s = rope_sin + t * rope_dim;
        for (int64_t i = 0; i < half; i++) {
            float angle;
            if (ref) {
                const float t_b = latte_round_bf16((float)t); /* POSITION ROUNDING: int64 -> bf16 (torch promotion) */
                angle = latte_round_bf16(t_b * (float)theta[i]);
            } else {
                angle = (float)((double)t * theta[i]);
            }
            c[i] = c[i + half] = bf16_of_double(cos((double)angle));
            s[i] = s[i + half] = bf16_of_double(sin((double)angle));
        }
    }
    return LATTE_STATUS_SUCCESS;
}
