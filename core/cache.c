/* core/cache.c — the on-disk caches of the GPU backends (compiled OpenCL
 * programs, Vulkan pipeline caches): where they live, making the folder,
 * reading a cache file whole. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "impl.h"

void loom__cache_dir(const char *env, const char *sub, char *out, size_t n) {
    const char *e = getenv(env), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    if (e && !strcmp(e, "off"))
        snprintf(out, n, "%s", "");
    else if (e && *e)
        snprintf(out, n, "%s", e);
    else if (x && *x)
        snprintf(out, n, "%s/loom/%s", x, sub);
    else if (h && *h)
        snprintf(out, n, "%s/.cache/loom/%s", h, sub);
    else
        snprintf(out, n, "%s", "");
}

bool loom__mkdirs(const char *dir) {
    char p[512];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) return false;
        *s = '/';
    }
    return mkdir(p, 0755) == 0 || errno == EEXIST;
}

unsigned char *loom__read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long len = ftell(f);
        if (len > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len))) {
            if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
                free(buf);
                buf = NULL;
            } else {
                *n = (size_t)len;
            }
        }
    }
    fclose(f);
    return buf;
}
