"""The order of states, coordinates and actions that the entangled coupling follows.

The entangled coupling of two histograms is the north-west-corner (quantile)
coupling along an order of the atoms (``docs/couplings.md``). The operators that
use it therefore depend on how states and actions are numbered:

* ``eps-bar`` couples next states entangled, so it depends on the **state order**
  (on a grid, ``state_shape``, on the **coordinate order** of the Rosenblatt chain);
* ``eps``, ``eps-avg`` and ``eps-bar`` couple the two policies' actions entangled,
  so they depend on the **action order** (and so does the relation E_eps);
* every other operator uses optimal or independent couplings and depends on neither.

An order is applied by relabelling: the MDP is renumbered so that position ``k``
holds old state ``states[k]`` (and old action ``actions[b]``), solved in index order,
and the distances are mapped back, ``D[states[k], states[l]] = D'[k, l]``.

Orders (``solve(..., order=..., action_order=...)``, ``bisimkit solve --order``):

``"index"``
    ``0, 1, ..., n-1`` (the default, the paper's implicit choice).
``"class-contiguous"``
    the states of each E_eps class (class-mass reading, under the same ground)
    numbered consecutively: classes by their smallest state, members in index
    order. With this order every E_eps class is one block of the cumulative
    distribution, so the coupling of two E_eps-related laws stays inside classes
    and d_eps-bar vanishes on E_eps (claim C11, ``docs/claims.md``). Flat MDPs only.
a permutation
    a sequence (or a file: ``.json`` list or ``{"order": [...]}``, ``.npy``, or text
    with integers separated by spaces, commas or newlines) giving the state at each
    position. On a grid MDP it is a permutation of the **coordinates** (length
    ``len(state_shape)``): ``(1, 0)`` runs the Rosenblatt chain over the second
    coordinate first.
"""

from __future__ import annotations

import json
import numbers
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, Union

import numpy as np

from .errors import InputError
from .ground import Ground
from .mdp import FiniteMDP
from .relations import eps_relation_labels

#: Named orders.
ORDER_NAMES = ("index", "class-contiguous")
#: The operators whose result depends on the state (coordinate) order, and on the action order, are
#: ``STATE_ORDER_METRICS`` and ``ACTION_ORDER_METRICS`` (from the registry: :class:`bisimkit.operators.Operator`).

#: An order: a name, a path to a permutation file, or a permutation.
OrderSpec = Union[str, Path, Sequence[int], np.ndarray, None]


def validate_permutation(values, n: int, param: str = "order", what: str = "states") -> np.ndarray:
    """``values`` as an int64 permutation of ``0..n-1``, or :class:`InputError` naming the index."""
    arr = np.asarray(values, dtype=object).ravel() if not isinstance(values, np.ndarray) else values.ravel()
    if len(arr) != n:
        raise InputError(f"expected a permutation of {n} {what} (0..{n - 1}), got {len(arr)} entries", param=param)
    out = np.empty(n, dtype=np.int64)
    seen: dict[int, int] = {}
    for k, x in enumerate(arr.tolist()):
        # typeshed's numbers.Real declares no __int__ (int, float, Fraction and numpy's reals have one)
        if isinstance(x, bool) or not isinstance(x, numbers.Real) or float(x) != int(x):  # type: ignore[call-overload]
            raise InputError(f"[{k}] = {x!r} is not an integer", param=param)
        v = int(x)  # type: ignore[call-overload]
        if not 0 <= v < n:
            raise InputError(f"[{k}] = {v} is out of range 0..{n - 1}", param=param)
        if v in seen:
            raise InputError(f"[{k}] = {v} repeats [{seen[v]}]: not a permutation", param=param)
        seen[v] = k
        out[k] = v
    return out


def read_permutation_file(path: str | Path, param: str = "order") -> list:
    """The raw entries of a permutation file (validated later against the MDP)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"'{path}' is neither {', '.join(ORDER_NAMES)} nor an existing file", param=param)
    try:
        if path.suffix.lower() == ".npy":
            return np.load(path, allow_pickle=False).ravel().tolist()
        text = path.read_text(encoding="utf-8")
        if path.suffix.lower() == ".json":
            data = json.loads(text)
            data = data.get(param, data.get("order")) if isinstance(data, dict) else data
            if not isinstance(data, list):
                raise InputError(f"{path}: expected a JSON list of integers (or {{\"order\": [...]}})", param=param)
            return data
        tokens = text.replace(",", " ").split()
        out: list[int | float] = []
        for k, tok in enumerate(tokens):
            try:
                out.append(int(tok))
            except ValueError:
                try:
                    out.append(float(tok))
                except ValueError:
                    raise InputError(f"{path}: [{k}] = {tok!r} is not an integer", param=param) from None
        return out
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{path}: cannot read the order ({exc})", param=param) from None


def _inline(spec: str) -> list | None:
    """``"1,0"`` or ``"3 1 2 0"`` as a list of ints (None when it is not such a list)."""
    tokens = spec.replace(",", " ").split()
    if tokens and all(t.lstrip("-").isdigit() for t in tokens):
        return [int(t) for t in tokens]
    return None


@dataclass(frozen=True)
class Order:
    """A resolved relabelling: position ``k`` holds old state ``states[k]`` and old action
    ``actions[b]``; ``state_shape`` is the relabelled grid (coordinates permuted)."""

    states: np.ndarray
    actions: np.ndarray
    state_shape: tuple[int, ...] | None
    label: str
    action_label: str

    @property
    def identity(self) -> bool:
        return bool(
            np.array_equal(self.states, np.arange(len(self.states)))
            and np.array_equal(self.actions, np.arange(len(self.actions)))
        )

    def relabel(self, mdp: FiniteMDP) -> FiniteMDP:
        """The MDP renumbered by this order."""
        s, a = self.states, self.actions
        P = mdp.transitions[np.ix_(s, a)][:, :, s]
        policy = None if mdp.policy is None else mdp.policy[np.ix_(s, a)]
        return FiniteMDP(
            P, mdp.rewards[np.ix_(s, a)], mdp.discount, policy, mdp.action_values[a], self.state_shape, mdp.name
        )

    def relabel_ground(self, ground: Ground, n_actions: int) -> Ground:
        """A user ground matrix (indexed ``s*m + a``) renumbered the same way; names pass through."""
        if isinstance(ground, str):
            return ground
        idx = (self.states[:, None] * n_actions + self.actions[None, :]).ravel()
        return np.asarray(ground)[np.ix_(idx, idx)]

    def restore(self, D: np.ndarray) -> np.ndarray:
        """Distances of the relabelled MDP, back in the original numbering."""
        out = np.empty_like(D)
        out[np.ix_(self.states, self.states)] = D
        return out


def class_contiguous_states(mdp: FiniteMDP, ground: Ground = "reward") -> np.ndarray:
    """States ordered class by class of E_eps (class-mass reading; classes by smallest member)."""
    labels = eps_relation_labels(mdp, ground)  # canonical: classes numbered by their smallest state
    return np.lexsort((np.arange(mdp.n_states), labels)).astype(np.int64)


def _state_part(mdp: FiniteMDP, order: OrderSpec, ground: Ground) -> tuple[np.ndarray, tuple | None, str]:
    n, shape = mdp.n_states, mdp.state_shape
    if order is None or (isinstance(order, str) and order == "index"):
        return np.arange(n), shape, "index"
    if isinstance(order, str) and order == "class-contiguous":
        if shape is not None:
            raise InputError(
                f"class-contiguous renumbers states by E_eps class, which would break the grid "
                f"state_shape {list(shape)} (its entangled coupling follows the coordinates): give a "
                f"coordinate order such as {','.join(map(str, reversed(range(len(shape)))))}, "
                f"or drop state_shape",
                param="order",
            )
        return class_contiguous_states(mdp, ground), None, "class-contiguous"
    label = "given"
    if isinstance(order, (str, Path)):
        raw = _inline(order) if isinstance(order, str) else None
        if raw is None:
            raw, label = read_permutation_file(order), str(order)
        order = raw
    if shape is not None:
        axes = validate_permutation(order, len(shape), what=f"coordinates of the grid state_shape {list(shape)}")
        perm = np.arange(n).reshape(shape).transpose(axes).ravel()
        new_shape = tuple(int(shape[i]) for i in axes)
        return perm.astype(np.int64), new_shape, f"coordinates {','.join(map(str, axes))}"
    perm = validate_permutation(order, n)
    return perm, None, label if label != "given" else "given permutation"


def _action_part(mdp: FiniteMDP, action_order: OrderSpec) -> tuple[np.ndarray, str]:
    m = mdp.n_actions
    if action_order is None or (isinstance(action_order, str) and action_order == "index"):
        return np.arange(m), "index"
    label = "given permutation"
    if isinstance(action_order, (str, Path)):
        raw = _inline(action_order) if isinstance(action_order, str) else None
        if raw is None:
            raw, label = read_permutation_file(action_order, param="action_order"), str(action_order)
        action_order = raw
    return validate_permutation(action_order, m, param="action_order", what="actions"), label


def resolve_order(
    mdp: FiniteMDP, order: OrderSpec = "index", action_order: OrderSpec = "index", ground: Ground = "reward"
) -> Order:
    """Turn ``order`` / ``action_order`` specs into an :class:`Order` for ``mdp`` (validated)."""
    if isinstance(order, str) and order not in ORDER_NAMES and _inline(order) is None and not Path(order).exists():
        raise InputError(
            f"'{order}' is neither {', '.join(ORDER_NAMES)}, a list such as 1,0 nor an existing file", param="order"
        )
    states, shape, label = _state_part(mdp, order, ground)
    actions, action_label = _action_part(mdp, action_order)
    return Order(states, actions, shape if label != "index" else mdp.state_shape, label, action_label)


def relabelled(mdp: FiniteMDP, states: Sequence[int] | None = None, actions: Sequence[int] | None = None) -> FiniteMDP:
    """``mdp`` renumbered so that position k holds old state ``states[k]`` and old action
    ``actions[b]`` (a flat relabelling: a grid's ``state_shape`` is dropped unless the state
    order is the identity)."""
    n, m = mdp.n_states, mdp.n_actions
    s = np.arange(n) if states is None else validate_permutation(states, n)
    a = np.arange(m) if actions is None else validate_permutation(actions, m, param="action_order", what="actions")
    shape = mdp.state_shape if np.array_equal(s, np.arange(n)) else None
    return Order(s, a, shape, "given permutation", "given permutation").relabel(mdp)
