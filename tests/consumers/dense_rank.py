# SPDX-License-Identifier: MIT
"""dense_rank.py - the ranking's stationary distribution by a dense solve,
independent of rankprof's solver (docs/design.md §6), for the e2e tests.

    pi, the standing vector (ROOT = index 0, sum 1), of
    P = (1 - alpha) Q + alpha 1 e_ROOT^T (the walk restarts at ROOT), where
    row i of Q splits
    stop[i] + sum of i's edge weights between its callees and ROOT (its
    stop weight: finished); a row with no weight restarts at ROOT.
"""


def solve(N, alpha, stop, edges):
    """pi for N nodes; stop[i] the stop weight of node i, edges a list of
    (caller, callee, weight).  Gaussian elimination with partial pivoting
    on (P^T - I) pi = 0, the last row replaced by sum pi = 1."""
    tot = list(stop)
    for a, b, w in edges:
        tot[a] += w
    Q = [[0.0] * N for _ in range(N)]
    for a, b, w in edges:
        if tot[a] > 0:
            Q[a][b] += w / tot[a]
    for i in range(N):
        if tot[i] == 0:
            Q[i][0] = 1.0
        elif i:
            Q[i][0] += stop[i] / tot[i]
    A = [[(1 - alpha) * Q[i][j] + (alpha if j == 0 else 0.0) - (i == j) for i in range(N)] + [0.0]
         for j in range(N)]
    A[N - 1] = [1.0] * (N + 1)
    for c in range(N):
        p = max(range(c, N), key=lambda k: abs(A[k][c]))
        A[c], A[p] = A[p], A[c]
        for k in range(N):
            if k != c and A[k][c]:
                f = A[k][c] / A[c][c]
                A[k] = [a - f * b for a, b in zip(A[k], A[c])]
    return [A[i][N] / A[i][i] for i in range(N)]
