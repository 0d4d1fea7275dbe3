/* train/logs.c — training logs: TensorBoard event files written by hand
 * (see loom/train.h: loom_tb_writer).
 *
 * An event file is a sequence of TFRecords:
 *     u64 length | u32 masked_crc32c(length) | data | u32 masked_crc32c(data)
 * (little-endian; masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8), each
 * holding a serialized tensorflow.Event protobuf:
 *     Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
 *     Summary { repeated Value value = 1; }
 *     Value   { string tag = 1; float simple_value = 2; }
 * The first event carries file_version "brain.Event:2". */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "impl.h"
#include "loom/train.h"

struct loom_tb_writer {
    FILE *f;
    char path[1024];
};

static uint32_t crc32c(const uint8_t *p, size_t n) {
    static uint32_t table[256];
    static bool ready;
    if (!ready) { /* a benign race: every thread computes the same table */
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
            table[i] = c;
        }
        ready = true;
    }
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

static uint32_t masked(const uint8_t *p, size_t n) {
    uint32_t c = crc32c(p, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static size_t put_varint(uint8_t *b, uint64_t v) {
    size_t k = 0;
    while (v >= 0x80) b[k++] = (uint8_t)(v | 0x80), v >>= 7;
    b[k++] = (uint8_t)v;
    return k;
}

static size_t put_le(uint8_t *b, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) b[i] = (uint8_t)(v >> (8 * i));
    return (size_t)bytes;
}

static loom_status record(loom_ctx *ctx, loom_tb_writer *w, const uint8_t *data, size_t n) {
    uint8_t hdr[12];
    put_le(hdr, n, 8);
    put_le(hdr + 8, masked(hdr, 8), 4);
    uint8_t crc[4];
    put_le(crc, masked(data, n), 4);
    if (fwrite(hdr, 1, 12, w->f) != 12 || fwrite(data, 1, n, w->f) != n || fwrite(crc, 1, 4, w->f) != 4 || fflush(w->f))
        return loom__err(ctx, LOOM_ERR_IO, "tensorboard: writing '%s' failed: %s", w->path, strerror(errno));
    return LOOM_OK;
}

/* Event header: wall_time (field 1, fixed64) and step (field 2, varint) */
static size_t event_head(uint8_t *b, int64_t step) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double wt = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    uint64_t bits;
    memcpy(&bits, &wt, 8);
    size_t k = 0;
    b[k++] = 0x09; /* 1:fixed64 */
    k += put_le(b + k, bits, 8);
    b[k++] = 0x10; /* 2:varint */
    k += put_varint(b + k, (uint64_t)step);
    return k;
}

loom_status loom_tb_open(loom_ctx *ctx, const char *dir, loom_tb_writer **out) {
    *out = NULL;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return loom__err(ctx, LOOM_ERR_IO, "tensorboard: cannot create directory '%s': %s", dir, strerror(errno));
    loom_tb_writer *w = calloc(1, sizeof *w);
    if (!w) return loom__err(ctx, LOOM_ERR_OOM, "tensorboard: out of memory");
    char host[64] = "localhost";
    gethostname(host, sizeof host - 1);
    snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%lld.%s.%d.loom", dir, (long long)time(NULL), host, (int)getpid());
    /* a new file, never one that is there (O_EXCL: not a FIFO or device of that name either); appended
     * to record by record, each flushed and checked, so TensorBoard reads it while the run goes */
    int fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 || !(w->f = fdopen(fd, "wb"))) {
        loom_status st = loom__err(ctx, LOOM_ERR_IO, "tensorboard: cannot create '%s': %s", w->path, strerror(errno));
        if (fd >= 0) close(fd);
        free(w);
        return st;
    }
    uint8_t b[64];
    size_t k = event_head(b, 0);
    static const char ver[] = "brain.Event:2";
    b[k++] = 0x1a; /* 3:bytes */
    b[k++] = (uint8_t)(sizeof ver - 1);
    memcpy(b + k, ver, sizeof ver - 1);
    k += sizeof ver - 1;
    loom_status st = record(ctx, w, b, k);
    if (st != LOOM_OK) {
        loom_tb_close(w);
        return st;
    }
    *out = w;
    return LOOM_OK;
}

loom_status loom_tb_scalar(loom_ctx *ctx, loom_tb_writer *w, const char *tag, int64_t step, double value) {
    size_t tl = strlen(tag);
    if (tl > 200) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "tensorboard: tag '%.40s...' is longer than 200 bytes", tag);
    uint8_t val[256], sum[272], ev[320];
    size_t v = 0;
    val[v++] = 0x0a; /* Value.tag */
    v += put_varint(val + v, tl);
    memcpy(val + v, tag, tl);
    v += tl;
    float f = (float)value;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    val[v++] = 0x15; /* Value.simple_value: 2:fixed32 */
    v += put_le(val + v, bits, 4);
    size_t s = 0;
    sum[s++] = 0x0a; /* Summary.value */
    s += put_varint(sum + s, v);
    memcpy(sum + s, val, v);
    s += v;
    size_t k = event_head(ev, step);
    ev[k++] = 0x2a; /* Event.summary: 5:bytes */
    k += put_varint(ev + k, s);
    memcpy(ev + k, sum, s);
    k += s;
    return record(ctx, w, ev, k);
}

const char *loom_tb_path(const loom_tb_writer *w) { return w->path; }

void loom_tb_close(loom_tb_writer *w) {
    if (!w) return;
    if (w->f) fclose(w->f);
    free(w);
}
