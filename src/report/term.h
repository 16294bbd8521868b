// SPDX-License-Identifier: MIT
/*
 * term.h - text for a terminal: what a character shows as (control bytes
 * and invalid UTF-8 as '?'), how many columns a string takes, and lines
 * wrapped at a width.  Names and paths come from untrusted traces, so every
 * string the table prints passes through here.
 */
#ifndef RP_REPORT_TERM_H
#define RP_REPORT_TERM_H

#include <stddef.h>
#include <stdio.h>

/*
 * Length of the next character to show at s (s[0] != 0), and in *ok whether
 * it may go to a terminal as is: printable ASCII or a valid, non-C1 UTF-8
 * sequence.  Anything else is one byte to show as '?'.  Cannot fail.
 */
size_t rp_term_next(const unsigned char *s, int *ok);

/* Columns str takes on a terminal (one per character shown).  Cannot fail. */
size_t rp_term_width(const char *str);

/*
 * Appends at most max_cols characters of str, made safe for a terminal, to
 * the NUL-terminated buffer dst of size dstsz; stops early (never splitting
 * a character) when dst is full.  Returns the columns appended.
 */
size_t rp_term_cat(char *dst, size_t dstsz, const char *str, size_t max_cols);

/*
 * Appends the last max_cols characters of str (all when it is shorter),
 * after "..." when some were left out.  Returns the columns appended.
 */
size_t rp_term_cat_tail(char *dst, size_t dstsz, const char *str, size_t max_cols);

/* Columns a line of len bytes takes, ANSI colour sequences taking none. */
size_t rp_term_line_cols(const char *s, size_t len);

/*
 * Writes the line s (len bytes, no newline) to out wrapped at lw columns:
 * each piece ends at the last space that fits (at lw columns when there is
 * none), and continuation lines are indented by two spaces.  Errors are
 * left for ferror().
 */
void rp_term_put_wrapped(FILE *out, const char *s, size_t len, size_t lw);

/* A stream whose whole lines reach out wrapped at lw columns, one line
 * held at a time (rp_term_wrap_open). */
struct rp_term_wrap {
    FILE *out;
    size_t lw;
    char *line; /* the line so far, len bytes of cap */
    size_t len, cap;
    int nomem; /* the line could not grow */
};

/*
 * Opens a stream writing through w (w->out and w->lw set, the rest zero).
 * Returns it, or NULL when it cannot be made.  rp_term_wrap_close closes
 * it: returns 0, or -1 when a line could not be held (memory) or the
 * stream failed to close; a last line without its newline is written
 * then.  Either way w's memory is freed.
 */
FILE *rp_term_wrap_open(struct rp_term_wrap *w);
int rp_term_wrap_close(FILE *f, struct rp_term_wrap *w);

#endif
