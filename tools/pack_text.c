/* tools/pack_text.c — `loom pack-text`: any text files as byte-level tokens
 * (vocab 256: token = byte), in the raw uint16 token-file format that
 * loader/tokens.c reads, with the last --val-fraction of the bytes held out
 * as a validation file beside the output (loom_text_val_path: "x.bin" ->
 * "x.val.bin"). Both files are written to a temporary name and renamed. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"
#include "loom/text.h"

static const char *usage_text =
    "usage: loom pack-text FILES... --out PATH [--val-fraction F]\n"
    "  FILES...              text files, concatenated in order (any bytes: the tokens are the bytes)\n"
    "  --out PATH            the training token file (uint16 little-endian, vocab 256), e.g. data/train.bin\n"
    "  --val-fraction F      the last fraction F of the text, written beside PATH as PATH minus '.bin'\n"
    "                        plus '.val.bin' (data/train.val.bin); 0 = no validation file (default 0.1)\n";

static int bad(const char *msg, const char *v) {
    fprintf(stderr, "loom pack-text: %s%s%s%s\n%s", msg, v ? " '" : "", v ? v : "", v ? "'" : "", usage_text);
    return 2;
}

/* Append the whole of path to *buf (*len bytes, *cap allocated). */
static bool append_file(const char *path, unsigned char **buf, size_t *len, size_t *cap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "loom pack-text: cannot open '%s': %s\n", path, strerror(errno));
        return false;
    }
    bool ok = true;
    for (;;) {
        if (*cap - *len < 65536) {
            size_t nc = *cap ? 2 * *cap : 1 << 20;
            unsigned char *nb = realloc(*buf, nc);
            if (!nb) {
                fprintf(stderr, "loom pack-text: out of memory reading '%s'\n", path);
                ok = false;
                break;
            }
            *buf = nb, *cap = nc;
        }
        size_t got = fread(*buf + *len, 1, *cap - *len, f);
        *len += got;
        if (got == 0) {
            if (ferror(f)) {
                fprintf(stderr, "loom pack-text: reading '%s' failed: %s\n", path, strerror(errno));
                ok = false;
            }
            break;
        }
    }
    fclose(f);
    return ok;
}

/* bytes as uint16 LE tokens into path (via path.tmp). */
static bool write_tokens(const char *path, const unsigned char *b, size_t n) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        fprintf(stderr, "loom pack-text: cannot create '%s': %s\n", tmp, strerror(errno));
        return false;
    }
    unsigned char out[8192];
    bool ok = true;
    for (size_t i = 0; i < n && ok; i += 4096) {
        size_t k = n - i < 4096 ? n - i : 4096;
        for (size_t j = 0; j < k; j++) out[2 * j] = b[i + j], out[2 * j + 1] = 0;
        ok = fwrite(out, 2, k, f) == k;
    }
    ok = (fclose(f) == 0) && ok;
    if (ok && rename(tmp, path) != 0) ok = false;
    if (!ok) {
        fprintf(stderr, "loom pack-text: writing '%s' failed: %s\n", path, strerror(errno));
        remove(tmp);
    }
    return ok;
}

/* The entropy (nats) of the byte distribution of b: the loss of the best
 * unigram model of that text. */
static double unigram_entropy(const unsigned char *b, size_t n) {
    double count[256] = {0}, h = 0;
    for (size_t i = 0; i < n; i++) count[b[i]]++;
    for (int k = 0; k < 256; k++)
        if (count[k] > 0) h -= count[k] / (double)n * log(count[k] / (double)n);
    return h;
}

int loom_cmd_pack_text(int argc, char **argv) {
    const char *out = NULL;
    double frac = 0.1;
    const char **files = calloc((size_t)argc, sizeof *files);
    int nfiles = 0;
    if (!files) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            free(files);
            return 0;
        }
        if (!strcmp(a, "--out") || !strcmp(a, "--val-fraction")) {
            if (i + 1 >= argc) return free(files), bad("a value is needed after", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--out")) {
                out = v;
                continue;
            }
            char *end;
            errno = 0;
            frac = strtod(v, &end);
            if (errno || end == v || *end || !(frac >= 0 && frac < 1))
                return free(files), bad("bad value for --val-fraction (a fraction in [0, 1)):", v);
        } else if (a[0] == '-' && a[1]) {
            return free(files), bad("unknown option", a);
        } else {
            files[nfiles++] = a;
        }
    }
    if (!out) return free(files), bad("--out is required", NULL);
    if (!nfiles) return free(files), bad("no input files given", NULL);
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    for (int i = 0; i < nfiles && !rc; i++)
        if (!append_file(files[i], &buf, &len, &cap)) rc = 1;
    size_t nval = (size_t)ceil(frac * (double)len), ntrain = len - nval;
    char val[4200];
    if (!rc && len == 0) {
        fprintf(stderr, "loom pack-text: the input files hold no text (0 bytes)\n");
        rc = 1;
    } else if (!rc && (ntrain < 2 || (frac > 0 && nval < 2))) {
        fprintf(stderr, "loom pack-text: %zu bytes of text are too few to split %g / %g (each part needs 2 tokens)\n", len,
                1 - frac, frac);
        rc = 1;
    } else if (!rc && !loom_text_val_path(out, val, sizeof val)) {
        fprintf(stderr, "loom pack-text: the path '%s' is too long\n", out);
        rc = 1;
    }
    if (!rc && !write_tokens(out, buf, ntrain)) rc = 1;
    if (!rc && nval && !write_tokens(val, buf + ntrain, nval)) rc = 1;
    if (!rc) {
        printf("%s: %zu tokens (bytes of %d file%s, vocab 256)\n", out, ntrain, nfiles, nfiles == 1 ? "" : "s");
        if (nval)
            printf("%s: %zu tokens (the last %g); its unigram entropy %.4f nats/token\n", val, nval, frac,
                   unigram_entropy(buf + ntrain, nval));
    }
    free(buf);
    free(files);
    return rc;
}
