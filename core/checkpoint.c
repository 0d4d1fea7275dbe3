/* core/checkpoint.c — plan checkpoints: every parameter and state of a
 * plan's graph to a safetensors file and back, with a report of what did not
 * match. The format itself is core/safetensors.c. */
#include <errno.h>
#include <math.h>

#include "impl.h"
#include "backend_impl.h"

static bool is_saved(const loom_tensor *t) { return t->leaf == LOOM__PARAM || t->leaf == LOOM__STATE; }

loom_status loom_checkpoint_save(loom_plan *plan, const char *path, const char *const *metadata) {
    if (!plan || !path) return LOOM_ERR_INVALID_ARG;
    loom_graph *g = plan->g;
    loom_ctx *ctx = plan->ctx;
    int n = 0, n_meta = 0;
    size_t total = 0;
    for (int i = 0; i < g->n; i++)
        if (is_saved(g->nodes[i])) n++, total += loom__nbytes(g->nodes[i]);
    bool has_step = false;
    if (metadata)
        for (; metadata[2 * n_meta]; n_meta++) {
            if (!metadata[2 * n_meta + 1])
                return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: metadata key \"%s\" has no value (NULL)", path,
                                 metadata[2 * n_meta]);
            if (strcmp(metadata[2 * n_meta], LOOM_CHECKPOINT_PLAN_STEP_KEY) == 0) has_step = true;
        }
    loom_st_tensor *ts = malloc((size_t)(n ? n : 1) * sizeof *ts);
    uint8_t *data = malloc(total ? total : 1);
    const char **md = malloc((size_t)(2 * n_meta + 3) * sizeof *md);
    if (!ts || !data || !md) {
        free(ts), free(data), free(md);
        return loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory for a %zu-byte checkpoint", path, total);
    }
    loom_status st = LOOM_OK;
    size_t off = 0;
    int k = 0;
    for (int i = 0; i < g->n && st == LOOM_OK; i++) {
        loom_tensor *t = g->nodes[i];
        if (!is_saved(t)) continue;
        size_t bytes = loom__nbytes(t);
        ts[k] = (loom_st_tensor){.name = t->name, .dtype = t->dtype, .ndim = t->ndim, .data = data + off};
        memcpy(ts[k].dims, t->dims, sizeof t->dims);
        st = loom_plan_read(plan, t, data + off, bytes);
        off += bytes, k++;
    }
    if (st == LOOM_OK) {
        char step[32];
        snprintf(step, sizeof step, "%llu", (unsigned long long)plan->step);
        int m = 0;
        for (int i = 0; i < 2 * n_meta; i++) md[m++] = metadata[i];
        if (!has_step) md[m++] = LOOM_CHECKPOINT_PLAN_STEP_KEY, md[m++] = step;
        md[m] = NULL;
        st = loom_safetensors_write(ctx, path, ts, n, md);
    }
    free(ts), free(data), free(md);
    return st;
}

static void note(char names[][64], int count, const char *name) {
    if (count < LOOM_CHECKPOINT_REPORT_NAMES) snprintf(names[count], 64, "%s", name);
}

static char *st_shape(const loom_st_tensor *t, char *buf, size_t n) { return loom__shape_str(t->ndim, t->dims, buf, n); }

/* ---- name maps and optimizer state (load_desc.name_map, weights_only) ---- */

/* The pattern is well formed: non-empty, '*' only as its last byte. */
static bool map_pattern_ok(const char *p, bool *star) {
    const char *s = strchr(p, '*');
    *star = s != NULL;
    return p[0] && (!s || s[1] == 0);
}

static loom_status check_map(loom_ctx *ctx, const char *path, const char *const *map) {
    for (int i = 0; map && map[2 * i]; i++) {
        const char *a = map[2 * i], *b = map[2 * i + 1];
        bool sa, sb;
        if (!b || !map_pattern_ok(a, &sa) || !map_pattern_ok(b, &sb) || sa != sb)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                             "%s: name map pair %d '%s' -> '%s' is malformed: both names non-empty, a '*' only at the end, in both or neither",
                             path, i + 1, a, b ? b : "(null)");
    }
    return LOOM_OK;
}

/* The new name of `name` under the map into buf; false if it does not fit
 * (truncated: such a name matches no graph tensor, whose names fit). */
static bool map_name(const char *const *map, const char *name, char *buf, size_t cap, bool *renamed) {
    *renamed = false;
    for (int i = 0; map && map[2 * i]; i++) {
        const char *a = map[2 * i], *b = map[2 * i + 1];
        size_t la = strlen(a);
        if (a[la - 1] == '*') {
            if (strncmp(name, a, la - 1)) continue;
            *renamed = true;
            int k = snprintf(buf, cap, "%.*s%s", (int)(strlen(b) - 1), b, name + la - 1);
            return k > 0 && (size_t)k < cap;
        }
        if (strcmp(name, a)) continue;
        *renamed = true;
        return (size_t)snprintf(buf, cap, "%s", b) < cap;
    }
    return (size_t)snprintf(buf, cap, "%s", name) < cap;
}

typedef struct named {
    const char *name;
    int idx;
} named;

static int cmp_named(const void *a, const void *b) { return strcmp(((const named *)a)->name, ((const named *)b)->name); }

/* One load's working state: the file, the options and what matched. */
typedef struct loader {
    loom_plan *plan;
    loom_ctx *ctx;
    const char *path;
    loom_checkpoint_load_desc d;
    loom_checkpoint_report *rep;
    loom_safetensors *file;
    int nf;                      /* tensors of the file */
    const loom_st_tensor *base;  /* the file's first tensor */
    const loom_st_tensor **match; /* per graph node: the file tensor to load (NULL: missing or mismatched) */
    bool *used;                  /* per file tensor: matched or ignored */
    bool *skip_node;             /* per graph node: an optimizer state (weights_only) */
    char (*fname)[64];           /* per file tensor: its name after the map */
    named *sorted;               /* the file's mapped names, sorted, optimizer state set aside */
    int ns;
} loader;

/* The file's names after the map, sorted; optimizer state set aside
 * (weights_only). Two names mapped to one are an error. */
static loom_status map_file_names(loader *L) {
    for (int j = 0; j < L->nf; j++) {
        bool renamed;
        bool fits = map_name(L->d.name_map, L->base[j].name, L->fname[j], sizeof L->fname[j], &renamed);
        if (!fits && !renamed) continue; /* unexpected, reported truncated */
        if (!fits)
            return loom__err(L->ctx, LOOM_ERR_INVALID_ARG,
                             "%s: the name map renames '%.64s' to a name longer than 63 bytes", L->path,
                             L->base[j].name);
        L->rep->renamed += renamed;
        if (L->d.weights_only && loom__is_optimizer_state(L->fname[j])) {
            L->used[j] = true;
            L->rep->ignored++;
            continue;
        }
        L->sorted[L->ns++] = (named){L->fname[j], j};
    }
    qsort(L->sorted, (size_t)L->ns, sizeof *L->sorted, cmp_named);
    for (int k = 1; k < L->ns; k++)
        if (!strcmp(L->sorted[k - 1].name, L->sorted[k].name))
            return loom__err(L->ctx, LOOM_ERR_INVALID_ARG, "%s: the name map renames both '%.64s' and '%.64s' to '%s'",
                             L->path, L->base[L->sorted[k - 1].idx].name, L->base[L->sorted[k].idx].name,
                             L->sorted[k].name);
    return LOOM_OK;
}

/* weights_only: the graph's optimizer states are the states its update ops own */
static void mark_optimizer_states(loader *L) {
    const loom_graph *g = L->plan->g;
    for (int i = 0; i < g->n; i++) {
        const loom_tensor *t = g->nodes[i];
        int lo = 0, hi = -1;
        if (t->op == LOOM_OP_SGD_STEP && t->p[LOOM_P_SGD_BUF])
            lo = hi = 3;
        else if (t->op == LOOM_OP_ADAM_STEP) lo = 3, hi = 4;
        else if (t->op == LOOM_OP_ACCUMULATE) lo = hi = 0;
        for (int k = lo; k <= hi && k < t->nsrc; k++)
            if (t->src[k] && t->src[k]->leaf == LOOM__STATE) L->skip_node[t->src[k]->id] = true;
    }
}

/* Match the graph's params and states with the file's tensors, fill the
 * report, and fail on a mismatch (unless skip_mismatched) or, when strict,
 * on missing or unexpected tensors. */
static loom_status match_tensors(loader *L) {
    const loom_graph *g = L->plan->g;
    loom_checkpoint_report *rep = L->rep;
    const loom_tensor *first_missing = NULL, *first_bad = NULL;
    const loom_st_tensor *first_bad_file = NULL;
    for (int i = 0; i < g->n; i++) {
        const loom_tensor *t = g->nodes[i];
        if (!is_saved(t) || L->skip_node[i]) continue;
        named key = {t->name, 0};
        const named *hit = L->ns ? bsearch(&key, L->sorted, (size_t)L->ns, sizeof *L->sorted, cmp_named) : NULL;
        const loom_st_tensor *f = hit ? &L->base[hit->idx] : NULL;
        if (!f) {
            if (!first_missing) first_missing = t;
            note(rep->missing_names, rep->missing++, t->name);
            continue;
        }
        L->used[f - L->base] = true;
        /* a float tensor of the right shape in another float dtype (f16, bf16,
         * f64 for an f32 parameter, and back) is converted, rounded to nearest
         * even */
        bool convert_ok = loom_dtype_is_float(f->dtype) && loom_dtype_is_float(t->dtype);
        bool same = (f->dtype == t->dtype || convert_ok) && f->ndim == t->ndim;
        for (int a = 0; same && a < t->ndim; a++) same = f->dims[a] == t->dims[a];
        if (!same) {
            if (!first_bad) first_bad = t, first_bad_file = f;
            note(rep->mismatched_names, rep->mismatched++, t->name);
            continue;
        }
        L->match[i] = f;
    }
    const char *first_unexpected = NULL;
    for (int j = 0; j < L->nf; j++) {
        if (L->used[j]) continue;
        if (!first_unexpected) first_unexpected = L->fname[j];
        note(rep->unexpected_names, rep->unexpected++, L->fname[j]);
    }
    if (first_bad && !L->d.skip_mismatched) {
        char a[96], b[96];
        bool same_shape = first_bad_file->ndim == first_bad->ndim;
        for (int k = 0; same_shape && k < first_bad->ndim; k++) same_shape = first_bad_file->dims[k] == first_bad->dims[k];
        return loom__err(L->ctx, LOOM_ERR_SHAPE, "%s: '%s' is %s %s in the file but %s %s in the graph (%s)%s", L->path,
                         first_bad->name, loom_dtype_name(first_bad_file->dtype), st_shape(first_bad_file, a, sizeof a),
                         loom_dtype_name(first_bad->dtype),
                         loom__shape_str(first_bad->ndim, first_bad->dims, b, sizeof b),
                         same_shape ? "a dtype mismatch: only float dtypes are converted" : "a shape mismatch",
                         rep->mismatched > 1 ? " (and more tensors differ)" : "");
    }
    if (L->d.strict && first_missing)
        return loom__err(L->ctx, LOOM_ERR_FORMAT,
                         "%s: strict load: %d parameters/states of the graph are not in the file, e.g. '%s'", L->path,
                         rep->missing, first_missing->name);
    if (L->d.strict && first_unexpected)
        return loom__err(L->ctx, LOOM_ERR_FORMAT,
                         "%s: strict load: %d tensors of the file are not in the graph, e.g. '%.64s'", L->path,
                         rep->unexpected, first_unexpected);
    return LOOM_OK;
}

/* The index of the first NaN or infinity among t's n elements, or -1
 * (integer dtypes: -1). The data may be unaligned. */
static int64_t first_nonfinite(const loom_st_tensor *t, size_t n, double *bad) {
    const uint8_t *p = t->data;
    for (size_t i = 0; i < n; i++) {
        double v;
        if (t->dtype == LOOM_F32) {
            float f;
            memcpy(&f, p + 4 * i, 4);
            v = f;
        } else if (t->dtype == LOOM_F64) {
            memcpy(&v, p + 8 * i, 8);
        } else if (t->dtype == LOOM_F16 || t->dtype == LOOM_BF16) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            v = t->dtype == LOOM_F16 ? loom_f16_to_f32(h) : loom_bf16_to_f32(h);
        } else {
            return -1;
        }
        if (!isfinite(v)) {
            *bad = v;
            return (int64_t)i;
        }
    }
    return -1;
}

/* Every matched tensor finite (unless allow_nonfinite): NaN or infinity in
 * loaded weights would train on silently and be saved again. */
static loom_status check_finite(loader *L) {
    const loom_graph *g = L->plan->g;
    for (int i = 0; i < g->n && !L->d.allow_nonfinite; i++) {
        const loom_st_tensor *m = L->match[i];
        double bad = 0;
        int64_t at = m ? first_nonfinite(m, (size_t)loom_tensor_numel(g->nodes[i]), &bad) : -1;
        if (at >= 0)
            return loom__err(L->ctx, LOOM_ERR_FORMAT,
                             "%s: '%s' holds %s at index %lld (flat): non-finite weights are refused "
                             "(allow_nonfinite loads them)",
                             L->path, g->nodes[i]->name, isnan(bad) ? "NaN" : bad > 0 ? "+inf" : "-inf", (long long)at);
    }
    return LOOM_OK;
}

/* The file's plan step (*have false when absent or weights_only). */
static loom_status read_step(loader *L, uint64_t *step, bool *have) {
    *have = false;
    const char *sv = L->d.weights_only ? NULL : loom_safetensors_meta(L->file, LOOM_CHECKPOINT_PLAN_STEP_KEY);
    if (!sv) return LOOM_OK;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(sv, &end, 10);
    if (!sv[0] || sv[0] < '0' || sv[0] > '9' || *end || errno)
        return loom__err(L->ctx, LOOM_ERR_FORMAT, "%s: metadata %s is \"%.40s\", not a step count", L->path,
                         LOOM_CHECKPOINT_PLAN_STEP_KEY, sv);
    *step = v, *have = true;
    return LOOM_OK;
}

/* Copy every matched tensor into the plan (converting 16-bit parameters). */
static loom_status write_matches(loader *L) {
    const loom_graph *g = L->plan->g;
    loom_status st = LOOM_OK;
    for (int i = 0; i < g->n && st == LOOM_OK; i++) {
        const loom_st_tensor *m = L->match[i];
        if (!m) continue;
        const loom_tensor *t = g->nodes[i];
        if (m->dtype != t->dtype) {
            size_t n = (size_t)loom_tensor_numel(t);
            size_t nb = loom_st_tensor_nbytes(m);
            void *src = malloc(nb + 1), *tmp = malloc(n * loom_dtype_size(t->dtype) + 1);
            if (!src || !tmp) {
                free(src), free(tmp);
                return loom__err(L->ctx, LOOM_ERR_OOM, "%s: out of memory converting '%s'", L->path, t->name);
            }
            memcpy(src, m->data, nb); /* the file's data need not be aligned */
            loom_convert(src, m->dtype, tmp, t->dtype, n);
            st = loom_plan_write(L->plan, t, tmp, n * loom_dtype_size(t->dtype));
            free(src), free(tmp);
        } else {
            st = loom_plan_write(L->plan, t, m->data, loom_st_tensor_nbytes(m));
        }
        if (st == LOOM_OK) L->rep->loaded++;
    }
    return st;
}

loom_status loom_checkpoint_load(loom_plan *plan, const char *path, const loom_checkpoint_load_desc *desc,
                                 loom_checkpoint_report *report, loom_safetensors **meta_out) {
    if (meta_out) *meta_out = NULL;
    loom_checkpoint_report rep_local;
    loom_checkpoint_report *rep = report ? report : &rep_local;
    memset(rep, 0, sizeof *rep);
    if (!plan || !path) return LOOM_ERR_INVALID_ARG;
    loader L = {.plan = plan, .ctx = plan->ctx, .path = path, .rep = rep};
    L.d = desc ? *desc : (loom_checkpoint_load_desc){0};
    int gn = plan->g->n;
    loom_status st = check_map(L.ctx, path, L.d.name_map);
    if (st != LOOM_OK) return st;
    if ((st = loom_safetensors_open(L.ctx, path, &L.file)) != LOOM_OK) return st;
    L.nf = loom_safetensors_count(L.file);
    L.base = loom_safetensors_tensor(L.file, 0);
    L.match = calloc((size_t)(gn ? gn : 1), sizeof *L.match);
    L.used = calloc((size_t)(L.nf ? L.nf : 1), 1);
    L.skip_node = calloc((size_t)(gn ? gn : 1), 1);
    L.fname = calloc((size_t)(L.nf ? L.nf : 1), sizeof *L.fname);
    L.sorted = calloc((size_t)(L.nf ? L.nf : 1), sizeof *L.sorted);
    if (!L.match || !L.used || !L.skip_node || !L.fname || !L.sorted)
        st = loom__err(L.ctx, LOOM_ERR_OOM, "%s: out of memory", path);
    if (st == LOOM_OK) st = map_file_names(&L);
    if (st == LOOM_OK && L.d.weights_only) mark_optimizer_states(&L);
    if (st == LOOM_OK) st = match_tensors(&L);
    if (st == LOOM_OK) st = check_finite(&L);
    uint64_t step = 0;
    bool have_step = false;
    if (st == LOOM_OK) st = read_step(&L, &step, &have_step);
    /* everything checked: now write */
    if (st == LOOM_OK) st = write_matches(&L);
    if (st == LOOM_OK && have_step) {
        loom_plan_set_step(plan, step);
        rep->plan_step_restored = true;
    }
    free(L.match);
    free(L.used);
    free(L.skip_node);
    free(L.fname);
    free(L.sorted);
    if (st == LOOM_OK && meta_out)
        *meta_out = L.file;
    else
        loom_safetensors_close(L.file);
    return st;
}
