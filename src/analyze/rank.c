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
 * Regenerative form.  Plain power iteration converges like
 * ((1-alpha) |lambda_2(Q)|)^k, and a call graph is nearly periodic
 * (ROOT -> main -> ... -> leaf -> ROOT), so |lambda_2| is close to 1:
 * thousands of steps at alpha = 0.01, none at all as alpha -> 0.  The chain
 * is regenerative instead: all finished mass goes to ROOT.  With sum pi = 1
 * the stationary equations are pi_j = (1-alpha) sum_i pi_i Q_ij + alpha/N;
 * write y for pi without ROOT, M for (1-alpha) Q among non-ROOT nodes and q
 * for (1-alpha) Q_ROOT,j.  Then
 *
 *     y = pi_ROOT q + (alpha/N) 1 + y M,   so   y = pi_ROOT u + v  with
 *     u = q (I - M)^-1  (expected visits per visit of ROOT: involvement),
 *     v = (alpha/N) 1 (I - M)^-1  (the visits the teleport brings), and
 *     pi_ROOT = (1 - sum v) / (1 + sum u)  from sum pi = 1.
 *
 * (ROOT's own equation then holds by itself: the rows of P sum to 1.)
 *
 * Solving x = b + x M (x = u and v side by side) component by component.
 * The strongly connected components of the call graph (Tarjan's algorithm,
 * iterative; edges into ROOT end a descent and self loops are folded into
 * the node, so neither links anything) are taken in topological order,
 * callers before callees.  When a component's turn comes, every flow into
 * it from earlier components is final, so:
 *   - a single node (no cycle through others) is solved exactly at once:
 *     x_j = in_j / (1 - M_jj), in_j being the flow received so far, which
 *     makes an acyclic graph, and direct recursion, exact in one pass;
 *   - a component with a cycle through several nodes (mutual recursion,
 *     callbacks) is solved by Gauss-Seidel sweeps over its own nodes in
 *     reverse postorder of the depth-first search (so only the edges that
 *     close cycles point backwards), each node reading its callers' latest
 *     values over its in-edges inside the component, until the L1 change of
 *     the component's pi is below its share of tol; starting from 0 the
 *     iterates increase monotonically to the solution.
 * Then each node pushes its final x along its edges out of the component.
 * Only the edges inside cycles are read more than once, and only as often
 * as their own component needs.
 *
 * Cost: O(N + M) to build: two passes over the edge list (check, row totals,
 * self loops and out-degrees; then a counting-sort fill of the out-adjacency
 * with the coefficients (1-alpha) w_ij / T_i), Tarjan over the adjacency, a
 * counting sort of the nodes by component, and the in-edges inside cycles
 * (two passes over those components' edges).  Solving: one pass over all
 * edges plus one per sweep over the edges inside cycles.  The dense matrix
 * is never formed.  The tests compare with a dense direct solve.
 *
 * Residual: the L1 change of pi in the last sweep of each cycle, summed (0
 * for an acyclic graph, which is solved exactly); iterations: the most
 * sweeps any component took (1 when there are no cycles).
 */
#include "rank.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/error.h"
#include "../trace/format.h"
#include "profile.h"

#define DEFAULT_ALPHA    0.01
#define DEFAULT_TOL      1e-12
#define DEFAULT_MAX_ITER 10000u

#define NONE UINT32_MAX
#define DONE (UINT32_MAX - 1)

struct uv {
    double u, v;
};

/*
 * The solver's working set, indexed by node unless noted.  Out-adjacency in
 * CSR form without self loops and edges into ROOT: the edges of node i are
 * odst/oc[off[i] .. off[i + 1]), odst a node index until lay_out() makes
 * it the callee's position.  Components are ranges of positions.
 */
struct solver {
    uint32_t n;
    uint32_t *off;   /* n + 1 */
    uint32_t *odst;  /* callee of each out-edge */
    double *oc;      /* (1 - alpha) * w / T_src */
    double *invden;  /* 1 / (1 - (1-alpha) Q_ii), or 0 when that is 0 */
    uint32_t *order; /* nodes in solving order */
    uint32_t *cend;  /* components in solving order: end of each in order[] */
    uint32_t ncomp;
    uint32_t *cin_off; /* n + 1, by position: in-edges inside a cycle */
    uint32_t *cin_src; /* their caller's position */
    double *cin_c;     /* their coefficient */
    struct uv *in;     /* by position: flow received from earlier components */
    struct uv *x;      /* by position: u and v */
};

static void solver_free(struct solver *sv)
{
    free(sv->off);
    free(sv->odst);
    free(sv->oc);
    free(sv->invden);
    free(sv->order);
    free(sv->cend);
    free(sv->cin_off);
    free(sv->cin_src);
    free(sv->cin_c);
    free(sv->in);
    free(sv->x);
}

/* Checks the options, pointers, size (node numbers must stay below DONE)
 * and stop weights (edges are checked while building).  Returns 0 or
 * RP_EINVAL. */
static int validate(const struct rp_graph *g, double alpha, double tol, uint32_t max_iter)
{
    if (!g || g->n == 0 || g->n >= DONE || !g->stop || (g->m && (!g->src || !g->dst || !g->w)))
        return RP_EINVAL;
    if (!(alpha >= 0.0 && alpha < 1.0) || !(tol >= 0.0) || !isfinite(tol) || max_iter == 0)
        return RP_EINVAL;
    for (uint32_t i = 0; i < g->n; i++)
        if (!isfinite(g->stop[i]) || g->stop[i] < 0.0)
            return RP_EINVAL;
    return 0;
}

/* An edge the adjacency keeps: not into ROOT, not a self loop. */
static inline int linking(uint32_t a, uint32_t b)
{
    return b != 0 && b != a;
}

/*
 * Builds the out-adjacency and invden in two passes over the edges: (1)
 * check, row totals, self-loop weight and out-degrees; (2) counting-sort
 * fill.  Returns 0, RP_EINVAL (an index >= n, a negative or non-finite
 * weight, a row total that overflows), or RP_ENOMEM.
 */
static int build_adjacency(const struct rp_graph *g, double alpha, struct solver *sv)
{
    uint32_t n = g->n, m = g->m;
    const uint32_t *src = g->src, *dst = g->dst;
    const double *w = g->w;
    int rc = RP_ENOMEM;
    double *tot = calloc(n, sizeof *tot);   /* T_i, then (1-alpha) / T_i */
    double *diag = calloc(n, sizeof *diag); /* self-loop weight */
    uint32_t *cur = NULL;

    sv->off = calloc((size_t)n + 1, sizeof *sv->off);
    sv->invden = malloc((size_t)n * sizeof *sv->invden);
    if (!tot || !diag || !sv->off || !sv->invden)
        goto out;

    for (uint32_t i = 1; i < n; i++)
        tot[i] = g->stop[i];
    for (uint32_t e = 0; e < m; e++) {
        uint32_t a = src[e], b = dst[e];
        if (a >= n || b >= n || !(w[e] >= 0.0) || !isfinite(w[e])) {
            rc = RP_EINVAL;
            goto out;
        }
        tot[a] += w[e];
        if (linking(a, b))
            sv->off[a + 1]++;
        else if (a == b)
            diag[a] += w[e];
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!isfinite(tot[i])) {
            rc = RP_EINVAL;
            goto out;
        }
        double q = tot[i] > 0.0 ? (1.0 - alpha) * diag[i] / tot[i] : 0.0;
        /* ROOT's value is fixed, its self loop means nothing */
        sv->invden[i] = i > 0 && q >= 1.0 ? 0.0 : 1.0 / (1.0 - (i > 0 ? q : 0.0));
        tot[i] = tot[i] > 0.0 ? (1.0 - alpha) / tot[i] : 0.0;
        sv->off[i + 1] += sv->off[i];
    }

    size_t ne = sv->off[n] ? sv->off[n] : 1;
    sv->odst = malloc(ne * sizeof *sv->odst);
    sv->oc = malloc(ne * sizeof *sv->oc);
    cur = malloc((size_t)n * sizeof *cur);
    if (!sv->odst || !sv->oc || !cur)
        goto out;
    memcpy(cur, sv->off, (size_t)n * sizeof *cur);
    for (uint32_t e = 0; e < m; e++) {
        uint32_t a = src[e], b = dst[e];
        if (!linking(a, b))
            continue;
        uint32_t k = cur[a]++;
        sv->odst[k] = b;
        sv->oc[k] = w[e] * tot[a];
    }
    rc = 0;
out:
    free(tot);
    free(diag);
    free(cur);
    return rc;
}

/*
 * Tarjan's strongly connected components, iterative, from ROOT first and
 * then from every node not reached yet in index order.  Sets comp[i]
 * (components numbered as they complete: callees' components first), post[i]
 * (the postorder number) and sv->ncomp.  Returns 0 or RP_ENOMEM.
 */
static int tarjan(struct solver *sv, uint32_t *comp, uint32_t *post)
{
    uint32_t n = sv->n, next = 0, npost = 0, ncomp = 0;
    const uint32_t *off = sv->off, *odst = sv->odst;
    uint32_t *idx = malloc((size_t)n * sizeof *idx), *low = malloc((size_t)n * sizeof *low);
    uint32_t *cur = malloc((size_t)n * sizeof *cur), *call = malloc((size_t)n * sizeof *call);
    uint32_t *open = malloc((size_t)n * sizeof *open); /* Tarjan's stack */
    int rc = RP_ENOMEM;

    if (!idx || !low || !cur || !call || !open)
        goto out;
    /* idx[i]: NONE before i is found, DONE once its component is complete,
     * its discovery number in between (exactly while it is on Tarjan's
     * stack), so that one load answers both questions Tarjan asks. */
    for (uint32_t i = 0; i < n; i++)
        idx[i] = NONE;
    for (uint32_t s = 0; s < n; s++) {
        if (idx[s] != NONE)
            continue;
        uint32_t depth = 0, nopen = 0;
        idx[s] = low[s] = next++;
        cur[s] = off[s];
        call[depth++] = s;
        open[nopen++] = s;
        while (depth) {
            /* scan v's edges for the next node not found yet, keeping the
             * cursor and low link in registers */
            uint32_t v = call[depth - 1], e = cur[v], end = off[v + 1], lv = low[v], w = NONE;
            for (; e < end; e++) {
                uint32_t iw = idx[odst[e]];
                if (iw == NONE) {
                    w = odst[e++];
                    break;
                }
                lv = iw < lv ? iw : lv; /* DONE never is less */
            }
            low[v] = lv;
            cur[v] = e;
            if (w != NONE) {
                idx[w] = low[w] = next++;
                cur[w] = off[w];
                call[depth++] = w;
                open[nopen++] = w;
                continue;
            }
            post[v] = npost++;
            if (--depth && low[v] < low[call[depth - 1]])
                low[call[depth - 1]] = low[v];
            if (low[v] != idx[v])
                continue;
            uint32_t x;
            do {
                x = open[--nopen];
                comp[x] = ncomp;
                idx[x] = DONE;
            } while (x != v);
            ncomp++;
        }
    }
    sv->ncomp = ncomp;
    rc = 0;
out:
    free(idx);
    free(low);
    free(cur);
    free(call);
    free(open);
    return rc;
}

/*
 * Lays the nodes out in solving order: components in topological order
 * (Tarjan completes callees first, so component c goes to rank
 * ncomp - 1 - c), and inside a component by reverse postorder.  Fills
 * sv->order and sv->cend, and turns the callees in sv->odst into positions.
 * Returns 0 or RP_ENOMEM.
 */
static int lay_out(struct solver *sv, const uint32_t *comp, const uint32_t *post)
{
    uint32_t n = sv->n, nc = sv->ncomp;
    uint32_t *rpo = malloc((size_t)n * sizeof *rpo);
    uint32_t *fill = calloc((size_t)nc + 1, sizeof *fill);
    int rc = RP_ENOMEM;

    sv->order = malloc((size_t)n * sizeof *sv->order);
    sv->cend = malloc((size_t)nc * sizeof *sv->cend);
    if (!rpo || !fill || !sv->order || !sv->cend)
        goto out;
    for (uint32_t i = 0; i < n; i++) {
        rpo[n - 1 - post[i]] = i;
        fill[nc - comp[i]]++; /* size of rank r at fill[r + 1] */
    }
    for (uint32_t r = 0; r < nc; r++) {
        fill[r + 1] += fill[r];
        sv->cend[r] = fill[r + 1];
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = rpo[k];
        sv->order[fill[nc - 1 - comp[i]]++] = i;
    }
    for (uint32_t k = 0; k < n; k++) /* rpo becomes node -> position */
        rpo[sv->order[k]] = k;
    for (uint32_t e = 0; e < sv->off[n]; e++)
        sv->odst[e] = rpo[sv->odst[e]];
    rc = 0;
out:
    free(rpo);
    free(fill);
    return rc;
}

/*
 * Stores the edges inside components of two or more nodes (caller and
 * callee positions in the component's range) by callee position, in cin_*,
 * for the sweeps to read: a count and a fill pass over those components'
 * out-edges.  Returns 0 or RP_ENOMEM.
 */
static int build_cycles(struct solver *sv)
{
    uint32_t n = sv->n, *fill = NULL;
    const uint32_t *odst = sv->odst;
    int rc = RP_ENOMEM;

    sv->cin_off = calloc((size_t)n + 1, sizeof *sv->cin_off);
    if (!sv->cin_off)
        goto out;
    for (int fillpass = 0; fillpass < 2; fillpass++) {
        for (uint32_t r = 0, a = 0; r < sv->ncomp; a = sv->cend[r++]) {
            uint32_t size = sv->cend[r] - a;
            for (uint32_t k = a; size > 1 && k < sv->cend[r]; k++) {
                uint32_t i = sv->order[k];
                for (uint32_t e = sv->off[i]; e < sv->off[i + 1]; e++) {
                    if (odst[e] - a >= size)
                        continue;
                    if (!fillpass) {
                        sv->cin_off[odst[e] + 1]++;
                        continue;
                    }
                    uint32_t f = fill[odst[e]]++;
                    sv->cin_src[f] = k;
                    sv->cin_c[f] = sv->oc[e];
                }
            }
        }
        if (fillpass)
            break;
        for (uint32_t k = 0; k < n; k++)
            sv->cin_off[k + 1] += sv->cin_off[k];
        size_t ne = sv->cin_off[n] ? sv->cin_off[n] : 1;
        sv->cin_src = malloc(ne * sizeof *sv->cin_src);
        sv->cin_c = malloc(ne * sizeof *sv->cin_c);
        fill = malloc((size_t)n * sizeof *fill);
        if (!sv->cin_src || !sv->cin_c || !fill)
            goto out;
        memcpy(fill, sv->cin_off, (size_t)n * sizeof *fill);
    }
    rc = 0;
out:
    free(fill);
    return rc;
}

/*
 * Builds everything the solver needs: adjacency, components, solving order,
 * in-edges of cycles.  On failure the caller still frees sv.  Returns 0,
 * RP_EINVAL (see build_adjacency) or RP_ENOMEM.
 */
static int build(const struct rp_graph *g, double alpha, struct solver *sv)
{
    uint32_t *post = NULL, *comp = NULL;
    int rc;

    sv->n = g->n;
    rc = build_adjacency(g, alpha, sv);
    if (rc)
        return rc;
    rc = RP_ENOMEM;
    post = malloc((size_t)g->n * sizeof *post);
    comp = malloc((size_t)g->n * sizeof *comp);
    sv->in = malloc((size_t)g->n * sizeof *sv->in);
    sv->x = calloc(g->n, sizeof *sv->x);
    if (!post || !comp || !sv->in || !sv->x)
        goto out;
    if (!(rc = tarjan(sv, comp, post)) && !(rc = lay_out(sv, comp, post)))
        rc = build_cycles(sv);
out:
    free(post);
    free(comp);
    return rc;
}

/*
 * Adds x times each edge's coefficient to the flow into the callees of node
 * i, except for callees at positions [a, a + size) (i's own component, whose
 * flow the sweeps have already counted).  Cannot fail.
 */
static inline void push(struct solver *sv, uint32_t i, uint32_t a, uint32_t size, struct uv x)
{
    const uint32_t *odst = sv->odst;
    const double *oc = sv->oc;
    struct uv *in = sv->in;
    for (uint32_t e = sv->off[i]; e < sv->off[i + 1]; e++) {
        double c = odst[e] - a < size ? 0.0 : oc[e];
        struct uv *t = &in[odst[e]];
        t->u += c * x.u;
        t->v += c * x.v;
    }
}

/*
 * Gauss-Seidel sweeps over the component at positions [a, b): each node
 * takes the flow it received from earlier components plus, over its in-edges
 * inside the component, the latest values of its callers there.  Runs until
 * the L1 change of the component's pi is at most tol, or is down to rounding
 * (FLOOR_ULPS units in the last place of the component's sum), or max_iter
 * sweeps were made.  The change of pi is bounded with
 *     pi_ROOT <= (rv - sum v) / (ru + sum u),
 * the sums over the component, where ru = 1 + sum u and rv = 1 - sum v over
 * the components solved before (all of u and v only grow).  A node that
 * never leaves itself (invden 0: alpha == 0 and a pure self loop) keeps all
 * it receives: it grows every sweep and never converges, which the residual
 * then says.  Adds the last sweep's change of u and v to *du, *dv; returns
 * the number of sweeps.  Cannot fail.
 */
#define FLOOR_ULPS 64.0

static uint32_t solve_cycle(struct solver *sv, uint32_t a, uint32_t b, double ru, double rv,
                            double tol, uint32_t max_iter, double *du, double *dv)
{
    const uint32_t *off = sv->cin_off, *src = sv->cin_src;
    const double *c = sv->cin_c;
    struct uv *x = sv->x;
    uint32_t it = 0;
    double cu = 0.0, cv = 0.0;

    while (it < max_iter) {
        cu = cv = 0.0;
        double su = 0.0, svs = 0.0;
        for (uint32_t k = a; k < b; k++) {
            uint32_t i = sv->order[k];
            double u0 = sv->in[k].u, v0 = sv->in[k].v, u1 = 0.0, v1 = 0.0;
            uint32_t e = off[k], end = off[k + 1];
            for (; e + 2 <= end; e += 2) { /* two sums: the loads overlap */
                const struct uv *p = &x[src[e]], *q = &x[src[e + 1]];
                u0 += c[e] * p->u;
                v0 += c[e] * p->v;
                u1 += c[e + 1] * q->u;
                v1 += c[e + 1] * q->v;
            }
            if (e < end) {
                u0 += c[e] * x[src[e]].u;
                v0 += c[e] * x[src[e]].v;
            }
            struct uv nx = {u0 + u1, v0 + v1};
            if (sv->invden[i] > 0.0) {
                nx.u *= sv->invden[i];
                nx.v *= sv->invden[i];
            } else {
                nx.u += x[k].u;
                nx.v += x[k].v;
            }
            cu += fabs(nx.u - x[k].u);
            cv += fabs(nx.v - x[k].v);
            su += nx.u;
            svs += nx.v;
            x[k] = nx;
        }
        it++;
        /* the component's sums tighten the bound on pi_ROOT */
        double r = (rv - svs) / (ru + su);
        if (r * cu + cv <= tol || cu + cv <= FLOOR_ULPS * DBL_EPSILON * (su + svs))
            break;
    }
    *du += cu;
    *dv += cv;
    return it;
}

/*
 * Solves for u and v component by component (x by position), then pi.
 * Returns the largest number of sweeps a component needed in *iters (1 for
 * an acyclic graph) and the L1 change of pi in the last sweep of every
 * component, summed, in *resid.  Cannot fail.
 */
static void solve(struct solver *sv, double alpha, double tol, uint32_t max_iter, double *pi,
                  uint32_t *iters, double *resid)
{
    uint32_t n = sv->n, it = 1, ncyc = 0; /* nodes that need sweeps */
    double tele = alpha / (double)n, du = 0.0, dv = 0.0, su = 0.0, svs = 0.0;

    for (uint32_t k = 0; k < n; k++)
        sv->in[k] = (struct uv){0.0, sv->order[k] ? tele : 0.0};
    for (uint32_t r = 0, a = 0; r < sv->ncomp; a = sv->cend[r++])
        if (sv->cend[r] - a > 1 || sv->invden[sv->order[a]] == 0.0)
            ncyc += sv->cend[r] - a;
    for (uint32_t r = 0, a = 0; r < sv->ncomp; a = sv->cend[r++]) {
        uint32_t b = sv->cend[r], i = sv->order[a];
        if (b - a == 1 && (i == 0 || sv->invden[i] > 0.0)) {
            struct uv in = sv->in[a];
            sv->x[a] = i == 0 ? (struct uv){1.0, 0.0}
                              : (struct uv){in.u * sv->invden[i], in.v * sv->invden[i]};
        } else {
            /* this component's share of the tolerance: all sum to tol */
            double t = tol * (double)(b - a) / (double)ncyc;
            uint32_t k = solve_cycle(sv, a, b, 1.0 + su, 1.0 - svs, t, max_iter, &du, &dv);
            it = k > it ? k : it;
        }
        for (uint32_t k = a; k < b; k++) {
            uint32_t j = sv->order[k];
            push(sv, j, a, b - a, sv->x[k]);
            if (j) {
                su += sv->x[k].u;
                svs += sv->x[k].v;
            }
        }
    }
    double root = (1.0 - svs) / (1.0 + su);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = sv->order[k];
        pi[i] = i ? root * sv->x[k].u + sv->x[k].v : root;
    }
    *iters = it;
    *resid = root * du + dv;
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
    solve(&sv, alpha, tol, max_iter, pi, &it, &res);
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

/* Whether node n is a span (instants and counters are not). */
static int is_span(const struct rp_node *n)
{
    return n->kind != RP_KIND_INSTANT && n->kind != RP_KIND_COUNTER;
}

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

    /* Instants and counters are nodes without spans: the report does not
     * list them, so they get no standing (and rank after every span). */
    double rest = 0.0;
    for (uint32_t i = 1; i < n; i++)
        rest += is_span(&p->nodes[i]) ? pi[i] : 0.0;
    for (uint32_t i = 0; i < n; i++) {
        struct rp_node *nd = &p->nodes[i];
        if (i == 0) {
            nd->standing = 0.0;
            nd->involvement = 1.0;
            nd->rank = 0;
            continue;
        }
        int span = is_span(nd);
        nd->standing = span && rest > 0.0 ? pi[i] / rest : 0.0;
        nd->involvement = span && pi[0] > 0.0 ? pi[i] / pi[0] : 0.0;
        keys[i - 1].pi = span ? pi[i] : -1.0;
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
