/* tests/fuzz/fuzz_replay.c — a fuzz target as a plain program: every file
 * of the directories (or the files) named on the command line is handed to
 * LLVMFuzzerTestOneInput once, in sorted order. Built with the ordinary
 * compiler and run by ctest over the committed corpus (tests/fuzz/corpus),
 * so every input that once crashed stays a regression test. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
        return 1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *b = malloc(cap);
    for (size_t r; b && (r = fread(b + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    fclose(f);
    if (!b) return 1;
    LLVMFuzzerTestOneInput(b, n);
    free(b);
    return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
    int inputs = 0, bad = 0;
    for (int k = 1; k < argc; k++) {
        struct stat sb;
        if (stat(argv[k], &sb) != 0) {
            fprintf(stderr, "fuzz_replay: %s: no such file or directory\n", argv[k]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            bad += run_file(argv[k]), inputs++;
            continue;
        }
        DIR *d = opendir(argv[k]);
        char **names = NULL;
        size_t n = 0;
        for (struct dirent *e; d && (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            char **nn = realloc(names, (n + 1) * sizeof *names);
            if (!nn) return 1;
            names = nn;
            names[n++] = strdup(e->d_name);
        }
        if (d) closedir(d);
        if (n > 1) qsort(names, n, sizeof *names, cmp);
        for (size_t i = 0; i < n; i++) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[k], names[i]);
            bad += run_file(p), inputs++;
            free(names[i]);
        }
        free(names);
    }
    printf("fuzz_replay: %d inputs, %d unreadable\n", inputs, bad);
    return inputs == 0 || bad ? 1 : 0;
}
