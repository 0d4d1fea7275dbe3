/* loom/checkpoint.h — safetensors files and plan checkpoints.
 *
 * defines: loom_st_tensor, loom_safetensors_write (atomic), loom_safetensors
 *          (a file opened and validated: tensors, metadata), loom_checkpoint_save
 *          / loom_checkpoint_load (every parameter and state of a plan),
 *          loom_checkpoint_report, loom_checkpoint_load_desc.
 *
 * Files follow the safetensors format (github.com/huggingface/safetensors):
 *
 *     u64 little-endian N | N bytes of JSON header | data
 *
 * The header is {"<name>":{"dtype":"F32","shape":[2,3],"data_offsets":[b,e]},
 * ..., "__metadata__":{"<key>":"<value>",...}}; offsets are relative to the
 * start of the data area, which the tensors cover exactly, without gaps or
 * overlaps. loom writes the header padded with spaces to a multiple of 8 bytes
 * and orders the data by element size (largest first), so every tensor is
 * aligned to its element size. The Python package (`safetensors.numpy`,
 * `safetensors.torch`) reads loom's files and loom reads its files, as long as
 * every tensor is of a dtype loom has (F32 F16 BF16 F64 I32 U8).
 *
 * Checkpoints store each parameter and state under its graph name
 * ("fc1.weight", "fc1.weight.exp_avg", "bn1.running_mean") in its own dtype;
 * training bookkeeping (epoch, step, RNG seeds, config) goes in the metadata
 * as strings chosen by the caller.
 */
#ifndef LOOM_CHECKPOINT_H
#define LOOM_CHECKPOINT_H

#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One tensor of a safetensors file: row-major, little-endian. */
typedef struct loom_st_tensor {
    const char *name;             /* non-empty UTF-8, unique in the file, not "__metadata__" */
    loom_dtype dtype;             /* element type */
    int ndim;                     /* 0..LOOM_MAX_DIMS; 0 is a scalar (one element) */
    int64_t dims[LOOM_MAX_DIMS];  /* each >= 0 */
    const void *data;             /* numel * dtype size bytes; in files read back it may be unaligned */
} loom_st_tensor;

/* Bytes of t's data (numel * dtype size). */
size_t loom_st_tensor_nbytes(const loom_st_tensor *t);

/* Headers larger than this are refused (the limit of the reference reader). */
#define LOOM_SAFETENSORS_MAX_HEADER ((size_t)100 * 1000 * 1000)

/* Write n tensors and the metadata to path, atomically: the file is written
 * to a temporary file beside it ("<path>.tmp.<pid>.<k>", a name no other
 * writer uses), flushed to disk (fsync), then renamed over path, so a crash
 * or a failure at any point leaves the previous file at path intact; on
 * failure the temporary file is removed. Several writers (threads) may save
 * to one path at once: the last to finish wins, whole. metadata is NULL or a
 * NULL-terminated list of strings: key, value, key, value, ..., NULL.
 * Names and metadata must be valid UTF-8; names must be non-empty, unique and
 * not "__metadata__". Errors: LOOM_ERR_INVALID_ARG (bad tensors or metadata,
 * naming which), LOOM_ERR_IO (naming the file and the system's reason). */
loom_status loom_safetensors_write(loom_ctx *ctx, const char *path, const loom_st_tensor *tensors, int n,
                                   const char *const *metadata);

/* A safetensors file read into memory and validated. */
typedef struct loom_safetensors loom_safetensors;

/* Read and validate the whole file. Any violation of the format is
 * LOOM_ERR_FORMAT with a message naming the file and the problem (for JSON
 * errors, the byte offset in the file); a file that cannot be opened or read
 * is LOOM_ERR_IO. On failure *out is NULL. The result is read-only and may be
 * used from several threads; close it with loom_safetensors_close. */
loom_status loom_safetensors_open(loom_ctx *ctx, const char *path, loom_safetensors **out);
void loom_safetensors_close(loom_safetensors *st);

/* Tensors in the order of their data in the file. Pointers (names, data)
 * stay valid until loom_safetensors_close. */
int loom_safetensors_count(const loom_safetensors *st);
const loom_st_tensor *loom_safetensors_tensor(const loom_safetensors *st, int i);
/* The tensor called name, or NULL. */
const loom_st_tensor *loom_safetensors_find(const loom_safetensors *st, const char *name);
/* The metadata value of key, or NULL if absent. */
const char *loom_safetensors_meta(const loom_safetensors *st, const char *key);
/* Metadata entries (in file order) and the i-th key. */
int loom_safetensors_meta_count(const loom_safetensors *st);
const char *loom_safetensors_meta_key(const loom_safetensors *st, int i);
/* The path the file was opened from. */
const char *loom_safetensors_path(const loom_safetensors *st);

/* ---- plan checkpoints ---- */

/* Metadata key under which loom_checkpoint_save records the plan's step
 * counter (loom_plan_step, which keys dropout masks) as a decimal string;
 * loom_checkpoint_load restores the counter from it when present. */
#define LOOM_CHECKPOINT_PLAN_STEP_KEY "loom.plan_step"

/* Save every parameter and state of plan's graph under its own name, in its
 * own dtype, with the metadata (as for loom_safetensors_write) plus
 * LOOM_CHECKPOINT_PLAN_STEP_KEY unless the caller's metadata has that key.
 * Atomic, like loom_safetensors_write. */
loom_status loom_checkpoint_save(loom_plan *plan, const char *path, const char *const *metadata);

#define LOOM_CHECKPOINT_REPORT_NAMES 4

/* What a load found. Names are the first few of each kind (truncated to 63
 * bytes). */
typedef struct loom_checkpoint_report {
    int loaded;      /* tensors copied into the plan */
    int missing;     /* params/states of the graph absent from the file (left as they were) */
    int unexpected;  /* tensors of the file the graph does not have (ignored) */
    int mismatched;  /* same name, different shape or dtype */
    char missing_names[LOOM_CHECKPOINT_REPORT_NAMES][64];    /* the first missing names; the rest "" */
    char unexpected_names[LOOM_CHECKPOINT_REPORT_NAMES][64]; /* the first unexpected names; the rest "" */
    char mismatched_names[LOOM_CHECKPOINT_REPORT_NAMES][64]; /* the first mismatched names; the rest "" */
    bool plan_step_restored; /* the file had LOOM_CHECKPOINT_PLAN_STEP_KEY */
    int renamed;     /* tensors of the file renamed by desc.name_map */
    int ignored;     /* weights_only: optimizer-state tensors of the file, ignored */
} loom_checkpoint_report;

/* Zero is default for every field. */
typedef struct loom_checkpoint_load_desc {
    /* Missing or unexpected tensors are an error too (LOOM_ERR_FORMAT, naming
     * the first of them). By default they are only reported. */
    bool strict;
    /* Skip shape/dtype-mismatched tensors (reported) instead of failing. By
     * default a mismatch is LOOM_ERR_SHAPE naming the tensor and both
     * shapes and dtypes. A float tensor of the right shape in another float
     * dtype (F16, BF16, F32, F64) is not a mismatch: it is converted
     * (rounded to nearest even); an integer one is ("a dtype mismatch"). */
    bool skip_mismatched;
    /* Load NaN and infinities. By default a loaded float tensor holding one
     * is LOOM_ERR_FORMAT naming the tensor and the first bad (flat) index,
     * and nothing is written. */
    bool allow_nonfinite;
    /* Rename the file's tensors before matching them with the graph's:
     * NULL or a NULL-terminated list of pairs "old", "new", "old", "new", ...,
     * NULL. A tensor takes the first pair that matches its name: an exact
     * name, or a prefix pattern ending in '*' ("backbone.*" -> "*" strips
     * the prefix "backbone.", "features.*" -> "conv.*" replaces it; the '*'
     * stands for the rest of the name and may only end a pattern, in both
     * halves or in neither). Names that no pair matches are kept. A
     * malformed pair, a result longer than 63 bytes, or two tensors renamed
     * to the same name are LOOM_ERR_INVALID_ARG naming them. The report and
     * messages use the new names. */
    const char *const *name_map;
    /* Load the model only (transfer learning, torch's load_state_dict):
     * parameters and the model's states (batch-norm statistics). The
     * graph's optimizer states (the momentum buffers, Adam moments and
     * gradient accumulators its update ops own) are neither loaded nor
     * counted missing, tensors of the file named like optimizer state
     * ("<name>.momentum_buffer", ".exp_avg", ".exp_avg_sq", ".grad_accum")
     * are ignored (report->ignored), and the plan's step counter is not
     * restored. */
    bool weights_only;
} loom_checkpoint_load_desc;

/* Load the parameters and states of plan's graph from a file written by
 * loom_checkpoint_save (or any safetensors file using the same names). desc
 * NULL (or zeroed) = the defaults: mismatches fail, missing and unexpected
 * tensors are only reported. Everything is checked before anything is
 * written: on failure the plan is unchanged (unless the backend itself fails
 * while writing). report may be NULL; it is filled on failure too. meta_out,
 * if not NULL, receives the opened file (for its metadata; the caller closes
 * it), else the file is closed. On failure *meta_out is NULL. */
loom_status loom_checkpoint_load(loom_plan *plan, const char *path, const loom_checkpoint_load_desc *desc,
                                 loom_checkpoint_report *report, loom_safetensors **meta_out);

#ifdef __cplusplus
}
#endif
#endif
