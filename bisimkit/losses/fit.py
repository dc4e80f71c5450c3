"""Fitting a distance with a learned loss: the validated recipe (``docs/losses.md``).

* :func:`fit_tabular` trains a free table (:class:`~bisimkit.losses.TabularDistance`) on a
  :class:`~bisimkit.mdp.FiniteMDP` with one of :data:`FIT_LOSSES` and the schedule of
  :class:`FitSchedule`: plain SGD whose step decays as ``(decay_start / k) ** decay_power``,
  the target table synchronised every step, and the linearly weighted average of the late
  iterates as the answer. This is stochastic approximation of the fixed-point iteration
  ``d <- d + alpha_k (T(d) - d)`` of the loss's operator ``T``, and it reaches the exact fixed
  point to well under 1% where a constant step stalls at a noise floor (see
  :mod:`bisimkit.fitting` for the formulas and the reasons).
* :func:`fit_head` trains any distance head (e.g. :class:`~bisimkit.losses.SeparableDistance`)
  on sampled batches of continuous states with Adam and a target copy of the head.

``validation.learning`` (checks L1-L6 of ``bisimkit verify``) runs these same functions.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, TypedDict

import numpy as np
import torch
from torch import nn

from ..errors import InputError, check_count
from ..fitting import DBC_TARGET_EVERY, FIT_LOSSES, FIXED_POINTS, FitSchedule, check_fit_loss, fixed_point
from ..mdp import FiniteMDP
from . import core as L
from .finite import FiniteModel, TabularDistance

__all__ = [
    "DBC_TARGET_EVERY",
    "FIT_LOSSES",
    "FIXED_POINTS",
    "FitSchedule",
    "HeadFit",
    "TabularFit",
    "fit_head",
    "fit_tabular",
    "fixed_point",
]


@dataclass
class TabularFit:
    """What :func:`fit_tabular` learned, and its record."""

    distances: np.ndarray
    """The learned n x n matrix (the iterate average), diagonal included."""
    loss: str
    metric: str
    """The operator whose fixed point the loss learns (``eps-bar``, ``psm-sampled``, ...)."""
    ground: str | None
    """The ground metric of ``eps-bar`` (``reward`` or ``policy``), else None."""
    schedule: FitSchedule
    """The schedule used, with ``target_every`` resolved."""
    steps: list[int]
    """The steps at which the curves were recorded (0 first)."""
    loss_values: list[float]
    """The batch loss at those steps (nan at step 0)."""
    error: list[float] = field(default_factory=list)
    """max |estimate - exact| over all pairs at those steps (empty without ``exact``)."""
    exact: np.ndarray | None = None
    """The exact fixed point the error is measured against, when given or asked for."""
    seconds: float = 0.0
    history: list[np.ndarray] = field(default_factory=list, repr=False)
    """The estimate at each of ``steps`` (only with ``record=True``), for :meth:`measure`."""

    def measure(self, exact: np.ndarray) -> "TabularFit":
        """Set :attr:`exact` and the :attr:`error` curve from the recorded :attr:`history`
        (for a fit run with ``record=True`` before the exact fixed point was at hand)."""
        if len(self.history) != len(self.steps):
            raise InputError("no recorded history: fit with record=True", param="record")
        self.exact = np.asarray(exact, dtype=np.float64)
        self.error = [float(np.max(np.abs(h - self.exact))) for h in self.history]
        return self

    @property
    def max_error(self) -> float | None:
        """Final max |learned - exact| over all pairs, diagonal included (None without ``exact``)."""
        return self.error[-1] if self.error else None

    @property
    def relative_error(self) -> float | None:
        """:attr:`max_error` divided by the largest exact distance (None without ``exact``)."""
        if self.exact is None or not self.error:
            return None
        return self.error[-1] / max(float(np.max(np.abs(self.exact))), 1e-300)


class _Objective:
    """One loss of :mod:`bisimkit.losses` on a finite model, with its target table."""

    def __init__(self, loss: str, model: FiniteModel, head: TabularDistance, target: TabularDistance) -> None:
        self.loss, self.model, self.head, self.target = loss, model, head, target
        self.next_w2: L.NextW2 | None = None
        self.sync()

    def sync(self) -> None:
        """Copy the table into the target table (DBC: recompute the exact W2 terms)."""
        with torch.no_grad():
            self.target.table.copy_(self.head.table)
        if self.loss == "dbc":
            self.next_w2 = self.model.next_w2(self.target.matrix())

    def __call__(self, z: torch.Tensor, samples: int, generator: torch.Generator) -> torch.Tensor:
        m, c = self.model, self.model.mdp.discount
        common: dict[str, Any] = dict(
            distance=self.head, policy=m.policy, discount=c, samples=samples, generator=generator
        )
        if self.loss == "dbc":
            assert self.next_w2 is not None  # set by sync() for dbc
            return L.dbc_loss(z, reward=m.reward, next_w2=self.next_w2, **common)
        common.update(transition=m.transition, target_distance=self.target)
        if self.loss == "entangled-reward":
            return L.entangled_loss(z, ground=L.reward_ground(m.reward), **common)
        if self.loss == "entangled-policy":
            return L.entangled_loss(z, ground=L.policy_ground(m.mean_action), **common)
        if self.loss == "psm":
            return L.psm_loss(z, mean_action=m.mean_action, **common)
        return L.mico_loss(z, reward=m.mean_reward, **common)


def fit_tabular(
    mdp: FiniteMDP,
    loss: str,
    schedule: FitSchedule | None = None,
    *,
    embedding: np.ndarray | None = None,
    exact: np.ndarray | bool = False,
    record: bool = False,
) -> TabularFit:
    r"""Learn the fixed point of ``loss`` on ``mdp`` as a free table, with the validated schedule.

    The states enter the loss as one-hot vectors (or the rows of ``embedding``) through
    :class:`~bisimkit.losses.FiniteModel`, whose inverse-CDF samplers make the loss's expected
    target the operator :data:`FIXED_POINTS` ``[loss]`` applied to the target table. Each step
    draws ``schedule.batch`` states, pairs them, and takes one SGD step of

    .. math::
        \text{lr}_k = \frac{n^2}{4}\,\alpha_k,\qquad
        \alpha_k = \text{step\_size}\,\min\!\big(1, (\text{decay\_start}/k)^{\text{decay\_power}}\big),

    so each visited pair moves about ``alpha_k`` of the way to its batch-mean target; the
    returned table is ``sum_k k d_k / sum_k k`` over the steps after ``average_from * steps``.
    Seeded; runs on one CPU thread (the tensors are tiny: more threads only contend).

    Parameters
    ----------
    mdp : a finite MDP with a policy.
    loss : one of :data:`FIT_LOSSES` (``"entangled-reward"``, ``"entangled-policy"``,
        ``"psm"``, ``"mico"``, ``"dbc"``).
    schedule : a :class:`FitSchedule` (default: ``FitSchedule()``, the validated one).
    embedding : optional (n x D) state vectors instead of one-hot ones.
    exact : ``True`` to solve the exact fixed point (``bisimkit.solve``, certified to 1e-10)
        and record the max error as training goes; or that fixed point as an (n x n) array.
    record : keep the estimate at every logged step (:attr:`TabularFit.history`), so the
        error curve can be measured afterwards with :meth:`TabularFit.measure` (the verify
        job trains first and solves the exact fixed points once the compiled solvers are ready).

    Returns
    -------
    :class:`TabularFit`: ``distances`` (n x n), ``steps``/``loss_values`` and, with ``exact``,
    ``error`` and ``relative_error``.
    """
    check_fit_loss(loss)
    schedule = FitSchedule() if schedule is None else schedule
    if not isinstance(schedule, FitSchedule):
        raise InputError(f"expected a FitSchedule, got {type(schedule).__name__}", param="schedule")
    if exact is True:
        target = fixed_point(mdp, loss)
    elif exact is False or exact is None:
        target = None
    else:
        target = np.asarray(exact, dtype=np.float64)
        if target.shape != (mdp.n_states, mdp.n_states) or not np.all(np.isfinite(target)):
            raise InputError(
                f"expected a finite {mdp.n_states} x {mdp.n_states} matrix, got shape {target.shape}", param="exact"
            )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _fit(mdp, loss, schedule, embedding, target, record)
    finally:
        torch.set_num_threads(threads)


def _fit(
    mdp: FiniteMDP,
    loss: str,
    schedule: FitSchedule,
    embedding: np.ndarray | None,
    exact: np.ndarray | None,
    record: bool = False,
) -> TabularFit:
    start = time.perf_counter()
    s = replace(schedule, target_every=schedule.target_period(loss))
    assert s.target_every is not None  # resolved just above
    model = FiniteModel(mdp, embedding)
    head, target = TabularDistance(model), TabularDistance(model)
    objective = _Objective(loss, model, head, target)
    n = mdp.n_states
    base_lr = s.step_size * n * n / 4  # off-diagonal pairs appear 2B/n^2 times per batch
    opt = torch.optim.SGD(head.parameters(), lr=base_lr)
    gen = torch.Generator().manual_seed(s.seed)
    like = torch.zeros((), dtype=torch.float64)
    average, weight_sum = head.matrix(), 0.0
    first_average = int(s.average_from * s.steps)

    def error() -> list[float]:
        return [] if exact is None else [float(np.max(np.abs(average - exact)))]

    steps, values, errors = [0], [math.nan], error()
    history = [average.copy()] if record else []
    for k in range(1, s.steps + 1):
        if k > s.decay_start:
            opt.param_groups[0]["lr"] = base_lr * (s.decay_start / k) ** s.decay_power
        z = model.states(torch.randint(n, (s.batch,), generator=gen), like)
        value = objective(z, s.samples, gen)
        opt.zero_grad()
        value.backward()
        opt.step()
        if k % s.target_every == 0:
            objective.sync()
        current = head.matrix()
        if k > first_average:  # linearly weighted iterate average
            weight_sum += k
            average = average + (current - average) * (k / weight_sum)
        else:
            average = current
        if k % s.log_every == 0 or k == s.steps:
            steps.append(k)
            values.append(float(value.detach()))
            errors += error()
            if record:
                history.append(average.copy())
    ground = FIXED_POINTS[loss][1]
    return TabularFit(
        distances=average,
        loss=loss,
        metric=FIXED_POINTS[loss][0],
        ground=ground,
        schedule=s,
        steps=steps,
        loss_values=values,
        error=errors,
        exact=exact,
        seconds=time.perf_counter() - start,
        history=history,
    )


class HeadFit(TypedDict):
    """The record of :func:`fit_head`."""

    steps: list[int]
    error: list[float]
    loss: list[float]
    seconds: float


def fit_head(
    head: nn.Module,
    loss_fn: Callable[..., torch.Tensor],
    sample: Callable[[torch.Generator], torch.Tensor],
    *,
    steps: int = 1000,
    lr: float = 1e-2,
    target_every: int = 1,
    seed: int = 0,
    error: Callable[[nn.Module], float] | None = None,
    log_every: int = 50,
) -> HeadFit:
    """Train a distance head (any ``nn.Module``) with one of the losses on sampled states.

    Each step draws ``z = sample(generator)`` and minimises ``loss_fn(z, head, target, generator)``
    with Adam at a constant ``lr``; ``target`` is a frozen copy of the head (the target distance),
    refreshed every ``target_every`` steps. ``error(head) -> float`` (e.g. the max gap to an
    exact metric) is recorded every ``log_every`` steps, under ``torch.no_grad``.

    The constant step suits targets without noise at the fixed point, such as the entangled
    target of a linear-Gaussian MDP with a separable head (shared noise cancels: check L6 reaches
    1e-15); with noisy targets it leaves a noise floor (see :func:`fit_tabular`).
    A head can only reach a fixed point it can represent: see ``docs/losses.md``. Unlike
    :func:`fit_tabular` it leaves torch's thread count alone; for tiny heads on a CPU,
    ``torch.set_num_threads(1)`` is often many times faster.

    Returns ``{"steps", "error", "loss", "seconds"}`` (:class:`HeadFit`).
    """
    check_count("steps", steps)
    check_count("target_every", target_every)
    check_count("log_every", log_every)
    check_count("seed", seed, low=0)
    if isinstance(lr, bool) or not isinstance(lr, int | float) or not (math.isfinite(lr) and lr > 0):
        raise InputError(f"{lr!r} is not a positive number", param="lr")
    gen = torch.Generator().manual_seed(seed)
    target = copy.deepcopy(head).requires_grad_(False)
    opt = torch.optim.Adam(head.parameters(), lr=lr)
    start = time.perf_counter()
    out: HeadFit = {"steps": [], "error": [], "loss": [], "seconds": 0.0}
    for k in range(1, steps + 1):
        value = loss_fn(sample(gen), head, target, gen)
        opt.zero_grad()
        value.backward()
        opt.step()
        if k % target_every == 0:
            target.load_state_dict(head.state_dict())
        if k % log_every == 0 or k == steps:
            out["steps"].append(k)
            out["loss"].append(float(value.detach()))
            if error is not None:
                with torch.no_grad():
                    out["error"].append(float(error(head)))
    out["seconds"] = time.perf_counter() - start
    return out
