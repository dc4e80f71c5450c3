"""Tabular Gymnasium environments as :class:`~bisimkit.mdp.FiniteMDP` (the ``gym`` extra).

``from_gymnasium(env_or_id, policy="uniform")`` reads the model that tabular
Gymnasium environments expose as ``env.unwrapped.P`` (FrozenLake, CliffWalking,
Taxi): ``P[s][a]`` is a list of ``(probability, next_state, reward, terminated)``.

* transitions: the listed probabilities, summed over repeated next states;
* rewards: the expected reward of each state-action pair, ``sum p * reward``;
* terminal states (those entered with ``terminated=True``) become absorbing with reward 0
  (a state that an episode can enter both with and without termination is refused: one state
  cannot be both; moves out of states unreachable from ``initial_state_distrib``, such as
  Taxi's passenger-at-destination states, are kept as listed and not counted);
  the time limit (truncation) is not part of the model;
* ``state_shape``: the grid where the env has one (FrozenLake: its ``desc``; CliffWalking: 4 x 12);
* ``initial_state``: where the env starts, when its ``initial_state_distrib`` is a point mass
  (FrozenLake, CliffWalking; not Taxi, which starts anywhere);
* policy: ``"uniform"`` (default), an n x m table (array, or a ``.npy`` / ``.json`` / ``.csv``
  file), ``"greedy:FILE"`` or ``q=`` a Q table (n x m): greedy, ties split evenly; ``None``: no policy.

On the command line every MDP argument also accepts ``gym:ID`` with options after a ``?``:
``gym:FrozenLake-v1?map_name=8x8&is_slippery=false&discount=0.95&policy=greedy:q.npy``
(:func:`parse_gym_spec`; options other than ``discount`` and ``policy`` go to ``gymnasium.make``).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, cast

import numpy as np

from .errors import InputError
from .mdp import FiniteMDP

#: What an MDP argument starts with to name a Gymnasium environment.
GYM_PREFIX = "gym:"
DEFAULT_DISCOUNT = 0.9


def _gymnasium():
    """The gymnasium module, or an InputError naming the extra that installs it."""
    try:
        import gymnasium  # the gym extra
    except ModuleNotFoundError as exc:
        from .extras import missing_extra  # only to name the missing extra

        raise InputError(missing_extra(exc) or str(exc)) from None
    return gymnasium


def _load_table(spec: Any, what: str, n: int, m: int) -> np.ndarray:
    """An n x m table: an array, or a .npy / .json / .csv file."""
    if isinstance(spec, (str, Path)):
        path = Path(spec)
        if not path.exists():
            raise InputError(f"{what}: {path}: no such file")
        suffix = path.suffix.lower()
        try:
            if suffix == ".npy":
                table = np.load(path, allow_pickle=False)
            elif suffix == ".json":
                table = np.asarray(json.loads(path.read_text()), dtype=float)
            elif suffix == ".csv":
                table = np.loadtxt(path, delimiter=",", ndmin=2)
            else:
                raise InputError(f"{what}: {path}: unsupported file type '{path.suffix}' (use .npy, .json or .csv)")
        except (ValueError, OSError) as exc:
            raise InputError(f"{what}: {path}: cannot read a table ({str(exc).splitlines()[0]})") from None
    else:
        table = np.asarray(spec)
    try:
        table = np.asarray(table, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{what}: expected an n x m table of numbers") from None
    if table.shape != (n, m):
        raise InputError(f"{what}: expected shape (n, m) = {(n, m)}, got {table.shape}")
    if not np.all(np.isfinite(table)):
        raise InputError(f"{what}: holds a non-finite value")
    return table


def greedy_policy(q: np.ndarray, atol: float = 1e-12) -> np.ndarray:
    """The greedy policy of a Q table (n x m): uniform over each state's best actions."""
    best = q >= q.max(axis=1, keepdims=True) - atol
    return best / best.sum(axis=1, keepdims=True)


def _policy(policy: Any, q: Any, n: int, m: int) -> np.ndarray | None:
    if q is not None:
        return greedy_policy(_load_table(q, "q", n, m))
    if policy is None:
        return None
    if isinstance(policy, str) and policy == "uniform":
        return np.full((n, m), 1.0 / m)
    if isinstance(policy, str) and policy.startswith("greedy:"):
        return greedy_policy(_load_table(policy[len("greedy:") :], "q", n, m))
    return _load_table(policy, "policy", n, m)


def _grid_shape(env) -> tuple[int, ...] | None:
    """The env's grid, when its states are the C-order cells of one (FrozenLake, CliffWalking)."""
    n = int(env.observation_space.n)
    desc = getattr(env, "desc", None)
    if desc is not None and np.ndim(desc) == 2 and np.size(desc) == n:
        return tuple(int(x) for x in np.shape(desc))
    shape = getattr(env, "shape", None)
    if isinstance(shape, tuple) and len(shape) == 2 and int(np.prod(shape)) == n:
        return tuple(int(x) for x in shape)
    return None


def _reachable(P: np.ndarray, terminal: np.ndarray, initial: Any) -> np.ndarray:
    """Live (non-terminal) states reachable under any actions from the initial distribution (every
    live state when the env declares none)."""
    live = ~terminal
    try:
        start = np.asarray(initial, dtype=float).ravel() > 0
    except (TypeError, ValueError):
        start = None
    if start is None or start.shape != terminal.shape or not start.any():
        return live
    seen, frontier = start & live, start & live
    step = cast(np.ndarray, (P > 0).any(axis=1))  # s -> s' under some action (an (n, n) array)
    while frontier.any():
        nxt = step[frontier].any(axis=0) & live & ~seen
        seen |= nxt
        frontier = nxt
    return seen


def from_gymnasium(
    env_or_id: Any,
    policy: Any = "uniform",
    discount: float = DEFAULT_DISCOUNT,
    q: Any = None,
    name: str | None = None,
    **make_kwargs,
) -> FiniteMDP:
    """A tabular Gymnasium environment (an env or an id for ``gymnasium.make``) as a FiniteMDP.

    See the module doc for what is read and how; ``make_kwargs`` go to ``gymnasium.make``.
    Raises :class:`~bisimkit.errors.InputError` for an env without a model (``P``), with
    non-discrete spaces, or with an inconsistent model.
    """
    label = env_or_id if isinstance(env_or_id, str) else None
    if isinstance(env_or_id, str):
        gymnasium = _gymnasium()
        try:
            env = gymnasium.make(env_or_id, **make_kwargs)
        except Exception as exc:  # noqa: BLE001 - gymnasium raises many kinds for a bad id or kwargs
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InputError(f"gym:{env_or_id}: cannot make the environment ({text})") from None
    else:
        if make_kwargs:
            raise InputError(f"{', '.join(make_kwargs)}: options for gymnasium.make apply to an environment id only")
        env = env_or_id
    base = getattr(env, "unwrapped", env)
    label = label or (getattr(getattr(env, "spec", None), "id", None) or type(base).__name__)
    where = f"gym:{label}"
    spaces: dict[str, Any] = {
        "observation": getattr(env, "observation_space", None),
        "action": getattr(env, "action_space", None),
    }
    for kind, space in spaces.items():
        if not isinstance(getattr(space, "n", None), (int, np.integer)) or getattr(space, "shape", None) != ():
            raise InputError(
                f"{where}: the {kind} space {space} is not Discrete; only tabular environments "
                f"(Discrete observations and actions) have a finite model"
            )
    model = getattr(base, "P", None)
    if model is None:
        raise InputError(
            f"{where}: the environment exposes no model (env.unwrapped.P, as FrozenLake, "
            f"CliffWalking and Taxi do), so its transitions cannot be read"
        )
    n, m = int(spaces["observation"].n), int(spaces["action"].n)
    P, R = np.zeros((n, m, n)), np.zeros((n, m))
    entered_terminal, entered_open = np.zeros(n, bool), np.zeros(n, bool)
    done = np.zeros((n, m, n), bool)  # (s, a, s') listed with terminated=True
    try:
        for s in range(n):
            for a in range(m):
                for prob, nxt, reward, terminated in model[s][a]:
                    t = int(nxt)
                    if not 0 <= t < n:
                        raise InputError(f"{where}: P[{s}][{a}] leads to state {t}, outside 0..{n - 1}")
                    P[s, a, t] += float(prob)
                    R[s, a] += float(prob) * float(reward)
                    done[s, a, t] |= bool(terminated) and float(prob) > 0
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise InputError(
            f"{where}: env.unwrapped.P is not a table of (probability, next state, reward, "
            f"terminated) lists for every state and action ({type(exc).__name__}: {exc})"
        ) from None
    entered_terminal[:] = done.any(axis=(0, 1))
    # Only moves an episode can make count: out of the reachable live states (from the env's
    # initial_state_distrib when it has one; what P lists out of a terminal state never happens).
    live = _reachable(P, entered_terminal, getattr(base, "initial_state_distrib", None))
    entered_open[:] = ((P[live] > 0) & ~done[live]).any(axis=(0, 1))
    both = np.nonzero(entered_terminal & entered_open)[0]
    if len(both):
        raise InputError(
            f"{where}: state {int(both[0])} is entered both with and without termination; it cannot be made absorbing"
        )
    for end in np.nonzero(entered_terminal)[0]:
        P[end] = 0.0
        P[end, :, end] = 1.0
        R[end] = 0.0
    pi = _policy(policy, q, n, m)
    return FiniteMDP(
        P,
        R,
        discount,
        pi,
        state_shape=_grid_shape(base),
        name=name or where,
        initial_state=_initial_state(getattr(base, "initial_state_distrib", None), n),
    )


def _initial_state(initial: Any, n: int) -> int | None:
    """The state the env starts in when its ``initial_state_distrib`` is a point mass (None otherwise)."""
    if initial is None:
        return None
    start = np.asarray(initial, dtype=float).ravel()
    support = np.nonzero(start > 0)[0]
    return int(support[0]) if start.size == n and len(support) == 1 else None


def _literal(text: str) -> Any:
    """A make option's value: a Python literal (``8``, ``0.5``, ``None``), true / false, or the text."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_gym_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``gym:ID?key=value&...`` -> (ID, options); the options ``discount`` and ``policy`` are
    :func:`from_gymnasium`'s, the others go to ``gymnasium.make``."""
    body = spec[len(GYM_PREFIX) :]
    env_id, _, query = body.partition("?")
    if not env_id:
        raise InputError(f"{spec}: no environment id after 'gym:' (e.g. gym:FrozenLake-v1)")
    options: dict[str, Any] = {}
    for item in filter(None, query.split("&")):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise InputError(f"{spec}: option '{item}' is not KEY=VALUE")
        options[key] = value if key in ("policy", "name") else _literal(value)
    return env_id, options


def load_gym_spec(spec: str) -> FiniteMDP:
    """The FiniteMDP of a ``gym:ID?...`` argument (:func:`parse_gym_spec`)."""
    env_id, options = parse_gym_spec(spec)
    discount = options.pop("discount", DEFAULT_DISCOUNT)
    policy = options.pop("policy", "uniform")
    policy = None if policy == "none" else policy
    return from_gymnasium(env_id, policy=policy, discount=discount, **options)
