/* tests/test-gradcheck.c — every backward rule against central finite
 * differences, in f64 on the CPU backend.
 *
 * For each case of tests/ops/<family>.c without TC_NO_GRADCHECK: build it in
 * f64, append loss = sum(out * R) (R a fixed pseudo-random constant in
 * [-1, 1]), run loom_backward and read the analytic gradient of every float
 * parameter. Then, on a second plan of the same graph without the backward
 * pass, perturb parameter elements (all of them up to 64, else 64 evenly
 * spaced ones) by +-h, h = 1e-6 * max(1, |x|) (or the case's fd_step), and
 * compare with (L(x+h) - L(x-h)) / 2h. The plan step is reset to 0 before
 * every run so dropout draws the same mask each time.
 *
 * An op counts as checked when it appears, needing a gradient, in the forward
 * part of a checked case and has a backward rule; every op with a backward
 * rule that no case checks is a failure ("NOT CHECKED").
 *
 * Usage: test-gradcheck [-o OPNAME] [-v]
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "impl.h"
#include "cases.h"
#include "testutil.h"

#define GRAPH_SEED 42u
#define R_SEED 0x10adu /* the same loss weights as test-opcheck */
#define R_STREAM 7u
#define MAX_SAMPLES 64
#define MAX_SHOWN 4 /* mismatches printed per parameter */

/* Pass when |analytic - numeric| <= ATOL + RTOL * |numeric|. The central
 * difference has a truncation error of about h^2 |f'''| / 6 (~1e-12 here) and
 * a rounding error of about eps |L| / h (~1e-10 |L|); the bounds leave a wide
 * margin above both and still catch any wrong term of a rule. */
#define ATOL 1e-6
#define RTOL 1e-4

/* loss = sum(out * R), all in f64 */
static loom_tensor *append_loss(loom_graph *g, loom_tensor *out) {
    if (!out) return NULL;
    int64_t n = loom_tensor_numel(out);
    double *r = malloc((size_t)n * sizeof *r);
    if (!r) return NULL;
    for (int64_t i = 0; i < n; i++) r[i] = 2.0 * loom_philox_uniform(R_SEED, R_STREAM, (uint64_t)i) - 1.0;
    loom_tensor *R = loom_constant(g, "gradcheck.R", LOOM_F64, out->ndim, out->dims, r);
    free(r);
    if (!R) return NULL;
    return loom_sum(g, loom_mul(g, loom_cast(g, out, LOOM_F64), R), 0, false);
}

/* Build case c in f64 plus the loss into a new graph; *n0 = nodes the case
 * itself built. NULL graph only if it cannot be created. */
static loom_graph *build(loom_ctx *ctx, const loom_op_case *c, int *n0, loom_tensor **loss) {
    loom_graph *g;
    loom_graph_desc gd = {GRAPH_SEED};
    if (loom_graph_create(ctx, &gd, &g) != LOOM_OK) return NULL;
    loom_tensor *out = c->build(g, LOOM_F64, c->variant);
    *n0 = loom_graph_node_count(g);
    *loss = out && loom_graph_status(g) == LOOM_OK ? append_loss(g, out) : NULL;
    if (*loss) loom_keep(*loss);
    return g;
}

static int find_op(const char *name) {
    for (int i = 0; i < loom_op_count(); i++)
        if (strcmp(loom_op_name(i), name) == 0) return i;
    return -1;
}

static bool has_rule(int op) { return loom__ops[op].backward != loom__bw_none; }

/* Run the forward plan from step 0 and return the loss (NAN on failure). */
static double run_loss(loom_plan *p, const loom_tensor *loss) {
    double v = NAN;
    loom_plan_set_step(p, 0);
    if (loom_plan_run(p) != LOOM_OK || loom_plan_read_f64(p, loss, &v, 1) != LOOM_OK) return NAN;
    return v;
}

typedef struct case_result {
    bool skipped; /* without the op asked for with -o */
    int params, elements, mismatches;
    double max_rel; /* max |a - n| / (|n| + ATOL/RTOL): a pass is <= RTOL */
    char err[512];  /* set when the case could not be checked at all */
} case_result;

/* Finite-difference check of parameter t (graph ga, analytic gradient ag)
 * using the forward-only plan pf of graph gb, where tb is the same parameter. */
static void check_param(loom_ctx *ctx, loom_plan *pf, const loom_tensor *tb, const loom_tensor *lossb,
                        const double *ag, double fd_step, bool verbose, case_result *cr) {
    int64_t n = loom_tensor_numel(tb);
    double *x = malloc((size_t)n * sizeof *x), *back = malloc((size_t)n * sizeof *back);
    if (!x || !back || loom_plan_read_f64(pf, tb, x, (size_t)n) != LOOM_OK) {
        snprintf(cr->err, sizeof cr->err, "cannot read parameter '%s': %s", tb->name, loom_last_error(ctx));
        free(x), free(back);
        return;
    }
    int ns = n <= MAX_SAMPLES ? (int)n : MAX_SAMPLES, shown = 0;
    cr->params++;
    for (int s = 0; s < ns && !cr->err[0]; s++) {
        int64_t i = n <= MAX_SAMPLES ? s : (int64_t)s * (n - 1) / (MAX_SAMPLES - 1);
        double x0 = x[i], h = fd_step > 0 ? fd_step : 1e-6 * fmax(1.0, fabs(x0)), L[2], xs[2];
        for (int k = 0; k < 2; k++) {
            x[i] = x0 + (k ? -h : h);
            /* the parameter may be stored in a narrower dtype: use the value it really holds */
            if (loom_plan_write_f64(pf, tb, x, (size_t)n) != LOOM_OK ||
                loom_plan_read_f64(pf, tb, back, (size_t)n) != LOOM_OK) {
                snprintf(cr->err, sizeof cr->err, "cannot write parameter '%s': %s", tb->name, loom_last_error(ctx));
                break;
            }
            xs[k] = back[i];
            L[k] = run_loss(pf, lossb);
        }
        x[i] = x0;
        if (cr->err[0]) break;
        double num = xs[0] != xs[1] ? (L[0] - L[1]) / (xs[0] - xs[1]) : NAN;
        double a = ag[i], err = fabs(a - num);
        double rel = err / (fabs(num) + ATOL / RTOL);
        bool ok = err <= ATOL + RTOL * fabs(num); /* false for NaN */
        cr->elements++;
        if (isnan(rel)) rel = INFINITY;
        if (rel > cr->max_rel) cr->max_rel = rel;
        if (!ok) {
            cr->mismatches++;
            if (shown++ < MAX_SHOWN)
                printf("    grad of '%s'[%lld]: analytic %.10g, numeric %.10g (|diff| %.2e)\n", tb->name, (long long)i,
                       a, num, err);
        }
        if (verbose && ok)
            printf("    grad of '%s'[%lld]: analytic %.10g, numeric %.10g\n", tb->name, (long long)i, a, num);
    }
    if (shown > MAX_SHOWN) printf("    ... %d more mismatches in '%s'\n", shown - MAX_SHOWN, tb->name);
    /* restore */
    if (!cr->err[0] && loom_plan_write_f64(pf, tb, x, (size_t)n) != LOOM_OK)
        snprintf(cr->err, sizeof cr->err, "cannot restore parameter '%s': %s", tb->name, loom_last_error(ctx));
    free(x), free(back);
}

/* Check one case; ops[] collects the ops with a backward rule it covers. */
static void check_case(loom_ctx *ctx, loom_backend *be, const loom_op_case *c, int only_op, bool verbose,
                       bool *ops, case_result *cr) {
    memset(cr, 0, sizeof *cr);
    int n0a, n0b;
    loom_tensor *lossa, *lossb;
    loom_graph *ga = build(ctx, c, &n0a, &lossa), *gb = NULL;
    loom_plan *pa = NULL, *pb = NULL;
    double **ag = NULL;
    int np = 0;
    if (!ga || !lossa) {
        snprintf(cr->err, sizeof cr->err, "build failed: %s", loom_last_error(ctx));
        goto done;
    }
    if (loom_backward(ga, lossa) != LOOM_OK) {
        snprintf(cr->err, sizeof cr->err, "backward failed: %s", loom_last_error(ctx));
        goto done;
    }
    for (int i = 0; i < n0a; i++) {
        const loom_tensor *t = ga->nodes[i];
        if (t->op >= 0 && t->requires_grad && has_rule(t->op)) ops[t->op] = true;
    }
    if (only_op >= 0 && !ops[only_op]) {
        cr->skipped = true;
        goto done;
    }
    if (verbose) printf("  case \"%s\":\n", c->name);
    for (int i = 0; i < n0a; i++) {
        loom_tensor *t = ga->nodes[i];
        if (t->leaf == LOOM__PARAM && loom_dtype_is_float(t->dtype) && t->grad) loom_keep(t->grad), np++;
    }
    if (!np) {
        snprintf(cr->err, sizeof cr->err, "no parameter has a gradient");
        goto done;
    }
    if (loom_plan_compile(ga, be, NULL, &pa) != LOOM_OK) {
        snprintf(cr->err, sizeof cr->err, "compile failed: %s", loom_last_error(ctx));
        goto done;
    }
    loom_plan_set_step(pa, 0);
    if (loom_plan_run(pa) != LOOM_OK) {
        snprintf(cr->err, sizeof cr->err, "run failed: %s", loom_last_error(ctx));
        goto done;
    }
    /* analytic gradients, in node order */
    ag = calloc((size_t)np, sizeof *ag);
    if (!ag) goto done;
    np = 0;
    for (int i = 0; i < n0a && !cr->err[0]; i++) {
        loom_tensor *t = ga->nodes[i];
        if (!(t->leaf == LOOM__PARAM && loom_dtype_is_float(t->dtype) && t->grad)) continue;
        size_t n = (size_t)loom_tensor_numel(t);
        ag[np] = malloc(n * sizeof **ag);
        if (!ag[np] || loom_plan_read_f64(pa, t->grad, ag[np], n) != LOOM_OK)
            snprintf(cr->err, sizeof cr->err, "cannot read the gradient of '%s': %s", t->name, loom_last_error(ctx));
        np++;
    }
    if (cr->err[0]) goto done;

    /* the same graph without the backward pass, for the perturbed runs */
    gb = build(ctx, c, &n0b, &lossb);
    if (!gb || !lossb || n0b != n0a || loom_plan_compile(gb, be, NULL, &pb) != LOOM_OK) {
        snprintf(cr->err, sizeof cr->err, "building the forward plan failed: %s", loom_last_error(ctx));
        goto done;
    }
    int k = 0;
    for (int i = 0; i < n0a && !cr->err[0]; i++) {
        const loom_tensor *t = ga->nodes[i];
        if (!(t->leaf == LOOM__PARAM && loom_dtype_is_float(t->dtype) && t->grad)) continue;
        check_param(ctx, pb, gb->nodes[i], lossb, ag[k++], c->fd_step, verbose, cr);
    }

done:
    if (ag)
        for (int i = 0; i < np; i++) free(ag[i]);
    free(ag);
    loom_plan_destroy(pa), loom_plan_destroy(pb);
    loom_graph_destroy(ga), loom_graph_destroy(gb);
}

int main(int argc, char **argv) {
    int only_op = -1;
    bool verbose = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) {
            verbose = true;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            if ((only_op = find_op(argv[++i])) < 0) {
                printf("unknown op '%s'\n", argv[i]);
                return 2;
            }
        } else {
            printf("usage: %s [-o OPNAME] [-v]\n", argv[0]);
            return 2;
        }
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    loom_ctx *ctx;
    loom_backend *be;
    if (!tu_cpu_open(0, &ctx, &be)) return 1;

    bool checked[LOOM_OP_COUNT] = {0};
    printf("gradient check: f64, cpu, |analytic - numeric| <= %g + %g |numeric|\n", ATOL, RTOL);
    for (int f = 0; loom_case_families[f]; f++) {
        for (const loom_op_case *c = loom_case_families[f]; c->name; c++) {
            if (c->flags & TC_NO_GRADCHECK) continue;
            bool ops[LOOM_OP_COUNT] = {0};
            case_result cr;
            check_case(ctx, be, c, only_op, verbose, ops, &cr);
            if (cr.skipped) continue;
            if (cr.err[0]) {
                CHECK(0, "case \"%s\" (%s): %s", c->name, loom_case_family_names[f], cr.err);
                continue;
            }
            for (int op = 0; op < LOOM_OP_COUNT; op++) checked[op] |= ops[op];
            printf("  %-5s %-48s (%d params, %3d elements, max rel err %.1e)\n", cr.mismatches ? "FAIL" : "ok",
                   c->name, cr.params, cr.elements, cr.max_rel);
            CHECK(!cr.mismatches, "case \"%s\" (%s): %d of %d elements mismatch", c->name, loom_case_family_names[f],
                  cr.mismatches, cr.elements);
        }
    }

    printf("ops checked:");
    int nchk = 0;
    for (int op = 0; op < LOOM_OP_COUNT; op++)
        if (checked[op] && (only_op < 0 || op == only_op)) printf(" %s", loom_op_name(op)), nchk++;
    printf(" (%d)\n", nchk);
    for (int op = 0; op < LOOM_OP_COUNT; op++) {
        if (!has_rule(op) || checked[op] || (only_op >= 0 && op != only_op)) continue;
        printf("NOT CHECKED: %s\n", loom_op_name(op));
        tu_failed++;
    }

    tu_cpu_close(ctx, be);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("gradient check took %.2f s\n", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    return tu_summary();
}
