// SPDX-License-Identifier: MIT
/*
 * names.h - shorter forms of a procedure's name that keep the part that
 * tells it apart (a C++ name loses its return type, then its parameters,
 * then its namespaces, then its template arguments; never its end), and
 * the short names a user may type for it (`sum_dots` for
 * `int geo::detail::sum_dots<int>(int const*, unsigned long)`).
 */
#ifndef RP_REPORT_NAMES_H
#define RP_REPORT_NAMES_H

#include <stddef.h>

/* Levels of rp_name_form, longest first. */
enum {
    RP_NAME_FULL,      /* as named */
    RP_NAME_NORET,     /* without the return type */
    RP_NAME_NOPARAMS,  /* parameters shown as "(...)" */
    RP_NAME_NOSCOPE,   /* without namespaces and classes */
    RP_NAME_NOTEMPLATE /* template arguments shown as "<...>" */
};
#define RP_NAME_LEVELS 5

/*
 * Writes form `level` of name into out (outsz bytes, always terminated when
 * outsz > 0; a longer form is cut).  A name that does not parse as a C++
 * one (C names, unbalanced brackets) is its own form at every level.
 * Returns out.  Cannot fail.
 */
char *rp_name_form(const char *name, int level, char *out, size_t outsz);

/*
 * Whether query names name: equal to it, to it without its return type,
 * to its qualified name with or without parameters or template arguments,
 * or to a "::"-suffix of those (`detail::sum_dots`, `sum_dots<int>`,
 * `sum_dots`).  A query with `*`, `?` or `[` is a glob (fnmatch) matched
 * against the whole name and those forms (`parse_*`, `*::sum_*`).  Returns
 * 2 for equal to (or a glob of) the whole name, 1 for a short match, 0 for
 * none.  Cannot fail.
 */
int rp_name_match(const char *name, const char *query);

#endif /* RP_REPORT_NAMES_H */
