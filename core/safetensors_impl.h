/* core/safetensors_impl.h — library-private safetensors entry points (the
 * tests and the fuzz target use them).
 *
 * defines: loom__safetensors_parse.
 */
#ifndef LOOM_CORE_SAFETENSORS_IMPL_H
#define LOOM_CORE_SAFETENSORS_IMPL_H

#include "impl.h"

/* Parse and validate a safetensors image of n bytes held in memory, as
 * loom_safetensors_open does a file. name is used in messages. With take,
 * buf (from malloc) is owned by the result, and freed on failure; without,
 * buf is borrowed and must outlive the result. */
loom_status loom__safetensors_parse(loom_ctx *ctx, const char *name, uint8_t *buf, size_t n, bool take,
                                    loom_safetensors **out);

#endif
