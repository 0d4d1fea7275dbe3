/* loader/jpeg_huff.c — baseline JPEG's Huffman decoding, faster than
 * libjpeg-turbo's, inside libjpeg-turbo's own decompressor.
 *
 * libjpeg-turbo spends about two thirds of a quality-90 decode in its
 * entropy decoder (perf on the project's 500x375 set, one thread), about 20
 * cycles per coefficient. Here the scan's data is first unstuffed into a
 * buffer (FF 00 -> FF; each restart interval's end recorded), so a refill
 * is one unaligned 8-byte load with no test for 0xFF; one lookup of the
 * next LOOK bits gives a code's whole meaning (bits to drop, code length,
 * value size, run, the value's offset), so a coefficient is decoded and
 * sign-extended with no branch on its kind; two AC symbols per refill.
 * Codes longer than LOOK bits go through the canonical tables. One thread,
 * a whole 500x375 decode: 0.91 -> 0.77 ms (bench/results/
 * 2026-12-07-loader-own-huffman.md has the forms tried).
 *
 * It plugs in through libjpeg's module interface (jpegint.h's
 * jpeg_entropy_decoder: decode_mcu per MCU, NULL = decode and discard, as
 * jpeg_skip_scanlines calls it); the coefficient controller, IDCT,
 * upsampling and colour conversion stay libjpeg-turbo's. Entropy decoding
 * is lossless, so the coefficients, hence the pixels, are those of
 * libjpeg-turbo's decoder; tests/test-jpeg-huff.c compares every pixel on
 * encodings of many kinds and on damaged files.
 *
 * Valid files only: at anything else (a code no table has, a run past the
 * block's end, bits read past the data, data left between the scan's last
 * bits and the next marker, a DC value outside 16 bits, a restart marker
 * out of turn) it gives up through the caller's jmp_buf, and the caller
 * decodes the file again with libjpeg-turbo's decoder, so damaged files get
 * exactly libjpeg-turbo's result and warnings.
 */
#include "jpeg_huff.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static _Atomic int forced = -1;
static _Atomic long taken, given_back;
#ifdef LOOM_JPEG_HUFF
static _Atomic int from_env = -1;
#endif

bool loom__jpeg_huff_enabled(void) {
#ifdef LOOM_JPEG_HUFF
    int f = atomic_load_explicit(&forced, memory_order_relaxed);
    if (f >= 0) return f;
    int v = atomic_load_explicit(&from_env, memory_order_relaxed);
    if (v < 0) { /* every thread computes the same value */
        const char *e = getenv("LOOM_JPEG_HUFF");
        v = !(e && e[0] == '0');
        atomic_store_explicit(&from_env, v, memory_order_relaxed);
    }
    return v;
#else
    return false;
#endif
}

void loom__jpeg_huff_force(int on) { atomic_store_explicit(&forced, on < 0 ? -1 : !!on, memory_order_relaxed); }

void loom__jpeg_huff_counts(long *t, long *g) {
    *t = atomic_load_explicit(&taken, memory_order_relaxed);
    *g = atomic_load_explicit(&given_back, memory_order_relaxed);
}

#ifdef LOOM_JPEG_HUFF
#include <jpegint.h>

enum {
    LOOK = 9,             /* bits looked up at once */
    TAIL = 512,           /* zero bytes after the data: a block reads at most 64 x 27 bits */
};

/* What the next code means: bits to drop (code + value; 0: a code longer
 * than LOOK bits), the code's length, 63 - the value's size, the zeros
 * before the value (128 at the end of the block), 1 - 2^size (the value's
 * offset when its first bit is 0). */
typedef struct jh_ent {
    uint8_t total, len, vshift, run; /* run: 128 at the end of block */
    int16_t bias;
    uint8_t pad_[2];
} jh_ent;

typedef struct jh_table {
    jh_ent fast[1 << LOOK];
    int32_t maxcode[17]; /* largest code of each length; -1: none */
    int32_t valoff[17];  /* symbol index = code + valoff[length] */
    uint8_t val[256];
    bool dc;
} jh_table;

typedef struct jh {
    struct jpeg_entropy_decoder pub; /* first: libjpeg calls through it */
    jmp_buf *bail;
    uint8_t *buf;            /* the scan's data, unstuffed (FF 00 -> FF), TAIL zeros after */
    size_t *seg_end;         /* byte offsets in buf where each restart interval's data ends */
    size_t nseg, seg;        /* segments, the current one */
    const uint8_t *marker;   /* the marker after the scan, in the source */
    const uint8_t *p;        /* next bytes for acc */
    uint64_t acc;            /* bits, the next one at bit 63 */
    int nbits;               /* valid bits in acc */
    int last_dc[MAX_COMPS_IN_SCAN];
    unsigned togo;           /* MCUs before the next restart */
    long mcus_left;
    jh_ent long_code;        /* slow_entry's result */
    const jh_table *dc[D_MAX_BLOCKS_IN_MCU], *ac[D_MAX_BLOCKS_IN_MCU];
    int comp[D_MAX_BLOCKS_IN_MCU];
    jh_table tabs[2][NUM_HUFF_TBLS]; /* [dc, ac][table number] */
    JBLOCK scratch;                  /* decode_mcu(NULL) writes here */
} jh;

/* the entry of a symbol whose code is l bits long */
static jh_ent entry(int sym, int l, bool dc) {
    int run = dc ? 0 : sym >> 4, size = dc ? sym : sym & 15;
    bool eob = !dc && size == 0 && run != 15; /* libjpeg ends the block on any (r, 0) but ZRL */
    if (eob) size = 0, run = 128;             /* ZRL: run 15 and a zero */
    return (jh_ent){(uint8_t)(l + size), (uint8_t)l, (uint8_t)(63 - size), (uint8_t)run, (int16_t)(1 - (1 << size)), {0, 0}};
}

/* The canonical code of htbl (JPEG Annex C) and its fast table; false for a
 * table libjpeg would refuse (too many codes, a code that does not fit its
 * length, a DC symbol over 15) or one no 8-bit file has (a value over 11
 * bits, DC, or 10, AC): the reader's refills count on 27 bits a symbol. */
static bool table_build(const JHUFF_TBL *h, bool dc, jh_table *t) {
    int32_t code = 0;
    int n = 0;
    t->dc = dc;
    for (int l = 1; l <= 16; l++) {
        int c = h->bits[l];
        if (n + c > 256) return false;
        t->valoff[l] = n - code;
        for (int i = 0; i < c; i++, n++, code++) {
            int sym = h->huffval[n];
            if (dc ? sym > 11 : (sym & 15) > 10) return false;
            t->val[n] = (uint8_t)sym;
            if (l > LOOK) continue;
            jh_ent e = entry(sym, l, dc);
            for (int idx = code << (LOOK - l); idx < (code + 1) << (LOOK - l); idx++) t->fast[idx] = e;
        }
        if (code > (1 << l)) return false; /* libjpeg: JERR_BAD_HUFF_TABLE */
        t->maxcode[l] = c ? code - 1 : -1;
        code <<= 1;
    }
    return true;
}

static void giveup(jh *h) {
    atomic_fetch_add_explicit(&given_back, 1, memory_order_relaxed);
    longjmp(*h->bail, 2);
}

/* A code longer than LOOK bits: the canonical decode, as an entry. */
static const jh_ent *slow_entry(jh *h, const jh_table *t, uint64_t acc) {
    uint32_t v = (uint32_t)(acc >> 48);
    for (int l = LOOK + 1; l <= 16; l++) {
        int32_t code = (int32_t)(v >> (16 - l));
        if (code <= t->maxcode[l]) {
            h->long_code = entry(t->val[code + t->valoff[l]], l, t->dc);
            return &h->long_code;
        }
    }
    giveup(h); /* no such code: libjpeg warns and goes on */
    return NULL;
}

static inline uint64_t load_be64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return v;
#else
    return __builtin_bswap64(v);
#endif
}

/* the bits of the current restart interval's data not read yet (below 0:
 * bits past its end were read); p, nbits: the reader's state */
static inline int64_t seg_left(const jh *h, const uint8_t *p, int nbits) {
    return ((int64_t)h->seg_end[h->seg] - (int64_t)(p - h->buf)) * 8 + nbits;
}

/* what is left of the current interval's data is its last byte's padding */
static inline bool padding_left(const jh *h, const uint8_t *p, int nbits) {
    int64_t left = seg_left(h, p, nbits);
    return left >= 0 && left < 8;
}

/* the next restart interval */
static void process_restart(jh *h) {
    if (!padding_left(h, h->p, h->nbits) || h->seg + 1 >= h->nseg) giveup(h);
    h->p = h->buf + h->seg_end[h->seg++];
    h->acc = 0, h->nbits = 0;
    memset(h->last_dc, 0, sizeof h->last_dc);
}

/* at least 56 bits in acc: the next bytes, unaligned, shifted in behind */
#define REFILL()                                                                                                       \
    do {                                                                                                               \
        acc |= load_be64(p) >> nbits;                                                                                  \
        p += (63 - nbits) >> 3;                                                                                        \
        nbits |= 56;                                                                                                   \
    } while (0)

/* the next symbol of table t: e, its entry; the bits dropped; v, its value (x: the bits after its code) */
#define SYMBOL(t)                                                                                                      \
    e = &(t)->fast[acc >> (64 - LOOK)];                                                                                \
    if (__builtin_expect(e->total == 0, 0)) e = slow_entry(h, t, acc);                                               \
    x = acc << e->len;                                                                                                 \
    acc <<= e->total, nbits -= e->total;                                                                               \
    v = (int)((x >> 1) >> e->vshift) + (((int)(x >> 63) - 1) & e->bias)

/* one AC symbol: its zeros and value into the block, or the block's end */
#define AC_SYMBOL()                                                                                                    \
    SYMBOL(t);                                                                                                         \
    k += e->run;                                                                                                       \
    if (k > 63) {                                                                                                      \
        if (k >= 128) break; /* end of block */                                                                      \
        giveup(h);                                                                                                     \
    }                                                                                                                  \
    blk[jpeg_natural_order[k]] = (JCOEF)v; /* libjpeg's zigzag -> block index */                                                                                        \
    if (++k > 63) break

static boolean decode_mcu(j_decompress_ptr ci, JBLOCKROW *blocks) {
    jh *h = (jh *)(void *)ci->entropy;
    if (ci->restart_interval) {
        if (h->togo == 0) process_restart(h), h->togo = ci->restart_interval;
        h->togo--;
    }
    uint64_t acc = h->acc, x;
    int nbits = h->nbits, v;
    const uint8_t *p = h->p;
    const jh_ent *e;
    for (int b = 0; b < ci->blocks_in_MCU; b++) {
        JCOEF *blk = blocks ? blocks[b][0] : h->scratch;
        const jh_table *t = h->dc[b];
        REFILL(); /* 56 bits: a DC symbol (27 at most), or two AC symbols (26 each) */
        SYMBOL(t);
        int dc = h->last_dc[h->comp[b]] + v;
        if (dc < -32768 || dc > 32767) giveup(h);
        h->last_dc[h->comp[b]] = dc;
        blk[0] = (JCOEF)dc;
        t = h->ac[b];
        for (int k = 1;;) {
            REFILL();
            AC_SYMBOL();
            AC_SYMBOL();
        }
        if (seg_left(h, p, nbits) < 0) giveup(h); /* a block reads at most TAIL bytes past its data */
    }
    h->acc = acc, h->nbits = nbits, h->p = p;
    if (--h->mcus_left == 0) { /* the scan's end: only the last byte's padding is left */
        if (!padding_left(h, p, nbits) || h->seg + 1 != h->nseg) giveup(h);
        ci->src->bytes_in_buffer -= (size_t)(h->marker - ci->src->next_input_byte);
        ci->src->next_input_byte = h->marker; /* the marker reader goes on from there */
    }
    return TRUE;
}

static void start_pass(j_decompress_ptr ci) {
    giveup((jh *)(void *)ci->entropy); /* a second scan: not this decoder's */
}

/* The scan's data from src up to the first marker other than the restart
 * markers expected (RST0..7 in turn, when the file has restart intervals),
 * unstuffed into h->buf, each interval's end in h->seg_end. False when the
 * data ends without a marker or a restart marker is out of turn. */
static bool unstuff(j_decompress_ptr ci, jh *h) {
    const uint8_t *p = ci->src->next_input_byte, *end = p + ci->src->bytes_in_buffer;
    size_t n = ci->src->bytes_in_buffer, cap = ci->restart_interval ? n / 2 + 1 : 1;
    if (n > 0x7fffffff - TAIL) return false;
    h->buf = (*ci->mem->alloc_large)((j_common_ptr)ci, JPOOL_IMAGE, n + TAIL);
    h->seg_end = (*ci->mem->alloc_large)((j_common_ptr)ci, JPOOL_IMAGE, cap * sizeof *h->seg_end);
    uint8_t *o = h->buf;
    unsigned rst = 0;
    for (;;) {
        const uint8_t *q = memchr(p, 0xFF, (size_t)(end - p));
        if (!q || end - q < 2) return false;
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        if (q[1] == 0) {
            *o++ = 0xFF, p = q + 2;
        } else if (ci->restart_interval && q[1] >= 0xD0 && q[1] <= 0xD7) {
            if (q[1] != 0xD0 + rst || h->nseg + 1 >= cap) return false;
            rst = (rst + 1) & 7;
            h->seg_end[h->nseg++] = (size_t)(o - h->buf), p = q + 2;
        } else {
            h->seg_end[h->nseg++] = (size_t)(o - h->buf);
            h->marker = q;
            break;
        }
    }
    memset(o, 0, TAIL);
    return true;
}

bool loom__jpeg_huff_install(j_decompress_ptr ci, jmp_buf *bail) {
    if (!loom__jpeg_huff_enabled() || ci->progressive_mode || ci->arith_code || ci->data_precision != 8 ||
        ci->comps_in_scan != ci->num_components || ci->blocks_in_MCU > D_MAX_BLOCKS_IN_MCU || ci->Ss != 0 ||
        ci->Se != 63 || ci->Ah != 0 || ci->Al != 0 || !ci->src || ci->src->bytes_in_buffer == 0 ||
        ci->unread_marker != 0)
        return false;
    jh *h = (jh *)(*ci->mem->alloc_small)((j_common_ptr)ci, JPOOL_IMAGE, sizeof(jh));
    memset(h, 0, sizeof *h);
    bool built[2][NUM_HUFF_TBLS] = {{false}};
    for (int b = 0; b < ci->blocks_in_MCU; b++) {
        int c = ci->MCU_membership[b];
        const jpeg_component_info *cp = ci->cur_comp_info[c];
        int nd = cp->dc_tbl_no, na = cp->ac_tbl_no;
        if (nd < 0 || nd >= NUM_HUFF_TBLS || na < 0 || na >= NUM_HUFF_TBLS || !ci->dc_huff_tbl_ptrs[nd] ||
            !ci->ac_huff_tbl_ptrs[na])
            return false;
        if (!built[0][nd] && !(built[0][nd] = table_build(ci->dc_huff_tbl_ptrs[nd], true, &h->tabs[0][nd]))) return false;
        if (!built[1][na] && !(built[1][na] = table_build(ci->ac_huff_tbl_ptrs[na], false, &h->tabs[1][na]))) return false;
        h->dc[b] = &h->tabs[0][nd], h->ac[b] = &h->tabs[1][na], h->comp[b] = c;
    }
    if (!unstuff(ci, h)) return false;
    h->pub.start_pass = start_pass;
    h->pub.decode_mcu = decode_mcu;
    h->pub.insufficient_data = FALSE;
    h->bail = bail;
    h->p = h->buf;
    h->togo = ci->restart_interval;
    h->mcus_left = (long)ci->MCUs_per_row * (long)ci->MCU_rows_in_scan;
    ci->entropy = &h->pub;
    atomic_fetch_add_explicit(&taken, 1, memory_order_relaxed);
    return true;
}
#endif
