/* core/backend.c — backends by name: listing, availability, creation.
 *
 * The list of compiled-in backends (loom__backends) is filled by the backends
 * themselves (backends/registry.c): this file names none of them. */
#include "backend_impl.h"

static const loom__backend_vtbl *find(const char *name) {
    for (int i = 0; loom__backends[i]; i++)
        if (name && strcmp(loom__backends[i]->name, name) == 0) return loom__backends[i];
    return NULL;
}

int loom_backend_list(const char **names, int max) {
    int n = 0;
    for (; loom__backends[n]; n++)
        if (n < max && names) names[n] = loom__backends[n]->name;
    return n;
}

bool loom_backend_available(loom_ctx *ctx, const char *name, const char **why) {
    const loom__backend_vtbl *vt = find(name);
    if (!vt) {
        if (why) *why = "not built into this library";
        return false;
    }
    return vt->available(ctx, why);
}

bool loom_backend_is_gpu(loom_ctx *ctx, const char *name) {
    const loom__backend_vtbl *vt = find(name);
    return vt && vt->is_gpu && vt->available(ctx, NULL) && vt->is_gpu(ctx);
}

loom_status loom_backend_create(loom_ctx *ctx, const char *name, const loom_backend_desc *desc, loom_backend **out) {
    *out = NULL;
    const loom__backend_vtbl *vt = find(name);
    if (!vt) {
        char list[256] = "";
        for (int i = 0; loom__backends[i]; i++) {
            strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, loom__backends[i]->name, sizeof list - strlen(list) - 1);
        }
        return loom__err(ctx, LOOM_ERR_UNSUPPORTED, "backend '%s' is not built into this library (built: %s)",
                         name ? name : "(null)", list);
    }
    const char *why = NULL;
    if (!vt->available(ctx, &why))
        return loom__err(ctx, LOOM_ERR_UNSUPPORTED, "backend '%s' is built but cannot run here: %s", vt->name,
                         why ? why : "unknown reason");
    if (desc && desc->reproducible && !vt->reproducible) {
        char with[256] = "";
        for (int i = 0; loom__backends[i]; i++)
            if (loom__backends[i]->reproducible) {
                strncat(with, with[0] ? ", " : "", sizeof with - strlen(with) - 1);
                strncat(with, loom__backends[i]->name, sizeof with - strlen(with) - 1);
            }
        return loom__err(ctx, LOOM_ERR_UNSUPPORTED,
                         "backend '%s' has no reproducible mode yet (core/repro.h); backends with one: %s", vt->name,
                         with[0] ? with : "none");
    }
    loom_backend *be = calloc(1, sizeof *be);
    if (!be) return loom__err(ctx, LOOM_ERR_OOM, "backend: out of memory");
    be->ctx = ctx;
    be->vt = vt;
    be->reproducible = desc && desc->reproducible;
    loom_backend_desc d = {0};
    if (desc) d = *desc;
    d.deterministic = d.deterministic || d.reproducible; /* canonical kernels depend on nothing else */
    loom_status st = vt->create(be, &d);
    if (st != LOOM_OK) {
        free(be);
        return st;
    }
    *out = be;
    return LOOM_OK;
}

void loom_backend_destroy(loom_backend *be) {
    if (!be) return;
    be->vt->destroy(be);
    free(be);
}

const char *loom_backend_name(const loom_backend *be) { return be->vt->name; }

bool loom_backend_supports(const loom_backend *be, int op, loom_dtype dt) {
    if ((unsigned)op >= LOOM_OP_COUNT || (unsigned)dt >= LOOM_DTYPE_COUNT) return false;
    const loom__kernel *k = &be->vt->kernels[op];
    if (loom__ops[op].flags & LOOM__OPF_VIEW) return true;
    return k->fn && (k->dtypes & (1u << dt));
}

void loom_backend_describe(const loom_backend *be, FILE *out) {
    fprintf(out, "backend %s\n", be->vt->name);
    if (be->vt->describe) be->vt->describe(be, out);
}

/* ---- pinned / staging host memory ---------------------------------------- */

loom_status loom_backend_host_alloc(loom_backend *be, size_t bytes, void **out) {
    *out = NULL;
    if (be && be->vt->host_alloc) return be->vt->host_alloc(be, bytes, out);
    /* 64-byte aligned (a cache line): the loader's batch tensor is written
     * with streaming stores, which need it (malloc gives 16 past a page) */
    size_t n = bytes ? (bytes + 63) & ~(size_t)63 : 64;
    if (n < bytes || !(*out = aligned_alloc(64, n)))
        return loom__err(be ? be->ctx : NULL, LOOM_ERR_OOM, "backend %s: out of host memory (%zu bytes)",
                         be ? be->vt->name : "(none)", bytes);
    return LOOM_OK;
}

void loom_backend_host_free(loom_backend *be, void *p) {
    if (!p) return;
    if (be && be->vt->host_alloc && be->vt->host_free) be->vt->host_free(be, p);
    else free(p);
}
