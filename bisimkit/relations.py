"""The largest bisimulation relations, by partition refinement.

Each relation is computed exactly from the MDP, never by thresholding a metric:
start from one block and split blocks until every state in a block has the
same signature under the current partition.

* ``bisim`` (Ferns): for every action a, equal R(., a) and equal class masses of P(., a).
* ``pi`` (Castro): equal Rpi and equal class masses of Ppi.
* ``psm``: equal mean action abar and equal class masses of Ppi (the zero set of d_psm).
* ``eps`` (paper Def. 4.3): for every (a, a') in the support of the entangled
  coupling of pi(s) and pi(t), G(s,a,t,a') = 0 and P(s,a), P(t,a') have equal
  class masses. With one shared uniform U picking both actions, this holds iff
  the step functions ``U -> (G-class, class masses)(s, a_s(U))`` of the two
  states agree for almost every U, which gives each state a signature.

Real numbers (rewards, masses, quantile breakpoints) are compared with an
absolute tolerance ``atol`` (default :data:`RELATION_ATOL`, 1e-9) by single-linkage clustering.
"""

from __future__ import annotations

import numpy as np

from .errors import InputError
from .ground import Ground
from .kernels import DenseRows, components, on_small_path
from .mdp import FiniteMDP

#: Absolute tolerance below which two reals (rewards, masses, breakpoints) count as equal when blocks are
#: refined; :mod:`bisimkit.quotient` finds its blocks with the same one.
RELATION_ATOL = 1e-9



def cluster_values(values: np.ndarray, atol: float) -> np.ndarray:
    """Integer ids grouping 1-D ``values`` whose sorted neighbours differ by <= atol."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(values, kind="stable")
    jumps = np.diff(values[order]) > atol
    ids_sorted = np.concatenate([[0], np.cumsum(jumps)])
    ids = np.empty_like(ids_sorted)
    ids[order] = ids_sorted
    return ids


def cluster_rows(X: np.ndarray, atol: float) -> np.ndarray:
    """Integer ids of the rows of ``X``, rows equal when every column clusters together."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.shape[1] == 0:
        return np.zeros(X.shape[0], dtype=np.int64)
    cols = np.column_stack([cluster_values(X[:, k], atol) for k in range(X.shape[1])])
    return row_ids(cols)


def row_ids(X: np.ndarray) -> np.ndarray:
    """Integer ids 0, 1, ... of the rows of the integer matrix ``X``, equal exactly when the rows are equal.

    Rows are grouped by a fixed random linear hash (wrapping uint64 arithmetic) and every
    row is then compared with its group's first row; only if a hash collision joined
    different rows does it fall back to ``np.unique(X, axis=0)`` (the same partition,
    but a lexicographic sort of whole rows: seconds on the n*m x k matrices of n = 1000).
    """
    X = np.ascontiguousarray(X, dtype=np.int64)
    if X.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    weights = np.random.default_rng(20240518).integers(1, 2**63, size=X.shape[1], dtype=np.int64)
    h = X.view(np.uint64) @ weights.view(np.uint64)
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if np.array_equal(X, X[first[inverse]]):
        return inverse
    return np.unique(X, axis=0, return_inverse=True)[1].ravel()


def canonical(labels: np.ndarray) -> np.ndarray:
    """Relabel blocks 0, 1, ... in order of their smallest state."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first))
    return rank[inverse.ravel()]


def blocks(labels: np.ndarray) -> list[list[int]]:
    """Blocks of a labelling as sorted lists of states, ordered by smallest state."""
    labels = canonical(np.asarray(labels))
    out: list[list[int]] = [[] for _ in range(int(labels.max(initial=-1)) + 1)]
    for s, b in enumerate(labels.tolist()):
        out[b].append(s)
    return out


def _class_masses(P: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mass each row of P puts on each block: rows x blocks."""
    k = int(labels.max()) + 1
    onehot = np.zeros((len(labels), k))
    onehot[np.arange(len(labels)), labels] = 1.0
    if isinstance(P, DenseRows):  # the small-problem path (bisimkit.kernels): numpy only
        return P.toarray() @ onehot
    import scipy.sparse as sp  # start-up cost: a small problem's solve runs without scipy.sparse

    return np.asarray(sp.csr_matrix(P) @ onehot)


def zero_components(adjacent: np.ndarray) -> np.ndarray:
    """Component labels of the undirected graph of the boolean matrix ``adjacent``: scipy's
    ``connected_components``, or on the small-problem path :func:`bisimkit.kernels.components`."""
    if on_small_path():
        return components(adjacent)
    # start-up cost: scipy.sparse.csgraph loads in ~0.3 s, which a small problem's solve does without
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    return connected_components(sp.csr_matrix(adjacent), directed=False)[1]


def _refine(n: int, signature) -> np.ndarray:
    labels = np.zeros(n, dtype=np.int64)
    while True:
        sig = signature(labels)
        new = row_ids(np.column_stack([labels, sig]))
        if new.max() == labels.max():
            return canonical(labels)
        if new.max() + 1 == n:  # all singletons: nothing left to split
            return canonical(new)
        labels = new


def _policy_averaged_labels(mdp: FiniteMDP, initial: np.ndarray, atol: float) -> np.ndarray:
    """Refine ``initial`` until equal class masses of Ppi hold inside blocks."""
    Ppi = mdp.transition_pi_rows

    def signature(labels):
        return np.column_stack([initial, cluster_rows(_class_masses(Ppi, labels), atol)])

    return _refine(mdp.n_states, signature)


def pi_relation_labels(mdp: FiniteMDP, atol: float = RELATION_ATOL) -> np.ndarray:
    """Block labels of the largest pi-bisimulation relation E_pi."""
    return _policy_averaged_labels(mdp, cluster_values(mdp.reward_pi, atol), atol)


def psm_relation_labels(mdp: FiniteMDP, atol: float = RELATION_ATOL) -> np.ndarray:
    """Block labels of the largest relation with equal mean actions and equal class masses of Ppi."""
    return _policy_averaged_labels(mdp, cluster_rows(mdp.mean_action, atol), atol)


def bisim_relation_labels(mdp: FiniteMDP, atol: float = RELATION_ATOL) -> np.ndarray:
    """Block labels of the largest (Ferns) bisimulation relation E_bisim."""
    n = mdp.n_states
    reward = cluster_rows(mdp.rewards, atol)
    P = mdp.transition_rows

    def signature(labels):
        masses = _class_masses(P, labels).reshape(n, -1)
        return np.column_stack([reward, cluster_rows(masses, atol)])

    return _refine(n, signature)


def ground_classes(mdp: FiniteMDP, ground: Ground, atol: float = RELATION_ATOL) -> np.ndarray:
    """Zero-set classes of G on state-action pairs: an (n, m) array of ids."""
    n, m = mdp.n_states, mdp.n_actions
    if isinstance(ground, str):
        if ground == "reward":
            return cluster_values(mdp.rewards.ravel(), atol).reshape(n, m)
        if ground == "policy":
            return np.repeat(cluster_rows(mdp.mean_action, atol)[:, None], m, axis=1)
        raise InputError(f"unknown ground metric '{ground}'", param="ground")
    return zero_components(np.asarray(ground) <= atol).reshape(n, m)


def eps_relation_labels(mdp: FiniteMDP, ground: Ground = "reward", atol: float = RELATION_ATOL,
                        reading: str = "class-mass") -> np.ndarray:
    """Block labels of the largest entangled bisimulation relation E_eps.

    ``reading="class-mass"`` (the default, docs/relations.md): P(s,a) and P(t,a') have equal masses on
    every block; ``reading="literal"``: P(s,a) = P(t,a') exactly.
    """
    if reading not in ("class-mass", "literal"):
        raise ValueError(f"unknown reading '{reading}'")
    n, m = mdp.n_states, mdp.n_actions
    pi = mdp.require_policy("the eps relation")
    gclass = ground_classes(mdp, ground, atol)
    P = mdp.transition_rows
    cums = np.cumsum(pi, axis=1)
    cums[:, -1] = 1.0
    live = pi > atol * 1e-3
    bp = cluster_values(cums[live], atol)
    bp_id = np.full((n, m), -1, dtype=np.int64)
    bp_id[live] = bp

    def signature(labels):
        masses = cluster_rows(_class_masses(P, labels), atol).reshape(n, m)
        action_label = np.unique(np.column_stack([gclass.ravel(), masses.ravel()]), axis=0,
                                 return_inverse=True)[1].reshape(n, m)
        sigs: dict[tuple, int] = {}
        out = np.empty(n, dtype=np.int64)
        for s in range(n):
            steps: list[tuple[int, int]] = []
            for a in np.nonzero(live[s])[0]:
                lab = int(action_label[s, a])
                if steps and steps[-1][1] == lab:
                    steps[-1] = (int(bp_id[s, a]), lab)  # extend the previous step
                else:
                    steps.append((int(bp_id[s, a]), lab))
            out[s] = sigs.setdefault(tuple(steps), len(sigs))
        return out

    if reading == "literal":  # class masses over singletons are the laws themselves
        return canonical(signature(np.arange(n)))
    return _refine(n, signature)


def relation_labels(mdp: FiniteMDP, kind: str, ground: Ground = "reward", atol: float = RELATION_ATOL) -> np.ndarray:
    """Block labels of the largest relation of ``kind`` (bisim, pi, psm or eps)."""
    refine = RELATIONS.get(kind) if isinstance(kind, str) else None
    if refine is None:
        raise InputError(f"unknown relation '{kind}' (choose from {', '.join(RELATION_KINDS)})", param="kind")
    return refine(mdp, ground, atol)


#: Each relation's partition refinement, by kind (the ground matters for eps only).
RELATIONS = {
    "bisim": lambda mdp, ground, atol: bisim_relation_labels(mdp, atol),
    "pi": lambda mdp, ground, atol: pi_relation_labels(mdp, atol),
    "psm": lambda mdp, ground, atol: psm_relation_labels(mdp, atol),
    "eps": lambda mdp, ground, atol: eps_relation_labels(mdp, ground, atol),
}


RELATION_KINDS = tuple(RELATIONS)


def relation_blocks(mdp: FiniteMDP, kind: str, ground: Ground = "reward",
                    atol: float = RELATION_ATOL) -> list[list[int]]:
    """The largest relation of ``kind`` as blocks (sorted lists of states)."""
    return blocks(relation_labels(mdp, kind, ground, atol))


def zero_set_labels(d: np.ndarray, atol: float = 1e-7) -> np.ndarray:
    """Blocks of the zero set of a distance matrix: components of ``d <= atol``."""
    d = np.asarray(d)
    return canonical(zero_components(d <= atol))
