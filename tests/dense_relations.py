"""The largest relations by dense signature refinement: the reference the sparse refinement is held to.

Every round builds the n x blocks matrix of class masses (``P @ onehot``, the masses of a row summed in the
row's stored order) and clusters each column over all states by single linkage with ``atol`` (a state
without mass on a block at 0), then splits every block by the rows of column clusters, until a round
splits nothing. O(n * blocks) per round: for small MDPs only.
"""

import numpy as np
import scipy.sparse as sp

from bisimkit.relations import canonical, cluster_rows, cluster_values, ground_classes, row_ids


def class_masses(P: sp.csr_matrix, labels: np.ndarray) -> np.ndarray:
    k = int(labels.max()) + 1
    onehot = np.zeros((len(labels), k))
    onehot[np.arange(len(labels)), labels] = 1.0
    return np.asarray(sp.csr_matrix(P) @ onehot)


def refine(n: int, signature) -> np.ndarray:
    labels = np.zeros(n, dtype=np.int64)
    while True:
        new = row_ids(np.column_stack([labels, signature(labels)]))
        if new.max() == labels.max():
            return canonical(labels)
        labels = new


def policy_averaged(mdp, initial, atol):
    P = mdp.transition_pi_rows
    return refine(mdp.n_states, lambda labels: np.column_stack([initial, cluster_rows(class_masses(P, labels), atol)]))


def pi_labels(mdp, atol=1e-9):
    return policy_averaged(mdp, cluster_values(mdp.reward_pi, atol), atol)


def psm_labels(mdp, atol=1e-9):
    return policy_averaged(mdp, cluster_rows(mdp.mean_action, atol), atol)


def bisim_labels(mdp, atol=1e-9):
    n = mdp.n_states
    reward = cluster_rows(mdp.rewards, atol)
    P = mdp.transition_rows
    return refine(
        n, lambda labels: np.column_stack([reward, cluster_rows(class_masses(P, labels).reshape(n, -1), atol)])
    )


def eps_labels(mdp, ground="reward", atol=1e-9):
    n, m = mdp.n_states, mdp.n_actions
    pi = mdp.require_policy("the eps relation")
    gclass = ground_classes(mdp, ground, atol)
    P = mdp.transition_rows
    cums = np.cumsum(pi, axis=1)
    cums[:, -1] = 1.0
    live = pi > atol * 1e-3
    bp_id = np.full((n, m), -1, dtype=np.int64)
    bp_id[live] = cluster_values(cums[live], atol)

    def signature(labels):
        masses = cluster_rows(class_masses(P, labels), atol).reshape(n, m)
        action_label = np.unique(np.column_stack([gclass.ravel(), masses.ravel()]), axis=0, return_inverse=True)[
            1
        ].reshape(n, m)
        sigs: dict[tuple, int] = {}
        out = np.empty(n, dtype=np.int64)
        for s in range(n):
            steps: list[tuple[int, int]] = []
            for a in np.nonzero(live[s])[0]:
                lab = int(action_label[s, a])
                if steps and steps[-1][1] == lab:
                    steps[-1] = (int(bp_id[s, a]), lab)
                else:
                    steps.append((int(bp_id[s, a]), lab))
            out[s] = sigs.setdefault(tuple(steps), len(sigs))
        return out

    return refine(n, signature)


#: The dense reference of each relation kind.
DENSE = {
    "pi": pi_labels,
    "psm": psm_labels,
    "bisim": bisim_labels,
    "eps": lambda mdp, atol=1e-9: eps_labels(mdp, "reward", atol),
}
