// SPDX-License-Identifier: MIT
/*
 * corpus_main.c - replays fuzz inputs through LLVMFuzzerTestOneInput without
 * libFuzzer, so that the committed corpus (seeds and every input that once
 * crashed) runs as a regression test in every build, including the
 * sanitizer builds of CI, without clang.
 *
 * usage: fuzz_corpus FILE|DIR...   exits 0 when every input was replayed
 * (a crash is a signal or a sanitizer report), 1 if a file cannot be read.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Replays one file.  Returns 0, or -1 if it cannot be read. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    int bad = ferror(f) || !buf;
    fclose(f);
    if (!bad)
        LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    if (bad)
        fprintf(stderr, "%s: cannot read\n", path);
    return bad ? -1 : 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays every regular file of dir, in name order.  Returns the count or -1. */
static int run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0;
    int rc = 0;
    if (!d) {
        perror(dir);
        return -1;
    }
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char **nn = realloc(names, (n + 1) * sizeof(*names));
        if (!nn) {
            rc = -1;
            break;
        }
        names = nn;
        size_t l = strlen(dir) + strlen(e->d_name) + 2;
        if (!(names[n] = malloc(l))) {
            rc = -1;
            break;
        }
        snprintf(names[n++], l, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), cmp);
    for (size_t i = 0; i < n; i++) {
        if (rc >= 0 && run_file(names[i]) < 0)
            rc = -1;
        free(names[i]);
    }
    free(names);
    return rc < 0 ? -1 : (int)n;
}

int main(int argc, char **argv)
{
    int total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int n = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? run_dir(argv[i])
                                                               : run_file(argv[i]) + 1;
        if (n < 0)
            return 1;
        total += n;
    }
    printf("fuzz_corpus: %d inputs replayed without a crash\n", total);
    return total > 0 ? 0 : 1;
}
