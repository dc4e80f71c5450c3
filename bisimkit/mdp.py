"""Finite MDPs: the model, its validation, and the JSON / ``.npz`` file format.

A :class:`FiniteMDP` holds ``transitions`` P (n x m x n), ``rewards`` R (n x m),
an optional ``policy`` pi (n x m), a ``discount`` c in [0, 1), optional
``action_values`` (m x k, default the m x m identity) and an optional
``state_shape`` (states are the C-order cells of a grid of that shape) and an optional
``initial_state`` (the state an episode starts in).

Every construction validates its input. Bad input raises
:class:`~bisimkit.errors.InputError` whose message names the field and the
state / action index, e.g. ``transitions[s=3, a=1] sums to 0.98, not 1``.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .errors import InputError
from .fields import ROW_TOLERANCE, check_finite, check_keys, format_index, to_float_array, validate_discount
from .files import atomic_write, atomic_write_bytes
from .kernels import DenseRows, on_small_path
from .roundoff import MDPRoundOff, policy_average, row_defects

if TYPE_CHECKING:
    import scipy.sparse as sp

    from .model_files import ModelData


FIELDS = ("transitions", "rewards", "policy", "discount", "action_values", "state_shape", "name", "initial_state")
REQUIRED = ("transitions", "rewards", "discount")


#: A sparse model's dense views (``transitions``, ``transition_pi``) are built on demand up to this many
#: entries (about 160 MB); past it they are refused, naming the field: the solvers read the sparse rows.
DENSE_VIEW_CELLS = 20_000_000


class FiniteMDP:
    """A validated finite MDP (``docs/operators.md``).

    ``transitions`` is a dense (n, m, n) array, or a sparse matrix (any ``scipy.sparse`` format) of shape
    (n m, n) whose row ``s m + a`` is ``P(s, a)``: a model from a model checker (:mod:`bisimkit.models`)
    is held sparse from the file to the solver, in memory proportional to its transitions. Arrays are
    converted to float64; rows of ``transitions`` and ``policy`` that are within :data:`ROW_TOLERANCE`
    of a distribution are clipped at zero and renormalised, anything further off is rejected.
    ``labels``, optional, are each state's atomic propositions (a sequence of n sets of names), for the
    distances of labelled Markov chains. Instances are read-only and compare by identity.
    """

    # the fields, set once by __init__ (the instance is read-only)
    _transitions: np.ndarray | None
    _rows: sp.csr_matrix | None
    rewards: np.ndarray
    discount: float
    policy: np.ndarray | None
    action_values: np.ndarray
    state_shape: tuple[int, ...] | None
    name: str | None
    initial_state: int | None
    labels: tuple[frozenset, ...] | None

    __slots__ = (
        "_transitions",
        "_rows",
        "rewards",
        "discount",
        "policy",
        "action_values",
        "state_shape",
        "name",
        "initial_state",
        "labels",
        "__dict__",
    )

    def __init__(
        self,
        transitions,
        rewards,
        discount,
        policy=None,
        action_values=None,
        state_shape=None,
        name: str | None = None,
        initial_state=None,
        labels=None,
    ) -> None:
        set_ = object.__setattr__
        if _is_sparse(transitions):
            rows = _validate_sparse_transitions(transitions, rewards)
            n, m = rows.shape[1], rows.shape[0] // max(rows.shape[1], 1)
            set_(self, "_transitions", None)
            set_(self, "_rows", rows)
        else:
            P = _validate_transitions(transitions)
            n, m = P.shape[0], P.shape[1]
            P.setflags(write=False)
            set_(self, "_transitions", P)
            set_(self, "_rows", None)
        R = _validate_matrix("rewards", rewards, (n, m), ("s", "a"))
        c = validate_discount(discount)
        pi = None if policy is None else _validate_policy(policy, n, m)
        av = np.eye(m) if action_values is None else _validate_action_values(action_values, m)
        shape = None if state_shape is None else _validate_state_shape(state_shape, n)
        if name is not None and not isinstance(name, str):
            raise InputError(f"name: expected a string, got {type(name).__name__}")
        initial = None if initial_state is None else _validate_initial_state(initial_state, n)
        for field, value in (
            ("rewards", R),
            ("discount", c),
            ("policy", pi),
            ("action_values", av),
            ("state_shape", shape),
            ("name", name),
            ("initial_state", initial),
            ("labels", None if labels is None else _validate_labels(labels, n)),
        ):
            set_(self, field, value)
        for array in (R, pi, av):
            if array is not None:
                array.setflags(write=False)

    @classmethod
    def from_valid_parts(
        cls,
        rows: sp.csr_matrix,
        rewards: np.ndarray,
        discount: float,
        policy: np.ndarray | None,
        action_values: np.ndarray,
        name: str | None = None,
    ) -> FiniteMDP:
        """A sparse model from parts taken as they are, without validation: ``rows`` in the form validation
        gives any sparse transitions (CSR (n m) x n, ascending columns, no repeated or zero entry,
        non-negative masses, each row divided by its sum), and rewards, discount, policy and action values
        of a validated model (the policy and reward rows of some of its states). For models a kernel builds
        from a validated one in that form: the quotient's (:mod:`bisimkit.quotient`)."""
        self = object.__new__(cls)
        set_ = object.__setattr__
        rows.data.setflags(write=False)
        for field, value in (
            ("_transitions", None),
            ("_rows", rows),
            ("rewards", rewards),
            ("discount", float(discount)),
            ("policy", policy),
            ("action_values", action_values),
            ("state_shape", None),
            ("name", name),
            ("initial_state", None),
            ("labels", None),
        ):
            set_(self, field, value)
        for array in (rewards, policy, action_values):
            if array is not None:
                array.setflags(write=False)
        return self

    def __setattr__(self, name, value) -> None:
        raise AttributeError(f"FiniteMDP is read-only: cannot set {name}")

    def __repr__(self) -> str:
        held = "sparse" if self._transitions is None else "dense"
        return (
            f"FiniteMDP({self.label}: {self.n_states} states, {self.n_actions} actions, c={self.discount:g}, "
            f"{held} transitions{', policy' if self.policy is not None else ''})"
        )

    # ----------------------------------------------------------------- sizes
    @property
    def n_states(self) -> int:
        """Number of states n."""
        return int(self.rewards.shape[0])

    @property
    def n_actions(self) -> int:
        """Number of actions m."""
        return int(self.rewards.shape[1])

    @property
    def label(self) -> str:
        """The MDP's name, or a description of its size."""
        return self.name or f"mdp[n={self.n_states}, m={self.n_actions}]"

    @property
    def sparse(self) -> bool:
        """Whether the transitions are held sparse (built from a sparse matrix)."""
        return self._transitions is None

    @cached_property
    def supports(self) -> np.ndarray:
        """The number of successors of every ``P(s, a)`` (n x m)."""
        if self._transitions is not None:
            # one action at a time: a boolean copy of all transitions would be a large allocation
            return np.stack(
                [np.count_nonzero(self._transitions[:, a, :], axis=1) for a in range(self.n_actions)], axis=1
            )
        assert self._rows is not None  # a model holds dense or sparse transitions
        return np.diff(self._rows.indptr).reshape(self.n_states, self.n_actions)

    @property
    def transitions(self) -> np.ndarray:
        """P as a dense (n, m, n) array (read-only). A sparse model builds it on demand up to
        :data:`DENSE_VIEW_CELLS` entries and refuses past that, naming the size."""
        if self._transitions is None:
            return self._dense_transitions
        return self._transitions

    @cached_property
    def _dense_transitions(self) -> np.ndarray:
        n, m = self.n_states, self.n_actions
        assert self._rows is not None  # built for sparse models only
        _check_dense_view("transitions", n * m * n, self._rows.nnz, n)
        P = self._rows.toarray().reshape(n, m, n)
        P.setflags(write=False)
        return P

    # ------------------------------------------- derived (docs/operators.md)
    def require_policy(self, purpose: str) -> np.ndarray:
        """Return the policy, or raise a clear error naming ``purpose``."""
        if self.policy is None:
            raise InputError(f"policy: {purpose} needs a policy, and this MDP has none")
        return self.policy

    @property
    def reward_pi(self) -> np.ndarray:
        """``Rpi[s] = sum_a pi[s,a] R[s,a]`` (n,), in twice the working precision and rounded once
        (:func:`bisimkit.roundoff.policy_average`)."""
        return self._reward_pi[0]

    @property
    def reward_pi_error(self) -> np.ndarray:
        """A bound on ``|reward_pi[s] - exact Rpi(s)|`` for every state (:mod:`bisimkit.roundoff`)."""
        _, rest, bound = self._reward_pi
        return np.abs(rest) + bound

    @cached_property
    def _reward_pi(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pi = self.require_policy("the policy-averaged reward")
        if self.n_actions == 1:  # a validated policy of one action is 1.0 everywhere: Rpi = R, exactly
            zeros = np.zeros(self.n_states)
            return self.rewards[:, 0], zeros, zeros
        return policy_average(pi, self.rewards)

    @cached_property
    def transition_pi(self) -> np.ndarray:
        """``Ppi[s] = sum_a pi[s,a] P[s,a]`` (n x n), rows cleaned to sum to 1 (how far each row may be from the
        exact mixture: :func:`bisimkit.roundoff.mixture_errors`). A sparse model builds it from
        :attr:`transition_pi_rows`, up to :data:`DENSE_VIEW_CELLS` entries."""
        pi = self.require_policy("the policy-averaged transition")
        if self._transitions is None:
            n = self.n_states
            _check_dense_view("transition_pi", n * n, self._sparse_pi_rows.nnz, n)
            return self._sparse_pi_rows.toarray()
        Ppi = np.einsum("sa,sat->st", pi, self._transitions)
        return _clean_rows(Ppi)

    @property
    def mean_action(self) -> np.ndarray:
        """``abar[s] = sum_a pi[s,a] action_values[a]`` (n x k), each coordinate in twice the working
        precision and rounded once (:func:`bisimkit.roundoff.policy_average`)."""
        return self._mean_action[0]

    @property
    def mean_action_error(self) -> np.ndarray:
        """A bound on ``||mean_action[s] - exact abar(s)||_1`` for every state (:mod:`bisimkit.roundoff`)."""
        _, rest, bound = self._mean_action
        return (np.abs(rest) + bound).sum(axis=1)

    @cached_property
    def _mean_action(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pi = self.require_policy("the mean action")
        defect = row_defects(pi)
        if np.array_equal(self.action_values, np.eye(self.n_actions)):
            # one-hot actions: abar(s) is pi(s) itself, exactly, up to the row's normalisation
            bound = np.abs(pi) * (defect / np.maximum(1.0 - defect, 0.5))[:, None] * (1 + 4 * np.finfo(float).eps)
            return np.array(pi), np.zeros_like(pi), bound
        parts = [policy_average(pi, self.action_values[None, :, k], defect) for k in range(self.action_values.shape[1])]
        return cast(
            "tuple[np.ndarray, np.ndarray, np.ndarray]", tuple(np.column_stack([p[i] for p in parts]) for i in range(3))
        )

    @cached_property
    def roundoff(self) -> MDPRoundOff:
        """The round-off bounds of what the operators read from this MDP (:class:`bisimkit.roundoff.MDPRoundOff`)."""
        return MDPRoundOff(self)

    @property
    def transition_rows(self) -> sp.csr_matrix | DenseRows:
        """P as a sparse (n*m) x n matrix; row ``s*m + a`` is ``P[s, a]`` (on the small-problem path,
        :mod:`bisimkit.kernels`, the same rows as numpy :class:`~bisimkit.kernels.DenseRows`)."""
        if on_small_path() and self._transitions is not None:
            return DenseRows(self._transitions)
        return self._sparse_rows

    @property
    def transition_pi_rows(self) -> sp.csr_matrix | DenseRows:
        """Ppi as a sparse n x n matrix (numpy :class:`~bisimkit.kernels.DenseRows` on the small-problem path)."""
        if on_small_path() and self._transitions is not None:
            return DenseRows(self.transition_pi)
        return self._sparse_pi_rows

    @cached_property
    def _sparse_rows(self) -> sp.csr_matrix:
        if self._rows is not None:
            return self._rows
        import scipy.sparse as sp  # start-up cost: a small problem's solve runs without scipy.sparse

        assert self._transitions is not None  # a model holds dense or sparse transitions
        return sp.csr_matrix(self._transitions.reshape(-1, self.n_states))

    @cached_property
    def _sparse_pi_rows(self) -> sp.csr_matrix:
        import scipy.sparse as sp  # start-up cost: a small problem's solve runs without scipy.sparse

        if self._transitions is not None:
            return sp.csr_matrix(self.transition_pi)
        # the mixture sum_a pi(s, a) P(s, a): rows s*m .. s*m + m - 1 lie together in the CSR rows, so state s's
        # entries, each weighted by pi(s, a), are one row with repeated columns (summed), then clipped at zero
        # and divided by the row sums
        pi = self.require_policy("the policy-averaged transition")
        n, m = self.n_states, self.n_actions
        rows = self._rows
        assert rows is not None  # a model holds dense or sparse transitions
        if m == 1:  # a chain: its one row per state is the mixture (weight 1.0), already validated
            return rows
        weights = np.repeat(pi.reshape(-1), np.diff(rows.indptr)) * rows.data
        mixture = sp.csr_matrix((weights, rows.indices.copy(), rows.indptr[::m].copy()), shape=(n, n))
        mixture.sum_duplicates()
        np.clip(mixture.data, 0.0, None, out=mixture.data)
        mixture.eliminate_zeros()
        lengths = np.diff(mixture.indptr)
        totals = np.bincount(np.repeat(np.arange(n), lengths), weights=mixture.data, minlength=n)
        mixture.data /= np.repeat(totals, lengths)
        return mixture

    # ---------------------------------------------------------- conversion
    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the MDP file format (lists of numbers), omitting unset optional fields."""
        out: dict[str, Any] = {}
        if self.name is not None:
            out["name"] = self.name
        out["transitions"] = self.transitions.tolist()
        out["rewards"] = self.rewards.tolist()
        if self.policy is not None:
            out["policy"] = self.policy.tolist()
        out["discount"] = float(self.discount)
        if not np.array_equal(self.action_values, np.eye(self.n_actions)):
            out["action_values"] = self.action_values.tolist()
        if self.state_shape is not None:
            out["state_shape"] = list(self.state_shape)
        if self.initial_state is not None:
            out["initial_state"] = self.initial_state
        return out

    def with_policy(self, policy: np.ndarray | None) -> "FiniteMDP":
        """A copy of this MDP with another policy (validated)."""
        held = self._rows if self._transitions is None else self._transitions
        return FiniteMDP(
            held,
            self.rewards,
            self.discount,
            policy,
            self.action_values,
            self.state_shape,
            self.name,
            self.initial_state,
            self.labels,
        )

    def label_classes(self) -> np.ndarray:
        """One integer per state, equal exactly when two states carry the same set of labels (an InputError
        naming ``labels`` when the MDP has none)."""
        if self.labels is None:
            raise InputError(
                "labels: this MDP carries no labels (read a model file with its labels, or pass "
                "labels=[set of names per state])"
            )
        ids: dict[frozenset, int] = {}
        return np.array([ids.setdefault(labels, len(ids)) for labels in self.labels], dtype=np.int64)


# --------------------------------------------------------------- validation
def _is_sparse(value: Any) -> bool:
    return type(value).__module__.startswith("scipy.sparse")


def _check_dense_view(field: str, cells: int, nnz: int, n: int) -> None:
    if cells > DENSE_VIEW_CELLS:
        raise InputError(
            f"{field}: this MDP holds its {nnz:,} transitions sparse over {n:,} states; the dense array "
            f"would take {8 * cells / 2**30:.1f} GiB (the solvers read the sparse rows: "
            f"transition_rows)"
        )


def _validate_sparse_transitions(value: Any, rewards: Any) -> sp.csr_matrix:
    """A sparse (n m) x n transition matrix, checked like a dense one (finite, non-negative within
    :data:`ROW_TOLERANCE`, rows summing to 1 within it) and cleaned: CSR, sorted, no explicit zeros, rows
    renormalised."""
    import scipy.sparse as sp  # a sparse model brought scipy along already

    X = sp.csr_matrix(value, dtype=np.float64)
    rows, n = X.shape
    R = np.asarray(rewards)
    m = int(R.shape[1]) if R.ndim == 2 and R.shape[0] == n else (rows // n if n else 0)
    if n == 0 or m == 0 or rows != n * m:
        raise InputError(
            f"transitions: a sparse transition matrix has shape (n*m, n): row s*m + a is P(s, a); got "
            f"{X.shape}, with rewards of shape {R.shape}"
        )
    X.sum_duplicates()
    X.sort_indices()
    bad = np.nonzero(~np.isfinite(X.data))[0]
    if len(bad):
        row = int(np.searchsorted(X.indptr, bad[0], side="right") - 1)
        raise InputError(f"transitions[s={row // m}, a={row % m}, s'={X.indices[bad[0]]}] is not finite")
    neg = np.nonzero(X.data < -ROW_TOLERANCE)[0]
    if len(neg):
        row = int(np.searchsorted(X.indptr, neg[0], side="right") - 1)
        raise InputError(
            f"transitions[s={row // m}, a={row % m}, s'={X.indices[neg[0]]}] = {X.data[neg[0]]:.6g} is negative"
        )
    X.data = np.clip(X.data, 0.0, None)
    X.eliminate_zeros()
    sums = np.asarray(X.sum(axis=1)).ravel()
    off = np.nonzero(np.abs(sums - 1.0) > ROW_TOLERANCE)[0]
    if len(off):
        row = int(off[0])
        raise InputError(
            f"transitions[s={row // m}, a={row % m}] sums to {sums[row]:.12g}, not 1 (tolerance {ROW_TOLERANCE:g})"
        )
    X.data = X.data / np.repeat(sums, np.diff(X.indptr))
    X.data.setflags(write=False)
    return X


def _validate_labels(labels: Any, n: int) -> tuple[frozenset, ...]:
    """n sets of label names (strings)."""
    try:
        out = tuple(frozenset(str(x) for x in state) for state in labels)
    except TypeError:
        raise InputError("labels: expected one collection of label names per state") from None
    if len(out) != n:
        raise InputError(f"labels: {len(out)} label sets for {n} states")
    return out


def _validate_transitions(value: Any) -> np.ndarray:
    P = to_float_array("transitions", value)
    if P.ndim != 3:
        raise InputError(f"transitions: expected a 3-D array of shape (n, m, n), got shape {P.shape}")
    n, m, n2 = P.shape
    if n == 0 or m == 0:
        raise InputError(f"transitions: need at least one state and one action, got shape {P.shape}")
    if n2 != n:
        raise InputError(
            f"transitions: shape {P.shape} must be (n, m, n); the last axis has {n2} entries but there are {n} states"
        )
    check_finite("transitions", P, ("s", "a", "s'"))
    return _check_distributions("transitions", P, ("s", "a", "s'"))


def _check_distributions(field: str, X: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    neg = np.argwhere(X < -ROW_TOLERANCE)
    if len(neg):
        idx = tuple(neg[0])
        raise InputError(f"{field}[{format_index(names, idx)}] = {X[idx]:.6g} is negative")
    sums = X.sum(axis=-1)
    off = np.argwhere(np.abs(sums - 1.0) > ROW_TOLERANCE)
    if len(off):
        idx = tuple(off[0])
        raise InputError(
            f"{field}[{format_index(names[:-1], idx)}] sums to {sums[idx]:.12g}, not 1 (tolerance {ROW_TOLERANCE:g})"
        )
    return _clean_rows(X)


def _clean_rows(X: np.ndarray) -> np.ndarray:
    """Clip at zero and renormalise the last axis so each row sums to 1."""
    X = np.clip(X, 0.0, None)
    return X / X.sum(axis=-1, keepdims=True)


def _validate_matrix(field: str, value: Any, shape: tuple[int, ...], names: tuple[str, ...]) -> np.ndarray:
    X = to_float_array(field, value)
    if X.shape != shape:
        dims = ", ".join(names)
        raise InputError(f"{field}: expected shape ({dims}) = {shape}, got {X.shape}")
    check_finite(field, X, names)
    return X


def _validate_policy(value: Any, n: int, m: int) -> np.ndarray:
    pi = _validate_matrix("policy", value, (n, m), ("s", "a"))
    return _check_distributions("policy", pi, ("s", "a"))


def _validate_action_values(value: Any, m: int) -> np.ndarray:
    av = to_float_array("action_values", value)
    if av.ndim == 1:
        av = av[:, None]
    if av.ndim != 2 or av.shape[0] != m or av.shape[1] == 0:
        raise InputError(f"action_values: expected shape (m, k) with m = {m} actions, got {av.shape}")
    check_finite("action_values", av, ("a", "k"))
    return av


def _validate_initial_state(value: Any, n: int) -> int:
    arr = np.asarray(value)
    if arr.shape != () or arr.dtype.kind not in "iuf" or not np.isfinite(arr) or float(arr) != int(arr):
        raise InputError(f"initial_state: expected a state index (an integer), got {value!r}"[:160])
    state = int(arr)
    if not 0 <= state < n:
        raise InputError(f"initial_state: {state} is not a state (there are {n} states, 0..{n - 1})")
    return state


def _validate_state_shape(value: Any, n: int) -> tuple[int, ...]:
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iuf":
        raise InputError(f"state_shape: expected a non-empty list of positive integers, got {value!r}"[:160])
    dims = []
    for i, x in enumerate(arr.tolist()):
        if float(x) != int(x) or int(x) < 1:
            raise InputError(f"state_shape[{i}] = {x} is not a positive integer")
        dims.append(int(x))
    if math.prod(dims) != n:
        raise InputError(f"state_shape: the product of {dims} is {math.prod(dims)}, but there are {n} states")
    return tuple(dims)


# ------------------------------------------------------------------- files
def mdp_from_dict(data: Any, source: str = "input") -> FiniteMDP:
    """Build a validated MDP from the file format's JSON object (a dict; docs/cli.md)."""
    if not isinstance(data, dict):
        raise InputError(
            f"{source}: expected a JSON object with fields {', '.join(REQUIRED)}, got {type(data).__name__}"
        )
    check_keys(data, FIELDS, REQUIRED, source)
    name: Any = data.get("name")  # checked by FiniteMDP
    if isinstance(name, np.ndarray):
        name = str(name.item()) if name.shape == () else name
    return FiniteMDP(
        transitions=data["transitions"],
        rewards=data["rewards"],
        discount=data["discount"],
        policy=data.get("policy"),
        action_values=data.get("action_values"),
        state_shape=data.get("state_shape"),
        name=name,
        initial_state=data.get("initial_state"),
    )


# ----------------------------------------------------------------- as MDPs
#: The discount a model from a model checker gets when none is given (such models carry none).
MODEL_DISCOUNT = 0.9
MODEL_SUFFIXES = (".drn", ".tra")


def to_mdp(
    data: ModelData, reward: str | None = None, discount: float = MODEL_DISCOUNT, policy=None, kind: str | None = None
):
    """``data`` as a :class:`~bisimkit.mdp.FiniteMDP` with its transitions held sparse (never densified) and
    each state's labels kept (``mdp.labels``).

    Parameters
    ----------
    reward : a label (its indicator is the reward, for every action) or a reward structure
        (:meth:`ModelData.reward_matrix`; ``kind`` settles a name that is both); None gives every reward 0.
    discount : c in [0, 1) (models from a model checker carry none; default :data:`MODEL_DISCOUNT`).
    policy : a Markov chain's is its one action; an MDP has none unless given: ``"uniform"`` or an (n, m)
        array.
    """
    n, m = data.n_states, data.n_actions
    rewards = np.zeros((n, m)) if reward is None else data.reward_matrix(reward, kind)
    if isinstance(policy, str):
        if policy != "uniform":
            raise InputError(f"unknown policy {policy!r} (use 'uniform' or an (n, m) array)", param="policy")
        policy = np.full((n, m), 1.0 / m)
    elif policy is None and data.model_type == "dtmc":
        policy = np.ones((n, 1))
    ptr, idx = data._labels_by_state
    names = np.asarray(data.label_names, dtype=object)
    labels = [frozenset(names[idx[ptr[s] : ptr[s + 1]]]) for s in range(n)]
    initial = int(data.initial_states[0]) if len(data.initial_states) == 1 else None
    name = Path(data.source).name if data.source and data.source != "stormpy model" else data.source
    return FiniteMDP(
        data.transition_matrix(), rewards, discount, policy, name=name, initial_state=initial, labels=labels
    )


def load_model(
    path: str | os.PathLike,
    reward: str | None = None,
    discount: float = MODEL_DISCOUNT,
    policy=None,
    kind: str | None = None,
):
    """Read a Storm DRN file or a PRISM explicit export (:func:`bisimkit.model_files.read_model`) as a sparse
    :class:`~bisimkit.mdp.FiniteMDP` (:func:`to_mdp`)."""
    from .model_files import read_model  # start-up cost: the reader is loaded where a model file is read

    return to_mdp(read_model(path), reward, discount, policy, kind)


def from_stormpy(
    model, reward: str | None = None, discount: float = MODEL_DISCOUNT, policy=None, kind: str | None = None
):
    """A model stormpy built (from a PRISM or JANI file) as a sparse :class:`~bisimkit.mdp.FiniteMDP`
    (:func:`bisimkit.model_files.stormpy_data`, :func:`to_mdp`; the ``storm`` extra)."""
    from .model_files import stormpy_data  # start-up cost: the reader is loaded where a model is converted

    return to_mdp(stormpy_data(model), reward, discount, policy, kind)


def load_mdp(
    path: str | os.PathLike,
    reward: str | None = None,
    discount: float | None = None,
    policy=None,
    kind: str | None = None,
) -> FiniteMDP:
    """Load and validate an MDP from a ``.json`` or ``.npz`` file (the file format of ``docs/cli.md``), or a
    model from a model checker: Storm's ``.drn`` or PRISM's explicit ``.tra`` (with its ``.lab`` and
    reward files), held sparse (:func:`load_model`). ``reward`` (a label, whose
    indicator is the reward, or a reward structure), ``discount`` (default 0.9) and ``policy``
    (``"uniform"``, or an array; a Markov chain has its own) apply to model files only: an MDP file
    carries its own. ``kind`` (``"label"`` or ``"reward"``) settles a reward name that is both."""
    path = Path(path)
    if path.suffix.lower() in (".drn", ".tra"):
        return load_model(path, reward, MODEL_DISCOUNT if discount is None else discount, policy, kind)
    for value, param in ((reward, "reward"), (discount, "discount"), (policy, "policy"), (kind, "kind")):
        if value is not None:
            raise InputError(
                f"{path}: {param}= applies to model files (.drn, .tra); an MDP file carries its own "
                f"{param if param != 'reward' else 'rewards'}",
                param=param,
            )
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a .json or .npz file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            with open(path, encoding="utf-8") as fh:
                try:
                    data = json.load(fh)
                except json.JSONDecodeError as exc:
                    raise InputError(
                        f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
                    ) from None
        elif suffix == ".npz":
            try:
                with np.load(path, allow_pickle=False) as npz:
                    data = {key: npz[key] for key in npz.files}
            except (zipfile.BadZipFile, ValueError, EOFError, OSError) as exc:
                raise InputError(f"{path}: cannot read as .npz ({exc})") from None
        else:
            raise InputError(
                f"{path}: unsupported file type '{path.suffix}' (use .json or .npz, or a model file: .drn, .tra)"
            )
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    return mdp_from_dict(data, source=str(path))


def save_mdp(mdp: FiniteMDP, path: str | os.PathLike) -> Path:
    """Write ``mdp`` as ``.json`` or ``.npz`` (atomically: temp file, then rename)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".npz"):
        raise InputError(f"{path}: unsupported file type '{path.suffix}' (use .json or .npz)")
    data = mdp.to_dict()
    if suffix == ".json":
        payload = json.dumps(data).encode()
        return atomic_write_bytes(path, payload)
    arrays = {k: np.asarray(v) for k, v in data.items()}

    def write(fh):
        np.savez_compressed(fh, **arrays)  # type: ignore[arg-type]  # numpy's stub: a key could be allow_pickle

    return atomic_write(path, write)


def coordinate_independent(mdp: FiniteMDP, atol: float = 1e-12) -> bool | None:
    """Whether every P(s, a) is the product of its coordinate marginals on the
    ``state_shape`` grid (None when the MDP has no grid)."""
    if mdp.state_shape is None:
        return None
    shape = mdp.state_shape
    laws = mdp.transitions.reshape((-1,) + shape)
    product = np.ones_like(laws)
    for axis in range(len(shape)):
        others = tuple(k + 1 for k in range(len(shape)) if k != axis)
        marginal = laws.sum(axis=others, keepdims=True)
        product = product * marginal
    return bool(np.max(np.abs(product - laws)) <= atol)
