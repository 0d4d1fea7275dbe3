/* examples/neural-texture — a Vulkan application that trains while it renders.
 *
 * Each frame it renders a procedural scene with its own graphics pipeline into
 * an offscreen image, copies the frame into a buffer, builds a batch of pixels
 * from it with its own compute shader straight into loom's input buffers,
 * lets loom take one training step of a coordinate network (Fourier features
 * of the pixel position -> MLP -> colour) on the same device and queue, and
 * draws the network's picture with its own compute shader, which reads the
 * weights straight from loom's parameter buffers. Every --every frames it
 * prints the PSNR of the reconstruction and writes a PNG of
 * target | reconstruction | error. Headless (offscreen) by default; with
 * --window (when built with GLFW) it also shows target | reconstruction in a
 * window each frame (window.c), with the same training loop; closing the
 * window ends the run early.
 *
 * Usage: neural-texture [--frames N] [--size S] [--batch B] [--every K] [--lr X]
 *                       [--out PREFIX] [--validation] [--shaders DIR] [--min-psnr DB]
 *                       [--window]
 * Exit status: 0, or 1 on an error, a validation message (with --validation or
 * LOOM_VULKAN_VALIDATION=1), or a final PSNR below --min-psnr; 77 when there is
 * no usable Vulkan device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"
#include "loom/vulkan.h"
#include "pipes.h"
#include "window.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

#ifndef NT_SHADER_DIR
#define NT_SHADER_DIR "."
#endif

typedef struct opts {
    int frames, size, batch, every;
    double lr, min_psnr;
    const char *out, *shaders;
    bool validation, window;
} opts;

static int parse(int argc, char **argv, opts *o) {
    *o = (opts){.frames = 400, .size = 128, .batch = 4096, .every = 100, .lr = 5e-3, .out = "neural-texture",
                .shaders = NT_SHADER_DIR};
    const char *e = getenv("LOOM_VULKAN_VALIDATION");
    o->validation = e && *e && strcmp(e, "0") != 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--validation") || !strcmp(a, "--window")) {
            *(!strcmp(a, "--window") ? &o->window : &o->validation) = true;
            continue;
        }
        if (!val) return fprintf(stderr, "neural-texture: %s needs a value (or is unknown)\n", a), 1;
        i++;
        if (!strcmp(a, "--out")) o->out = val;
        else if (!strcmp(a, "--shaders")) o->shaders = val;
        else if (!strcmp(a, "--lr") || !strcmp(a, "--min-psnr")) {
            double d = strtod(val, &end);
            if (!*val || *end || !(d >= 0) || d > 1e6) return fprintf(stderr, "neural-texture: %s %s: not a number\n", a, val), 1;
            *(!strcmp(a, "--lr") ? &o->lr : &o->min_psnr) = d;
        } else {
            int *dst = !strcmp(a, "--frames") ? &o->frames : !strcmp(a, "--size") ? &o->size
                     : !strcmp(a, "--batch") ? &o->batch : !strcmp(a, "--every") ? &o->every : NULL;
            long n = strtol(val, &end, 10);
            if (!dst) return fprintf(stderr, "neural-texture: unknown option %s\n", a), 1;
            if (!*val || *end || n < 1 || n > 1 << 20) return fprintf(stderr, "neural-texture: %s %s: not a count\n", a, val), 1;
            *dst = (int)n;
        }
    }
    if (o->size > 4096) return fprintf(stderr, "neural-texture: --size at most 4096\n"), 1;
    return 0;
}

/* The network and its training step, on loom's backend over the application's device. */
typedef struct net {
    loom_ctx *ctx;
    loom_backend *be;
    loom_graph *g;
    loom_tensor *x, *y, *loss, *params[6];
    loom_optimizer *opt;
    loom_plan *plan;
} net;

static loom_status net_build(net *n, vkx *v, int batch) {
    loom_status st = loom_vulkan_backend_create(
        n->ctx,
        &(loom_vulkan_adopt){.instance = v->instance, .physical_device = v->phys, .device = v->device,
                             .queue = v->queue, .queue_family = v->qf, .get_instance_proc_addr = vkGetInstanceProcAddr,
                             .device_create_info = &v->dci},
        &n->be);
    if (st == LOOM_OK) st = loom_graph_create(n->ctx, &(loom_graph_desc){.seed = 1}, &n->g);
    if (st != LOOM_OK) return st;
    loom_graph *g = n->g;
    loom_init kaiming = {LOOM_INIT_KAIMING_UNIFORM, 0, 0};
    const int64_t in = 2 * NT_NFREQ, h = NT_HIDDEN;
    n->x = loom_input(g, "x", LOOM_F32, 2, (int64_t[]){batch, in});
    n->y = loom_input(g, "y", LOOM_F32, 2, (int64_t[]){batch, 3});
    const int64_t shapes[6][2] = {{h, in}, {h, 0}, {h, h}, {h, 0}, {3, h}, {3, 0}};
    const char *names[6] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"};
    for (int i = 0; i < 6; i++)
        n->params[i] = loom_param(g, names[i], LOOM_F32, i % 2 ? 1 : 2, shapes[i], i % 2 ? NULL : &kaiming);
    loom_tensor *t = loom_relu(g, loom_linear(g, n->x, n->params[0], n->params[1]));
    t = loom_relu(g, loom_linear(g, t, n->params[2], n->params[3]));
    t = loom_sigmoid(g, loom_linear(g, t, n->params[4], n->params[5]));
    n->loss = loom_mse(g, t, n->y);
    if ((st = loom_graph_status(g)) != LOOM_OK || (st = loom_backward(g, n->loss)) != LOOM_OK) return st;
    loom_keep(n->loss);
    if ((st = loom_optimizer_create(g, &(loom_optimizer_desc){.kind = LOOM_OPT_ADAM}, &n->opt)) != LOOM_OK) return st;
    return loom_plan_compile(g, n->be, NULL, &n->plan);
}

/* The inputs and the parameters move into the application's buffers (the
 * parameters keep their initial values: read before, written after). */
static loom_status net_bind(net *n, vkx *v, nt_buffers *b) {
    loom_status st = LOOM_OK;
    for (int i = 0; i < 6 && st == LOOM_OK; i++) {
        size_t bytes = (size_t)loom_tensor_numel(n->params[i]) * sizeof(float);
        float *init = malloc(bytes);
        if (!init) return LOOM_ERR_OOM;
        st = loom_plan_read(n->plan, n->params[i], init, bytes);
        if (st == LOOM_OK && vkx_buffer_create(v, bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                                             VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                                             VK_BUFFER_USAGE_TRANSFER_DST_BIT, false, &b->w[i]))
            st = LOOM_ERR_OOM;
        if (st == LOOM_OK) st = loom_vulkan_bind_buffer(n->plan, n->params[i], b->w[i].buf, 0, bytes);
        if (st == LOOM_OK) st = loom_plan_write(n->plan, n->params[i], init, bytes);
        free(init);
    }
    if (st == LOOM_OK) st = loom_vulkan_bind_buffer(n->plan, n->x, b->x.buf, 0, b->x.size);
    if (st == LOOM_OK) st = loom_vulkan_bind_buffer(n->plan, n->y, b->y.buf, 0, b->y.size);
    return st;
}

static void net_free(net *n) {
    loom_plan_destroy(n->plan);
    loom_optimizer_destroy(n->opt);
    loom_graph_destroy(n->g);
    loom_backend_destroy(n->be);
}

static int buffers_create(vkx *v, const opts *o, nt_buffers *b) {
    const VkBufferUsageFlags st = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                             io = st | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    VkDeviceSize px = (VkDeviceSize)o->size * (VkDeviceSize)o->size * 4;
    /* transfer source: the window copies both into its swapchain images */
    if (vkx_buffer_create(v, px, io, true, &b->frame) || vkx_buffer_create(v, px, io, true, &b->recon) ||
        vkx_buffer_create(v, NT_NFREQ * 2 * sizeof(float), st, true, &b->freq) ||
        vkx_buffer_create(v, (VkDeviceSize)o->batch * 2 * NT_NFREQ * sizeof(float), io, false, &b->x) ||
        vkx_buffer_create(v, (VkDeviceSize)o->batch * 3 * sizeof(float), io, false, &b->y))
        return 1;
    /* Gaussian Fourier-feature frequencies (std 6 cycles per image), fixed by a seed */
    float *f = b->freq.map;
    for (int k = 0; k < 2 * NT_NFREQ; k += 2) {
        double u1 = loom_philox_uniform(3, 0, (uint64_t)k) + 1e-12, u2 = loom_philox_uniform(3, 0, (uint64_t)k + 1);
        double r = sqrt(-2 * log(u1)) * 6.0;
        f[k] = (float)(r * cos(6.283185307179586 * u2)), f[k + 1] = (float)(r * sin(6.283185307179586 * u2));
    }
    return 0;
}

/* PSNR of the reconstruction over RGB (dB); with `path`, a PNG of target | reconstruction | |error| x 4. */
static double compare(const nt_buffers *b, int size, const char *path) {
    const uint8_t *t = b->frame.map, *r = b->recon.map;
    double se = 0;
    uint8_t *png = path ? malloc((size_t)size * size * 9) : NULL;
    for (int yy = 0; yy < size; yy++)
        for (int xx = 0; xx < size; xx++)
            for (int c = 0; c < 3; c++) {
                size_t i = ((size_t)yy * size + xx) * 4 + c;
                double d = (double)t[i] - (double)r[i];
                se += d * d;
                if (png) {
                    uint8_t *row = png + (size_t)yy * size * 9;
                    int err = (int)fabs(d) * 4;
                    row[xx * 3 + c] = t[i];
                    row[(size + xx) * 3 + c] = r[i];
                    row[(2 * size + xx) * 3 + c] = (uint8_t)(err > 255 ? 255 : err);
                }
            }
    if (png && !stbi_write_png(path, 3 * size, size, 3, png, 9 * size)) fprintf(stderr, "%s: cannot write\n", path);
    free(png);
    double mse = se / (3.0 * size * size) / (255.0 * 255.0);
    return mse > 0 ? 10 * log10(1 / mse) : 99;
}

static int run(vkx *v, const opts *o, nt_buffers *b, nt_pipes *p, net *n, nt_window *win) {
    double psnr = 0;
    int64_t moved = 0, frames_counted = 0; /* bytes through host memory in the frames without a report */
    int presented = 0;
    for (int frame = 0; frame < o->frames; frame++) {
        bool report = (frame + 1) % o->every == 0 || frame + 1 == o->frames;
        loom_backend_stats_reset(n->be);
        /* the application's work: render, copy, batch (waited for: loom's submit reads what it wrote) */
        if (nt_record_frame(v, p, b, (uint32_t)frame, 0.02f * (float)frame) || vkx_submit_wait(v, p->frame_cb))
            return fprintf(stderr, "frame %d: the application's submit failed\n", frame), 1;
        /* loom's step on the same queue: returns with the step finished */
        if (loom_optimizer_begin_step(n->opt, n->plan, o->lr) != LOOM_OK || loom_plan_run(n->plan) != LOOM_OK)
            return fprintf(stderr, "frame %d: %s\n", frame, loom_last_error(n->ctx)), 1;
        /* the application draws with the weights, straight from loom's buffers */
        if (vkx_submit_wait(v, p->recon_cb)) return fprintf(stderr, "frame %d: reconstruction failed\n", frame), 1;
        loom_backend_stats s;
        loom_backend_stats_get(n->be, &s);
        /* the window shows both pictures, by copies on the device */
        int shown = win ? nt_window_present(win, v, &b->frame, &b->recon, o->size) : 0;
        if (shown == 1) return fprintf(stderr, "frame %d: presenting failed\n", frame), 1;
        if (shown == 2) report = true; /* closed: this frame is the last */
        presented += win && shown == 0;
        /* a frame moves no data and no weights through the host: only the
         * optimizer's small table of this step's LR and bias corrections goes up
         * (the first frame also prepares the plan: its tables go up once) */
        if (!report && frame > 0 && (s.readback_bytes > 64 || s.upload_bytes > 256))
            return fprintf(stderr, "frame %d: loom moved %lld bytes up and %lld down through the host\n", frame,
                           (long long)s.upload_bytes, (long long)s.readback_bytes), 1;
        if (!report && frame > 0) moved += s.upload_bytes + s.readback_bytes, frames_counted++;
        if (report) {
            char path[4096];
            snprintf(path, sizeof path, "%s-%04d.png", o->out, frame + 1);
            float loss = NAN;
            loom_plan_read(n->plan, n->loss, &loss, sizeof loss);
            psnr = compare(b, o->size, path);
            printf("frame %4d  loss %.5f  PSNR %.2f dB  -> %s\n", frame + 1, loss, psnr, path);
            fflush(stdout);
        }
        if (shown == 2) {
            printf("the window was closed after frame %d\n", frame + 1);
            break;
        }
    }
    printf("host transfers by loom: %.1f bytes per frame (no data, no weights)\n",
           frames_counted ? (double)moved / (double)frames_counted : 0.0);
    if (win) printf("window: %d frames presented\n", presented);
    if (psnr < o->min_psnr) return fprintf(stderr, "final PSNR %.2f dB is below --min-psnr %.2f\n", psnr, o->min_psnr), 1;
    return 0;
}

int main(int argc, char **argv) {
    opts o;
    if (parse(argc, argv, &o)) return 1;
    vkx v;
    nt_window *win = NULL;
    const char *const *wext = NULL;
    uint32_t nwext = 0;
    if (o.window && nt_window_init(&wext, &nwext)) return 1;
    int rc = vkx_open_instance(&v, o.validation, wext, nwext);
    /* the window, so big that a small picture is still visible: two squares side by side */
    int scale = o.size < 384 ? (384 + o.size - 1) / o.size : 1;
    if (rc == 0 && o.window && nt_window_open(&win, &v, 2 * o.size * scale, o.size * scale)) rc = 1;
    if (rc == 0) rc = vkx_open_device(&v);
    if (rc == 0 && win && nt_window_swapchain(win, &v)) rc = 1;
    nt_buffers b = {0};
    nt_pipes p = {0};
    net n = {0};
    if (rc == 0 && buffers_create(&v, &o, &b)) rc = fprintf(stderr, "buffer creation failed\n") > 0;
    if (rc == 0 && loom_ctx_create(NULL, &n.ctx) != LOOM_OK) rc = 1;
    if (rc == 0 && (net_build(&n, &v, o.batch) != LOOM_OK || net_bind(&n, &v, &b) != LOOM_OK))
        rc = fprintf(stderr, "loom: %s\n", loom_last_error(n.ctx)) > 0;
    if (rc == 0 && (nt_pipes_create(&v, o.shaders, o.size, o.batch, &b, &p) || nt_record_recon(&v, &p, &b)))
        rc = fprintf(stderr, "pipeline creation failed (shaders from %s)\n", o.shaders) > 0;
    if (rc == 0) {
        printf("device: %s; %dx%d frames, batch %d, %d frames, validation %s%s\n", v.props.deviceName, o.size, o.size,
               o.batch, o.frames, o.validation ? "on" : "off", win ? ", in a window" : "");
        rc = run(&v, &o, &b, &p, &n, win);
    }
    if (v.device) vkDeviceWaitIdle(v.device);
    net_free(&n);
    if (n.ctx) loom_ctx_destroy(n.ctx);
    nt_pipes_destroy(&v, &p);
    vkx_buffer *all[11] = {&b.frame, &b.recon, &b.freq, &b.x, &b.y, &b.w[0], &b.w[1], &b.w[2], &b.w[3], &b.w[4], &b.w[5]};
    for (int i = 0; i < 11 && v.device; i++) vkx_buffer_destroy(&v, all[i]);
    if (o.window) nt_window_close(win, &v);
    vkx_close(&v);
    if (rc == 0 && v.messages) {
        fprintf(stderr, "%d validation message(s)\n", v.messages);
        rc = 1;
    }
    return rc;
}
