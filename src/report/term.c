// SPDX-License-Identifier: MIT
/*
 * term.c - text for a terminal (term.h): characters made safe, widths in
 * columns, lines wrapped at a width.  A character is one column: the
 * table's names are code identifiers and paths, and a wide-character
 * table would be a dependency for little.
 */
#define _GNU_SOURCE /* fopencookie */
#include "report/term.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* See term.h. */
size_t rp_term_next(const unsigned char *s, int *ok)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t need;

    *ok = 0;
    if (c < 0x80) {
        *ok = c >= 0x20 && c != 0x7f;
        return 1;
    }
    if (c < 0xC2 || c >= 0xF5)
        return 1;
    if (c < 0xE0) {
        need = 1;
        if (c == 0xC2)
            lo = 0xA0; /* U+0080..U+009F are C1 controls */
    } else if (c < 0xF0) {
        need = 2;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else {
        need = 3;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    }
    for (size_t k = 1; k <= need; k++) {
        if (s[k] < lo || s[k] > hi)
            return 1;
        lo = 0x80;
        hi = 0xBF;
    }
    *ok = 1;
    return need + 1;
}

/* See term.h. */
size_t rp_term_width(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t w = 0;
    int ok;

    while (*s) {
        s += rp_term_next(s, &ok);
        w++;
    }
    return w;
}

/* See term.h. */
size_t rp_term_cat(char *dst, size_t dstsz, const char *str, size_t max_cols)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t len = strlen(dst), w = 0;
    int ok;

    while (*s && w < max_cols) {
        size_t k = rp_term_next(s, &ok);
        size_t put = ok ? k : 1;
        if (len + put + 1 > dstsz)
            break;
        if (ok)
            memcpy(dst + len, s, k);
        else
            dst[len] = '?';
        len += put;
        s += k;
        w++;
    }
    dst[len] = '\0';
    return w;
}

/* See term.h. */
size_t rp_term_cat_tail(char *dst, size_t dstsz, const char *str, size_t max_cols)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t w = rp_term_width(str);
    int ok;

    if (w <= max_cols)
        return rp_term_cat(dst, dstsz, str, SIZE_MAX);
    if (max_cols <= 3)
        return rp_term_cat(dst, dstsz, "...", max_cols);
    for (size_t skip = w - (max_cols - 3); skip; skip--)
        s += rp_term_next(s, &ok);
    return rp_term_cat(dst, dstsz, "...", 3) + rp_term_cat(dst, dstsz, (const char *)s, SIZE_MAX);
}

/* See term.h. */
size_t rp_term_line_cols(const char *s, size_t len)
{
    size_t w = 0, i = 0;
    int ok;

    while (i < len) {
        if (s[i] == '\033') {
            while (i < len && s[i] != 'm')
                i++;
            i++;
            continue;
        }
        i += rp_term_next((const unsigned char *)s + i, &ok);
        w++;
    }
    return w;
}

/* See term.h. */
void rp_term_put_wrapped(FILE *out, const char *s, size_t len, size_t lw)
{
    size_t indent = 0;
    int ok;

    while (len && rp_term_line_cols(s, len) + indent > lw) {
        size_t i = 0, w = indent, cut = 0;
        while (i < len && w < lw) {
            if (s[i] == '\033') {
                while (i < len && s[i] != 'm')
                    i++;
                i++;
                continue;
            }
            if (s[i] == ' ' && w > indent)
                cut = i;
            i += rp_term_next((const unsigned char *)s + i, &ok);
            w++;
        }
        if (i < len && s[i] == ' ')
            cut = i;
        if (!cut)
            cut = i;
        size_t show = cut;
        while (show > 1 && s[show - 1] == ' ')
            show--;
        fprintf(out, "%*s%.*s\n", (int)indent, "", (int)show, s);
        while (cut < len && s[cut] == ' ')
            cut++;
        s += cut;
        len -= cut;
        indent = 2;
    }
    if (len || !indent)
        fprintf(out, "%*s%.*s\n", (int)indent, "", (int)len, s);
}

/* fopencookie's write: wraps and writes each line completed by buf.
 * Returns size, or 0 (an error) when the line cannot grow (w->nomem). */
static ssize_t wrap_write(void *cookie, const char *buf, size_t size)
{
    struct rp_term_wrap *w = cookie;
    for (size_t i = 0; i < size;) {
        const char *nl = memchr(buf + i, '\n', size - i);
        size_t n = nl ? (size_t)(nl - (buf + i)) : size - i;
        if (nl && !w->len) { /* a whole line in buf: no copy */
            rp_term_put_wrapped(w->out, buf + i, n, w->lw);
            i += n + 1;
            continue;
        }
        if (w->len + n > w->cap) {
            size_t cap = w->cap ? w->cap : 256;
            while (cap < w->len + n)
                cap *= 2;
            char *l = realloc(w->line, cap);
            if (!l) {
                w->nomem = 1;
                return 0;
            }
            w->line = l;
            w->cap = cap;
        }
        memcpy(w->line + w->len, buf + i, n);
        w->len += n;
        i += n;
        if (nl) {
            rp_term_put_wrapped(w->out, w->line, w->len, w->lw);
            w->len = 0;
            i++;
        }
    }
    return (ssize_t)size;
}

FILE *rp_term_wrap_open(struct rp_term_wrap *w)
{
    return fopencookie(w, "w", (cookie_io_functions_t){.write = wrap_write});
}

int rp_term_wrap_close(FILE *f, struct rp_term_wrap *w)
{
    int rc = (fclose(f) != 0 || w->nomem) ? -1 : 0;

    if (rc == 0 && w->len) /* a last line without its newline */
        rp_term_put_wrapped(w->out, w->line, w->len, w->lw);
    free(w->line);
    w->line = NULL;
    return rc;
}
