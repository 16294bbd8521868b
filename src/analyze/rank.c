/*
 * rank.c - standing probability of DESIGN §6.
 *
 * The chain: from node i the walk calls callee j with probability
 * Q_ij = w_ij / T_i, or finishes and restarts at ROOT with probability
 * Q_i,ROOT = stop_i / T_i (plus any explicit edges into ROOT), where
 * T_i = stop_i + sum_k w_ik.  A row with T_i == 0, and ROOT's row when it has
 * no out-weight, restarts at ROOT.  With the teleport,
 *
 *     P = (1 - alpha) Q + (alpha / N) 1 1^T,     pi = pi P,  sum pi = 1.
 *
 * Solver: Gauss-Seidel sweeps on the stationary equations, in an order that
 * follows the calls, renormalised after each sweep.  For node j,
 *
 *     pi_j (1 - (1-alpha) Q_jj) = (1-alpha) sum_{i != j} pi_i Q_ij + alpha/N
 *
 * which is pi = pi P with sum pi = 1 substituted in the teleport term.  Plain
 * power iteration converges like ((1-alpha) |lambda_2(Q)|)^k, and a call
 * graph is nearly periodic (ROOT -> main -> ... -> leaf -> ROOT), so
 * |lambda_2| is close to 1 and it needs thousands of steps at alpha = 0.01
 * (and never converges as alpha -> 0).  The chain is regenerative instead:
 * all finished mass goes to ROOT, and with the nodes swept in reverse
 * postorder of a depth-first search from ROOT (a topological order when the
 * call graph has no cycles) every node sees its callers' values of the same
 * sweep, so an acyclic graph is solved in one sweep up to the lagging
 * teleport term; self loops (direct recursion) are solved exactly by the
 * division above; only cycles of two or more nodes (mutual recursion) and the
 * alpha-weak teleport coupling need further sweeps.  The fixed point is the
 * same pi; the tests compare with a dense direct solve.
 *
 * Cost: building is O(N + M) (two counting sorts and one iterative DFS);
 * each sweep is one pass over the in-edges, stored by node position in
 * sweep order (CSC: source position + precomputed coefficient
 * (1-alpha) w_ij / T_i), plus O(N) for renormalising.  The dense matrix is
 * never formed.
 */
#include "rank.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/error.h"
#include "profile.h"

#define DEFAULT_ALPHA    0.01
#define DEFAULT_TOL      1e-12
#define DEFAULT_MAX_ITER 10000u

/* The solver's working set, all indexed by sweep position unless noted. */
struct solver {
    uint32_t n;
    uint32_t root;  /* ROOT's position */
    uint32_t *pos;  /* node index -> position */
    uint32_t *off;  /* n + 1 offsets into esrc/ecoef */
    uint32_t *esrc; /* source position of each in-edge */
    double *ecoef;  /* (1 - alpha) * w / T_src */
    double *s;      /* Q_i,ROOT of the node at this position */
    double *invden; /* 1 / (1 - (1-alpha) Q_jj), or 0 when that is 0 */
    double *x, *prev;
};

static void solver_free(struct solver *sv)
{
    free(sv->pos);
    free(sv->off);
    free(sv->esrc);
    free(sv->ecoef);
    free(sv->s);
    free(sv->invden);
    free(sv->x);
    free(sv->prev);
}

/* Checks the graph and options.  Returns 0 or RP_EINVAL. */
static int validate(const struct rp_graph *g, double alpha, double tol, uint32_t max_iter)
{
    if (!g || g->n == 0 || !g->stop || (g->m && (!g->src || !g->dst || !g->w)))
        return RP_EINVAL;
    if (!(alpha >= 0.0 && alpha < 1.0) || !(tol >= 0.0) || !isfinite(tol) || max_iter == 0)
        return RP_EINVAL;
    for (uint32_t i = 0; i < g->n; i++)
        if (!isfinite(g->stop[i]) || g->stop[i] < 0.0)
            return RP_EINVAL;
    for (uint32_t e = 0; e < g->m; e++)
        if (g->src[e] >= g->n || g->dst[e] >= g->n || !isfinite(g->w[e]) || g->w[e] < 0.0)
            return RP_EINVAL;
    return 0;
}

/*
 * Sweep order: reverse postorder of an iterative depth-first search over the
 * call edges (edges into ROOT and self loops do not order anything), from
 * ROOT first, then from every node not reached yet, in index order.  Fills
 * sv->pos.  Returns 0 or RP_ENOMEM.
 */
static int order_nodes(const struct rp_graph *g, struct solver *sv)
{
    uint32_t n = g->n, m = g->m;
    int rc = RP_ENOMEM;
    uint32_t *ooff = calloc((size_t)n + 1, sizeof *ooff);
    uint32_t *odst = NULL, *stk = NULL, *cur = NULL;
    if (!ooff)
        goto out;
    /* out-adjacency (CSR), destinations only */
    for (uint32_t e = 0; e < m; e++)
        if (g->dst[e] != 0 && g->dst[e] != g->src[e])
            ooff[g->src[e] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        ooff[i + 1] += ooff[i];
    odst = malloc((size_t)(ooff[n] ? ooff[n] : 1) * sizeof *odst);
    cur = malloc((size_t)n * sizeof *cur);
    stk = malloc((size_t)n * sizeof *stk);
    if (!odst || !cur || !stk)
        goto out;
    memcpy(cur, ooff, (size_t)n * sizeof *cur);
    for (uint32_t e = 0; e < m; e++)
        if (g->dst[e] != 0 && g->dst[e] != g->src[e])
            odst[cur[g->src[e]]++] = g->dst[e];

    /* cur[i]: next out-edge of i to follow; UINT32_MAX marks "not visited".
     * pos[] is first used for the postorder number, then reversed. */
    for (uint32_t i = 0; i < n; i++)
        cur[i] = UINT32_MAX;
    uint32_t post = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t start = k; /* k == 0 is ROOT: its tree is searched first */
        if (cur[start] != UINT32_MAX)
            continue;
        uint32_t top = 0;
        stk[top++] = start;
        cur[start] = ooff[start];
        while (top) {
            uint32_t v = stk[top - 1];
            if (cur[v] < ooff[v + 1]) {
                uint32_t w = odst[cur[v]++];
                if (cur[w] == UINT32_MAX) {
                    cur[w] = ooff[w];
                    stk[top++] = w;
                }
            } else {
                sv->pos[v] = post++;
                top--;
            }
        }
    }
    for (uint32_t i = 0; i < n; i++)
        sv->pos[i] = n - 1 - sv->pos[i];
    rc = 0;
out:
    free(ooff);
    free(odst);
    free(cur);
    free(stk);
    return rc;
}

/*
 * Builds the sweep structures from the graph.  Invariant afterwards: for the
 * node v at position p, pi_v's equation is
 *   x[p] = ((sum over in-edges e of p: ecoef[e] * x[esrc[e]]) + alpha/N)
 *          * invden[p]
 * and for ROOT the in-edge sum is (1-alpha) * sum_{q != root} s[q] x[q].
 * Returns 0 or RP_ENOMEM (RP_EINVAL if a row total overflows to infinity).
 */
static int build(const struct rp_graph *g, double alpha, struct solver *sv)
{
    uint32_t n = g->n, m = g->m;
    int rc = RP_ENOMEM;
    double *tot = calloc(n, sizeof *tot); /* by node index */
    double *diag = NULL;                  /* Q_jj by position */
    uint32_t *fill = NULL;

    sv->n = n;
    sv->pos = malloc((size_t)n * sizeof *sv->pos);
    sv->off = calloc((size_t)n + 1, sizeof *sv->off);
    sv->s = calloc(n, sizeof *sv->s);
    sv->invden = malloc((size_t)n * sizeof *sv->invden);
    sv->x = malloc((size_t)n * sizeof *sv->x);
    sv->prev = malloc((size_t)n * sizeof *sv->prev);
    diag = calloc(n, sizeof *diag);
    if (!tot || !sv->pos || !sv->off || !sv->s || !sv->invden || !sv->x || !sv->prev || !diag)
        goto out;

    for (uint32_t i = 1; i < n; i++)
        tot[i] = g->stop[i];
    for (uint32_t e = 0; e < m; e++)
        tot[g->src[e]] += g->w[e];
    for (uint32_t i = 0; i < n; i++) {
        if (!isfinite(tot[i])) {
            rc = RP_EINVAL;
            goto out;
        }
        /* tot becomes 1/T_i, or 0 for a row that restarts at ROOT */
        tot[i] = tot[i] > 0.0 ? 1.0 / tot[i] : 0.0;
    }

    rc = order_nodes(g, sv);
    if (rc)
        goto out;
    rc = RP_ENOMEM;
    sv->root = sv->pos[0];

    /* restart shares and self loops */
    for (uint32_t i = 0; i < n; i++) {
        if (tot[i] == 0.0)
            sv->s[sv->pos[i]] = 1.0; /* all-zero row: restart at ROOT */
        else if (i != 0)
            sv->s[sv->pos[i]] = g->stop[i] * tot[i];
    }
    for (uint32_t e = 0; e < m; e++) {
        uint32_t a = g->src[e], b = g->dst[e];
        if (b == 0)
            sv->s[sv->pos[a]] += g->w[e] * tot[a];
        else if (a == b)
            diag[sv->pos[a]] += g->w[e] * tot[a];
        else
            sv->off[sv->pos[b] + 1]++;
    }
    diag[sv->root] = sv->s[sv->root]; /* ROOT -> ROOT is its self loop */

    for (uint32_t p = 0; p < n; p++)
        sv->off[p + 1] += sv->off[p];
    size_t ne = sv->off[n] ? sv->off[n] : 1;
    sv->esrc = malloc(ne * sizeof *sv->esrc);
    sv->ecoef = malloc(ne * sizeof *sv->ecoef);
    fill = malloc((size_t)n * sizeof *fill);
    if (!sv->esrc || !sv->ecoef || !fill)
        goto out;
    memcpy(fill, sv->off, (size_t)n * sizeof *fill);
    for (uint32_t e = 0; e < m; e++) {
        uint32_t a = g->src[e], b = g->dst[e];
        if (b == 0 || a == b)
            continue;
        uint32_t k = fill[sv->pos[b]]++;
        sv->esrc[k] = sv->pos[a];
        sv->ecoef[k] = (1.0 - alpha) * g->w[e] * tot[a];
    }
    for (uint32_t p = 0; p < n; p++) {
        double den = 1.0 - (1.0 - alpha) * diag[p];
        sv->invden[p] = den > 0.0 ? 1.0 / den : 0.0;
    }
    rc = 0;
out:
    free(tot);
    free(diag);
    free(fill);
    return rc;
}

/*
 * Runs sweeps until the L1 change of the normalised iterate is below tol or
 * max_iter sweeps were made.  Cannot fail.
 */
static void iterate(struct solver *sv, double alpha, double tol, uint32_t max_iter, uint32_t *iters,
                    double *resid)
{
    uint32_t n = sv->n, root = sv->root;
    const uint32_t *off = sv->off, *esrc = sv->esrc;
    const double *ecoef = sv->ecoef, *s = sv->s, *invden = sv->invden;
    double *x = sv->x;
    double tele = alpha / (double)n;
    double r = 0.0; /* sum over positions of s[q] * x[q], kept current */
    uint32_t it = 0;
    double change = INFINITY;

    for (uint32_t p = 0; p < n; p++) {
        x[p] = 1.0 / (double)n;
        r += s[p] * x[p];
    }
    while (it < max_iter) {
        memcpy(sv->prev, x, (size_t)n * sizeof *x);
        for (uint32_t p = 0; p < n; p++) {
            double acc = 0.0, old = x[p], nw;
            for (uint32_t e = off[p]; e < off[p + 1]; e++)
                acc += ecoef[e] * x[esrc[e]];
            if (p == root)
                acc = (1.0 - alpha) * (r - s[p] * old);
            if (invden[p] > 0.0)
                nw = (acc + tele) * invden[p];
            else /* alpha == 0 and p only ever stays: plain power step */
                nw = acc + tele + old;
            x[p] = nw;
            r += s[p] * (nw - old);
        }
        double sum = 0.0;
        for (uint32_t p = 0; p < n; p++)
            sum += x[p];
        double inv = 1.0 / sum;
        change = 0.0;
        r = 0.0;
        for (uint32_t p = 0; p < n; p++) {
            x[p] *= inv;
            change += fabs(x[p] - sv->prev[p]);
            r += s[p] * x[p];
        }
        it++;
        if (change < tol)
            break;
    }
    *iters = it;
    *resid = change;
}

int rp_rank_solve(const struct rp_graph *g, const struct rp_rank_opts *o, double *pi,
                  uint32_t *iterations, double *residual)
{
    double alpha = o ? o->alpha : DEFAULT_ALPHA;
    double tol = o ? o->tol : DEFAULT_TOL;
    uint32_t max_iter = o ? o->max_iter : DEFAULT_MAX_ITER;
    struct solver sv = {0};
    uint32_t it = 0;
    double res = 0.0;
    int rc;

    if (!pi)
        return RP_EINVAL;
    rc = validate(g, alpha, tol, max_iter);
    if (rc)
        return rc;
    if (g->n == 1) {
        pi[0] = 1.0;
        goto done;
    }
    rc = build(g, alpha, &sv);
    if (rc)
        goto out;
    iterate(&sv, alpha, tol, max_iter, &it, &res);
    for (uint32_t i = 0; i < g->n; i++)
        pi[i] = sv.x[sv.pos[i]];
done:
    if (iterations)
        *iterations = it;
    if (residual)
        *residual = res;
out:
    solver_free(&sv);
    return rc;
}

/* Node order for ranks: higher pi first, then lower index. */
struct rank_key {
    double pi;
    uint32_t idx;
};

static int cmp_rank(const void *a, const void *b)
{
    const struct rank_key *x = a, *y = b;
    if (x->pi != y->pi)
        return x->pi > y->pi ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * ROOT (nodes[0]) gets standing 0, involvement 1 and rank 0 (not ranked);
 * the other nodes get ranks 1..n-1.  If pi_ROOT is 0 (possible only with
 * alpha == 0 and a part of the graph that never returns), involvement is 0;
 * if all of pi is on ROOT, standing is 0.  Returns 0, RP_EINVAL (NULL
 * profile, no nodes, an edge naming a node that does not exist, bad
 * options), or RP_ENOMEM; on failure the nodes are left unchanged.
 */
int rp_rank_profile(struct rp_profile *p, const struct rp_rank_opts *o)
{
    struct rp_rank_opts def = {DEFAULT_ALPHA, DEFAULT_TOL, DEFAULT_MAX_ITER};
    double *stop = NULL, *w = NULL, *pi = NULL;
    uint32_t *src = NULL, *dst = NULL;
    struct rank_key *keys = NULL;
    uint32_t n, m, it = 0;
    double res = 0.0;
    int rc = RP_EINVAL;

    if (!p || p->n_nodes == 0 || !p->nodes || (p->n_edges && !p->edges))
        return RP_EINVAL;
    if (!o)
        o = &def;
    n = p->n_nodes;
    m = p->n_edges;
    rc = RP_ENOMEM;
    stop = malloc((size_t)n * sizeof *stop);
    pi = malloc((size_t)n * sizeof *pi);
    keys = malloc((size_t)n * sizeof *keys);
    w = malloc((size_t)(m ? m : 1) * sizeof *w);
    src = malloc((size_t)(m ? m : 1) * sizeof *src);
    dst = malloc((size_t)(m ? m : 1) * sizeof *dst);
    if (!stop || !pi || !keys || !w || !src || !dst)
        goto out;
    for (uint32_t i = 0; i < n; i++) {
        const struct rp_node *nd = &p->nodes[i];
        stop[i] = i == 0 ? 0.0 : (double)(p->rank.weight_calls ? nd->calls : nd->excl);
    }
    for (uint32_t e = 0; e < m; e++) {
        const struct rp_edge *ed = &p->edges[e];
        src[e] = ed->caller;
        dst[e] = ed->callee;
        w[e] = (double)(p->rank.weight_calls ? ed->calls : ed->incl);
    }
    struct rp_graph g = {n, m, stop, src, dst, w};
    rc = rp_rank_solve(&g, o, pi, &it, &res);
    if (rc)
        goto out;

    double rest = 0.0;
    for (uint32_t i = 1; i < n; i++)
        rest += pi[i];
    for (uint32_t i = 0; i < n; i++) {
        struct rp_node *nd = &p->nodes[i];
        if (i == 0) {
            nd->standing = 0.0;
            nd->involvement = 1.0;
            nd->rank = 0;
            continue;
        }
        nd->standing = rest > 0.0 ? pi[i] / rest : 0.0;
        nd->involvement = pi[0] > 0.0 ? pi[i] / pi[0] : 0.0;
        keys[i - 1].pi = pi[i];
        keys[i - 1].idx = i;
    }
    if (n > 1)
        qsort(keys, n - 1, sizeof *keys, cmp_rank);
    for (uint32_t k = 0; k + 1 < n; k++)
        p->nodes[keys[k].idx].rank = k + 1;
    p->rank.alpha = o->alpha;
    p->rank.iterations = it;
    p->rank.residual = res;
    rc = 0;
out:
    free(stop);
    free(w);
    free(pi);
    free(src);
    free(dst);
    free(keys);
    return rc;
}
