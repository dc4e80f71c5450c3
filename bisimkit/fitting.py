"""The validated schedule for fitting a distance table with a learned loss (torch-free half).

:func:`bisimkit.losses.fit_tabular` trains with it; this module holds what needs no
torch (the loss names, their fixed points and the schedule), so that code which only
plans or reports trainings (``validation.learning``, ``bisimkit verify`` without the
torch extra) can import it. :mod:`bisimkit.losses` re-exports every name here.

Each loss of :mod:`bisimkit.losses`, trained on a finite MDP, has an *expected target*
``T(d)``, where ``T`` is one of the operators of ``docs/operators.md`` applied to the
target table, so the loss can only learn that operator's fixed point:

==================  ================  =========================================
loss                fixed point       ground
==================  ================  =========================================
entangled-reward    ``eps-bar``       reward: ``|r(s,a) - r(t,a')|``
entangled-policy    ``eps-bar``       policy: ``||abar(s) - abar(t)||_1``
psm                 ``psm-sampled``   (positive self-distances)
mico                ``mico``          (positive self-distances)
dbc                 ``dbc-sampled``   (exact finite W2; positive self-distances)
==================  ================  =========================================

The schedule (:class:`FitSchedule`) is stochastic approximation of the fixed-point
iteration ``d <- d + alpha_k (T(d) - d)``: every step moves each visited pair about
``alpha_k`` of the way to its sampled target, with

    alpha_k = step_size                                    for k <= decay_start
    alpha_k = step_size * (decay_start / k) ** decay_power  after,

the target table synchronised every ``target_every`` steps, and the answer is the
linearly weighted average of the iterates after ``average_from * steps``
(Polyak-Ruppert). Why: a sampled target is ``T(d)`` plus zero-mean noise, so a
constant step leaves the table wandering around the fixed point with a spread
proportional to the step (a noise floor: plain Adam or SGD loops on the bundled 4x4
``product-grid`` stay at 3-9% of the largest distance, see ``docs/losses.md``); a step with ``sum alpha_k = inf`` and
``sum alpha_k^2 < inf`` (``1/2 < decay_power <= 1``) drives that spread to zero, and
averaging the late iterates removes most of what is left at a finite step count.
Synchronising the target often keeps the iteration a contraction (factor about
``1 - alpha (1 - c)`` per step); a target frozen for long only regresses onto a stale table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import InputError, check_count
from .mdp import FiniteMDP
from .solvers import solve

#: The losses :func:`bisimkit.losses.fit_tabular` trains, in the order of checks L1-L5.
FIT_LOSSES: tuple[str, ...] = ("entangled-reward", "entangled-policy", "psm", "mico", "dbc")

#: loss -> (operator whose fixed point it learns, ground metric of the eps family or None).
FIXED_POINTS: dict[str, tuple[str, str | None]] = {
    "entangled-reward": ("eps-bar", "reward"),
    "entangled-policy": ("eps-bar", "policy"),
    "psm": ("psm-sampled", None),
    "mico": ("mico", None),
    "dbc": ("dbc-sampled", None),
}

#: DBC's target needs one exact W2 problem per (state, action) pair at each synchronisation.
DBC_TARGET_EVERY = 5


def check_fit_loss(loss: str) -> str:
    """``loss`` if it is one of :data:`FIT_LOSSES`; otherwise an error naming the allowed ones."""
    if loss not in FIT_LOSSES:
        raise InputError(f"unknown loss {loss!r} (choose from {', '.join(FIT_LOSSES)})", param="loss")
    return loss


def fixed_point(mdp: FiniteMDP, loss: str, tol: float = 1e-10) -> np.ndarray:
    """The exact fixed point ``loss`` learns on ``mdp`` (``bisimkit.solve``, certified to ``tol``)."""
    metric, ground = FIXED_POINTS[check_fit_loss(loss)]
    return solve(mdp, metric, ground=ground, tol=tol).distances


def _check_real(name: str, value: float, low: float, high: float, low_open: bool, why: str) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value > high or value < low or (low_open and value == low):
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"
        raise InputError(f"{value!r} is not in {interval} ({why})", param=name)


@dataclass(frozen=True)
class FitSchedule:
    """The validated schedule of :func:`bisimkit.losses.fit_tabular` (see the module docstring).

    The defaults bring every loss of :data:`FIT_LOSSES` within 1% (max error over all pairs,
    diagonal included, relative to the largest exact distance) on the MDPs of checks L1-L5
    and on the bundled ``product-grid`` (0.2-0.7%, 6-8 s per loss on one CPU thread for 16 states).
    """

    steps: int = 1500
    """SGD steps (1500: 1300 of them decayed and averaged, enough for every loss to get under 1% on the
    16-state ``product-grid``; 800 suffice on 4 states)."""
    batch: int = 1024
    """States per batch, each paired with another (1024: every pair of a 16-state MDP is visited
    about 8 times a step, so the batch mean of the target is already a fair estimate)."""
    samples: int = 4
    """Target draws averaged per pair (4: quarters the target variance at a quarter of the batch cost)."""
    step_size: float = 0.5
    """alpha before the decay: each visited pair moves about half-way to its batch-mean target per
    step (the SGD learning rate is ``step_size * n^2 / 4`` because a pair appears about ``2B/n^2``
    times in a batch). Above 1 the iteration overshoots; 0.5 contracts fast and damps the noise."""
    decay_start: int = 200
    """Steps at the constant step (200: the table gets near the fixed point before the decay)."""
    decay_power: float = 0.7
    """alpha_k = step_size (decay_start/k)^decay_power after decay_start; any power in (1/2, 1]
    makes the noise vanish (Robbins-Monro); 0.7 decays slowly enough to keep contracting."""
    average_from: float = 0.1
    """Fraction of the run before the iterate average starts (0.1: skip the far-off start; the
    linear weights k make the early averaged iterates matter little anyway)."""
    target_every: int | None = None
    """Steps between target synchronisations (None: every step, or every 5 for dbc, whose
    synchronisation solves the exact W2 problems)."""
    log_every: int = 25
    """Steps between the recorded points of the curve."""
    seed: int = 0
    """Seed of the torch generator that draws the batches and the noise."""

    def __post_init__(self) -> None:
        for name in ("steps", "batch", "samples", "decay_start", "log_every"):
            check_count(name, getattr(self, name))
        if self.target_every is not None:
            check_count("target_every", self.target_every)
        check_count("seed", self.seed, low=0)
        _check_real("step_size", self.step_size, 0.0, 1.0, True, "the fraction of the way to the target per step")
        _check_real("decay_power", self.decay_power, 0.5, 1.0, True, "the step must decay like k^-p with 1/2 < p <= 1")
        _check_real("average_from", self.average_from, 0.0, 1.0, False, "a fraction of the run")

    def target_period(self, loss: str) -> int:
        """The resolved ``target_every`` for ``loss``."""
        if self.target_every is not None:
            return self.target_every
        return DBC_TARGET_EVERY if loss == "dbc" else 1
