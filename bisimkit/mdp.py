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
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import InputError
from .fields import check_finite, check_keys, format_index, to_float_array, validate_discount
from .files import atomic_write, atomic_write_bytes
from .kernels import DenseRows, on_small_path
from .roundoff import MDPRoundOff, policy_average, row_defects

if TYPE_CHECKING:
    import scipy.sparse as sp

#: Rows of ``transitions`` and ``policy`` may be off by this much (and entries
#: this negative) before they are rejected; accepted rows are then cleaned.
ROW_TOLERANCE = 1e-9

FIELDS = ("transitions", "rewards", "policy", "discount", "action_values", "state_shape", "name", "initial_state")
REQUIRED = ("transitions", "rewards", "discount")


@dataclass(frozen=True, eq=False)
class FiniteMDP:
    """A validated finite MDP (``docs/operators.md``).

    Arrays are converted to float64; rows of ``transitions`` and ``policy`` that
    are within :data:`ROW_TOLERANCE` of a distribution are clipped at zero and
    renormalised, anything further off is rejected.
    """

    transitions: np.ndarray
    rewards: np.ndarray
    discount: float
    policy: np.ndarray | None = None
    action_values: np.ndarray | None = None
    state_shape: tuple[int, ...] | None = None
    name: str | None = None
    initial_state: int | None = None

    def __post_init__(self) -> None:
        P = _validate_transitions(self.transitions)
        n, m = P.shape[0], P.shape[1]
        R = _validate_matrix("rewards", self.rewards, (n, m), ("s", "a"))
        c = validate_discount(self.discount)
        pi = None if self.policy is None else _validate_policy(self.policy, n, m)
        if self.action_values is None:
            av = np.eye(m)
        else:
            av = _validate_action_values(self.action_values, m)
        shape = None if self.state_shape is None else _validate_state_shape(self.state_shape, n)
        if self.name is not None and not isinstance(self.name, str):
            raise InputError(f"name: expected a string, got {type(self.name).__name__}")
        initial = None if self.initial_state is None else _validate_initial_state(self.initial_state, n)
        object.__setattr__(self, "initial_state", initial)
        for field, value in (("transitions", P), ("rewards", R), ("discount", c),
                             ("policy", pi), ("action_values", av), ("state_shape", shape)):
            object.__setattr__(self, field, value)
        for array in (P, R, pi, av):
            if array is not None:
                array.setflags(write=False)

    # ----------------------------------------------------------------- sizes
    @property
    def n_states(self) -> int:
        """Number of states n."""
        return int(self.transitions.shape[0])

    @property
    def n_actions(self) -> int:
        """Number of actions m."""
        return int(self.transitions.shape[1])

    @property
    def label(self) -> str:
        """The MDP's name, or a description of its size."""
        return self.name or f"mdp[n={self.n_states}, m={self.n_actions}]"

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
        return policy_average(self.require_policy("the policy-averaged reward"), self.rewards)

    @cached_property
    def transition_pi(self) -> np.ndarray:
        """``Ppi[s] = sum_a pi[s,a] P[s,a]`` (n x n), rows cleaned to sum to 1 (how far each row may be from the
        exact mixture: :func:`bisimkit.roundoff.mixture_errors`)."""
        pi = self.require_policy("the policy-averaged transition")
        Ppi = np.einsum("sa,sat->st", pi, self.transitions)
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
        return tuple(np.column_stack([p[i] for p in parts]) for i in range(3))

    @cached_property
    def roundoff(self) -> MDPRoundOff:
        """The round-off bounds of what the operators read from this MDP (:class:`bisimkit.roundoff.MDPRoundOff`)."""
        return MDPRoundOff(self)

    @property
    def transition_rows(self) -> sp.csr_matrix | DenseRows:
        """P as a sparse (n*m) x n matrix; row ``s*m + a`` is ``P[s, a]`` (on the small-problem path,
        :mod:`bisimkit.kernels`, the same rows as numpy :class:`~bisimkit.kernels.DenseRows`)."""
        if on_small_path():
            return DenseRows(self.transitions)
        return self._sparse_rows

    @property
    def transition_pi_rows(self) -> sp.csr_matrix | DenseRows:
        """Ppi as a sparse n x n matrix (numpy :class:`~bisimkit.kernels.DenseRows` on the small-problem path)."""
        if on_small_path():
            return DenseRows(self.transition_pi)
        return self._sparse_pi_rows

    @cached_property
    def _sparse_rows(self) -> sp.csr_matrix:
        import scipy.sparse as sp  # start-up cost: a small problem's solve runs without scipy.sparse

        return sp.csr_matrix(self.transitions.reshape(-1, self.n_states))

    @cached_property
    def _sparse_pi_rows(self) -> sp.csr_matrix:
        import scipy.sparse as sp  # start-up cost: a small problem's solve runs without scipy.sparse

        return sp.csr_matrix(self.transition_pi)

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
        return FiniteMDP(self.transitions, self.rewards, self.discount, policy,
                         self.action_values, self.state_shape, self.name, self.initial_state)


# --------------------------------------------------------------- validation
def _validate_transitions(value: Any) -> np.ndarray:
    P = to_float_array("transitions", value)
    if P.ndim != 3:
        raise InputError(f"transitions: expected a 3-D array of shape (n, m, n), got shape {P.shape}")
    n, m, n2 = P.shape
    if n == 0 or m == 0:
        raise InputError(f"transitions: need at least one state and one action, got shape {P.shape}")
    if n2 != n:
        raise InputError(f"transitions: shape {P.shape} must be (n, m, n); "
                         f"the last axis has {n2} entries but there are {n} states")
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
        raise InputError(f"{field}[{format_index(names[:-1], idx)}] sums to {sums[idx]:.12g}, "
                         f"not 1 (tolerance {ROW_TOLERANCE:g})")
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
        raise InputError(f"state_shape: the product of {dims} is {math.prod(dims)}, "
                         f"but there are {n} states")
    return tuple(dims)


# ------------------------------------------------------------------- files
def mdp_from_dict(data: Any, source: str = "input") -> FiniteMDP:
    """Build a validated MDP from the file format's JSON object (a dict; docs/cli.md)."""
    if not isinstance(data, dict):
        raise InputError(f"{source}: expected a JSON object with fields {', '.join(REQUIRED)}, "
                         f"got {type(data).__name__}")
    check_keys(data, FIELDS, REQUIRED, source)
    name = data.get("name")
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


def load_mdp(path: str | os.PathLike) -> FiniteMDP:
    """Load and validate an MDP from a ``.json`` or ``.npz`` file."""
    path = Path(path)
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
                    raise InputError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
        elif suffix == ".npz":
            try:
                with np.load(path, allow_pickle=False) as npz:
                    data = {key: npz[key] for key in npz.files}
            except (zipfile.BadZipFile, ValueError, EOFError, OSError) as exc:
                raise InputError(f"{path}: cannot read as .npz ({exc})") from None
        else:
            raise InputError(f"{path}: unsupported file type '{path.suffix}' (use .json or .npz)")
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
        np.savez_compressed(fh, **arrays)

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
