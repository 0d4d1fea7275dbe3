/* backends/cuda/memory.cu — device buffers (cudaMalloc; never managed
 * memory), reads and writes ordered on the backend's stream (blocking: they
 * return when the copy is done), and pinned host memory for the loader
 * (cudaHostAlloc), so uploads from it are true DMA copies. */
#include "common.cuh"

struct loom__cu_hostmem {
    void *ptr;
    loom__cu_hostmem *next;
};

loom_status loom__cu_buffer_alloc(loom_backend *be, size_t bytes, loom__buffer **out) {
    loom__cu *cu = (loom__cu *)be->impl;
    loom__buffer *b = (loom__buffer *)malloc(sizeof *b);
    if (!b) return loom__err(be->ctx, LOOM_ERR_OOM, "cuda: out of host memory");
    LOOM_CU_CHECK(be->ctx, cudaSetDevice(cu->device));
    cudaError_t e = cudaMalloc(&b->ptr, bytes ? bytes : 256);
    if (e != cudaSuccess) {
        free(b);
        (void)cudaGetLastError();
        size_t fr = 0, tot = 0;
        if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) (void)cudaGetLastError();
        return loom__err(be->ctx, e == cudaErrorMemoryAllocation ? LOOM_ERR_OOM : LOOM_ERR_BACKEND,
                         "cuda: cannot allocate %zu bytes of device memory (%.2f GiB free of %.2f): %s", bytes,
                         (double)fr / (1u << 30), (double)tot / (1u << 30), cudaGetErrorString(e));
    }
    b->bytes = bytes;
    *out = b;
    return LOOM_OK;
}

void loom__cu_buffer_free(loom_backend *be, loom__buffer *b) {
    loom__cu *cu = (loom__cu *)be->impl;
    if (!b) return;
    cudaStreamSynchronize(cu->stream); /* no queued work may still use it */
    cudaFree(b->ptr);
    free(b);
}

loom_status loom__cu_buffer_write(loom_backend *be, loom__buffer *b, size_t off, const void *src, size_t n) {
    loom__cu *cu = (loom__cu *)be->impl;
    LOOM__ASSERT(off + n <= b->bytes);
    if (!n) return LOOM_OK;
    LOOM_CU_CHECK(be->ctx, cudaMemcpyAsync((char *)b->ptr + off, src, n, cudaMemcpyHostToDevice, cu->stream));
    LOOM_CU_CHECK(be->ctx, cudaStreamSynchronize(cu->stream));
    loom__stat_transfer(&be->stats, true, n);
    loom__stat_sync(&be->stats, 1, 1);
    return LOOM_OK;
}

loom_status loom__cu_buffer_read(loom_backend *be, loom__buffer *b, size_t off, void *dst, size_t n) {
    loom__cu *cu = (loom__cu *)be->impl;
    LOOM__ASSERT(off + n <= b->bytes);
    if (!n) return LOOM_OK;
    LOOM_CU_CHECK(be->ctx, cudaMemcpyAsync(dst, (const char *)b->ptr + off, n, cudaMemcpyDeviceToHost, cu->stream));
    LOOM_CU_CHECK(be->ctx, cudaStreamSynchronize(cu->stream));
    loom__stat_transfer(&be->stats, false, n);
    loom__stat_sync(&be->stats, 1, 1);
    return LOOM_OK;
}

loom_status loom__cu_host_alloc(loom_backend *be, size_t bytes, void **out) {
    loom__cu *cu = (loom__cu *)be->impl;
    *out = NULL;
    loom__cu_hostmem *h = (loom__cu_hostmem *)calloc(1, sizeof *h);
    if (!h) return loom__err(be->ctx, LOOM_ERR_OOM, "cuda: out of host memory");
    cudaError_t e = cudaHostAlloc(&h->ptr, bytes ? bytes : 64, cudaHostAllocPortable);
    if (e != cudaSuccess) {
        free(h);
        return loom__cu_fail(be->ctx, e, "cudaHostAlloc", __FILE__, __LINE__);
    }
    h->next = cu->hostmem;
    cu->hostmem = h;
    *out = h->ptr;
    return LOOM_OK;
}

void loom__cu_host_free(loom_backend *be, void *p) {
    loom__cu *cu = (loom__cu *)be->impl;
    if (!p) return;
    for (loom__cu_hostmem **at = &cu->hostmem; *at; at = &(*at)->next) {
        if ((*at)->ptr != p) continue;
        loom__cu_hostmem *h = *at;
        *at = h->next;
        cudaFreeHost(h->ptr);
        free(h);
        return;
    }
    LOOM__ASSERT(0 && "cuda host_free: pointer not from host_alloc");
}

void loom__cu_host_free_all(loom__cu *cu) {
    while (cu->hostmem) {
        loom__cu_hostmem *h = cu->hostmem;
        cu->hostmem = h->next;
        cudaFreeHost(h->ptr);
        free(h);
    }
}
