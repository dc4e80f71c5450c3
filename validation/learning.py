"""Convergence of the learned losses to the exact fixed points (``docs/losses.md``).

A :class:`~bisimkit.losses.TabularDistance` (one free entry per state pair,
diagonal included) is trained from sampled batches with one loss of
:mod:`bisimkit.losses`, the very functions the agents import, on a finite MDP
wrapped by :class:`~bisimkit.losses.FiniteModel` (one-hot or embedded states).
Inverse-CDF sampling from uniform noise makes the finite policy and transition
reparametrised samplers, so each loss's expected target is an operator of
``docs/operators.md`` applied to the target table:

=================  ==============================================  =============
loss               expected target                                 fixed point
=================  ==============================================  =============
entangled, G=R/pi  eps-bar (shared noise = north-west-corner)      ``eps-bar``
PSM                ||abar(s)-abar(t)||_1 + c Ppi d Ppi^T           ``psm-sampled``
MICo               |Rpi(s)-Rpi(t)| + c Ppi d Ppi^T                 ``mico``
DBC                E_{a,a' indep} |R(s,a)-R(t,a')| + c W2(.; d)    ``dbc-sampled``
=================  ==============================================  =============

Training is :func:`bisimkit.losses.fit_tabular`, the library's validated recipe
(stochastic approximation of that fixed-point iteration: SGD with a decaying step,
the target table synchronised every step, Polyak-Ruppert averaging of the iterates;
:mod:`bisimkit.fitting` gives the schedule and the reasons); this module picks the
cases, records the max error against ``solve(mdp, metric)`` as a :class:`Curve` and
judges it against :data:`RELATIVE_TOLERANCE`.

For continuous MDPs (e.g. linear-Gaussian ones with a known d_eps-bar),
:func:`bisimkit.losses.fit_head` (also reachable here as ``fit_head``) trains any
distance head with any of the losses on sampled batches and records an error callback.
"""

from __future__ import annotations

import importlib.util
import time
import traceback
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from bisimkit.examples import chain
from bisimkit.fitting import FIXED_POINTS, FitSchedule, fixed_point
from bisimkit.gaussian.exact import distance
from bisimkit.gaussian.model import LinearGaussianMDP
from bisimkit.generators import product_grid_mdp, random_mdp
from bisimkit.mdp import FiniteMDP

#: A check passes when the final max error is at most this fraction of the largest exact distance.
RELATIVE_TOLERANCE = 0.01


@dataclass(frozen=True)
class LossCheck:
    """One loss and the fixed point it must learn."""

    id: str
    loss: str
    metric: str
    ground: str | None
    statement: str


def _tabular(id: str, loss: str, statement: str) -> LossCheck:
    """A check of a tabular loss against the fixed point it learns (:data:`FIXED_POINTS`)."""
    return LossCheck(id, loss, *FIXED_POINTS[loss], statement)


LOSS_CHECKS: list[LossCheck] = [
    _tabular("L1", "entangled-reward", "entangled loss (Alg. 1, G = reward) learns d_eps-bar, zero diagonal included"),
    _tabular("L2", "entangled-policy", "entangled loss (Alg. 1, G = policy) learns d_eps-bar, zero diagonal included"),
    _tabular("L3", "psm", "sampled PSM loss learns the psm-sampled fixed point, positive diagonal included"),
    _tabular("L4", "mico", "MICo loss learns the mico fixed point, positive diagonal included"),
    _tabular(
        "L5", "dbc", "sampled DBC loss (exact finite W2) learns the dbc-sampled fixed point, positive diagonal included"
    ),
    LossCheck(
        "L6",
        "entangled-gaussian",
        "eps-bar",
        "policy",
        "entangled loss with the separable head learns the exact d_eps-bar of a linear-Gaussian MDP",
    ),
]
LOSSES = {c.loss: c for c in LOSS_CHECKS}
#: The losses trained as a table on finite MDPs (all but the linear-Gaussian check).
TABULAR_LOSSES = tuple(loss for loss in LOSSES if loss != "entangled-gaussian")


def loss_ids() -> list[str]:
    """The ids of the loss checks (L1...)."""
    return [c.id for c in LOSS_CHECKS]


#: The schedule of the tabular trainings: the library's :class:`bisimkit.fitting.FitSchedule`
#: (``target_every=None`` means every step, and every :data:`bisimkit.fitting.DBC_TARGET_EVERY` steps for DBC).
TrainConfig = FitSchedule


@dataclass
class Curve:
    """The max-error curve of one training run."""

    loss: str
    metric: str
    mdp: str
    steps: list[int]
    error: list[float]  # max |estimate - d*| over all pairs, diagonal included
    scale: float  # max |d*|
    final_error: float
    exact_diagonal: float  # max_s d*(s, s)
    learned_diagonal: float  # max_s |estimate(s, s)|
    seconds: float
    config: dict = field(default_factory=dict)

    @property
    def tolerance(self) -> float:
        """The pass mark: :data:`RELATIVE_TOLERANCE` times the largest exact distance."""
        return RELATIVE_TOLERANCE * max(self.scale, 1e-12)

    @property
    def held(self) -> bool:
        """Whether the final error is within the tolerance."""
        return self.final_error <= self.tolerance

    def to_json(self) -> dict:
        out = asdict(self)
        out["tolerance"] = self.tolerance
        out["held"] = self.held
        return out


def exact_fixed_point(mdp: FiniteMDP, loss: str) -> np.ndarray:
    """The fixed point the loss should learn, from the exact solvers (certified to 1e-10)."""
    check = _check(loss)
    return fixed_point(mdp, "entangled-policy" if check.loss == "entangled-gaussian" else loss)


def _check(loss: str) -> LossCheck:
    if loss not in LOSSES:
        raise ValueError(f"loss: unknown loss '{loss}' (choose from {', '.join(LOSSES)})")
    return LOSSES[loss]


def train_tabular(
    mdp: FiniteMDP,
    loss: str,
    config: TrainConfig = TrainConfig(),
    embedding: np.ndarray | None = None,
    exact: np.ndarray | None = None,
) -> Curve:
    """Train a tabular distance with ``loss`` on ``mdp`` by :func:`bisimkit.losses.fit_tabular` and
    record its max error against the exact fixed point (``exact``, solved here if not given)."""
    from bisimkit.losses import fit  # torch, the torch extra: the checks are skipped without it

    fit.check_fit_loss(loss)
    exact = exact_fixed_point(mdp, loss) if exact is None else np.asarray(exact)
    res = fit.fit_tabular(mdp, loss, config, embedding=embedding, exact=exact)
    return Curve(
        loss=loss,
        metric=res.metric,
        mdp=mdp.label,
        steps=res.steps,
        error=res.error,
        scale=float(np.max(np.abs(exact))),
        final_error=res.error[-1],
        exact_diagonal=float(np.max(np.diag(exact))),
        learned_diagonal=float(np.max(np.abs(np.diag(res.distances)))),
        seconds=res.seconds,
        config=asdict(res.schedule),
    )


def __getattr__(name: str):
    """``fit_head`` is :func:`bisimkit.losses.fit_head`, imported on first use (it needs torch)."""
    if name == "fit_head":
        from bisimkit.losses.fit import fit_head  # torch, the torch extra

        return fit_head
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ------------------------------------------------------------ check cases
def random_embedding(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """A fixed random Gaussian embedding of n states in R^dim (states are its rows)."""
    return np.random.default_rng(seed).normal(size=(n, dim))


@dataclass
class LossCase:
    """An MDP (and state embedding) the loss checks train on, and which losses run on it."""

    family: str
    mdp: FiniteMDP
    embedding: np.ndarray | None = None
    losses: tuple[str, ...] = TABULAR_LOSSES


def linear_gaussian_case(seed: int = 0):
    """A 2-D linear-Gaussian MDP whose d_eps-bar (policy ground) the separable head can represent:
    diagonal closed loop M = A + B K and diagonal K give d = sum_i |K_ii| |dz_i| / (1 - c |M_ii|)."""
    rng = np.random.default_rng([seed, 707])
    A = np.diag(rng.uniform(0.3, 0.9, 2))
    K = np.diag(rng.uniform(-0.6, -0.1, 2))
    return LinearGaussianMDP(
        A, np.eye(2), K, policy_std=[0.3, 0.5], transition_std=[0.2, 0.4], discount=0.9, name="linear-gaussian-2d"
    )


def train_linear_gaussian(model, config: "TrainConfig", pairs: int = 256, coupling: str = "entangled") -> Curve:
    """Train :class:`~bisimkit.losses.SeparableDistance` with the entangled loss (policy ground) on
    batches of Gaussian states of ``model`` and measure it against the exact series of
    :func:`bisimkit.gaussian.exact.distance` on fixed test pairs. (``coupling="independent"``
    trains the same head with independent noise instead, which must miss d_eps-bar.)"""
    import torch  # the torch extra

    from bisimkit.losses import (  # torch (the torch extra)
        SeparableDistance,
        fit_head,
        gaussian_policy,
        gaussian_transition,
        policy_ground,
        sampled_loss,
    )

    n, k, c = model.state_dim, model.action_dim, model.discount
    A, B, K = (torch.tensor(x, dtype=torch.float64) for x in (model.A, model.B, model.K))
    s_pi = torch.tensor(model.policy_std_vector, dtype=torch.float64)
    s_P = torch.tensor(model.transition_std_vector, dtype=torch.float64)
    policy = gaussian_policy(lambda z: (z @ K.T, s_pi.expand(len(z), k)), action_dim=k)
    transition = gaussian_transition(lambda z, a: (z @ A.T + a @ B.T, s_P.expand(len(z), n)), latent_dim=n)
    ground = policy_ground(lambda z: z @ K.T)
    rng = np.random.default_rng(config.seed)
    zt, zt2 = rng.normal(size=(pairs, n)), rng.normal(size=(pairs, n))
    exact = distance(model, "eps-bar", "policy", zt, zt2).values
    zt_t, zt2_t = torch.tensor(zt), torch.tensor(zt2)

    def loss(z, head, target, gen):
        return sampled_loss(
            z,
            distance=head,
            target_distance=target,
            policy=policy,
            transition=transition,
            ground=ground,
            discount=c,
            coupling=coupling,
            samples=8,
            generator=gen,
        )

    def error(head) -> float:
        return float(np.max(np.abs(head(zt_t, zt2_t).numpy() - exact)))

    head = SeparableDistance(n, powers=(1,)).double()
    steps = max(config.steps, 600)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: as in fit_tabular, threads only contend (20x slower on a busy machine)
    try:
        res = fit_head(
            head,
            loss,
            sample=lambda g: torch.randn(512, n, generator=g, dtype=torch.float64),
            steps=steps,
            lr=0.02,
            seed=config.seed,
            error=error,
            log_every=max(steps // 50, 1),
        )
    finally:
        torch.set_num_threads(threads)
    with torch.no_grad():
        self_distance = float(head(zt_t, zt_t).abs().max())
    return Curve(
        "entangled-gaussian",
        "eps-bar",
        model.name,
        res["steps"],
        res["error"],
        float(np.max(exact)),
        res["error"][-1],
        0.0,
        self_distance,
        res["seconds"],
        {"steps": steps, "lr": 0.02, "samples": 8, "batch": 512},
    )


def loss_cases(quick: bool = False, seed: int = 0) -> list[LossCase]:
    """The MDPs of the loss checks: every loss on a random sparse MDP (one-hot states) and on
    a random MDP with embedded states; the policy-ground losses on the chain example
    (real-valued actions); the entangled ones on a product grid (Rosenblatt sampling)."""
    rng = np.random.default_rng([seed, 606])
    gaussian = LossCase("linear-gaussian", linear_gaussian_case(seed), losses=("entangled-gaussian",))
    if quick:  # one case per operator: the policy-ground and MICo variants wait for the full run
        return [
            LossCase(
                "random-sparse",
                random_mdp(4, 2, rng, discount=0.8, max_support=2),
                losses=("entangled-reward", "psm", "dbc"),
            ),
            gaussian,
        ]
    sparse = random_mdp(6, 2, rng, discount=0.9, max_support=2)
    embedded = random_mdp(5, 3, rng, discount=0.8)
    grid = product_grid_mdp((2, 3), 2, rng, discount=0.8, max_support=2)
    return [
        LossCase("random-sparse", sparse),
        LossCase("embedded", embedded, random_embedding(embedded.n_states, 3, seed)),
        LossCase("chain", chain(5, discount=0.8), losses=("entangled-policy", "psm")),
        LossCase("product-grid", grid, losses=("entangled-reward", "entangled-policy")),
        gaussian,
    ]


QUICK_CONFIG = TrainConfig(steps=800, batch=512, samples=2, decay_start=100, log_every=10)
DEFAULT_CONFIG = TrainConfig(steps=1000, decay_start=150)


def loss_plan(quick: bool = False, seed: int = 0, ids: list[str] | None = None) -> list[tuple[LossCheck, LossCase]]:
    """The (check, case) runs of :func:`run_loss_checks`, in order."""
    return [
        (check, case)
        for case in loss_cases(quick, seed)
        for check in LOSS_CHECKS
        if check.loss in case.losses and (ids is None or check.id in ids)
    ]


def run_loss_checks(
    quick: bool = False, seed: int = 0, ids: list[str] | None = None, config: TrainConfig | None = None, progress=None
) -> list[tuple[LossCheck, LossCase, Curve]]:
    """Train every selected loss on every case; returns (check, case, curve) triples.

    The tables are trained first, recording their estimates, and the exact fixed points are
    solved afterwards (the compiled solvers may still be compiling in another process while the
    first tables train). ``progress(check, case)`` is called after each training.
    """
    from bisimkit.losses import fit  # torch, the torch extra: the checks are skipped without it

    config = replace(config or (QUICK_CONFIG if quick else DEFAULT_CONFIG), seed=seed)
    trained = []
    for check, case in loss_plan(quick, seed, ids):
        if check.loss == "entangled-gaussian":
            trained.append((check, case, train_linear_gaussian(case.mdp, config)))
        else:
            trained.append(
                (check, case, fit.fit_tabular(case.mdp, check.loss, config, embedding=case.embedding, record=True))
            )
        if progress:
            progress(check, case)
    out = []
    for check, case, res in trained:
        if not isinstance(res, Curve):
            exact = exact_fixed_point(case.mdp, check.loss)
            res.measure(exact)
            res = Curve(
                loss=check.loss,
                metric=res.metric,
                mdp=case.mdp.label,
                steps=res.steps,
                error=res.error,
                scale=float(np.max(np.abs(exact))),
                final_error=res.error[-1],
                exact_diagonal=float(np.max(np.diag(exact))),
                learned_diagonal=float(np.max(np.abs(np.diag(res.distances)))),
                seconds=res.seconds,
                config=asdict(res.schedule),
            )
        out.append((check, case, res))
    return out


def torch_available() -> bool:
    """Whether torch can be imported (the loss checks need it)."""
    return importlib.util.find_spec("torch") is not None


def loss_report(quick: bool = False, seed: int = 0, ids: list[str] | None = None, progress=None) -> dict:
    """The ``losses`` part of a verify report: every selected run as a JSON-able dict, the
    schedule, the pass mark, and the wall time."""
    start = time.perf_counter()
    results = run_loss_checks(quick=quick, seed=seed, ids=ids, progress=progress)
    config = results[0][2].config if results else {}
    runs = [
        {
            "id": check.id,
            "loss": check.loss,
            "metric": check.metric,
            "ground": check.ground,
            "family": case.family,
            **{k: v for k, v in curve.to_json().items() if k != "config"},
        }
        for check, case, curve in results
    ]
    return {
        "runs": runs,
        "config": config,
        "relative_tolerance": RELATIVE_TOLERANCE,
        "seconds": time.perf_counter() - start,
    }


def loss_worker(ids: list[str] | None, quick: bool, seed: int, queue) -> None:
    """Entry point of the child process that runs the loss checks alongside the claim checks of
    ``bisimkit verify``: sends ``("progress", text)`` after each training, then ``("done", report)``
    (or ``("error", traceback)``)."""
    try:
        report = loss_report(
            quick, seed, ids, lambda check, case: queue.put(("progress", f"loss {check.id} {case.family}"))
        )
        queue.put(("done", report))
    except BaseException:  # the parent reports it; a worker must not die silently
        queue.put(("error", traceback.format_exc()))
