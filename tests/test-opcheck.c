/* tests/test-opcheck.c — the op-check program: every op, every float dtype,
 * every available backend, against the CPU f64 reference (after ggml's
 * test-backend-ops).
 *
 * For each case of tests/ops/<family>.c, each backend and each float dtype:
 * build the case graph in that dtype, append
 *     loss = sum(cast(out, f32 | f64) * R)
 * with R a fixed pseudo-random constant in [-1, 1], run loom_backward, keep
 * the output and the gradient of every float parameter, compile, run once and
 * compare them (and every float state, e.g. running statistics, and every
 * parameter an effect op such as an optimizer step writes) with the same
 * case built in f64 and run on the CPU backend (one thread, no memory reuse:
 * so the CPU f64 check still tests threading and the in-place planner).
 * The measure is NMSE = sum((a-b)^2) / sum(b^2).
 *
 * Results are attributed to the ops each case contains (forward ops, and the
 * ops the backward rules of the case's own nodes create; the loss nodes the
 * harness adds and their gradients are not credited), and one line per
 * op x dtype x backend is printed walking the op table. An op the backend
 * supports that no case exercises is a failure ("NO CASE").
 *
 * With -r every backend runs in reproducible mode (core/repro.h; f32 only,
 * the ops without a canonical kernel are "not supported") and, besides the
 * NMSE check, every tensor of a non-CPU backend must equal the reproducible
 * CPU backend's bit for bit.
 *
 * -t takes one dtype or a list (-t f32,f16): only those are checked. With -q
 * (quick) the listed dtypes are checked on every case and the others only on
 * the cases that run an op the backend has not run yet in any dtype, so every
 * op the backend supports still runs at least once (the sanitizer build's
 * op-check: its job is memory errors in host code, not numerics). The time
 * per backend and dtype is printed.
 *
 * Usage: test-opcheck [-b BACKEND] [-o OPNAME] [-t DTYPE[,DTYPE...]] [-q] [-r] [-v]
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "impl.h"
#include "cases.h"
#include "testutil.h"

#define GRAPH_SEED 42u
#define R_SEED 0x10adu /* the loss weights R */
#define R_STREAM 7u
#define MAX_TVALS 48

static const loom_dtype DTYPES[] = {LOOM_F32, LOOM_F16, LOOM_BF16, LOOM_F64};
#define N_DTYPES 4

/* Per-dtype NMSE tolerance (times the case's tol_scale). Unit roundoff u:
 * f64 1.1e-16, f32 6.0e-8, f16 4.9e-4, bf16 3.9e-3; one rounding gives an NMSE
 * of about u^2/3, so these leave room for a chain of a few dozen roundings
 * (and sums whose error grows with their length) but not for a wrong kernel.
 * f16/bf16 inputs are the f64 values rounded, which is included. */
static double base_tol(loom_dtype dt) {
    switch (dt) {
    case LOOM_F64: return 1e-20;
    case LOOM_F32: return 1e-9;
    case LOOM_F16: return 1e-5;
    case LOOM_BF16: return 1e-4;
    default: return 0;
    }
}

static bool is16(loom_dtype dt) { return dt == LOOM_F16 || dt == LOOM_BF16; }

/* ---- the cases, flattened ---- */
typedef struct tcase {
    const loom_op_case *c;
    const char *family;
} tcase;

static int collect_cases(tcase **out) {
    int n = 0;
    for (int f = 0; loom_case_families[f]; f++)
        for (const loom_op_case *c = loom_case_families[f]; c->name; c++) n++;
    tcase *v = calloc((size_t)(n ? n : 1), sizeof *v);
    if (!v) return -1;
    n = 0;
    for (int f = 0; loom_case_families[f]; f++)
        for (const loom_op_case *c = loom_case_families[f]; c->name; c++)
            v[n++] = (tcase){c, loom_case_family_names[f]};
    *out = v;
    return n;
}

/* ---- building a case with the loss and its backward pass ---- */

/* loss = sum(cast(out, F32, or F64 for an f64 build) * R) */
static loom_tensor *append_loss(loom_graph *g, loom_tensor *out, loom_dtype dt) {
    if (!out) return NULL;
    loom_dtype ldt = dt == LOOM_F64 ? LOOM_F64 : LOOM_F32;
    int64_t n = loom_tensor_numel(out);
    double *r = malloc((size_t)n * sizeof *r);
    void *buf = malloc((size_t)n * loom_dtype_size(ldt));
    loom_tensor *R = NULL;
    if (r && buf) {
        /* 2u - 1 with u a 24-bit fraction: exact in f32, so every dtype gets the same R */
        for (int64_t i = 0; i < n; i++) r[i] = 2.0 * loom_philox_uniform(R_SEED, R_STREAM, (uint64_t)i) - 1.0;
        loom_convert(r, LOOM_F64, buf, ldt, (size_t)n);
        R = loom_constant(g, "opcheck.R", ldt, out->ndim, out->dims, buf);
    }
    free(r), free(buf);
    if (!R) return NULL;
    return loom_sum(g, loom_mul(g, loom_cast(g, out, ldt), R), 0, false);
}

/* How many nodes loom_backward creates for the loss nodes alone (the fill of
 * the loss gradient and the rules of sum, mul and cast), found by building the
 * loss over a parameter shaped like out. They are the first nodes backward
 * appends, since it walks from the loss down. -1 on failure. */
static int harness_backward_nodes(loom_ctx *ctx, const loom_tensor *out, loom_dtype dt) {
    loom_graph *g;
    loom_graph_desc gd = {GRAPH_SEED};
    if (loom_graph_create(ctx, &gd, &g) != LOOM_OK) return -1;
    loom_tensor *p = loom_param(g, "opcheck.p", out->dtype, out->ndim, out->dims, NULL);
    loom_tensor *loss = append_loss(g, p, dt);
    int n1 = loom_graph_node_count(g), h = -1;
    if (loss && loom_backward(g, loss) == LOOM_OK) h = loom_graph_node_count(g) - n1;
    loom_graph_destroy(g);
    return h;
}

static void scan_ops(const loom_graph *g, int from, int to, bool *ops) {
    for (int i = from; i < to && i < g->n; i++)
        if (g->nodes[i]->op >= 0) ops[g->nodes[i]->op] = true;
}

/* A tensor to compare, with its label ("output", "grad of 'w'", "state 'rm'"). */
typedef struct tval {
    char label[96];
    loom_tensor *t;
    double *v;
    int64_t n;
} tval;

enum { R_OK, R_BUILD, R_UNSUPPORTED, R_RUN };

typedef struct result {
    int status;
    char err[512];
    bool ops[LOOM_OP_COUNT];
    bool grads; /* the backward pass was included */
    int nt;
    tval t[MAX_TVALS];
} result;

static void result_free(result *r) {
    for (int i = 0; i < r->nt; i++) free(r->t[i].v);
    r->nt = 0;
}

static void add_tval(result *r, loom_tensor *t, const char *fmt, const char *name) {
    if (r->nt == MAX_TVALS) return;
    tval *v = &r->t[r->nt++];
    snprintf(v->label, sizeof v->label, fmt, name);
    v->t = t;
    loom_keep(t);
}

/* Build case c in dt (with the backward pass if grads) into a fresh graph.
 * On failure r->status/err say why; the graph is returned in any case. */
static loom_graph *build_case(loom_ctx *ctx, const loom_op_case *c, loom_dtype dt, bool grads, result *r,
                              bool *backward_failed) {
    *backward_failed = false;
    loom_graph *g;
    loom_graph_desc gd = {GRAPH_SEED};
    if (loom_graph_create(ctx, &gd, &g) != LOOM_OK) {
        r->status = R_BUILD;
        snprintf(r->err, sizeof r->err, "cannot create a graph: %s", loom_last_error(ctx));
        return NULL;
    }
    loom_tensor *out = c->build(g, dt, c->variant);
    int n0 = loom_graph_node_count(g);
    scan_ops(g, 0, n0, r->ops);
    if (!out || loom_graph_status(g) != LOOM_OK) {
        r->status = R_BUILD;
        snprintf(r->err, sizeof r->err, "build failed: %s", loom_last_error(ctx));
        return g;
    }
    loom_tensor *loss = append_loss(g, out, dt);
    int n1 = loom_graph_node_count(g);
    if (!loss) {
        r->status = R_BUILD;
        snprintf(r->err, sizeof r->err, "building the loss failed: %s", loom_last_error(ctx));
        return g;
    }
    if (grads && loom_requires_grad(loss)) {
        int h = harness_backward_nodes(ctx, out, dt);
        if (h < 0) {
            r->status = R_BUILD;
            snprintf(r->err, sizeof r->err, "the loss alone has no backward pass: %s", loom_last_error(ctx));
            return g;
        }
        if (loom_backward(g, loss) != LOOM_OK) {
            r->status = R_BUILD;
            *backward_failed = true;
            snprintf(r->err, sizeof r->err, "backward failed: %s", loom_last_error(ctx));
            return g;
        }
        scan_ops(g, n1 + h, loom_graph_node_count(g), r->ops);
        r->grads = true;
    }
    add_tval(r, out, "%s", "output");
    /* parameters that an effect op (an optimizer step) writes */
    bool *written = calloc((size_t)n0, 1);
    for (int i = 0; written && i < n0; i++) {
        const loom_tensor *t = g->nodes[i];
        if (t->op >= 0 && t->effect)
            for (int k = 0; k < t->nsrc; k++)
                if (t->src[k]->id < n0) written[t->src[k]->id] = true;
    }
    for (int i = 0; i < n0; i++) {
        loom_tensor *t = g->nodes[i];
        if (t->leaf == LOOM__PARAM && loom_dtype_is_float(t->dtype) && t->grad)
            add_tval(r, t->grad, "grad of '%s'", t->name);
        if (t->leaf == LOOM__PARAM && loom_dtype_is_float(t->dtype) && written && written[i])
            add_tval(r, t, "param '%s' after the run", t->name);
        if (t->leaf == LOOM__STATE && loom_dtype_is_float(t->dtype)) add_tval(r, t, "state '%s'", t->name);
    }
    free(written);
    r->status = R_OK;
    return g;
}

/* Build, compile on be and run once; read every compared tensor as f64. */
static void run_case(loom_ctx *ctx, loom_backend *be, const loom_op_case *c, loom_dtype dt, bool no_reuse, result *r) {
    memset(r, 0, sizeof *r);
    bool bw_failed;
    loom_graph *g = build_case(ctx, c, dt, true, r, &bw_failed);
    if (bw_failed && (c->flags & TC_NO_GRADCHECK)) {
        /* a case without a gradient: compare the output alone */
        loom_graph_destroy(g);
        memset(r, 0, sizeof *r);
        g = build_case(ctx, c, dt, false, r, &bw_failed);
    }
    if (r->status != R_OK) {
        loom_graph_destroy(g);
        return;
    }
    loom_plan *plan = NULL;
    loom_plan_desc pd = {0};
    pd.no_reuse = no_reuse;
    loom_status st = loom_plan_compile(g, be, &pd, &plan);
    if (st != LOOM_OK) {
        r->status = st == LOOM_ERR_UNSUPPORTED ? R_UNSUPPORTED : R_RUN;
        snprintf(r->err, sizeof r->err, "compile: %s", loom_last_error(ctx));
        loom_graph_destroy(g);
        return;
    }
    if ((st = loom_plan_run(plan)) != LOOM_OK) {
        r->status = R_RUN;
        snprintf(r->err, sizeof r->err, "run: %s: %s", loom_status_str(st), loom_last_error(ctx));
    }
    for (int i = 0; i < r->nt && r->status == R_OK; i++) {
        tval *v = &r->t[i];
        v->n = loom_tensor_numel(v->t);
        v->v = malloc((size_t)v->n * sizeof *v->v);
        if (!v->v) {
            r->status = R_RUN;
            snprintf(r->err, sizeof r->err, "out of memory");
        } else if ((st = loom_plan_read_f64(plan, v->t, v->v, (size_t)v->n)) != LOOM_OK) {
            r->status = R_RUN;
            snprintf(r->err, sizeof r->err, "reading %s: %s", v->label, loom_last_error(ctx));
        }
        v->t = NULL; /* the graph goes away below */
    }
    for (int i = 0; i < r->nt; i++) r->t[i].t = NULL;
    loom_plan_destroy(plan);
    loom_graph_destroy(g);
}

/* ---- comparison ---- */

/* NMSE of a against the reference b. When the reference is ~0 (rms below
 * 1e-6) the relative measure means nothing and the absolute sum of squares is
 * used. Any non-finite value is an infinite error. *worst = index of the
 * largest |a-b|. */
static double nmse(const double *a, const double *b, int64_t n, int64_t *worst) {
    double e = 0, d = 0, wd = -1;
    *worst = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i])) {
            if ((isnan(a[i]) && isnan(b[i])) || a[i] == b[i]) continue; /* the same NaN or infinity (tests/ops/nan.c) */
            *worst = i;
            return INFINITY;
        }
        double diff = a[i] - b[i];
        e += diff * diff;
        d += b[i] * b[i];
        if (fabs(diff) > wd) wd = fabs(diff), *worst = i;
    }
    return d > (double)n * 1e-12 ? e / d : e;
}

/* ---- per op bookkeeping ---- */
typedef struct opstat {
    int n_ok;        /* cases that passed */
    int n_fail;      /* cases that failed */
    int n_unsup;     /* cases the backend could not compile */
    int n_16skip;    /* cases flagged TC_NO_16BIT (16-bit dtypes only) */
    double max_nmse; /* over the passing cases' compared tensors */
    char fail[1100]; /* the first failure */
} opstat;

static opstat stats[LOOM_OP_COUNT][LOOM_DTYPE_COUNT];

typedef struct options {
    bool repro;            /* -r: reproducible mode, bitwise against cpu_repro */
    loom_backend *cpu_repro;
    const char *backend;
    int op;  /* -1 = all */
    bool want[LOOM_DTYPE_COUNT]; /* -t: the dtypes checked on every case (default all) */
    bool quick;                  /* -q: the other dtypes only for ops not run yet */
    bool verbose;
} options;

static void usage(const char *argv0) {
    printf("usage: %s [-b BACKEND] [-o OPNAME] [-t DTYPE[,DTYPE...]] [-q] [-r] [-v]\n"
           "  DTYPE: f32, f16, bf16, f64; -q: the dtypes -t leaves out run only the cases of ops\n"
           "  the backend has not run yet (every supported op runs at least once)\n", argv0);
}

/* -t LIST: comma-separated float dtypes into want[]; false (after saying
 * which entry is wrong) on a bad list. */
static bool parse_dtypes(const char *list, bool *want) {
    for (int k = 0; k < LOOM_DTYPE_COUNT; k++) want[k] = false;
    for (const char *p = list;; p++) {
        size_t n = strcspn(p, ",");
        char name[16] = "";
        int dt = -1;
        if (n > 0 && n < sizeof name) {
            memcpy(name, p, n);
            name[n] = 0;
            dt = loom_dtype_parse(name);
        }
        if (dt < 0 || !loom_dtype_is_float((loom_dtype)dt)) {
            printf("-t: '%.*s' in '%s' is not a float dtype (f32, f16, bf16, f64)\n", (int)n, p, list);
            return false;
        }
        want[dt] = true;
        p += n;
        if (!*p) return true;
    }
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The ops of case c in dt (forward, and the backward rules of the case's own
 * nodes, as run_case credits them), found by building the case without
 * compiling it; false if the build fails (the check then reports it). For -o
 * and -q, which skip the cases that cannot matter before running them. */
static bool case_ops(loom_ctx *ctx, const loom_op_case *c, loom_dtype dt, bool *ops) {
    result *r = calloc(1, sizeof *r);
    if (!r) return false;
    bool bw_failed;
    loom_graph *g = build_case(ctx, c, dt, true, r, &bw_failed);
    if (bw_failed && (c->flags & TC_NO_GRADCHECK)) {
        loom_graph_destroy(g);
        memset(r, 0, sizeof *r);
        g = build_case(ctx, c, dt, false, r, &bw_failed);
    }
    bool ok = r->status == R_OK;
    memcpy(ops, r->ops, sizeof r->ops);
    loom_graph_destroy(g);
    result_free(r);
    free(r);
    return ok;
}

static int find_op(const char *name) {
    for (int i = 0; i < loom_op_count(); i++)
        if (strcmp(loom_op_name(i), name) == 0) return i;
    return -1;
}

/* Check one case on one backend and dtype against its reference; ran[op] is
 * set for the ops of a case that compiled on the backend (passed or not). */
static void check_case(loom_ctx *ctx, loom_backend *be, const tcase *tc, loom_dtype dt, const result *ref,
                       const options *o, bool *ran) {
    const loom_op_case *c = tc->c;
    const char *bn = loom_backend_name(be), *dn = loom_dtype_name(dt);
    result r;
    run_case(ctx, be, c, dt, false, &r);
    if (o->op >= 0 && !r.ops[o->op]) {
        result_free(&r);
        return;
    }
    char msg[1024] = "";
    bool failed = false;
    double worst_ratio = 0, worst_nmse = 0;
    double tol = base_tol(dt) * (c->tol_scale > 0 ? c->tol_scale : 1.0);

    if (r.status == R_UNSUPPORTED) {
        for (int op = 0; op < LOOM_OP_COUNT; op++)
            if (r.ops[op]) stats[op][dt].n_unsup++;
        if (o->verbose) printf("  [%s %s] %-40s not supported: %s\n", bn, dn, c->name, r.err);
        result_free(&r);
        return;
    }
    for (int op = 0; op < LOOM_OP_COUNT; op++) ran[op] |= r.ops[op];
    if (ref->status != R_OK) {
        failed = true;
        snprintf(msg, sizeof msg, "the cpu f64 reference failed: %s", ref->err);
    } else if (r.status != R_OK) {
        failed = true;
        snprintf(msg, sizeof msg, "%s", r.err);
    } else {
        /* every reference tensor must be present in the test, and vice versa */
        for (int i = 0; i < r.nt && !failed; i++) {
            bool found = false;
            for (int k = 0; k < ref->nt; k++) found |= strcmp(ref->t[k].label, r.t[i].label) == 0;
            if (!found) {
                failed = true;
                snprintf(msg, sizeof msg, "%s exists here but not in the reference", r.t[i].label);
            }
        }
        for (int k = 0; k < ref->nt && !failed; k++) {
            const tval *b = &ref->t[k], *a = NULL;
            for (int i = 0; i < r.nt; i++)
                if (strcmp(r.t[i].label, b->label) == 0) a = &r.t[i];
            if (!a) {
                failed = true;
                snprintf(msg, sizeof msg, "%s missing (the reference has it)", b->label);
                break;
            }
            if (a->n != b->n) {
                failed = true;
                snprintf(msg, sizeof msg, "%s has %lld elements, the reference %lld", b->label, (long long)a->n,
                         (long long)b->n);
                break;
            }
            int64_t w;
            double e = nmse(a->v, b->v, b->n, &w);
            if (!(e <= tol)) {
                failed = true;
                snprintf(msg, sizeof msg, "%s nmse %.2e > tol %.1e (n=%lld; worst [%lld]: %.9g vs ref %.9g)", b->label,
                         e, tol, (long long)b->n, (long long)w, a->v[w], b->v[w]);
                break;
            }
            if (e / tol >= worst_ratio) worst_ratio = e / tol, worst_nmse = e;
        }
    }
    /* reproducible mode: the same bits as the reproducible CPU backend */
    if (!failed && o->repro && strcmp(bn, "cpu") != 0) {
        result cr;
        run_case(ctx, o->cpu_repro, c, dt, false, &cr);
        if (cr.status != R_OK) {
            failed = true;
            snprintf(msg, sizeof msg, "the reproducible cpu run failed: %s", cr.err);
        }
        for (int k = 0; k < cr.nt && !failed; k++) {
            const tval *b = &cr.t[k];
            for (int i = 0; i < r.nt && !failed; i++) {
                if (strcmp(r.t[i].label, b->label) != 0 || r.t[i].n != b->n) continue;
                int64_t nd = 0, first = -1;
                for (int64_t e = 0; e < b->n; e++)
                    if (memcmp(&r.t[i].v[e], &b->v[e], sizeof(double)) != 0 && !(isnan(r.t[i].v[e]) && isnan(b->v[e])))
                        nd++, first = first < 0 ? e : first;
                if (nd) {
                    failed = true;
                    snprintf(msg, sizeof msg, "%s: %lld of %lld elements differ from the reproducible cpu bit for bit "
                             "(first [%lld]: %.9g vs %.9g)", b->label, (long long)nd, (long long)b->n, (long long)first,
                             r.t[i].v[first], b->v[first]);
                }
            }
        }
        result_free(&cr);
    }

    for (int op = 0; op < LOOM_OP_COUNT; op++) {
        if (!r.ops[op]) continue;
        opstat *s = &stats[op][dt];
        if (failed) {
            if (!s->n_fail) snprintf(s->fail, sizeof s->fail, "case \"%s\": %s", c->name, msg);
            s->n_fail++;
        } else {
            s->n_ok++;
            if (worst_nmse > s->max_nmse) s->max_nmse = worst_nmse;
        }
    }
    if (failed) {
        printf("FAIL [%s %s] case \"%s\" (%s): %s\n", bn, dn, c->name, tc->family, msg);
        /* a failure no op line can show (nothing was built) still counts */
        bool any = false;
        for (int op = 0; op < LOOM_OP_COUNT; op++) any |= r.ops[op];
        if (!any) tu_failed++;
    } else if (o->verbose) {
        printf("  [%s %s] %-40s ok  (%d tensors%s, max nmse %.1e, tol %.0e)\n", bn, dn, c->name, r.nt,
               r.grads ? "" : ", no backward", worst_nmse, tol);
    }
    result_free(&r);
}

/* One line per op and dtype for backend be; returns nothing, counts checks.
 * ran[op]: the op ran on be in some dtype (for -q). */
static void report_backend(loom_backend *be, const options *o, const bool *ran) {
    const char *bn = loom_backend_name(be);
    int n_ok = 0, n_fail = 0, n_none = 0, n_unsup = 0, n_untested = 0, n_quick = 0;
    for (int op = 0; op < LOOM_OP_COUNT; op++) {
        if (o->op >= 0 && op != o->op) continue;
        for (int k = 0; k < N_DTYPES; k++) {
            loom_dtype dt = DTYPES[k];
            if (!o->want[dt] && !o->quick) continue;
            if (o->repro && dt != LOOM_F32) continue;
            const opstat *s = &stats[op][dt];
            const char *name = loom_op_name(op), *dn = loom_dtype_name(dt);
            if (s->n_fail) {
                printf("  %-26s %-5s %-7s FAIL (%d of %d cases; %s)\n", name, dn, bn, s->n_fail, s->n_fail + s->n_ok,
                       s->fail);
                tu_failed++;
                n_fail++;
            } else if (s->n_ok) {
                printf("  %-26s %-5s %-7s OK   (%d cases, max nmse %.1e)\n", name, dn, bn, s->n_ok, s->max_nmse);
                tu_passed++;
                n_ok++;
            } else if (!loom_backend_supports(be, op, dt)) {
                printf("  %-26s %-5s %-7s not supported\n", name, dn, bn);
                n_unsup++;
            } else if (s->n_unsup) {
                /* the op has cases, but each also needs an op this backend lacks in this dtype */
                printf("  %-26s %-5s %-7s untested (%d case(s) need ops %s lacks in %s)\n", name, dn, bn, s->n_unsup,
                       bn, dn);
                n_untested++;
            } else if (!o->want[dt] && ran[op]) {
                printf("  %-26s %-5s %-7s not run (-q: it ran in another dtype)\n", name, dn, bn);
                n_quick++;
            } else {
                printf("  %-26s %-5s %-7s NO CASE\n", name, dn, bn);
                tu_failed++;
                n_none++;
            }
        }
    }
    printf("backend %s: %d OK, %d FAIL, %d NO CASE, %d not supported, %d untested", bn, n_ok, n_fail, n_none, n_unsup,
           n_untested);
    if (o->quick) printf(", %d not run (-q)", n_quick);
    printf("\n");
}

int main(int argc, char **argv) {
    options o = {.op = -1};
    for (int k = 0; k < N_DTYPES; k++) o.want[DTYPES[k]] = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r")) {
            o.repro = true;
        } else if (!strcmp(argv[i], "-q")) {
            o.quick = true;
        } else if (!strcmp(argv[i], "-v")) {
            o.verbose = true;
        } else if (!strcmp(argv[i], "-b") && i + 1 < argc) {
            o.backend = argv[++i];
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            if ((o.op = find_op(argv[++i])) < 0) {
                printf("unknown op '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            if (!parse_dtypes(argv[++i], o.want)) return 2;
        } else {
            usage(argv[0]);
            return 2;
        }
    }
    double t0 = now_s();

    loom_ctx *ctx;
    loom_backend *refbe;
    if (!tu_cpu_open(1, &ctx, &refbe)) return 1;
    tcase *cases;
    int ncases = collect_cases(&cases);
    if (ncases < 0) return 1;
    int nfam = 0;
    while (loom_case_family_names[nfam]) nfam++;
    printf("op-check: %d cases in %d families; reference: cpu f64, 1 thread, no memory reuse\n", ncases, nfam);
    result *refs = calloc((size_t)(ncases ? ncases : 1), sizeof *refs);
    bool *have_ref = calloc((size_t)(ncases ? ncases : 1), 1);
    if (!refs || !have_ref) return 1;

    const char *names[16];
    int nb = loom_backend_list(names, 16);
    int n_run = 0;
    for (int b = 0; b < nb && b < 16; b++) {
        if (o.backend && strcmp(o.backend, names[b]) != 0) continue;
        const char *why = NULL;
        if (!loom_backend_available(ctx, names[b], &why)) {
            printf("backend %s: skipped: %s\n", names[b], why ? why : "not available");
            continue;
        }
        loom_backend *be;
        loom_backend_desc bd = {.reproducible = o.repro};
        if (o.repro && !o.cpu_repro && loom_backend_create(ctx, "cpu", &bd, &o.cpu_repro) != LOOM_OK) {
            printf("cannot create the reproducible cpu backend: %s\n", loom_last_error(ctx));
            return 1;
        }
        if (loom_backend_create(ctx, names[b], o.repro ? &bd : NULL, &be) != LOOM_OK) {
            printf("backend %s: skipped: %s\n", names[b], loom_last_error(ctx));
            continue;
        }
        n_run++;
        memset(stats, 0, sizeof stats);
        bool ran[LOOM_OP_COUNT] = {0};
        /* pass 0: the -t dtypes, every case; pass 1 (-q): the others, only cases with an op not run yet */
        for (int pass = 0; pass < (o.quick ? 2 : 1); pass++) {
            for (int k = 0; k < N_DTYPES; k++) {
                loom_dtype dt = DTYPES[k];
                if (o.want[dt] != (pass == 0)) continue;
                if (o.repro && dt != LOOM_F32) continue; /* the mode is f32 only */
                double t_start = now_s(), t_ref = 0;
                int n_checked = 0;
                for (int i = 0; i < ncases; i++) {
                    const loom_op_case *c = cases[i].c;
                    if (is16(dt) && (c->flags & TC_NO_16BIT)) continue;
                    if (o.op >= 0 || pass == 1) {
                        bool ops[LOOM_OP_COUNT] = {0}, fresh = false;
                        if (case_ops(ctx, c, dt, ops)) {
                            if (o.op >= 0 && !ops[o.op]) continue;
                            for (int op = 0; op < LOOM_OP_COUNT; op++)
                                fresh |= ops[op] && !ran[op] && loom_backend_supports(be, op, dt);
                            if (pass == 1 && !fresh) continue; /* -q: every op of the case ran already */
                        }
                    }
                    if (!have_ref[i]) {
                        double t = now_s();
                        run_case(ctx, refbe, c, LOOM_F64, true, &refs[i]);
                        t_ref += now_s() - t;
                        have_ref[i] = true;
                        if (refs[i].status != R_OK)
                            printf("reference for case \"%s\" (%s) failed: %s\n", c->name, cases[i].family, refs[i].err);
                    }
                    check_case(ctx, be, &cases[i], dt, &refs[i], &o, ran);
                    n_checked++;
                }
                printf("backend %s %s: %d cases%s in %.1f s (and %.1f s for their cpu f64 references)\n", names[b],
                       loom_dtype_name(dt), n_checked, pass ? " (-q: ops not run yet)" : "",
                       now_s() - t_start - t_ref, t_ref);
                fflush(stdout);
            }
        }
        printf("backend %s: per op, dtype (cases and the largest NMSE of any compared tensor):\n", names[b]);
        report_backend(be, &o, ran);
        loom_backend_destroy(be);
    }
    if (o.backend && !n_run) printf("backend '%s' is not available\n", o.backend);
    loom_backend_destroy(o.cpu_repro);

    for (int i = 0; i < ncases; i++) result_free(&refs[i]);
    free(refs), free(have_ref), free(cases);
    tu_cpu_close(ctx, refbe);
    printf("op-check took %.2f s\n", now_s() - t0);
    if (!n_run) return tu_skip("no backend could run");
    return tu_summary();
}
