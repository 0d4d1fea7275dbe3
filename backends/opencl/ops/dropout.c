/* backends/opencl/ops/dropout.c — host side of dropout (kernels/dropout.cl):
 * the Philox counter's high bits follow the plan step, so they are set
 * before each run (before_run). */
#include <math.h>

#include "../opencl.h"

#define ARG_CTR_HI 7 /* index of ctr_hi in the kernel's arguments */

static loom_status set_step(loom__cl *cl, const loom_plan *p, loom__cl_node *n) {
    cl_ulong hi = (p->step & ((1ull << 24) - 1)) << 40;
    LOOM_CL_CHECK(cl->ctx, clSetKernelArg(n->kernel[0], ARG_CTR_HI, sizeof hi, &hi));
    return LOOM_OK;
}

loom_status loom__cl_dropout(loom__cl_op *o) {
    const loom_tensor *t = o->t;
    double p = t->f[LOOM_F_DROP_P];
    int64_t n = loom_tensor_numel(t);
    cl_kernel k;
    /* CPU devices: 8 blocks per item in explicit uint8 lanes (PoCL on an AMD EPYC, Zen 3: the cnn's
     * two dropouts, 64 x 128 each, 0.27-0.33 -> 0.041-0.046 ms per step); GPUs: one block per item;
     * LOOM_OPENCL_DROPOUT_V8=0|1 forces either (checked when the backend was made) */
    int e = loom__env_switch("LOOM_OPENCL_DROPOUT_V8");
    const bool v8 = e >= 0 ? e == 1 : (o->cl->type & CL_DEVICE_TYPE_CPU) != 0;
    loom_status st = loom__cl_kernel(o, t->dtype, v8 ? "dropout8" : "dropout", &k);
    if (st != LOOM_OK) return st;
    loom__cl_args a = loom__cl_args_begin(o, k);
    loom__cl_arg_t(&a, t->src[0]), loom__cl_arg_t(&a, t);
    loom__cl_arg_i64(&a, n), loom__cl_arg_u64(&a, o->plan->g->seed),
        loom__cl_arg_u64(&a, (uint64_t)t->p[LOOM_P_DROP_STREAM]);
    LOOM__ASSERT(a.i == ARG_CTR_HI);
    loom__cl_arg_u64(&a, 0); /* ctr_hi: set_step */
    loom__cl_arg_u32(&a, (uint32_t)ceil(p * 16777216.0)), loom__cl_arg_f32(&a, (float)(1.0 / (1.0 - p)));
    if ((st = loom__cl_args_end(&a)) != LOOM_OK) return st;
    o->node->before_run = set_step;
    return loom__cl_launch_1d(o, k, v8 ? (n + 31) / 32 : (n + 3) / 4);
}
