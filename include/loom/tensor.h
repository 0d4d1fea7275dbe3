/* loom/tensor.h — dtypes, shapes and 16-bit float conversion.
 *
 * defines: loom_dtype, LOOM_MAX_DIMS, loom_dtype_size/name/parse,
 *          loom_f32_to_f16/f16_to_f32, loom_f32_to_bf16/bf16_to_f32 (round to
 *          nearest even, NaN preserved as a quiet NaN).
 */
#ifndef LOOM_TENSOR_H
#define LOOM_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_MAX_DIMS 5

/* X(name, text, bytes, is_float) */
#define LOOM_DTYPE_LIST(X) \
    X(F32, "f32", 4, 1)    \
    X(F16, "f16", 2, 1)    \
    X(BF16, "bf16", 2, 1)  \
    X(F64, "f64", 8, 1)    \
    X(I32, "i32", 4, 0)    \
    X(U8, "u8", 1, 0)

typedef enum loom_dtype {
#define LOOM__X(n, s, b, f) LOOM_##n,
    LOOM_DTYPE_LIST(LOOM__X)
#undef LOOM__X
    LOOM_DTYPE_COUNT
} loom_dtype;

size_t loom_dtype_size(loom_dtype dt);
const char *loom_dtype_name(loom_dtype dt);
bool loom_dtype_is_float(loom_dtype dt);
/* "f32" -> LOOM_F32; returns -1 if unknown. */
int loom_dtype_parse(const char *name);

uint16_t loom_f32_to_f16(float f);
float loom_f16_to_f32(uint16_t h);
uint16_t loom_f32_to_bf16(float f);
float loom_bf16_to_f32(uint16_t h);

/* Convert n elements between any two dtypes (float<->int conversions truncate
 * toward zero, saturating for u8). */
void loom_convert(const void *src, loom_dtype src_dt, void *dst, loom_dtype dst_dt, size_t n);

#ifdef __cplusplus
}
#endif
#endif
