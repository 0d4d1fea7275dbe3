/* backends/opencl/memory.c — device buffers (one cl_mem each), reads and
 * writes on the in-order queue, and pinned host memory for the loader
 * (CL_MEM_ALLOC_HOST_PTR buffers kept mapped while allocated).
 *
 * Reads block. Writes up to WRITE_STAGE_MAX bytes do not: the data is copied
 * into the backend's write staging (host memory) and the copy to the device
 * is enqueued; it runs with the next work on the in-order queue, so a step's
 * input writes travel with the plan's run instead of each being a round trip.
 * The staging is reused after the next wait on the queue (a clFinish or a
 * blocking read: every earlier command is done by then,
 * loom__cl_writes_done); when it is full, one clFinish makes room. Larger
 * writes block, as before. */
#include "opencl.h"

struct loom__cl_hostmem {
    cl_mem mem;
    void *ptr;
    loom__cl_hostmem *next;
};

loom_status loom__cl_buffer_alloc(loom_backend *be, size_t bytes, loom__buffer **out) {
    loom__cl *cl = be->impl;
    loom__buffer *b = malloc(sizeof *b);
    if (!b) return loom__err(be->ctx, LOOM_ERR_OOM, "opencl: out of host memory");
    if (bytes > cl->max_alloc_bytes) {
        free(b);
        return loom__err(be->ctx, LOOM_ERR_OOM, "opencl: a buffer of %zu bytes exceeds the device's largest allocation (%llu bytes)",
                         bytes, (unsigned long long)cl->max_alloc_bytes);
    }
    cl_int err;
    b->mem = clCreateBuffer(cl->context, CL_MEM_READ_WRITE, bytes ? bytes : 64, NULL, &err);
    if (err != CL_SUCCESS) {
        free(b);
        loom__cl_fail(be->ctx, err, "clCreateBuffer", __FILE__, __LINE__);
        return loom__err(be->ctx, LOOM_ERR_OOM, "opencl: cannot allocate %zu bytes of device memory: %s", bytes,
                         loom__cl_errstr(err));
    }
    b->bytes = bytes;
    *out = b;
    return LOOM_OK;
}

void loom__cl_buffer_free(loom_backend *be, loom__buffer *b) {
    (void)be;
    if (!b) return;
    clReleaseMemObject(b->mem);
    free(b);
}

#define WRITE_STAGE_MAX ((size_t)16 << 20)

/* n bytes of write staging (64-byte aligned runs), NULL when out of memory */
static unsigned char *stage(loom__cl *cl, size_t n) {
    size_t need = (n + 63) & ~(size_t)63;
    if (cl->wstage_used + need > cl->wstage_cap) {
        if (cl->wstage_used) { /* writes in flight read the staging: let them finish */
            if (clFinish(cl->queue) != CL_SUCCESS) return NULL;
            loom__stat_sync(cl->stats, 1, 1);
            loom__cl_writes_done(cl);
        }
        if (need > cl->wstage_cap) {
            size_t cap = cl->wstage_cap * 2 > need ? cl->wstage_cap * 2 : need;
            if (cap < ((size_t)1 << 20)) cap = (size_t)1 << 20;
            unsigned char *p = realloc(cl->wstage, cap);
            if (!p) return NULL;
            cl->wstage = p, cl->wstage_cap = cap;
        }
    }
    unsigned char *p = cl->wstage + cl->wstage_used;
    cl->wstage_used += need;
    return p;
}

loom_status loom__cl_buffer_write(loom_backend *be, loom__buffer *b, size_t off, const void *src, size_t n) {
    loom__cl *cl = be->impl;
    LOOM__ASSERT(off + n <= b->bytes);
    if (!n) return LOOM_OK;
    loom__stat_transfer(cl->stats, true, n);
    unsigned char *s = n <= WRITE_STAGE_MAX ? stage(cl, n) : NULL;
    if (!s) { /* large, or no staging: a blocking write */
        LOOM_CL_CHECK(be->ctx, clEnqueueWriteBuffer(cl->queue, b->mem, CL_TRUE, off, n, src, 0, NULL, NULL));
        loom__stat_sync(cl->stats, 1, 1);
        return LOOM_OK;
    }
    memcpy(s, src, n);
    LOOM_CL_CHECK(be->ctx, clEnqueueWriteBuffer(cl->queue, b->mem, CL_FALSE, off, n, s, 0, NULL, NULL));
    return LOOM_OK;
}

loom_status loom__cl_buffer_read(loom_backend *be, loom__buffer *b, size_t off, void *dst, size_t n) {
    loom__cl *cl = be->impl;
    LOOM__ASSERT(off + n <= b->bytes);
    if (!n) return LOOM_OK;
    LOOM_CL_CHECK(be->ctx, clEnqueueReadBuffer(cl->queue, b->mem, CL_TRUE, off, n, dst, 0, NULL, NULL));
    loom__stat_transfer(cl->stats, false, n);
    loom__stat_sync(cl->stats, 1, 1); /* blocking */
    loom__cl_writes_done(cl);
    return LOOM_OK;
}

loom_status loom__cl_host_alloc(loom_backend *be, size_t bytes, void **out) {
    loom__cl *cl = be->impl;
    *out = NULL;
    loom__cl_hostmem *h = calloc(1, sizeof *h);
    if (!h) return loom__err(be->ctx, LOOM_ERR_OOM, "opencl: out of host memory");
    cl_int err;
    h->mem = clCreateBuffer(cl->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes ? bytes : 64, NULL, &err);
    if (err != CL_SUCCESS) {
        free(h);
        return loom__cl_fail(be->ctx, err, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)", __FILE__, __LINE__);
    }
    h->ptr = clEnqueueMapBuffer(cl->queue, h->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes ? bytes : 64, 0, NULL,
                                NULL, &err);
    if (err != CL_SUCCESS) {
        clReleaseMemObject(h->mem);
        free(h);
        return loom__cl_fail(be->ctx, err, "clEnqueueMapBuffer", __FILE__, __LINE__);
    }
    h->next = cl->hostmem;
    cl->hostmem = h;
    *out = h->ptr;
    return LOOM_OK;
}

static void release(loom__cl *cl, loom__cl_hostmem *h) {
    cl_event ev = NULL;
    if (clEnqueueUnmapMemObject(cl->queue, h->mem, h->ptr, 0, NULL, &ev) == CL_SUCCESS) {
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
    }
    clReleaseMemObject(h->mem);
    free(h);
}

void loom__cl_host_free(loom_backend *be, void *p) {
    loom__cl *cl = be->impl;
    if (!p) return;
    for (loom__cl_hostmem **at = &cl->hostmem; *at; at = &(*at)->next) {
        if ((*at)->ptr != p) continue;
        loom__cl_hostmem *h = *at;
        *at = h->next;
        release(cl, h);
        return;
    }
    LOOM__ASSERT(0 && "opencl host_free: pointer not from host_alloc");
}

void loom__cl_host_free_all(loom__cl *cl) {
    while (cl->hostmem) {
        loom__cl_hostmem *h = cl->hostmem;
        cl->hostmem = h->next;
        release(cl, h);
    }
}
