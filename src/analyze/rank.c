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
 * Solver.  Plain power iteration converges like ((1-alpha) |lambda_2(Q)|)^k,
 * and a call graph is nearly periodic (ROOT -> main -> ... -> leaf -> ROOT),
 * so |lambda_2| is close to 1: thousands of steps at alpha = 0.01, and no
 * convergence at all as alpha -> 0.  The chain is regenerative instead: all
 * finished mass goes to ROOT.  With sum pi = 1 the stationary equations are
 * pi_j = (1-alpha) sum_i pi_i Q_ij + alpha/N; write y for pi without ROOT, M
 * for (1-alpha) Q among non-ROOT nodes and q for (1-alpha) Q_ROOT,j.  Then
 *
 *     y = pi_ROOT q + (alpha/N) 1 + y M,   so   y = pi_ROOT u + v  with
 *     u = q (I - M)^-1  (expected visits per visit of ROOT: involvement),
 *     v = (alpha/N) 1 (I - M)^-1  (the visits the teleport brings), and
 *     pi_ROOT = (1 - sum v) / (1 + sum u)  from sum pi = 1.
 *
 * (ROOT's own equation then holds by itself: the rows of P sum to 1.)  u and
 * v are found together by Gauss-Seidel sweeps over the non-ROOT nodes, in
 * reverse postorder of a depth-first search from ROOT (a topological order
 * when the call graph has no cycles), so every node sees its callers' values
 * of the same sweep: an acyclic call graph is solved exactly by one sweep
 * (the second confirms it); self loops (direct recursion) are solved exactly
 * by dividing by 1 - M_jj; only cycles of two or more nodes (mutual
 * recursion, callbacks) need more sweeps, at the rate their flow decays.
 * Solving for pi_ROOT in closed form after each sweep, rather than iterating
 * it, removes the slow mode between the ROOT-driven and the teleport-driven
 * mass.  Start: u = v = 0 (the iterates then increase monotonically to the
 * solution); stop when the L1 change of pi is below tol.  The tests compare
 * with a dense direct solve of pi = pi P.
 *
 * Cost: building is O(N + M) (three passes over the edges and one iterative
 * DFS); each sweep is one pass over the in-edges, stored by node position in
 * sweep order (CSC: source position + precomputed coefficient
 * (1-alpha) w_ij / T_i), with u and v side by side so that each random read
 * fetches both, plus O(N).  The dense matrix is never formed.
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

struct uv {
    double u, v;
};

/* The solver's working set, all indexed by sweep position unless noted. */
struct solver {
    uint32_t n;
    uint32_t root;  /* ROOT's position */
    uint32_t *pos;  /* node index -> position */
    uint32_t *off;  /* n + 1 offsets into esrc/ecoef */
    uint32_t *esrc; /* source position of each in-edge */
    double *ecoef;  /* (1 - alpha) * w / T_src */
    double *invden; /* 1 / (1 - (1-alpha) Q_jj), or 0 when that is 0 */
    struct uv *x;   /* u and v; x[root] = {1, 0} throughout */
    double *prev;   /* pi of the last sweep */
};

static void solver_free(struct solver *sv)
{
    free(sv->pos);
    free(sv->off);
    free(sv->esrc);
    free(sv->ecoef);
    free(sv->invden);
    free(sv->x);
    free(sv->prev);
}

/* Checks the options, pointers and stop weights (edges are checked while
 * building).  Returns 0 or RP_EINVAL. */
static int validate(const struct rp_graph *g, double alpha, double tol, uint32_t max_iter)
{
    if (!g || g->n == 0 || !g->stop || (g->m && (!g->src || !g->dst || !g->w)))
        return RP_EINVAL;
    if (!(alpha >= 0.0 && alpha < 1.0) || !(tol >= 0.0) || !isfinite(tol) || max_iter == 0)
        return RP_EINVAL;
    for (uint32_t i = 0; i < g->n; i++)
        if (!isfinite(g->stop[i]) || g->stop[i] < 0.0)
            return RP_EINVAL;
    return 0;
}

/*
 * Sweep order: reverse postorder of an iterative depth-first search over the
 * call edges (edges into ROOT and self loops do not order anything), from
 * ROOT first, then from every node not reached yet, in index order.  ooff is
 * the out-degree count shifted by one (ooff[i + 1] = out-degree of i), and
 * is turned into CSR offsets here.  Fills sv->pos.  Returns 0 or RP_ENOMEM.
 */
static int order_nodes(const struct rp_graph *g, uint32_t *ooff, struct solver *sv)
{
    uint32_t n = g->n, m = g->m;
    int rc = RP_ENOMEM;
    uint32_t *odst = NULL, *stk = NULL, *cur = NULL;

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
    free(odst);
    free(cur);
    free(stk);
    return rc;
}

/*
 * Builds the sweep structures from the graph in three passes over the edges
 * (check and count; out-adjacency for the order; in-edges by position).
 * Invariant afterwards: for the non-ROOT node at position p,
 *   u[p] = (sum over in-edges e of p: ecoef[e] * u[esrc[e]]) * invden[p]
 *   v[p] = (sum over in-edges e of p: ecoef[e] * v[esrc[e]] + alpha/N)
 *          * invden[p]
 * with u[root] = 1, v[root] = 0; edges into ROOT are not stored (they only
 * end a descent) and self loops are in invden.
 * Returns 0, RP_EINVAL (an index >= n, a negative or non-finite weight, a
 * row total that overflows), or RP_ENOMEM.
 */
static int build(const struct rp_graph *g, double alpha, struct solver *sv)
{
    uint32_t n = g->n, m = g->m;
    const uint32_t *src = g->src, *dst = g->dst;
    const double *w = g->w;
    int rc = RP_ENOMEM;
    double *tot = calloc(n, sizeof *tot);                 /* by node index */
    double *diag = NULL;                                  /* Q_jj by position */
    uint32_t *ooff = calloc((size_t)n + 1, sizeof *ooff); /* out-degrees, CSR */
    uint32_t *fill = calloc(n, sizeof *fill);             /* in-degrees, then cursor */

    sv->n = n;
    sv->pos = malloc((size_t)n * sizeof *sv->pos);
    sv->off = calloc((size_t)n + 1, sizeof *sv->off);
    sv->invden = malloc((size_t)n * sizeof *sv->invden);
    sv->x = malloc((size_t)n * sizeof *sv->x);

    sv->prev = malloc((size_t)n * sizeof *sv->prev);
    diag = calloc(n, sizeof *diag);
    if (!tot || !ooff || !fill || !sv->pos || !sv->off || !sv->invden || !sv->x || !sv->prev ||
        !diag)
        goto out;

    /* pass 1: check, row totals, degrees */
    for (uint32_t i = 1; i < n; i++)
        tot[i] = g->stop[i];
    for (uint32_t e = 0; e < m; e++) {
        uint32_t a = src[e], b = dst[e];
        if (a >= n || b >= n || !(w[e] >= 0.0) || !isfinite(w[e])) {
            rc = RP_EINVAL;
            goto out;
        }
        tot[a] += w[e];
        if (b != 0 && b != a) {
            ooff[a + 1]++;
            fill[b]++;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!isfinite(tot[i])) {
            rc = RP_EINVAL;
            goto out;
        }
        /* tot becomes 1/T_i, or 0 for a row that restarts at ROOT */
        tot[i] = tot[i] > 0.0 ? 1.0 / tot[i] : 0.0;
    }

    /* pass 2 */
    rc = order_nodes(g, ooff, sv);
    if (rc)
        goto out;
    rc = RP_ENOMEM;
    free(ooff);
    ooff = NULL;
    sv->root = sv->pos[0];

    for (uint32_t i = 0; i < n; i++)
        sv->off[sv->pos[i] + 1] = fill[i];
    for (uint32_t p = 0; p < n; p++)
        sv->off[p + 1] += sv->off[p];
    memcpy(fill, sv->off, (size_t)n * sizeof *fill);
    size_t ne = sv->off[n] ? sv->off[n] : 1;
    sv->esrc = malloc(ne * sizeof *sv->esrc);
    sv->ecoef = malloc(ne * sizeof *sv->ecoef);
    if (!sv->esrc || !sv->ecoef)
        goto out;

    /* pass 3: in-edges by position, self loops */
    for (uint32_t e = 0; e < m; e++) {
        uint32_t a = src[e], b = dst[e];
        if (b == 0)
            continue;
        double q = w[e] * tot[a];
        if (a == b) {
            diag[sv->pos[a]] += q;
        } else {
            uint32_t k = fill[sv->pos[b]]++;
            sv->esrc[k] = sv->pos[a];
            sv->ecoef[k] = (1.0 - alpha) * q;
        }
    }
    for (uint32_t p = 0; p < n; p++) {
        double den = 1.0 - (1.0 - alpha) * diag[p];
        sv->invden[p] = den > 0.0 ? 1.0 / den : 0.0;
    }
    rc = 0;
out:
    free(tot);
    free(diag);
    free(ooff);
    free(fill);
    return rc;
}

/*
 * One Gauss-Seidel sweep over the non-ROOT positions: new u and v in place.
 * Returns their sums over non-ROOT positions in *su, *sv_.  Two partial sums
 * per value, so that the additions do not wait for each other; the loads of
 * x[esrc[e]] are the real cost.  Cannot fail.
 */
static void sweep(const struct solver *sv, double tele, double *su, double *svs)
{
    const uint32_t *off = sv->off, *esrc = sv->esrc;
    const double *ecoef = sv->ecoef, *invden = sv->invden;
    struct uv *x = sv->x;
    double tu = 0.0, tv = 0.0;

    for (uint32_t p = 0; p < sv->n; p++) {
        if (p == sv->root)
            continue;
        double u0 = 0.0, v0 = 0.0, u1 = 0.0, v1 = 0.0;
        uint32_t e = off[p], end = off[p + 1];
        for (; e + 2 <= end; e += 2) {
            const struct uv *a = &x[esrc[e]], *b = &x[esrc[e + 1]];
            u0 += ecoef[e] * a->u;
            v0 += ecoef[e] * a->v;
            u1 += ecoef[e + 1] * b->u;
            v1 += ecoef[e + 1] * b->v;
        }
        if (e < end) {
            const struct uv *a = &x[esrc[e]];
            u0 += ecoef[e] * a->u;
            v0 += ecoef[e] * a->v;
        }
        double nu = u0 + u1, nv = v0 + v1 + tele;
        if (invden[p] > 0.0) {
            nu *= invden[p];
            nv *= invden[p];
        } else { /* alpha == 0 and p only ever calls itself: it keeps all */
            nu += x[p].u;
            nv += x[p].v;
        }
        x[p].u = nu;
        x[p].v = nv;
        tu += nu;
        tv += nv;
    }
    *su = tu;
    *svs = tv;
}

/*
 * Runs sweeps until the L1 change of pi is below tol or max_iter sweeps were
 * made; leaves pi by position in sv->prev.  Cannot fail.
 */
static void iterate(struct solver *sv, double alpha, double tol, uint32_t max_iter, uint32_t *iters,
                    double *resid)
{
    uint32_t n = sv->n, root = sv->root, it = 0;
    double tele = alpha / (double)n, change = INFINITY;

    for (uint32_t p = 0; p < n; p++) {
        sv->x[p].u = sv->x[p].v = 0.0;
        sv->prev[p] = 1.0 / (double)n;
    }
    sv->x[root].u = 1.0;
    while (it < max_iter) {
        double su, svs;
        sweep(sv, tele, &su, &svs);
        double r = (1.0 - svs) / (1.0 + su);
        change = 0.0;
        for (uint32_t p = 0; p < n; p++) {
            double y = p == root ? r : r * sv->x[p].u + sv->x[p].v;
            change += fabs(y - sv->prev[p]);
            sv->prev[p] = y;
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
        pi[i] = sv.prev[sv.pos[i]];
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
