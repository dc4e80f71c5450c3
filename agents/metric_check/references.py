"""Exact metrics to hold a learned one against: what a method intends, and its loss's own fixed point.

Every bisimulation loss of the agents regresses the head's distance on a sampled
target. Two exact metrics matter for each method (docs/results/coupling_study.md):

* **intended**: the metric the method is meant to estimate, with the *optimal*
  coupling of the two states' next-state laws (W1 with the metric itself as the
  cost): ``pi`` (π-bisimulation, Castro 2020) for the reward ground,
  ``|R_pi(s) - R_pi(t)| + c W1(P_pi(s), P_pi(t); d)``, and ``psm`` for the policy
  ground, ``|abar(s) - abar(t)|_1 + c W1(P_pi(s), P_pi(t); d)``;
* **own**: the fixed point of the loss's expected target, which fixes the
  coupling the loss samples with: ``eps-bar`` (entangled) for eps-r and eps-pi,
  ``psm-sampled`` (independent actions and next states, policy ground) for
  drq+pse, the independent-sampling reward fixed point for eps-r's
  independent-coupling variant. The deep DBC losses have none (their target reads
  W2 between latent Gaussians, not the learned distance).

The names :func:`reference_metric` knows (:data:`REFERENCES`):

=====================  ==========================================================  ==============================
name                   finite scene (``bisimkit.solve``, certified to 1e-9)        linear-Gaussian scene
=====================  ==========================================================  ==============================
``pi``                 ``pi``                                                      the bracket below
``psm``                ``psm`` with abar = tanh(mu) (:func:`mean_action_mdp`)      ``eps-bar``, policy ground
``eps-bar-reward``     ``eps-bar``, reward ground                                  Monte Carlo, entangled
``eps-bar-policy``     ``eps-bar``, ground abar = tanh(mu)                          Monte Carlo, entangled
``psm-sampled``        ``psm-sampled`` with abar = tanh(mu)                        Monte Carlo, independent
``independent-reward`` ``dbc-sampled`` (equal on deterministic transitions)       Monte Carlo, independent
``dbc-sampled``        ``dbc-sampled``                                             (none)
=====================  ==========================================================  ==============================

The policy ground is ``tanh(mu_pi(s))``, the squashed mean the agents' loss reads.

**Finite scenes.** Their transitions are deterministic, so the independent
sampling of next states is a Dirac pair and W2 between Diracs is the distance of
their points: the ``dbc-sampled`` operator *is* the independent reward fixed
point ``U(s, t) = sum_{a,b} pi(a|s) pi(b|t) [|R(s,a) - R(t,b)| + c U(s'(a), t'(b))]``.
``psm`` and ``psm-sampled`` read a policy only through ``P_pi`` and the mean action;
:func:`mean_action_mdp` builds the MDP with the same ``P_pi`` whose mean action is
exactly ``tanh(mu)``, so a policy whose interval probabilities have another mean
(an agent's own) is still measured on the ground its loss reads.

**Linear-Gaussian scenes** (the sprites): per coordinate ``x+ = a_i x + b_i
tanh(k_i x + s xi) + n eta`` with ``a_i > 0`` and ``a_i + b_i k_i > 0``, so for fixed
noise the next state is increasing in the state, and each coordinate moves on
its own noise. Then:

* ``psm`` = ``eps-bar`` with the policy ground. The ground
  ``sum_i |tanh(k_i s_i) - tanh(k_i t_i)|`` is a sum over coordinates and each
  ``P_pi(s)`` a product law, so value iteration from 0 stays a sum of
  per-coordinate terms ``|F_i(s_i) - F_i(t_i)|`` with ``F_i`` monotone; on the line
  the shared-noise coupling keeps the two chains ordered, so
  ``E|F(X) - F(Y)| = |E F(X) - E F(Y)|``, which no coupling undercuts (Jensen).
  ``tests/test_coupling_study.py`` checks the equality on a finite discretisation.
* ``pi`` lies between ``|V(s) - V(t)|`` (V the value of the policy: every
  iterate of the π operator from 0 is at least the value difference, as
  ``W1(p, q; d) >= |E_p G - E_q G|`` when ``d >= |G(x) - G(y)|``) and ``eps-bar``
  with the reward ground (the shared-noise pair is one coupling, and
  ``E|R - R'| >= |E R - E R'|``). Both come from the same shared-noise rollouts
  (:func:`reward_bracket`): ``sum_k c^k E|delta_k|`` and ``|sum_k c^k E delta_k|``
  of the reward difference ``delta_k``. Where the two chains' reward differences
  keep one sign along every rollout (the pairs ordered the same way in both
  coordinates relative to the reward's signs) the two are equal to rounding and
  ``pi`` is known exactly; elsewhere the bracket is all that is known, and
  :func:`compare` reports the least and the largest error any value in it allows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import spearmanr

from bisimkit.errors import InputError
from bisimkit.gaussian import LinearGaussianMDP, estimate_distance
from bisimkit.gaussian.couplings import coupled_step
from bisimkit.gaussian.estimators import choose_horizon, truncation_bound
from bisimkit.mdp import FiniteMDP
from bisimkit.solvers import solve

from ..scenes import Scene, interval_probabilities

REFERENCES = ("pi", "psm", "eps-bar-reward", "eps-bar-policy", "psm-sampled", "independent-reward", "dbc-sampled")
#: Monte Carlo rollout pairs per state pair on a Gaussian scene (the records' setting).
MC_SAMPLES = 2000
#: The floor of the per-pair relative error: pairs whose exact distance is below this fraction of the largest
#: one are left out (a relative error of a near-zero distance says nothing about the metric).
PER_PAIR_FLOOR = 0.05
#: Two bracket ends closer than this, relative to the largest distance, are one exact value.
TIGHT = 1e-9


@dataclass
class Reference:
    """An exact metric over a scene's evaluation states: ``lower`` and ``upper`` (n x n) are equal where it is
    known exactly and bracket it elsewhere; ``info`` says what it is and how it was computed."""

    name: str
    lower: np.ndarray
    upper: np.ndarray
    info: dict = field(default_factory=dict)

    @property
    def matrix(self) -> np.ndarray:
        """The metric where exact; the bracket's midpoint elsewhere."""
        return 0.5 * (self.lower + self.upper)

    def tight(self) -> np.ndarray:
        """Which entries are known exactly (bool, n x n)."""
        scale = float(np.max(self.upper)) or 1.0
        return (self.upper - self.lower) <= TIGHT * scale


def _point(name: str, matrix: np.ndarray, info: dict) -> Reference:
    matrix = np.asarray(matrix, float)
    return Reference(name, matrix, matrix.copy(), {"name": name, **info})


# ------------------------------------------------------------------ finite
def mean_action_mdp(mdp: FiniteMDP, mean_action: np.ndarray) -> FiniteMDP:
    """A finite MDP with the same policy-averaged transitions ``P_pi`` and rewards ``R_pi`` as ``mdp`` whose mean
    action is ``mean_action`` (n values, or n x k, in [-1, 1]): ``2^k`` actions, the corners of [-1, 1]^k, each
    coordinate +1 with probability ``(1 + abar_i) / 2`` independently, every one leading by ``P_pi`` and paying
    ``R_pi``. ``pi``, ``psm``, ``psm-sampled`` and ``mico`` read a policy only through ``P_pi``, ``R_pi`` and the
    mean action, so they give on it the metrics of ``mdp``'s policy with ``mean_action`` as the policy ground."""
    abar = np.asarray(mean_action, float)
    abar = abar[:, None] if abar.ndim == 1 else abar
    if abar.ndim != 2 or abar.shape[0] != mdp.n_states:
        raise InputError(f"mean_action: expected {mdp.n_states} rows, got shape {np.shape(mean_action)}")
    if np.any(np.abs(abar) > 1.0):
        raise InputError(f"mean_action[{int(np.argmax(np.any(np.abs(abar) > 1, axis=1)))}]: outside [-1, 1]")
    k = abar.shape[1]
    corners = np.array([[1.0 if (c >> i) & 1 else -1.0 for i in range(k)] for c in range(2**k)])  # (2^k, k)
    up = (1 + abar) / 2
    policy = np.prod(np.where(corners[None] > 0, up[:, None, :], 1 - up[:, None, :]), axis=2)  # (n, 2^k)
    p_pi = np.einsum("sa,sat->st", mdp.policy, mdp.transitions)
    r_pi = np.einsum("sa,sa->s", mdp.policy, mdp.rewards)
    m = len(corners)
    return FiniteMDP(
        np.repeat(p_pi[:, None, :], m, axis=1),
        np.repeat(r_pi[:, None], m, axis=1),
        mdp.discount,
        policy,
        corners,
        name=f"{mdp.label} (mean action given)",
    )


def _finite(scene: Scene, name: str, policy) -> Reference:
    mdp = scene.mdp
    mean, std = (scene.behaviour_mean[:, 0], scene.behaviour_std[:, 0]) if policy is None else policy
    mean, std = np.asarray(mean, float), np.asarray(std, float)
    mdp = mdp.with_policy(interval_probabilities(mean, std, mdp.n_actions))
    squashed = np.tanh(mean)
    gap = float(np.max(np.abs(mdp.mean_action[:, 0] - squashed)))
    info = {"policy_mean_action_gap": gap}
    if name in ("psm", "psm-sampled"):
        target, operator, ground = mean_action_mdp(mdp, squashed), name, None
        info["ground"] = "|tanh mu(s) - tanh mu(t)|"
    elif name == "eps-bar-policy":
        operator, target = "eps-bar", mdp
        if gap > 1e-9:  # the agent's ground as a matrix over (state, action) pairs
            m = mdp.n_actions
            ground = np.abs(np.repeat(squashed, m)[:, None] - np.repeat(squashed, m)[None, :])
            info["ground"] = "|tanh mu(s) - tanh mu(t)| (matrix)"
        else:
            ground = "policy"
            info["ground"] = "policy (the finite mean action equals tanh mu)"
    elif name == "eps-bar-reward":
        target, operator, ground = mdp, "eps-bar", "reward"
        info["ground"] = "reward"
    elif name in ("independent-reward", "dbc-sampled"):
        target, operator, ground = mdp, "dbc-sampled", None
        info["ground"] = "reward"
        if name == "independent-reward":
            info["note"] = "dbc-sampled: with deterministic transitions W2 between the next states is their distance"
    else:  # pi
        target, operator, ground = mdp, "pi", None
        info["ground"] = "reward (policy averages)"
    sol = solve(target, operator, ground=ground) if ground is not None else solve(target, operator)
    info.update(operator=operator, solver=sol.method, certified_error=float(sol.certified_error))
    return _point(name, sol.distances, info)


# ---------------------------------------------------------------- Gaussian
def separable_monotone(model: LinearGaussianMDP) -> bool:
    """Whether each coordinate of ``model`` moves on its own noise and, for fixed noise, increasingly in the
    state: A, B, K diagonal (square), A_ii > 0 and A_ii + B_ii K_ii > 0 (the module doc's condition)."""
    A, B, K = (np.asarray(x, float) for x in (model.A, model.B, model.K))
    if not (A.shape == B.shape == K.shape and A.shape[0] == A.shape[1]):
        return False
    if any(np.any(x != np.diag(np.diag(x))) for x in (A, B, K)):
        return False
    a, b, k = np.diag(A), np.diag(B), np.diag(K)
    monotone = (a > 0) & (a + np.minimum(b * k, 0) * model.action_scale > 0)
    return bool(np.all(monotone))


class SquashedMeanGround(LinearGaussianMDP):
    """The policy ground the agents' loss reads: ``tanh`` of the pre-squash mean (bisimkit's squashed
    ``mean_action`` is the mean of the squashed action instead)."""

    def mean_action(self, z):
        return self.action_scale * np.tanh(self.policy_mean(z))


def squashed_mean_model(model: LinearGaussianMDP) -> SquashedMeanGround:
    """``model`` with the agents' policy ground ``tanh(K s)``."""
    zero = np.zeros((1, model.state_dim))
    return SquashedMeanGround(
        model.A,
        model.B,
        model.K,
        model.policy_std(zero)[0],
        model.transition_std(zero, np.zeros((1, model.action_dim)))[0],
        model.to_dict().get("reward", {}),
        model.discount,
        squash=True,
        action_scale=model.action_scale,
        name=model.name,
    )


def _monte_carlo(model, states, ground: str, coupling: str, samples: int, seed: int) -> tuple[np.ndarray, dict]:
    n = len(states)
    i, j = np.triu_indices(n, 0 if coupling == "independent" else 1)
    est = estimate_distance(model, states[i], states[j], ground=ground, samples=samples, seed=seed, coupling=coupling)
    D = np.zeros((n, n))
    D[i, j] = est.mean
    D[j, i] = est.mean
    return D, {
        "solver": f"Monte Carlo, {samples} rollout pairs x {est.horizon} steps, {coupling} coupling",
        "stderr_max": float(np.max(est.stderr)),
        "truncation_max": float(np.max(est.truncation)),
    }


def reward_bracket(
    model: LinearGaussianMDP, states: np.ndarray, samples: int = MC_SAMPLES, seed: int = 0, tail: float = 1e-3
) -> tuple[np.ndarray, np.ndarray, dict]:
    """``(lower, upper, info)``: ``|sum_k c^k E delta_k|`` and ``sum_k c^k E|delta_k|`` over every pair of
    ``states``, ``delta_k`` the reward difference at step k of two rollouts that share their noise, from the same
    ``samples`` rollouts per pair (module doc: the value difference and the entangled metric, between which
    π-bisimulation lies). Each is certified up to the truncation bound after the horizon (``info``)."""
    states = np.asarray(states, float)
    n = len(states)
    i, j = np.triu_indices(n, 1)
    z, z2 = states[i], states[j]
    horizon = choose_horizon(model, "reward", z, z2, tail, "entangled")
    rng = np.random.default_rng(seed)
    x, y = np.repeat(z, samples, axis=0), np.repeat(z2, samples, axis=0)
    signed = np.zeros(len(x))
    absolute = np.zeros(len(x))
    ct, c = 1.0, model.discount
    for _ in range(horizon):
        a, b, xp, yp = coupled_step(model, x, y, rng, "entangled")
        delta = model.reward(x, a) - model.reward(y, b)
        signed += ct * delta
        absolute += ct * np.abs(delta)
        x, y, ct = xp, yp, ct * c
    signed = signed.reshape(len(i), samples)
    absolute = absolute.reshape(len(i), samples)
    low = np.abs(signed.mean(axis=1))
    high = absolute.mean(axis=1)
    same_sign = low >= high * (1 - 1e-12)  # one sign at every step of every rollout: the two are one number
    low = np.where(same_sign, high, np.minimum(low, high))
    L, U = np.zeros((n, n)), np.zeros((n, n))
    L[i, j] = L[j, i] = low
    U[i, j] = U[j, i] = high
    trunc = truncation_bound(model, "reward", z, z2, horizon, "entangled")
    se = absolute.std(axis=1, ddof=1) / math.sqrt(samples)
    return (
        L,
        U,
        {
            "solver": f"Monte Carlo, {samples} shared-noise rollout pairs x {horizon} steps",
            "stderr_max": float(np.max(se)),
            "truncation_max": float(np.max(trunc)),
            "exact_pairs": int(same_sign.sum()),
            "pairs": int(len(i)),
        },
    )


def _gaussian(scene: Scene, name: str, samples: int, seed: int) -> Reference:
    model, states = scene.mdp, np.asarray(scene.eval_states, float)
    if name == "dbc-sampled":
        raise InputError("reference: dbc-sampled is a finite operator; a Gaussian scene has no such metric")
    if name == "pi":
        lower, upper, info = reward_bracket(model, states, samples, seed)
        info.update(
            ground="reward",
            note="π-bisimulation lies in [|V(s) - V(t)|, eps-bar]; the two meet on "
            f"{info['exact_pairs']} of {info['pairs']} pairs",
        )
        return Reference(name, lower, upper, {"name": name, **info})
    if name == "psm" and not separable_monotone(model):
        raise InputError(
            "reference: psm has no exact form on this Gaussian scene (it equals eps-bar with the "
            "policy ground only when the coordinates move separately and monotonically)"
        )
    ground = "reward" if name in ("eps-bar-reward", "independent-reward") else "policy"
    coupling = "independent" if name in ("psm-sampled", "independent-reward") else "entangled"
    target = model if ground == "reward" else squashed_mean_model(model)
    D, info = _monte_carlo(target, states, ground, coupling, samples, seed)
    info["ground"] = "reward" if ground == "reward" else "|tanh mu(s) - tanh mu(t)|"
    if name == "psm":
        info["note"] = "equal to eps-bar with the policy ground on this scene (separable, monotone coordinates)"
    return _point(name, D, info)


def reference_metric(
    scene: Scene,
    name: str,
    policy: tuple[np.ndarray, np.ndarray] | None = None,
    samples: int = MC_SAMPLES,
    seed: int = 0,
) -> Reference:
    """The exact metric ``name`` (:data:`REFERENCES`, module doc) over ``scene.eval_states`` under the scene's
    behaviour, or on a finite scene under ``policy`` (per-state pre-squash mean and std of a squashed Gaussian,
    e.g. a trained agent's). ``samples`` and ``seed``: the Monte Carlo of a Gaussian scene."""
    if name not in REFERENCES:
        raise InputError(f"reference: {name!r} is not one of {', '.join(REFERENCES)}")
    if scene.kind == "finite":
        return _finite(scene, name, policy)
    return _gaussian(scene, name, samples, seed)


# --------------------------------------------------------------- comparing
def compare(learned: np.ndarray, reference: Reference, floor: float = PER_PAIR_FLOOR) -> dict:
    """The learned matrix against ``reference`` over the pairs s < t.

    * ``mean_relative_error`` / ``max_relative_error``: ``|learned - exact| / max exact`` (the largest exact
      distance); where the reference is a bracket, the distance to the bracket (the least error any value in it
      allows), and ``*_upper`` the largest such error (equal where it is exact);
    * ``per_pair_mean_relative_error`` / ``per_pair_max_relative_error``: ``|learned - exact| / exact`` over the
      exactly known pairs whose distance is at least ``floor`` times the largest (``per_pair_floor``,
      ``per_pair_pairs``);
    * ``spearman``: rank correlation over the exactly known pairs (``exact_pairs``).
    """
    learned = np.asarray(learned, float)
    n = len(learned)
    i, j = np.triu_indices(n, 1)
    lo, hi, value = reference.lower[i, j], reference.upper[i, j], learned[i, j]
    scale = float(np.max(hi)) if np.max(hi) > 0 else 1.0
    tight = reference.tight()[i, j]
    least = (np.maximum(lo - value, 0) + np.maximum(value - hi, 0)) / scale
    most = np.maximum(np.abs(value - lo), np.abs(value - hi)) / scale
    keep = tight & (hi >= floor * scale)
    per_pair = np.abs(value[keep] - hi[keep]) / hi[keep] if keep.any() else np.array([math.nan])
    rho = spearmanr(value[tight], hi[tight]).statistic if tight.sum() > 2 else math.nan
    return {
        "mean_relative_error": float(least.mean()),
        "max_relative_error": float(least.max()),
        "mean_relative_error_upper": float(most.mean()),
        "max_relative_error_upper": float(most.max()),
        "per_pair_mean_relative_error": float(per_pair.mean()),
        "per_pair_max_relative_error": float(per_pair.max()),
        "per_pair_floor": floor,
        "per_pair_pairs": int(keep.sum()),
        "spearman": float(rho),
        "exact_pairs": int(tight.sum()),
        "pairs": int(len(i)),
        "exact_max": scale,
        "learned_max": float(np.max(value)),
        "learned_to_exact_slope": float(np.dot(value[tight], hi[tight]) / max(np.dot(hi[tight], hi[tight]), 1e-300)),
    }
