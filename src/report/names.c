// SPDX-License-Identifier: MIT
/*
 * names.c - shorter forms of C++ names and the short names that find them
 * (names.h).  Demangled names are parsed with a bracket count only: the
 * return type ends at the last space outside brackets before the
 * parameters, the parameters are the first "(...)" outside brackets that is
 * not followed by "::" (so "(anonymous namespace)::f" keeps its scope), the
 * scope ends at the last "::" outside brackets, the template arguments start
 * at the first '<' outside brackets of the last component.
 */
#include "report/names.h"

#include <stdio.h>
#include <fnmatch.h>
#include <string.h>

/* Where the parts of a name lie; all offsets into the name. */
struct parts {
    size_t begin;  /* after the return type */
    size_t params; /* the parameters' '(' or the end */
    size_t scope;  /* the last component's start (after "::"), >= begin */
    size_t tmpl;   /* its '<' or params */
};

/* The offset of the bracket closing the one at s[i], or 0 when unbalanced. */
static size_t match_close(const char *s, size_t i)
{
    int depth = 0;
    for (size_t k = i; s[k]; k++) {
        if (s[k] == '(' || s[k] == '<' || s[k] == '[')
            depth++;
        else if (s[k] == ')' || s[k] == '>' || s[k] == ']')
            if (--depth == 0)
                return k;
    }
    return 0;
}

/* Splits s; returns 0 when it does not parse (then treat it as a C name). */
static int split(const char *s, struct parts *pt)
{
    size_t len = strlen(s), lastsp = 0, has_sp = 0;

    memset(pt, 0, sizeof *pt);
    pt->params = len;
    if (!strchr(s, '(') && !strstr(s, "::"))
        return 0; /* no parameters, no scope: a C name ("nanosleep [wait]", "<lock>") */
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '(' || c == '<') {
            if (c == '<' && i >= 8 && !strncmp(s + i - 8, "operator", 8))
                return 0; /* operator<, operator<<: not worth the parse */
            size_t k = match_close(s, i);
            if (!k)
                return 0;
            if (c == '(' && strncmp(s + k + 1, "::", 2) != 0 &&
                !(i >= 8 && !strncmp(s + i - 8, "operator", 8))) {
                pt->params = i;
                break;
            }
            i = k;
        } else if (c == ' ') {
            lastsp = i;
            has_sp = 1;
        }
    }
    pt->begin = has_sp ? lastsp + 1 : 0;
    if (pt->begin >= pt->params)
        pt->begin = 0;
    pt->scope = pt->begin;
    pt->tmpl = pt->params;
    for (size_t i = pt->begin; i < pt->params; i++) {
        if (s[i] == '(' || s[i] == '<') {
            size_t k = match_close(s, i);
            if (!k || k > pt->params)
                return 0;
            i = k;
        } else if (s[i] == ':' && s[i + 1] == ':') {
            pt->scope = i + 2;
            i++;
        }
    }
    for (size_t i = pt->scope; i < pt->params; i++)
        if (s[i] == '<') {
            pt->tmpl = i;
            break;
        }
    return 1;
}

char *rp_name_form(const char *name, int level, char *out, size_t outsz)
{
    struct parts pt;
    size_t len = strlen(name);

    if (!outsz)
        return out;
    if (level <= RP_NAME_FULL || !split(name, &pt)) {
        snprintf(out, outsz, "%s", name);
        return out;
    }
    size_t from = level >= RP_NAME_NOSCOPE ? pt.scope : pt.begin;
    size_t upto = level >= RP_NAME_NOTEMPLATE ? pt.tmpl : pt.params;
    int had_params = pt.params < len;
    int n = snprintf(out, outsz, "%.*s", (int)(upto - from), name + from);
    if (n < 0 || (size_t)n >= outsz)
        return out;
    if (level >= RP_NAME_NOTEMPLATE && pt.tmpl < pt.params)
        strncat(out, "<...>", outsz - strlen(out) - 1);
    if (!had_params)
        return out;
    if (level >= RP_NAME_NOPARAMS) {
        /* "()" stays "()": nothing is hidden */
        int empty = name[pt.params + 1] == ')';
        strncat(out, empty ? "()" : "(...)", outsz - strlen(out) - 1);
        size_t close = match_close(name, pt.params);
        if (close && name[close + 1]) /* " const", " [clone .isra.0]" */
            strncat(out, name + close + 1, outsz - strlen(out) - 1);
    } else {
        strncat(out, name + pt.params, outsz - strlen(out) - 1);
    }
    return out;
}

/* Whether q equals s or a "::"-suffix of s (s of length n). */
static int ends_with(const char *s, size_t n, const char *q)
{
    size_t qn = strlen(q);
    if (qn > n)
        return 0;
    if (qn == n)
        return !strncmp(s, q, n);
    return !strncmp(s + n - qn, q, qn) && n - qn >= 2 && s[n - qn - 1] == ':' &&
           s[n - qn - 2] == ':';
}

/* Whether s[0..n) matches the glob pattern q (fnmatch on a copy). */
static int glob_n(const char *q, const char *s, size_t n)
{
    char buf[1024];
    if (n >= sizeof buf)
        return 0;
    memcpy(buf, s, n);
    buf[n] = 0;
    return fnmatch(q, buf, 0) == 0;
}

/* rp_name_match for a glob (a query with * ? or [): the whole name, then
 * (a C++ one) without its return type, its qualified name with and without
 * template arguments, and its last component with and without them. */
static int glob_match(const char *name, const char *query)
{
    struct parts pt;
    if (fnmatch(query, name, 0) == 0)
        return 2;
    if (!split(name, &pt))
        return 0;
    const char *b = name + pt.begin;
    return glob_n(query, b, strlen(b)) || glob_n(query, b, pt.params - pt.begin) ||
           glob_n(query, b, pt.tmpl - pt.begin) ||
           glob_n(query, name + pt.scope, pt.params - pt.scope) ||
           glob_n(query, name + pt.scope, pt.tmpl - pt.scope);
}

int rp_name_match(const char *name, const char *query)
{
    struct parts pt;

    if (!strcmp(name, query))
        return 2;
    if (strpbrk(query, "*?["))
        return glob_match(name, query);
    if (!*query || !split(name, &pt))
        return 0;
    /* without the return type, whole */
    if (!strcmp(name + pt.begin, query))
        return 1;
    /* the qualified name with its template arguments, then without */
    if (ends_with(name + pt.begin, pt.params - pt.begin, query))
        return 1;
    if (pt.tmpl < pt.params && ends_with(name + pt.begin, pt.tmpl - pt.begin, query))
        return 1;
    return 0;
}
