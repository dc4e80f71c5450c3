"""Ground metrics G on state-action pairs for the entangled operators.

``reward``: ``G(s,a,t,b) = |R(s,a) - R(t,b)|`` and ``policy``:
``G(s,a,t,b) = ||abar(s) - abar(t)||_1`` (paper Lemma 4.4). A user-supplied G
is an (n*m) x (n*m) matrix indexed by ``s*m + a`` (or an n x m x n x m array);
it is checked to be a pseudometric before use.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Union

import numpy as np

from .errors import InputError
from .mdp import FiniteMDP
from .pseudometric import check_pseudometric

#: A ground metric: the name of a built-in one, or a validated (n*m) x (n*m) matrix.
Ground = Union[str, np.ndarray]
BUILTIN_GROUNDS = ("reward", "policy")


def ground_values(mdp: FiniteMDP, ground: Ground, s, a, t, b) -> np.ndarray:
    """``G(s, a, t, b)`` for arrays of indices (broadcast together)."""
    s, a, t, b = (np.asarray(x, dtype=np.int64) for x in (s, a, t, b))
    if isinstance(ground, str):
        if ground == "reward":
            return np.abs(mdp.rewards[s, a] - mdp.rewards[t, b])
        if ground == "policy":
            abar = mdp.mean_action
            return np.abs(abar[s] - abar[t]).sum(axis=-1)
        raise InputError(f"unknown ground metric '{ground}' (use reward, policy or a file)", param="ground")
    m = mdp.n_actions
    return ground[s * m + a, t * m + b]


def validate_ground_matrix(G, mdp: FiniteMDP, source: str = "ground", atol: float = 1e-9) -> np.ndarray:
    """Check a user-supplied G and return it as an (n*m) x (n*m) float matrix."""
    n, m = mdp.n_states, mdp.n_actions
    try:
        G = np.asarray(G, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{source}: not a rectangular array of numbers") from None
    if G.shape == (n, m, n, m):
        G = G.reshape(n * m, n * m)
    if G.shape != (n * m, n * m):
        raise InputError(
            f"{source}: expected shape (n*m, n*m) = {(n * m, n * m)} or (n, m, n, m) = {(n, m, n, m)}, got {G.shape}"
        )
    bad = np.argwhere(~np.isfinite(G))
    if len(bad):
        (x, y) = bad[0]
        raise InputError(f"{source}[s={x // m}, a={x % m}, t={y // m}, b={y % m}] is not finite")
    report = check_pseudometric(G, atol=atol)
    if not report.holds:

        def pair(x):
            return f"(s={x // m}, a={x % m})"

        # the worst offenders' indices are set for any non-empty matrix
        assert report.negative_index is not None and report.asymmetry_pair is not None
        assert report.triangle_triple is not None
        if report.min_value < -atol:
            x, y = report.negative_index
            raise InputError(f"{source}: not a pseudometric: G{pair(x)},{pair(y)} = {report.min_value:.6g} is negative")
        if report.diagonal > atol:
            x = report.diagonal_index
            raise InputError(f"{source}: not a pseudometric: G{pair(x)},{pair(x)} = {G[x, x]:.6g} is not 0")
        if report.asymmetry > atol:
            x, y = report.asymmetry_pair
            raise InputError(
                f"{source}: not a pseudometric: G is not symmetric at {pair(x)}, {pair(y)} "
                f"({G[x, y]:.6g} vs {G[y, x]:.6g})"
            )
        x, y, z = report.triangle_triple
        raise InputError(
            f"{source}: not a pseudometric: triangle inequality fails by {report.triangle:.6g} "
            f"for {pair(x)}, {pair(y)}, {pair(z)}"
        )
    return G


def load_ground(path: str | Path, mdp: FiniteMDP) -> np.ndarray:
    """Read a user ground metric from ``.npy``, ``.npz`` (key ``ground``) or ``.json``."""
    return validate_ground_matrix(read_ground_file(path), mdp, source=str(path))


def read_ground_file(path: str | os.PathLike):
    """The array in a ground-metric file (``.npy``, ``.npz`` key ``ground``, ``.json``), unchecked."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"'{path}' is neither reward, policy nor an existing file", param="ground")
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            G = np.load(path, allow_pickle=False)
        elif suffix == ".npz":
            with np.load(path, allow_pickle=False) as npz:
                if "ground" not in npz.files:
                    raise InputError(f"{path}: expected an array named 'ground', found {npz.files}")
                G = npz["ground"]
        elif suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            G = data.get("ground") if isinstance(data, dict) else data
        else:
            raise InputError(f"{path}: unsupported ground-metric file type '{path.suffix}' (use .npy, .npz or .json)")
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{path}: cannot read ground metric ({exc})") from None
    return G


def resolve_ground(mdp: FiniteMDP, ground: Ground | None) -> Ground:
    """Turn a CLI/API ground spec (name, path or matrix) into a usable ground."""
    if ground is None:
        return "reward"
    if isinstance(ground, str):
        if ground in BUILTIN_GROUNDS:
            if ground == "policy":
                mdp.require_policy("the policy ground metric")
            return ground
        return load_ground(ground, mdp)
    return validate_ground_matrix(ground, mdp)


def ground_label(ground: Ground) -> str:
    """A short name for reports."""
    return ground if isinstance(ground, str) else "user"


#: A ground term whose spread over the states is at most this is reported as (nearly) vanishing.
ZERO_SPREAD = 1e-12


def zero_ground_note(mdp: FiniteMDP, op, ground: Ground | None) -> tuple[float, str] | None:
    """``(spread, note)`` when operator ``op``'s ground term (nearly) vanishes for every pair, else None.

    ``op`` is a :class:`bisimkit.operators.Operator` (its ``term`` and ``compares_mean_actions`` say what
    the one-step term reads). ``spread`` is the measured bound on the ground term over all pairs (the
    range of the rewards, or the summed per-coordinate range of the mean actions abar for a
    policy-based ground); the note says what it means. A spread of exactly 0 makes every distance
    exactly 0; a spread up to :data:`ZERO_SPREAD` only makes the distances tiny, which the solver reports
    when they are within the certificate of 0 (:func:`zero_ground_message`)."""
    if op.compares_mean_actions(ground) and mdp.policy is not None:
        abar = mdp.mean_action
        spread = float(np.ptp(abar, axis=0).sum()) if len(abar) else 0.0
        if spread <= ZERO_SPREAD:
            size = "0" if spread == 0 else f"at most {spread:.3g}"
            up_to = "" if spread == 0 else " up to that"
            return spread, (
                f"the policy ground ||abar(s) - abar(t)||_1 is {size} for every pair: all states have "
                f"the same mean action abar = {np.round(abar[0], 6).tolist()}{up_to} (a uniform policy "
                f"over one-hot action_values does this)"
            )
        return None
    reward_based = op.term in ("reward-mean", "reward") or (
        op.term == "ground" and (ground is None or (isinstance(ground, str) and ground == "reward"))
    )
    if reward_based:
        spread = float(np.ptp(mdp.rewards))
        if spread <= ZERO_SPREAD:
            if spread == 0:
                return spread, f"every reward equals {mdp.rewards.flat[0]:.6g}"
            return spread, (
                f"the rewards differ by at most {spread:.3g} (from {mdp.rewards.min():.6g} to {mdp.rewards.max():.6g})"
            )
    return None


def zero_ground_message(metric: str, spread: float, note: str, largest: float, certified_error: float) -> str | None:
    """The warning for a (nearly) vanishing ground term, or None when the distances are not all
    within the certificate of 0 (then they are genuine, however small)."""
    if spread == 0:
        hint = (
            "; give the actions values (action_values, docs/cli.md) or use the reward ground"
            if "policy ground" in note
            else ""
        )
        return f"{note}, so every {metric} distance is 0{hint}"
    if largest <= certified_error:
        return (
            f"{note}, and every {metric} distance is within the certificate ({certified_error:.3g}) of 0: "
            f"the ground term vanishes to this tolerance"
        )
    return None
