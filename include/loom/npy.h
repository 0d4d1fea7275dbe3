/* loom/npy.h — NumPy .npy arrays: reading (from a file or memory) and
 * writing byte for byte as np.save does.
 *
 * defines: loom_npy_dtype, loom_npy (loom_npy_read/parse/write/free).
 *
 * Functions keep no state: any thread may call them on its own arrays.
 */
#ifndef LOOM_NPY_H
#define LOOM_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, descr code, bytes) — the element types loom reads and writes. */
#define LOOM_NPY_DTYPE_LIST(X) \
    X(U1, "u1", 1)             \
    X(I4, "i4", 4)             \
    X(I8, "i8", 8)             \
    X(F2, "f2", 2)             \
    X(F4, "f4", 4)             \
    X(F8, "f8", 8)

typedef enum loom_npy_dtype {
#define LOOM_NPY_X_(n, s, b) LOOM_NPY_##n,
    LOOM_NPY_DTYPE_LIST(LOOM_NPY_X_)
#undef LOOM_NPY_X_
    LOOM_NPY_DTYPE_COUNT
} loom_npy_dtype;

#define LOOM_NPY_MAX_DIMS 8

/* "u1", "i4", ...; "?" when out of range. */
const char *loom_npy_dtype_name(loom_npy_dtype dt);
/* Bytes per element; 0 when out of range. */
size_t loom_npy_dtype_size(loom_npy_dtype dt);

/* An array read from a .npy file: C order, little-endian, owned data. */
typedef struct loom_npy {
    loom_npy_dtype dtype;              /* element type */
    int ndim;                          /* 0 = a scalar (one element) */
    int64_t shape[LOOM_NPY_MAX_DIMS];  /* the first ndim entries: dimensions, outermost first */
    int64_t count;                     /* elements: the product of shape */
    size_t bytes;                      /* count * element size */
    int version;                       /* format major version: 1, 2 or 3 */
    void *data;                        /* bytes bytes (NULL when 0), owned */
} loom_npy;

/* Read a .npy file: format 1.0, 2.0 or 3.0; C order (fortran_order True is
 * accepted for 0-d and 1-d arrays, whose layout is the same); dtype one of the list
 * above, little-endian ('<', or '|' for u1). The header dict must be exactly
 * {'descr', 'fortran_order', 'shape'} as numpy writes it (whitespace, key
 * order and a trailing comma are free). Errors (LOOM_ERR_IO for a missing or
 * unreadable file, LOOM_ERR_FORMAT for bad contents, LOOM_ERR_UNSUPPORTED for
 * Fortran order, big-endian or another dtype) name the file and the problem:
 * bad magic, unknown version, header length past the end of the file, a
 * malformed or incomplete header dict, truncated data, trailing bytes.
 * On failure *out is untouched. */
loom_status loom_npy_read(loom_ctx *ctx, const char *path, loom_npy *out);
/* The same from memory; `name` stands for the file in messages. The data is
 * copied. */
loom_status loom_npy_parse(loom_ctx *ctx, const char *name, const void *buf, size_t size, loom_npy *out);
void loom_npy_free(loom_npy *a);

/* Write a C-order little-endian array byte for byte as numpy's np.save
 * (numpy >= 1.23) would: format 1.0 (an 8-dim header is far below its 64 KiB
 * limit), the data starting at a multiple of 64 bytes. data holds the product of shape elements (ndim 0 =
 * one element). Written atomically: to a temp file unique to this writer
 * ("<path>.tmp.<pid>.<k>"), renamed over path once complete; on failure path
 * is left as it was and the temp file removed. */
loom_status loom_npy_write(loom_ctx *ctx, const char *path, loom_npy_dtype dt, int ndim, const int64_t *shape,
                           const void *data);

#ifdef __cplusplus
}
#endif
#endif
