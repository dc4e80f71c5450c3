"""Models from probabilistic model checking: Storm's DRN files, PRISM's explicit files, stormpy models.

Markov chains and MDPs built by PRISM or Storm are sparse (a few successors per state) and
carry **labels** (the atomic propositions that hold in each state) and named reward
structures. This module reads them into a :class:`ModelData`: plain numpy arrays in
compressed sparse row form, with no dense ``(n, m, n)`` array anywhere, so memory is
O(states + choices + transitions + labelled states).

Formats read
------------
**Storm's explicit format** (``.drn``), as written by ``storm --exportexplicit`` and
stormpy's ``export_to_drn``. A header of ``@`` sections, then the model::

    @type: MDP                  DTMC or MDP (CTMC, MA, POMDP, games are refused)
    @value_type: double         double or rational (parametric and intervals are refused)
    @parameters                 the next line lists parameters; it must be empty
    @reward_models              the next line names the reward structures, in column order
    @nr_states                  the next line holds n
    @nr_choices                 the next line holds the number of choices (optional)
    @model
    state 0 [1, 0] init done    id, optional state rewards (one per structure), labels
        action a [0.5, 0]       choice name (or index, or __NOLABEL__), optional action rewards
            1 : 0.5             target : probability (a decimal or a rational p/q)
            2 : 1/2

States are listed in order 0, 1, ..., n - 1; a label holding spaces is written in double
quotes; lines starting ``//`` are comments (Storm writes each state's variable values so).
In a DTMC the ``action`` line may be left out. A state reward of structure ``r`` is earned
in the state whatever the action, an action reward by the choice.

**PRISM's explicit export** (``prism model.pm -exportmodel out.all``):

- ``out.tra``: a header ``n transitions`` (DTMC) or ``n choices transitions`` (MDP), then one
  line per transition, ``s t p`` (DTMC) or ``s k t p`` (MDP, ``k`` the choice's index within
  state ``s``), each optionally followed by an action name. Lines may come in any order.
- ``out.lab``: a header ``0="init" 1="deadlock" 2="goal" ...`` declaring the labels, then
  ``s: 0 2`` lines listing the labels of each labelled state.
- ``out.srew`` (or ``out1.srew``, ``out2.srew``, ... one per reward structure): a header
  ``n nonzeros`` then ``s r`` lines.
- ``out.trew`` (or numbered likewise): ``n choices nonzeros`` then ``s k t r`` lines (MDP;
  one reward per choice, repeated on each of its transitions), or ``n nonzeros`` then
  ``s t r`` (DTMC; a reward per transition, read as the expected reward of the state,
  ``sum_t P(s, t) r(s, t)``).

Lines starting ``#`` are comments; a ``# Reward structure "name"`` comment names the reward
structure of a ``.srew`` / ``.trew`` file.

The result
----------
Choices are numbered state by state: the choices of state ``s`` are
``choice_ptr[s] .. choice_ptr[s+1] - 1`` and the successors of choice ``c`` are
``columns[row_ptr[c]:row_ptr[c+1]]`` (ascending) with ``probabilities[...]``. Every state
has the same number ``m`` of choices (``m = 1`` for a DTMC): bisimkit compares the actions
of two states by their index, so an MDP whose states offer different numbers of actions is
refused. When every state names its actions (distinct names within a state), the names
must be the same set in every state and each state's choices are put in the order of state
0's names, so that action ``a`` means the same action everywhere; ``align_actions="index"``
keeps the file's order instead.

A reward of the model (:meth:`ModelData.reward_vector`) is either a **label**, whose
indicator is the reward (``R[s, a] = 1`` if ``s`` carries the label, for every ``a``), or a
**reward structure** ``r``: ``R[s, a] = state_r(s) + action_r(s, a)``.

Every check raises :class:`~bisimkit.errors.InputError` with one line naming the file, the
line and the field, e.g. ``model.drn line 57: state 12 has 1 action, state 0 has 2;
bisimkit needs the same action set in every state``. Reading writes nothing.

References: Storm's DRN parser and exporter (``DirectEncodingParser.cpp``,
``DirectEncodingExporter.cpp`` in moves-rwth/storm); PRISM manual, appendix "Explicit
Model Files", and PRISM's ``PrismExplicitImporter`` / ``PrismExplicitExporter``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import Sequence

import numpy as np

from .errors import InputError
from .fields import ROW_TOLERANCE

ALIGN_ACTIONS = ("name", "index")
#: Labels listed in full in an "unknown name" message; longer lists are cut with a count.
_LISTED = 20


# ------------------------------------------------------------------------------ the model
@dataclass(frozen=True, eq=False)
class ModelData:
    """A Markov chain or MDP in compressed sparse row form, with labels and reward structures.

    Attributes
    ----------
    model_type : ``"dtmc"`` or ``"mdp"``.
    n_states : the number of states n.
    choice_ptr : int64 (n + 1,); the choices of state s are ``choice_ptr[s] .. choice_ptr[s+1]-1``.
        Every state has the same number of choices m, so ``choice_ptr = m * arange(n + 1)``.
    row_ptr : int64 (n_choices + 1,); the transitions of choice c are ``row_ptr[c] .. row_ptr[c+1]-1``.
    columns : int64 (n_transitions,); target states, ascending within each choice.
    probabilities : float64 (n_transitions,); each choice's probabilities sum to 1 within
        :data:`~bisimkit.fields.ROW_TOLERANCE` (kept as read, not renormalised).
    label_names : the labels, sorted.
    label_ptr, label_states : int64; the states carrying ``label_names[i]`` are
        ``label_states[label_ptr[i]:label_ptr[i+1]]`` (ascending).
    state_rewards : reward structure name -> float64 (n,) (zeros where the structure has none).
    action_rewards : reward structure name -> float64 (n_choices,) (zeros likewise).
    initial_states : int64; the states labelled ``init`` (state 0 if no state is).
    action_labels : the name of each choice (``""`` for an unnamed one), or None if the source
        names none.
    source : the file (or ``"stormpy model"``) the data came from.
    """

    model_type: str
    n_states: int
    choice_ptr: np.ndarray
    row_ptr: np.ndarray
    columns: np.ndarray
    probabilities: np.ndarray
    label_names: tuple[str, ...]
    label_ptr: np.ndarray
    label_states: np.ndarray
    state_rewards: dict[str, np.ndarray] = field(default_factory=dict)
    action_rewards: dict[str, np.ndarray] = field(default_factory=dict)
    initial_states: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    action_labels: tuple[str, ...] | None = None
    source: str | None = None

    # ------------------------------------------------------------------ sizes
    @property
    def n_choices(self) -> int:
        return int(self.choice_ptr[-1])

    @property
    def n_actions(self) -> int:
        """m, the number of choices of every state."""
        return self.n_choices // self.n_states

    @property
    def n_transitions(self) -> int:
        return int(self.row_ptr[-1])

    @property
    def reward_names(self) -> tuple[str, ...]:
        return tuple(self.state_rewards)

    @cached_property
    def actions(self) -> tuple[str, ...] | None:
        """The action names shared by every state, in choice order, when each state names
        its choices with the same distinct names; else None."""
        if self.action_labels is None:
            return None
        m = self.n_actions
        first = self.action_labels[:m]
        if len(set(first)) < m or any(
            tuple(self.action_labels[s * m : (s + 1) * m]) != first for s in range(1, self.n_states)
        ):
            return None
        return tuple(first)

    @cached_property
    def choice_states(self) -> np.ndarray:
        """int64 (n_choices,): the state of each choice."""
        return np.repeat(np.arange(self.n_states, dtype=np.int64), np.diff(self.choice_ptr))

    # ------------------------------------------------------------------ labels
    def states_with(self, label: str) -> np.ndarray:
        """The states carrying ``label`` (int64, ascending)."""
        i = self._label_index(label)
        return self.label_states[self.label_ptr[i] : self.label_ptr[i + 1]]

    def label_mask(self, label: str) -> np.ndarray:
        """bool (n,): whether each state carries ``label``."""
        mask = np.zeros(self.n_states, dtype=bool)
        mask[self.states_with(label)] = True
        return mask

    def labels(self, s: int) -> frozenset[str]:
        """The labels of state ``s``."""
        if not 0 <= int(s) < self.n_states:
            raise InputError(f"state {s} is out of range (the model has {self.n_states} states)", param="s")
        ptr, idx = self._labels_by_state
        return frozenset(self.label_names[i] for i in idx[ptr[s] : ptr[s + 1]])

    def label_classes(self, names: Sequence[str] | None = None) -> np.ndarray:
        """int64 (n,): a class id per state, equal exactly when two states carry the same set of
        labels among ``names`` (all labels if None). Ids are 0, 1, ... in order of each class's
        first state."""
        keep = np.ones(len(self.label_names), dtype=bool)
        if names is not None:
            keep[:] = False
            for name in names:
                keep[self._label_index(name)] = True
        ptr, idx = self._labels_by_state
        sel = keep[idx]
        states = np.repeat(np.arange(self.n_states), np.diff(ptr))[sel]
        kept = idx[sel]
        if len(self.label_names) <= 62:
            key = np.zeros(self.n_states, dtype=np.int64)
            np.add.at(key, states, np.left_shift(np.int64(1), kept.astype(np.int64)))
        else:
            per_state: list[list[int]] = [[] for _ in range(self.n_states)]
            for s, i in zip(states.tolist(), kept.tolist()):
                per_state[s].append(i)
            table: dict[tuple[int, ...], int] = {}
            key = np.array([table.setdefault(tuple(v), len(table)) for v in per_state], dtype=np.int64)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        rank = np.empty(len(first), dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(first))
        return rank[inverse.reshape(-1)]

    @cached_property
    def _labels_by_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The label incidence transposed: state s carries labels ``idx[ptr[s]:ptr[s+1]]``."""
        label_of = np.repeat(np.arange(len(self.label_names), dtype=np.int64), np.diff(self.label_ptr))
        order = np.lexsort((label_of, self.label_states))
        ptr = np.zeros(self.n_states + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.label_states, minlength=self.n_states), out=ptr[1:])
        return ptr, label_of[order]

    def _label_index(self, label: str) -> int:
        try:
            return self.label_names.index(label)
        except ValueError:
            raise InputError(
                f"unknown label {label!r}; the labels are {_listing(self.label_names)}", param="label"
            ) from None

    # ------------------------------------------------------------------ rewards
    def reward_vector(self, name: str, kind: str | None = None) -> np.ndarray:
        """float64 (n_choices,): the reward named ``name`` for every choice.

        A label's reward is its indicator, ``R[s, a] = 1`` if s carries the label, else 0; a
        reward structure's is ``state_rewards[name][s] + action_rewards[name][c]`` for choice c
        of state s. ``kind`` (``"label"`` or ``"reward"``) says which when a name is both.
        """
        is_label, is_reward = name in self.label_names, name in self.state_rewards
        if kind not in (None, "label", "reward"):
            raise InputError(f"{kind!r} is not 'label' or 'reward'", param="kind")
        if kind is None and is_label and is_reward:
            raise InputError(
                f"{name!r} is both a label and a reward structure; say which with "
                f"kind='label' or kind='reward' (on the command line: label:{name} or reward:{name})",
                param="reward",
            )
        if is_label and kind in (None, "label"):
            return self.label_mask(name)[self.choice_states].astype(np.float64)
        if is_reward and kind in (None, "reward"):
            return self.state_rewards[name][self.choice_states] + self.action_rewards[name]
        raise InputError(
            f"unknown reward {name!r}; labels: {_listing(self.label_names)}; "
            f"reward structures: {_listing(self.reward_names)}",
            param="reward",
        )

    def reward_matrix(self, name: str, kind: str | None = None) -> np.ndarray:
        """float64 (n, m): :meth:`reward_vector` with one row per state."""
        return self.reward_vector(name, kind).reshape(self.n_states, self.n_actions)

    # ------------------------------------------------------------------ views
    def transition_matrix(self):
        """The transitions as a ``scipy.sparse.csr_matrix`` of shape (n_choices, n): row
        ``s * m + a`` is the distribution of action a in state s."""
        import scipy.sparse as sp  # start-up cost: scipy.sparse is loaded only where a sparse matrix is built

        return sp.csr_matrix((self.probabilities, self.columns, self.row_ptr), shape=(self.n_choices, self.n_states))

    def __repr__(self) -> str:
        return (
            f"ModelData({self.model_type}, {self.n_states} states, {self.n_actions} action(s), "
            f"{self.n_transitions} transitions, labels {list(self.label_names)}, "
            f"rewards {list(self.reward_names)}, source={self.source!r})"
        )


def _listing(names: Sequence[str]) -> str:
    if not names:
        return "(none)"
    shown = ", ".join(repr(n) for n in names[:_LISTED])
    return shown + (f", ... ({len(names) - _LISTED} more)" if len(names) > _LISTED else "")


# ------------------------------------------------------------------------------ errors
class _Source:
    """Where the items of a model came from, to name them in a one-line error.

    ``name`` is the file (or ``"stormpy model"``); the ``*_lines`` arrays hold the 1-based
    line of each state, choice and transition (None when there are no lines).
    """

    def __init__(self, name: str, state_lines=None, choice_lines=None, trans_lines=None):
        self.name = name
        self.state_lines = state_lines
        self.choice_lines = choice_lines
        self.trans_lines = trans_lines

    def error(self, message: str, line: int | None = None) -> InputError:
        return InputError(f"{self.name} line {int(line)}: {message}" if line is not None else f"{self.name}: {message}")

    def at(self, kind: str, index: int, message: str) -> InputError:
        lines = {"state": self.state_lines, "choice": self.choice_lines, "transition": self.trans_lines}[kind]
        return self.error(message, None if lines is None else lines[index])


def _number(text: str) -> float:
    """A decimal or a rational ``p/q`` as a float (ValueError if it is neither)."""
    try:
        return float(text)
    except ValueError:
        if "/" not in text:
            raise
        return float(Fraction(text.strip()))


def _numbers(tokens: list[str], lines: np.ndarray, src: _Source, what: str) -> np.ndarray:
    """Parse decimal or rational tokens to float64; a malformed one is named with its line."""
    try:
        return np.fromiter(map(float, tokens), dtype=np.float64, count=len(tokens))
    except ValueError:
        pass
    out = np.empty(len(tokens), dtype=np.float64)
    for i, tok in enumerate(tokens):
        try:
            out[i] = _number(tok)
        except (ValueError, ZeroDivisionError):
            raise src.error(f"{what} {tok.strip()!r} is not a number", lines[i]) from None
    return out


def _integers(tokens: list[str], lines: np.ndarray, src: _Source, what: str) -> np.ndarray:
    """Parse integer tokens to int64; a malformed one is named with its line."""
    try:
        return np.fromiter(map(int, tokens), dtype=np.int64, count=len(tokens))
    except (ValueError, OverflowError):
        pass
    for i, tok in enumerate(tokens):
        try:
            value = int(tok)
        except ValueError:
            raise src.error(f"{what} {tok.strip()!r} is not an integer", lines[i]) from None
        if abs(value) >= 2**63:
            raise src.error(f"{what} {value} is too large", lines[i])
    raise AssertionError("unreachable: some token failed to parse")  # pragma: no cover


def _read_text(path: Path) -> str:
    return _read_file(path)[1]


def _read_file(path: Path) -> tuple[bytes, str]:
    """The bytes of a file and their text (UTF-8); a missing or unreadable file is named."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a model file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{path} line {line}: not UTF-8 text") from None


# ------------------------------------------------------------------------------ assembly
def _assemble(
    src: _Source,
    model_type: str,
    n: int,
    choice_state: np.ndarray,
    trans_choice: np.ndarray,
    columns: np.ndarray,
    probabilities: np.ndarray,
    action_labels: list[str] | None,
    label_names: Sequence[str],
    label_state: np.ndarray,
    label_index: np.ndarray,
    state_rewards: dict[str, np.ndarray],
    action_rewards: dict[str, np.ndarray],
    align_actions: str,
    initial: np.ndarray | None = None,
) -> ModelData:
    """Check the parsed pieces and put them in the canonical form of :class:`ModelData`.

    ``choice_state`` (per choice, non-decreasing) is the state of each choice;
    ``trans_choice`` the choice of each transition, in source order. Label incidences are
    the pairs ``(label_state[i], label_names[label_index[i]])``.
    """
    n_choices = len(choice_state)
    # --- choices per state: the same m everywhere
    counts = np.bincount(choice_state, minlength=n)
    if n and (counts != counts[0]).any():
        s = int(np.flatnonzero(counts != counts[0])[0])
        raise src.at(
            "state",
            s,
            f"state {s} has {_plural(int(counts[s]), 'action')}, state 0 has "
            f"{int(counts[0])}; bisimkit needs the same action set in every state",
        )
    m = int(counts[0]) if n else 0
    if n and m == 0:
        raise src.at("state", 0, "state 0 has no actions")
    choice_ptr = np.arange(n + 1, dtype=np.int64) * m

    # --- transitions: targets in range, probabilities in [0, 1]
    bad = np.flatnonzero((columns < 0) | (columns >= n))
    if len(bad):
        i = int(bad[0])
        raise src.at(
            "transition", i, f"target state {int(columns[i])} is out of range (the model has {n} states, 0..{n - 1})"
        )
    bad = np.flatnonzero(~np.isfinite(probabilities) | (probabilities < 0) | (probabilities > 1 + ROW_TOLERANCE))
    if len(bad):
        i = int(bad[0])
        raise src.at("transition", i, f"probability {float(probabilities[i])!r} is not in [0, 1]")
    # --- sort each choice's transitions by target; no target twice
    order = None
    key_sorted = np.all(np.diff(trans_choice) >= 0) and np.all((np.diff(columns) > 0) | (np.diff(trans_choice) > 0))
    if not key_sorted:
        order = np.lexsort((columns, trans_choice))
        trans_choice, columns, probabilities = trans_choice[order], columns[order], probabilities[order]
        dup = np.flatnonzero((np.diff(trans_choice) == 0) & (np.diff(columns) == 0))
        if len(dup):
            j = int(dup[0])
            c, t = int(trans_choice[j]), int(columns[j])
            s, a = divmod(c, m)
            first, second = sorted((int(order[j]), int(order[j + 1])))
            also = "" if src.trans_lines is None else f" (also line {int(src.trans_lines[first])})"
            raise src.at("transition", second, f"target {t} of state {s}, action {a} is listed twice{also}")
    row_ptr = np.zeros(n_choices + 1, dtype=np.int64)
    np.cumsum(np.bincount(trans_choice, minlength=n_choices), out=row_ptr[1:])
    sums = np.bincount(trans_choice, weights=probabilities, minlength=n_choices)
    off = np.flatnonzero(np.abs(sums - 1.0) > ROW_TOLERANCE)
    if len(off):
        c = int(off[0])
        s, a = divmod(c, m)
        what = f"state {s}" if model_type == "dtmc" else f"state {s}, action {a}"
        if row_ptr[c] == row_ptr[c + 1]:
            raise src.at("choice", c, f"{what} has no transitions")
        raise src.at("choice", c, f"probabilities of {what} sum to {sums[c]:.12g}, not 1 (tolerance {ROW_TOLERANCE:g})")

    # --- action names: align choices by name when every state names its actions distinctly
    if action_labels is not None and m > 1 and align_actions == "name":
        perm = _name_alignment(src, action_labels, n, m)
        if perm is not None:
            row_ptr, columns, probabilities = _permute_choices(perm, row_ptr, columns, probabilities)
            action_labels = [action_labels[i] for i in perm.tolist()]
            action_rewards = {k: v[perm] for k, v in action_rewards.items()}

    # --- labels: per-label sorted state lists
    names = sorted(set(label_names))
    rank = {name: i for i, name in enumerate(names)}
    remap = np.array([rank[name] for name in label_names], dtype=np.int64)
    lab = remap[label_index] if len(label_index) else np.zeros(0, np.int64)
    keys = np.unique(lab * max(n, 1) + label_state) if len(lab) else np.zeros(0, np.int64)
    label_of, label_states = np.divmod(keys, max(n, 1))
    label_ptr = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(np.bincount(label_of, minlength=len(names)), out=label_ptr[1:])
    if initial is None:
        init = rank.get("init")
        initial = (
            label_states[label_ptr[init] : label_ptr[init + 1]].copy() if init is not None else np.zeros(0, np.int64)
        )
        if len(initial) == 0:
            initial = np.zeros(1, np.int64)

    return ModelData(
        model_type=model_type,
        n_states=int(n),
        choice_ptr=choice_ptr,
        row_ptr=row_ptr,
        columns=np.ascontiguousarray(columns, dtype=np.int64),
        probabilities=np.ascontiguousarray(probabilities, dtype=np.float64),
        label_names=tuple(names),
        label_ptr=label_ptr,
        label_states=label_states.astype(np.int64),
        state_rewards=dict(state_rewards),
        action_rewards=dict(action_rewards),
        initial_states=initial,
        action_labels=None if action_labels is None else tuple(action_labels),
        source=src.name,
    )


def _plural(k: int, word: str) -> str:
    return f"{k} {word}" + ("" if k == 1 else "s")


def _name_alignment(src: _Source, labels: list[str], n: int, m: int) -> np.ndarray | None:
    """The choice permutation putting every state's actions in the order of state 0's names,
    or None when some state repeats a name (then choices stay in file order)."""
    table: dict[str, int] = {}
    codes = np.array([table.setdefault(x, len(table)) for x in labels], dtype=np.int64).reshape(n, m)
    ordered = np.sort(codes, axis=1)
    if (ordered[:, 1:] == ordered[:, :-1]).any():
        return None
    differ = np.flatnonzero((ordered != ordered[0]).any(axis=1))
    if len(differ):
        s = int(differ[0])
        names = {v: k for k, v in table.items()}
        mine = ", ".join(sorted(names[c] for c in codes[s].tolist()))
        first = ", ".join(sorted(names[c] for c in codes[0].tolist()))
        raise src.at(
            "state",
            s,
            f"state {s} has actions {{{mine}}}, state 0 has {{{first}}}; bisimkit "
            f"needs the same action set in every state (align_actions='index' "
            f"pairs them by position instead)",
        )
    position = np.empty(len(table), dtype=np.int64)
    position[codes[0]] = np.arange(m)
    local = np.argsort(position[codes], axis=1, kind="stable")
    if (local == np.arange(m)).all():
        return None
    return (local + (np.arange(n, dtype=np.int64) * m)[:, None]).reshape(-1)


def _permute_choices(perm: np.ndarray, row_ptr: np.ndarray, columns: np.ndarray, probabilities: np.ndarray):
    """Reorder the choices of a CSR matrix: new choice c is old choice ``perm[c]``."""
    lengths = np.diff(row_ptr)[perm]
    new_ptr = np.zeros(len(perm) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_ptr[1:])
    take = np.repeat(row_ptr[:-1][perm] - new_ptr[:-1], lengths) + np.arange(new_ptr[-1])
    return new_ptr, columns[take], probabilities[take]


# ------------------------------------------------------------------------------ DRN
_DRN_TYPES = {"DTMC": "dtmc", "MDP": "mdp"}
_QUOTED_LABELS = re.compile(r'"([^"]+?)"(?=\s|$|")|([^\s"]+)')
_ACTION_LINE = re.compile(r"^[ \t]*action(?:[ \t]+([^\s\[]\S*))?[ \t]*(\[[^\]\n]*\])?[ \t\r]*$", re.M)


def read_drn(path: str | os.PathLike, *, align_actions: str = "name") -> ModelData:
    """Read a model in Storm's explicit DRN format (see the module docstring).

    The file is read once. Lines are told apart by their first character (with numpy), state
    and action lines are split in bulk and the numbers of all transitions converted in one
    pass; when a line does not fit, the lines are read again one by one to name it. Time and
    memory are linear in the size of the file.
    """
    _check_align(align_actions)
    path = Path(path)
    data, text = _read_file(path)
    src = _Source(str(path))
    lines = text.split("\n")
    header, body_start = _drn_header(lines, src)
    model_type = header["type"]
    n = header["nr_states"]

    kind, second = _first_chars(data)
    kind[:body_start] = 0
    kind[(kind == ord("/")) & (second == ord("/"))] = 0  # comments
    state_idx = np.flatnonzero(kind == ord("s"))
    action_idx = np.flatnonzero(kind == ord("a"))
    trans_idx = np.flatnonzero((kind != 0) & (kind != ord("s")) & (kind != ord("a")))
    state_lines, action_lines, trans_lines = state_idx + 1, action_idx + 1, trans_idx + 1

    # --- state lines: ids 0, 1, ... in order, rewards, labels
    state_rewards_text, label_names, label_state, label_index = _drn_states(lines, state_idx, src, model_type)
    n_listed = len(state_idx)
    if n_listed > n:
        raise src.error(f"state {n}: more states than @nr_states says ({n})", state_lines[n])
    if n_listed < n:
        raise src.error(f"@nr_states: {n}, but the file lists {n_listed} states", header["nr_states_line"])

    # --- choices: action lines (a DTMC may leave its one action line out)
    state_of_action = np.searchsorted(state_lines, action_lines) - 1
    if len(action_lines) and state_of_action[0] < 0:
        raise src.error("action line before any state line", action_lines[0])
    if len(trans_lines) and trans_lines[0] < state_lines[0]:
        raise src.error("transition line before any state line", trans_lines[0])
    if model_type == "dtmc":
        per_state = np.bincount(state_of_action, minlength=n)
        if per_state.max(initial=0) > 1:
            s = int(np.flatnonzero(per_state > 1)[0])
            extra = action_lines[np.flatnonzero(state_of_action == s)[1]]
            raise src.error(f"state {s} has {int(per_state[s])} actions; a DTMC has one per state", extra)
        choice_state = np.arange(n, dtype=np.int64)
        choice_lines = state_lines.copy()
        choice_lines[state_of_action] = action_lines
        action_of_choice = np.full(n, -1, dtype=np.int64)
        action_of_choice[state_of_action] = np.arange(len(action_lines))
        trans_choice = np.searchsorted(state_lines, trans_lines) - 1  # the state's one choice
    else:
        choice_state = state_of_action.astype(np.int64)
        choice_lines = action_lines
        action_of_choice = np.arange(len(action_lines), dtype=np.int64)
        trans_choice = np.searchsorted(action_lines, trans_lines) - 1
        trans_state = np.searchsorted(state_lines, trans_lines) - 1
        owner = np.full(len(trans_lines), -1, dtype=np.int64)  # the state of each one's choice
        owner[trans_choice >= 0] = choice_state[trans_choice[trans_choice >= 0]]
        early = np.flatnonzero(trans_state != owner)
        if len(early):
            j = int(early[0])
            raise src.error(f"transition of state {int(trans_state[j])} before any of its action lines", trans_lines[j])
    nr_choices = header.get("nr_choices")
    if nr_choices is not None and nr_choices != len(choice_state):
        raise src.error(
            f"@nr_choices: {nr_choices}, but the file lists {len(choice_state)} choices", header["nr_choices_line"]
        )

    # --- action lines: names and action rewards
    names, action_rewards_text = _drn_actions(lines, action_idx, src)
    if model_type == "dtmc":
        labels_of_choice = [names[a] if a >= 0 else "" for a in action_of_choice.tolist()] if names else None
    else:
        labels_of_choice = names

    # --- reward structures: as many as the longest bracket, named by @reward_models
    state_cols, action_cols = _reward_columns(
        state_rewards_text, state_lines, action_rewards_text, action_lines, header, src
    )
    action_rewards = {}
    has = action_of_choice >= 0
    for r, vec in action_cols.items():
        per_choice = np.zeros(len(choice_state), dtype=np.float64)
        per_choice[has] = vec[action_of_choice[has]]
        action_rewards[r] = per_choice

    # --- transitions, in bulk: "target : probability"
    targets, probs = _drn_transitions(lines, trans_idx, trans_lines, src)

    src.state_lines, src.choice_lines, src.trans_lines = state_lines, choice_lines, trans_lines
    return _assemble(
        src,
        model_type,
        n,
        choice_state,
        trans_choice.astype(np.int64),
        targets,
        probs,
        labels_of_choice,
        label_names,
        label_state,
        label_index,
        state_cols,
        action_rewards,
        align_actions,
    )


def _first_chars(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """uint8 per line (lines split at ``\n``): its first character that is not a space, tab or
    carriage return (0 for a blank line), and the character after it (0 at the line's end)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(buf == 10)
    starts = np.zeros(len(nl) + 1, dtype=np.int64)
    starts[1:] = nl + 1
    ends = np.empty_like(starts)
    ends[:-1] = nl
    ends[-1] = len(buf)
    first = starts.copy()
    active = np.arange(len(starts))
    while len(active):  # step over leading blanks, one column at a time
        active = active[first[active] < ends[active]]
        c = buf[first[active]]
        active = active[(c == 32) | (c == 9) | (c == 13)]
        first[active] += 1
    kind = np.zeros(len(starts), dtype=np.uint8)
    inside = first < ends
    kind[inside] = buf[first[inside]]
    second = np.zeros(len(starts), dtype=np.uint8)
    inside = first + 1 < ends
    second[inside] = buf[first[inside] + 1]
    return kind, second


def _drn_states(lines: list[str], state_idx: np.ndarray, src: _Source, model_type: str):
    """Parse the state lines: reward bracket texts (None where absent) and label incidences.

    Lines are split in bulk; if any does not fit ``state <id> [rewards] labels`` with ids 0, 1,
    ... they are read again one by one to name the first that does not."""
    parts = [lines[i].split(None, 2) for i in state_idx.tolist()]
    fast = all(len(p) >= 2 and p[0] == "state" for p in parts)
    if fast:
        try:
            ids = np.fromiter((int(p[1]) for p in parts), dtype=np.int64, count=len(parts))
            fast = np.array_equal(ids, np.arange(len(parts)))
        except ValueError:
            fast = False
    if fast:
        rests = [p[2] if len(p) > 2 else "" for p in parts]
        split = [r[1:].partition("]") if r[:1] == "[" else None for r in rests]
        rewards = [x[0] if x is not None else None for x in split]
        rests = [x[2].strip() if x is not None else r.strip() for x, r in zip(split, rests)]
        fast = all(x[1] for x in split if x is not None) and not any(r[:1] in ("!", "{", "[") for r in rests if r)
    if not fast:
        ids, rewards, rests = _drn_states_slowly(lines, state_idx, src, model_type)
    table: dict[str, int] = {}
    label_state: list[int] = []
    label_index: list[int] = []
    for k, rest in enumerate(rests):
        if rest:
            found = rest.split() if '"' not in rest else [a or b for a, b in _QUOTED_LABELS.findall(rest)]
            for lab in found:
                label_state.append(k)
                label_index.append(table.setdefault(lab, len(table)))
    return (
        list(rewards),
        list(table),
        np.asarray(label_state, dtype=np.int64),
        np.asarray(label_index, dtype=np.int64),
    )


def _drn_states_slowly(lines, state_idx, src, model_type):
    """Line by line, naming the first state line that is not ``state <id> [rewards] labels``."""
    rewards, rests = [], []
    for k, i in enumerate(state_idx.tolist()):
        line = lines[i].strip()
        if not (line.startswith("state ") or line.startswith("state\t")):
            raise src.error(f"expected a 'state', 'action' or 'target : probability' line, got {line!r}", i + 1)
        sid, _, rest = line[5:].lstrip().partition(" ")
        if not sid.isdigit() or int(sid) != k:
            _bad_state_id(src, sid, k, i + 1, state_idx.tolist(), lines)
        rest = rest.strip()
        if rest.startswith("!") or rest.startswith("{"):
            raise src.error(
                f"state {k}: exit rates and observations belong to CTMCs, MAs and POMDPs, not a {model_type.upper()}",
                i + 1,
            )
        if rest.startswith("["):
            end = rest.find("]")
            if end < 0:
                raise src.error(f"state {k} rewards: ']' missing", i + 1)
            rewards.append(rest[1:end])
            rest = rest[end + 1 :].strip()
        else:
            rewards.append(None)
        rests.append(rest)
    return list(range(len(rests))), rewards, rests


def _drn_actions(lines: list[str], action_idx: np.ndarray, src: _Source) -> tuple[list[str], list[str | None]]:
    """Parse the action lines: each choice's name (``""`` for ``__NOLABEL__``) and reward bracket text."""
    parts = [lines[i].split(None, 2) for i in action_idx.tolist()]  # action NAME [rewards]
    if any(len(p) > 1 and p[1][:1] == "[" for p in parts):  # ... with no NAME
        parts = [[p[0], "", " ".join(p[1:])] if len(p) > 1 and p[1][:1] == "[" else p for p in parts]
    names = [p[1] if len(p) > 1 else "" for p in parts]
    brackets = [p[2].strip() if len(p) > 2 else None for p in parts]
    ok = all(p[0] == "action" for p in parts) and all(
        b is None or (b[:1] == "[" and b[-1:] == "]" and b.count("]") == 1) for b in brackets
    )
    if not ok:
        for k, i in enumerate(action_idx.tolist()):
            if not _ACTION_LINE.fullmatch(lines[i].rstrip("\r")):
                rest = lines[i].strip()
                what = (
                    "']' missing"
                    if "[" in rest and "]" not in rest
                    else f"expected 'action NAME [rewards]', got {rest!r}"
                )
                raise src.error(f"action line: {what}", i + 1)
    names = ["" if name == "__NOLABEL__" else name for name in names]
    return names, [b[1:-1] if b is not None else None for b in brackets]


def _reward_columns(
    state_text: list[str | None],
    state_lines: np.ndarray,
    action_text: list[str | None],
    action_lines: np.ndarray,
    header: dict,
    src: _Source,
):
    """Per-structure state and action reward vectors from the bracket texts (zeros where a line
    has no bracket). Structures: as many as the longest bracket."""
    rows = [(state_text, state_lines, "state"), (action_text, action_lines, "action")]
    counts = [[t.count(",") + 1 if t is not None else 0 for t in text] for text, _, _ in rows]
    width = max((max(c, default=0) for c in counts), default=0)
    names = _drn_reward_names(header, width, src)
    out = []
    for (text, lines, what), count in zip(rows, counts):
        vecs = {name: np.zeros(len(text), dtype=np.float64) for name in names}
        present = np.flatnonzero([t is not None for t in text])
        if width and len(present):
            wrong = present[np.asarray(count)[present] != width]
            if len(wrong):
                k = int(wrong[0])
                raise src.error(
                    f"{what} rewards: {count[k]} values, but the model has {width} reward structures", lines[k]
                )
            flat = ",".join(text[k] for k in present.tolist()).split(",")
            values = _numbers(flat, np.repeat(lines[present], width), src, f"{what} reward")
            values = values.reshape(len(present), width)
            bad = np.flatnonzero(~np.isfinite(values).all(axis=1))
            if len(bad):
                k = int(bad[0])
                raise src.error(
                    f"{what} reward {float(values[k][~np.isfinite(values[k])][0])!r} is not finite", lines[present[k]]
                )
            for j, name in enumerate(names):
                vecs[name][present] = values[:, j]
        out.append(vecs)
    return out[0], out[1]


def _bad_state_id(src: _Source, sid: str, expected: int, line: int, state_idx: list[int], lines: list[str]):
    """Raise the error for a state line whose id is not the next one, ``expected``."""
    if not sid.isdigit():
        raise src.error(f"state id {sid!r} is not a non-negative integer", line)
    got = int(sid)
    ids = [lines[i].strip()[5:].lstrip().partition(" ")[0] for i in state_idx]
    seen = [i + 1 for i, x in zip(state_idx, ids) if x.isdigit() and int(x) == got]
    if got < expected and seen and seen[0] < line:
        raise src.error(f"state {got} is listed twice (first at line {seen[0]})", line)
    if any(x.isdigit() and int(x) == expected for x in ids):
        raise src.error(
            f"state {got} out of order (state {expected} comes later; states must be listed in order 0, 1, ...)", line
        )
    raise src.error(
        f"state {got} where state {expected} was expected (state {expected} is missing; "
        f"states must be listed in order 0, 1, ...)",
        line,
    )


def _drn_header(lines: list[str], src: _Source) -> tuple[dict, int]:
    header: dict = {}
    i = 0
    while i < len(lines):
        raw = lines[i].rstrip("\r")
        line = raw.strip()
        i += 1
        if not line or line.startswith("//"):
            continue
        if line.startswith("@type:"):
            kind = line[6:].strip()
            if kind.upper() not in _DRN_TYPES:
                raise src.error(f"@type: {kind} is not supported; bisimkit reads DTMC and MDP models", i)
            header["type"] = _DRN_TYPES[kind.upper()]
        elif line.startswith("@value_type:"):
            value = line[12:].strip()
            if value == "parametric":
                raise src.error(
                    "@value_type: parametric models are not supported (instantiate the parameters first)", i
                )
            if value not in ("double", "rational"):
                raise src.error(f"@value_type: {value} is not supported (double or rational)", i)
        elif line == "@parameters":
            params = lines[i].strip() if i < len(lines) else ""
            if params.startswith("@"):
                continue
            i += 1
            if params:
                raise src.error(
                    f"@parameters: {params}; parametric models are not supported (instantiate the parameters first)", i
                )
        elif line == "@placeholders":
            raise src.error("@placeholders: parametric models are not supported", i)
        elif line == "@reward_models":
            if i < len(lines) and lines[i].strip().startswith("@"):
                continue
            header["reward_models"] = lines[i].rstrip("\r\n") if i < len(lines) else ""
            header["reward_models_line"] = i + 1
            i += 1
        elif line in ("@nr_states", "@nr_choices"):
            key = line[1:]
            value = lines[i].strip() if i < len(lines) else ""
            i += 1
            if not value.isdigit() or (key == "nr_states" and int(value) == 0):
                raise src.error(f"{line}: {value!r} is not a positive integer", i)
            header[key], header[key + "_line"] = int(value), i
        elif line == "@model":
            if "type" not in header:
                raise src.error("@type: missing before @model", i)
            if "nr_states" not in header:
                raise src.error("@nr_states: missing before @model", i)
            return header, i
        else:
            raise src.error(f"header: unexpected line {raw.strip()!r}", i)
    raise src.error("@model: missing (the file ends in its header)")


def _drn_reward_names(header: dict, width: int, src: _Source) -> list[str]:
    """Storm's naming: column i is the i-th word of the @reward_models line (split at each
    space or tab, so the unnamed structure is ``""``), or ``rew{i}`` past its end."""
    words = re.split(r"[\t ]", header.get("reward_models", "").rstrip("\r")) if "reward_models" in header else []
    names = [words[i] if i < len(words) else f"rew{i}" for i in range(width)]
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise src.error(
                f"@reward_models: reward structure {name!r} is named twice", header.get("reward_models_line")
            )
        seen[name] = i
    return names


def _drn_transitions(
    lines: list[str], trans_idx: np.ndarray, trans_lines: np.ndarray, src: _Source
) -> tuple[np.ndarray, np.ndarray]:
    if len(trans_idx) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    chunk = [lines[i] for i in trans_idx.tolist()]
    tokens = " ".join(chunk).replace(":", " : ").split()
    if len(tokens) != 3 * len(chunk) or tokens[1::3].count(":") != len(chunk):
        for k, line in enumerate(chunk):
            parts = line.replace(":", " : ").split()
            if len(parts) != 3 or parts[1] != ":":
                raise src.error(f"transition: expected 'target : probability', got {line.strip()!r}", trans_lines[k])
    targets = _integers(tokens[0::3], trans_lines, src, "target state")
    probs = _numbers(tokens[2::3], trans_lines, src, "probability")
    return targets, probs


# ------------------------------------------------------------------------------ PRISM explicit
_LABEL_DECL = re.compile(r'\s*(\d+)="([^"]*)"')
_REWARD_NAME = re.compile(r'#\s*Reward structure\s*(?:"([^"]*)")?\s*$')


def read_prism(
    tra: str | os.PathLike,
    lab: str | os.PathLike | None = None,
    srew: Sequence[str | os.PathLike] | str | os.PathLike | None = None,
    trew: Sequence[str | os.PathLike] | str | os.PathLike | None = None,
    *,
    align_actions: str = "name",
) -> ModelData:
    """Read PRISM's explicit export: ``.tra`` with optional ``.lab``, ``.srew`` and ``.trew`` files.

    Files not given are looked for beside ``tra`` with the same stem: ``stem.lab``;
    ``stem.srew`` or else ``stem1.srew``, ``stem2.srew``, ...; likewise ``.trew``. The i-th
    ``.srew`` and i-th ``.trew`` file form reward structure i, named by their
    ``# Reward structure "name"`` comment; an unnamed structure is called ``""`` when it is the
    only one without a name, else by its position (``"1"``, ``"2"``, ...), as PRISM's
    ``R{1}`` refers to it.
    """
    _check_align(align_actions)
    tra = Path(tra)
    if lab is None:
        guess = tra.with_suffix(".lab")
        lab = guess if guess.is_file() else None
    srews = _reward_files(tra, ".srew") if srew is None else _as_list(srew)
    trews = _reward_files(tra, ".trew") if trew is None else _as_list(trew)

    model_type, n, m_decl, data, lines, header_line = _tra_rows(tra)
    src = _Source(str(tra))
    if model_type == "dtmc":
        (s_tok, t_tok, p_tok, act), k_tok = data, None
    else:
        s_tok, k_tok, t_tok, p_tok, act = data
    states = _integers(s_tok, lines, src, "state")
    _check_states(src, states, lines, n)
    local = np.zeros(len(states), dtype=np.int64) if k_tok is None else _integers(k_tok, lines, src, "choice")
    bad = np.flatnonzero(local < 0)
    if len(bad):
        i = int(bad[0])
        raise src.error(f"choice {int(local[i])} is negative", lines[i])
    targets = _integers(t_tok, lines, src, "target state")
    probs = _numbers(p_tok, lines, src, "probability")

    # choices are the (state, choice index) pairs; a state's indices must be 0, 1, ...
    if len(states) and not (np.all(np.diff(states) >= 0) and np.all((np.diff(states) > 0) | (np.diff(local) >= 0))):
        order = np.lexsort((local, states))
        states, local, targets, probs, lines = states[order], local[order], targets[order], probs[order], lines[order]
        act = None if act is None else [act[i] for i in order.tolist()]
    new_choice = np.ones(len(states), dtype=bool)
    new_choice[1:] = (np.diff(states) != 0) | (np.diff(local) != 0)
    starts = np.flatnonzero(new_choice)
    choice_state = states[starts].astype(np.int64)
    trans_choice = (np.cumsum(new_choice) - 1).astype(np.int64)
    per_state = np.bincount(choice_state, minlength=n)
    missing = np.flatnonzero(per_state == 0)
    if len(missing):
        raise src.error(f"header: {n} states, but state {int(missing[0])} has no transitions", header_line)
    first_of_state = np.zeros(n, dtype=np.int64)
    np.cumsum(per_state[:-1], out=first_of_state[1:])
    expected_local = np.arange(len(starts)) - first_of_state[choice_state]
    gap = np.flatnonzero(local[starts] != expected_local)
    if len(gap):
        c = int(gap[0])
        raise src.error(
            f"state {int(choice_state[c])}: choice {int(expected_local[c])} is missing (the "
            f"choices of a state are numbered 0, 1, ...)",
            lines[starts[c]],
        )
    if m_decl is not None and m_decl != len(starts):
        raise src.error(f"header: {m_decl} choices, but the file lists {len(starts)}", header_line)
    action_labels = None
    if act is not None:
        action_labels = [act[i] for i in starts.tolist()]
        first = np.asarray(action_labels, dtype=object)[trans_choice]
        differ = np.flatnonzero(np.asarray(act, dtype=object) != first)
        if len(differ):
            j = int(differ[0])
            raise src.error(f"action {act[j]!r} differs from the action {first[j]!r} of the same choice", lines[j])

    if lab is not None:
        label_names, label_state, label_index = _read_lab(Path(lab), n)
    else:
        label_names, label_state, label_index = [], np.zeros(0, np.int64), np.zeros(0, np.int64)

    src.state_lines = lines[starts[first_of_state]]
    src.choice_lines = lines[starts]
    src.trans_lines = lines
    pieces = (
        src,
        model_type,
        n,
        choice_state,
        trans_choice,
        targets,
        probs,
        action_labels,
        label_names,
        label_state,
        label_index,
    )
    # transition rewards refer to the choices in file order: read them against the checked matrix
    plain = _assemble(*pieces, {}, {}, "index") if trews else None
    state_rewards, action_rewards = _prism_rewards(srews, trews, n, len(starts), plain)
    return _assemble(*pieces, state_rewards, action_rewards, align_actions)


def _as_list(x) -> list[Path]:
    if isinstance(x, (str, os.PathLike)):
        return [Path(x)]
    return [Path(p) for p in x]


def _reward_files(tra: Path, suffix: str) -> list[Path]:
    plain = tra.with_suffix(suffix)
    if plain.is_file():
        return [plain]
    found = []
    i = 1
    while (p := tra.with_name(f"{tra.stem}{i}{suffix}")).is_file():
        found.append(p)
        i += 1
    return found


def _data_lines(path: Path) -> tuple[list[tuple[int, str]], list[str], np.ndarray]:
    """The leading comment lines (with their line numbers), and the data lines (not blank, not
    ``#``) with their line numbers."""
    text = _read_text(path)
    raw = text.split("\n")
    comments: list[tuple[int, str]] = []
    data: list[str] = []
    numbers: list[int] = []
    for i, line in enumerate(raw):
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            if not data:
                comments.append((i + 1, s))
            continue
        data.append(s)
        numbers.append(i + 1)
    return comments, data, np.asarray(numbers, dtype=np.int64)


def _header_ints(path: Path, line: str, number: int, sizes: tuple[int, ...], what: str) -> list[int]:
    parts = line.split()
    if len(parts) not in sizes or not all(p.isdigit() for p in parts):
        raise InputError(f"{path} line {number}: header: expected {what}, got {line!r}")
    return [int(p) for p in parts]


def _tra_rows(tra: Path):
    """Parse a .tra file's header and split its lines into columns (lists of tokens)."""
    comments, data, numbers = _data_lines(tra)
    if not data:
        raise InputError(f"{tra}: empty transitions file (no header line)")
    for number, c in comments:
        match = re.match(r"#\s*Transitions\s*\((\w+)\)", c)
        if match and match.group(1).upper() not in ("DTMC", "MDP"):
            raise InputError(
                f"{tra} line {number}: model type {match.group(1)} is not supported; bisimkit reads DTMC and MDP models"
            )
    head = data[0].split()
    if len(head) == 4:
        raise InputError(
            f"{tra} line {numbers[0]}: header: a POMDP's header (4 numbers); bisimkit reads DTMC and MDP models"
        )
    counts = _header_ints(
        tra, data[0], int(numbers[0]), (2, 3), "'states transitions' (DTMC) or 'states choices transitions' (MDP)"
    )
    model_type = "dtmc" if len(counts) == 2 else "mdp"
    n, n_trans = counts[0], counts[-1]
    if n == 0:
        raise InputError(f"{tra} line {numbers[0]}: header: 0 states; a model needs at least one")
    m_decl = counts[1] if model_type == "mdp" else None
    body, lines = data[1:], numbers[1:]
    if body and body[0].startswith("-"):
        raise InputError(f"{tra} line {lines[0]}: initial-state lines ('-') belong to POMDP files")
    base = 3 if model_type == "dtmc" else 4
    toks = [line.split() for line in body]
    sizes = np.fromiter((len(t) for t in toks), dtype=np.int64, count=len(toks))
    bad = np.flatnonzero((sizes < base) | (sizes > base + 1))
    if len(bad):
        i = int(bad[0])
        fields = "'s t p [action]'" if model_type == "dtmc" else "'s k t p [action]'"
        raise InputError(f"{tra} line {lines[i]}: transition: expected {fields}, got {body[i]!r}")
    if len(body) != n_trans:
        raise InputError(f"{tra} line {numbers[0]}: header: {n_trans} transitions, but the file lists {len(body)}")
    columns: list = []
    if len(body) and (sizes == sizes[0]).all():
        flat = [x for t in toks for x in t]
        k = int(sizes[0])
        columns = [flat[j::k] for j in range(base)]
        act = flat[base::k] if k > base else None
    else:
        columns = [[t[j] for t in toks] for j in range(base)]
        act = [t[base] if len(t) > base else "" for t in toks] if len(body) else None
    return model_type, n, m_decl, columns + [act], lines, int(numbers[0])


def _read_lab(path: Path, n: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    comments, data, numbers = _data_lines(path)
    if not data:
        raise InputError(f"{path}: empty labels file (no header line)")
    head, head_line = data[0], int(numbers[0])
    decls = _LABEL_DECL.findall(head)
    if _LABEL_DECL.sub("", head).strip():
        raise InputError(f"{path} line {head_line}: header: expected 0=\"name\" 1=\"name\" ..., got {head!r}")
    names: list[str] = []
    for idx, name in decls:
        if int(idx) != len(names):
            raise InputError(
                f"{path} line {head_line}: header: label index {idx} where {len(names)} was "
                f"expected (indices must be 0, 1, ...)"
            )
        if name in names:
            raise InputError(f"{path} line {head_line}: header: label {name!r} is declared twice")
        names.append(name)
    states: list[str] = []
    idx_tokens: list[str] = []
    tok_lines: list[int] = []
    state_lines: list[int] = []
    for line, number in zip(data[1:], numbers[1:].tolist()):
        s, colon, rest = line.partition(":")
        if not colon:
            raise InputError(f"{path} line {number}: expected 's: label indices', got {line!r}")
        states.append(s.strip())
        state_lines.append(number)
        for tok in rest.split():
            idx_tokens.append(tok)
            tok_lines.append(number)
    src = _Source(str(path))
    st_lines = np.asarray(state_lines, dtype=np.int64)
    st = _integers(states, st_lines, src, "state")
    bad = np.flatnonzero((st < 0) | (st >= n))
    if len(bad):
        i = int(bad[0])
        raise src.error(f"state {int(st[i])} is out of range (the model has {n} states, 0..{n - 1})", st_lines[i])
    order = np.argsort(st, kind="stable")
    dup = np.flatnonzero(np.diff(st[order]) == 0)
    if len(dup):
        first, second = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
        raise src.error(
            f"state {int(st[second])} is listed twice (first at line {int(st_lines[first])})", st_lines[second]
        )
    t_lines = np.asarray(tok_lines, dtype=np.int64)
    idx = _integers(idx_tokens, t_lines, src, "label index")
    bad = np.flatnonzero((idx < 0) | (idx >= len(names)))
    if len(bad):
        i = int(bad[0])
        raise src.error(
            f"label index {int(idx[i])} is not declared in line {head_line} (0..{len(names) - 1})", t_lines[i]
        )
    per_line = np.bincount(np.searchsorted(st_lines, t_lines), minlength=len(st)) if len(st) else np.zeros(0, np.int64)
    label_state = np.repeat(st, per_line)
    return names, label_state, idx


def _reward_header(comments: list[tuple[int, str]]) -> str | None:
    """The name in a ``# Reward structure "name"`` comment, if any."""
    for _, c in comments:
        match = _REWARD_NAME.match(c)
        if match:
            return match.group(1)
    return None


def _prism_rewards(srews: list[Path], trews: list[Path], n: int, n_choices: int, model: ModelData | None):
    """Reward structure i from the i-th .srew and i-th .trew file (``model``: the choices in
    file order, needed only for .trew files)."""
    count = max(len(srews), len(trews))
    names: list[str | None] = []
    state_vecs: list[np.ndarray] = []
    action_vecs: list[np.ndarray] = []
    for r in range(count):
        s_name = t_name = None
        if r < len(srews):
            s_name, vec = _read_srew(srews[r], n)
        else:
            vec = np.zeros(n)
        state_vecs.append(vec)
        if r < len(trews):
            assert model is not None  # given whenever there are .trew files
            t_name, avec = _read_trew(trews[r], model)
        else:
            avec = np.zeros(n_choices)
        action_vecs.append(avec)
        if s_name is not None and t_name is not None and s_name != t_name:
            raise InputError(f"{trews[r]}: reward structure {t_name!r}, but {srews[r]} names it {s_name!r}")
        names.append(s_name if s_name is not None else t_name)
    unnamed = [r for r, name in enumerate(names) if name is None]
    final = [name if name is not None else ("" if len(unnamed) == 1 else str(r + 1)) for r, name in enumerate(names)]
    if len(set(final)) < len(final):
        dup = next(x for x in final if final.count(x) > 1)
        raise InputError(f"{(srews + trews)[0]}: reward structure {dup!r} is named twice")
    return dict(zip(final, state_vecs)), dict(zip(final, action_vecs))


def _read_srew(path: Path, n: int) -> tuple[str | None, np.ndarray]:
    comments, data, numbers = _data_lines(path)
    src = _Source(str(path))
    name = _reward_header(comments)
    if not data:
        raise src.error("empty state rewards file (no header line)")
    states, nnz = _header_ints(path, data[0], int(numbers[0]), (2,), "'states nonzeros'")
    if states != n:
        raise src.error(f"header: {states} states, but the transitions file has {n}", numbers[0])
    body, lines = data[1:], numbers[1:]
    if len(body) != nnz:
        raise src.error(f"header: {nnz} rewards, but the file lists {len(body)}", numbers[0])
    toks = [line.split() for line in body]
    for i, t in enumerate(toks):
        if len(t) != 2:
            raise src.error(f"expected 's r', got {body[i]!r}", lines[i])
    st = _integers([t[0] for t in toks], lines, src, "state")
    val = _numbers([t[1] for t in toks], lines, src, "reward")
    _check_states(src, st, lines, n)
    _check_finite(src, val, lines)
    out = np.zeros(n, dtype=np.float64)
    out[st] = val
    return name, out


def _read_trew(path: Path, model: ModelData) -> tuple[str | None, np.ndarray]:
    comments, data, numbers = _data_lines(path)
    src = _Source(str(path))
    name = _reward_header(comments)
    n, m = model.n_states, model.n_actions
    if not data:
        raise src.error("empty transition rewards file (no header line)")
    mdp = model.model_type == "mdp"
    head = _header_ints(
        path,
        data[0],
        int(numbers[0]),
        (3,) if mdp else (2,),
        "'states choices nonzeros'" if mdp else "'states nonzeros'",
    )
    if head[0] != n:
        raise src.error(f"header: {head[0]} states, but the transitions file has {n}", numbers[0])
    body, lines = data[1:], numbers[1:]
    if len(body) != head[-1]:
        raise src.error(f"header: {head[-1]} rewards, but the file lists {len(body)}", numbers[0])
    width = 4 if mdp else 3
    toks = [line.split() for line in body]
    for i, t in enumerate(toks):
        if len(t) != width:
            raise src.error(f"expected {'s k t r' if mdp else 's t r'}, got {body[i]!r}", lines[i])
    st = _integers([t[0] for t in toks], lines, src, "state")
    _check_states(src, st, lines, n)
    k = _integers([t[1] for t in toks], lines, src, "choice") if mdp else np.zeros(len(toks), np.int64)
    tg = _integers([t[width - 2] for t in toks], lines, src, "target state")
    _check_states(src, tg, lines, n, "target state")
    val = _numbers([t[width - 1] for t in toks], lines, src, "reward")
    _check_finite(src, val, lines)
    bad = np.flatnonzero((k < 0) | (k >= m))
    if len(bad):
        i = int(bad[0])
        raise src.error(f"choice {int(k[i])} of state {int(st[i])} does not exist (states have {m})", lines[i])
    choice = st * m + k
    # find each (choice, target) among the transitions
    key = choice * n + tg
    trans_key = np.repeat(np.arange(model.n_choices, dtype=np.int64), np.diff(model.row_ptr)) * n + model.columns
    pos = np.searchsorted(trans_key, key)
    found = (pos < len(trans_key)) & (trans_key[np.minimum(pos, len(trans_key) - 1)] == key)
    if not found.all():
        i = int(np.flatnonzero(~found)[0])
        what = f"state {int(st[i])}, choice {int(k[i])}" if mdp else f"state {int(st[i])}"
        raise src.error(f"no transition from {what} to {int(tg[i])}", lines[i])
    out = np.zeros(model.n_choices, dtype=np.float64)
    if mdp:
        order = np.lexsort((tg, choice))
        c_sorted, v_sorted = choice[order], val[order]
        same = np.flatnonzero((np.diff(c_sorted) == 0) & (np.diff(v_sorted) != 0))
        if len(same):
            i = int(order[same[0] + 1])
            raise src.error(
                f"state {int(st[i])}, choice {int(k[i])}: reward {float(val[i])!r} differs from "
                f"the reward of another transition of the same choice",
                lines[i],
            )
        out[choice] = val
    else:
        np.add.at(out, choice, val * model.probabilities[pos])
    return name, out


def _check_states(src: _Source, st: np.ndarray, lines: np.ndarray, n: int, what: str = "state") -> None:
    bad = np.flatnonzero((st < 0) | (st >= n))
    if len(bad):
        i = int(bad[0])
        raise src.error(f"{what} {int(st[i])} is out of range (the model has {n} states, 0..{n - 1})", lines[i])


def _check_finite(src: _Source, val: np.ndarray, lines: np.ndarray) -> None:
    bad = np.flatnonzero(~np.isfinite(val))
    if len(bad):
        i = int(bad[0])
        raise src.error(f"reward {float(val[i])!r} is not finite", lines[i])


# ------------------------------------------------------------------------------ dispatch
def read_model(
    path: str | os.PathLike,
    *,
    labels: str | os.PathLike | None = None,
    state_rewards=None,
    transition_rewards=None,
    align_actions: str = "name",
) -> ModelData:
    """Read a model file, by its suffix: ``.drn`` (Storm) or ``.tra`` (PRISM, with the
    ``.lab`` / ``.srew`` / ``.trew`` files beside it, or those given)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".drn":
        if labels is not None or state_rewards is not None or transition_rewards is not None:
            raise InputError(
                f"{p}: a DRN file holds its own labels and rewards; labels=, state_rewards= "
                f"and transition_rewards= are for PRISM's .tra files"
            )
        return read_drn(p, align_actions=align_actions)
    if suffix == ".tra":
        return read_prism(p, labels, state_rewards, transition_rewards, align_actions=align_actions)
    raise InputError(
        f"{p}: unknown model file type {p.suffix or '(no suffix)'!r}; bisimkit reads Storm's "
        f".drn and PRISM's .tra (with .lab, .srew, .trew)"
    )


def _check_align(align_actions: str) -> None:
    if align_actions not in ALIGN_ACTIONS:
        raise InputError(f"{align_actions!r} is not one of {', '.join(ALIGN_ACTIONS)}", param="align_actions")


# ------------------------------------------------------------------------------ stormpy
def stormpy_data(model, *, align_actions: str = "name") -> ModelData:
    """The :class:`ModelData` of a sparse DTMC or MDP built by stormpy (from a PRISM or JANI
    program), with all its labels and reward structures, without writing a file.

    Exact (rational) models are converted to float64. Transition rewards (a matrix) are read
    as the expected reward of each choice, ``sum_t P(c, t) r(c, t)``. Choice names are the
    model's choice labels (joined with ``_`` when a choice has several, ``""`` when none) or,
    without choice labels, the choice's index within its state, as Storm's DRN export writes them.
    """
    _check_align(align_actions)
    try:
        import stormpy  # noqa: F401  (optional extra: checked here to name the extra when missing)
    except ModuleNotFoundError:
        raise InputError(
            "stormpy is not installed; it comes with the 'storm' extra: pip install -e '.[storm]'"
        ) from None
    src = _Source("stormpy model")
    if not getattr(model, "is_sparse_model", False):
        raise src.error("not a sparse model (build it with stormpy.build_model and the sparse engine)")
    kind = getattr(model.model_type, "name", str(model.model_type)).split(".")[-1]
    if kind not in _DRN_TYPES:
        raise src.error(f"model type {kind} is not supported; bisimkit reads DTMC and MDP models")
    if getattr(model, "supports_parameters", False) or getattr(model, "has_parameters", False):
        raise src.error("parametric models are not supported (instantiate the parameters first)")
    if getattr(model, "supports_uncertainty", False):
        raise src.error("interval models are not supported")
    model_type = _DRN_TYPES[kind]
    n = int(model.nr_states)
    matrix = model.transition_matrix
    n_choices = int(matrix.nr_rows)
    exact = bool(getattr(model, "is_exact", False))
    if model_type == "mdp":
        group = np.asarray(list(model.nondeterministic_choice_indices), dtype=np.int64)
    else:
        group = np.arange(n + 1, dtype=np.int64)
    choice_state = np.repeat(np.arange(n, dtype=np.int64), np.diff(group))
    columns, probs, trans_choice = _matrix_entries(matrix, n_choices, exact)

    if model.has_choice_labeling():
        labeling = model.choice_labeling
        action_labels = ["_".join(sorted(labeling.get_labels_of_choice(c))) for c in range(n_choices)]
    else:
        action_labels = [str(c - group[s]) for c, s in zip(range(n_choices), choice_state.tolist())]

    label_names = sorted(model.labeling.get_labels())
    label_state: list[np.ndarray] = []
    label_index: list[np.ndarray] = []
    for i, name in enumerate(label_names):
        st = np.fromiter(model.labeling.get_states(name), dtype=np.int64)
        label_state.append(st)
        label_index.append(np.full(len(st), i, dtype=np.int64))

    state_rewards: dict[str, np.ndarray] = {}
    action_rewards: dict[str, np.ndarray] = {}
    for name, rm in model.reward_models.items():
        convert = _exact_float if exact else float
        state_rewards[name] = (
            np.array([convert(v) for v in rm.state_rewards], dtype=np.float64) if rm.has_state_rewards else np.zeros(n)
        )
        act = (
            np.array([convert(v) for v in rm.state_action_rewards], dtype=np.float64)
            if rm.has_state_action_rewards
            else np.zeros(n_choices)
        )
        if rm.has_transition_rewards:
            t_cols, t_vals, t_choice = _matrix_entries(rm.transition_rewards, n_choices, exact)
            key = trans_choice * n + columns
            pos = np.searchsorted(key, t_choice * n + t_cols)
            pos = np.minimum(pos, max(len(key) - 1, 0))
            hit = key[pos] == t_choice * n + t_cols if len(key) else np.zeros(0, bool)
            act = act + np.bincount(t_choice[hit], weights=t_vals[hit] * probs[pos[hit]], minlength=n_choices)
        action_rewards[name] = act
        for vec, what in ((state_rewards[name], "state"), (act, "action")):
            bad = np.flatnonzero(~np.isfinite(vec))
            if len(bad):
                raise src.error(f"reward structure {name!r}: {what} reward {float(vec[bad[0]])!r} is not finite")
    data = _assemble(
        src,
        model_type,
        n,
        choice_state,
        trans_choice,
        columns,
        probs,
        action_labels,
        label_names,
        np.concatenate(label_state) if label_state else np.zeros(0, np.int64),
        np.concatenate(label_index) if label_index else np.zeros(0, np.int64),
        state_rewards,
        action_rewards,
        align_actions,
        initial=np.asarray(sorted(int(s) for s in model.initial_states), dtype=np.int64),
    )
    return data


def _exact_float(value) -> float:
    """The float nearest to an exact stormpy number (its own conversion may round toward zero)."""
    return float(Fraction(str(value)))


def _matrix_entries(matrix, n_rows: int, exact: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns, values and row of every entry of a stormpy sparse matrix.

    Iterating the whole matrix is fast in stormpy, iterating it row by row is not: the entries
    come in one pass and each row's length from ``len(matrix.get_row(r))``.
    """
    entries = list(matrix) if n_rows else []
    lengths = np.fromiter((len(matrix.get_row(r)) for r in range(n_rows)), dtype=np.int64, count=n_rows)
    if int(lengths.sum()) != len(entries):  # pragma: no cover - a stormpy without whole-matrix iteration
        entries = [e for r in range(n_rows) for e in matrix.get_row(r)]
    cols = np.fromiter((e.column for e in entries), dtype=np.int64, count=len(entries))
    values = [e.value for e in entries]
    if values and callable(values[0]):  # stormpy 1.x: value() is a method
        values = [v() for v in values]
    vals = np.array([_exact_float(v) for v in values] if exact else values, dtype=np.float64)
    return cols, vals, np.repeat(np.arange(n_rows, dtype=np.int64), lengths)
