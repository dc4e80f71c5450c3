"""What an agent learned: its distance over a scene's evaluation states, and how far it is from the exact one.

:func:`measure` averages the learned distance over distractor draws (of the training family, or of
the held-out family, :class:`agents.scenes.HeldOutDistractors`, never drawn in training) and gives
the distractor invariance; :func:`summarise` the errors against the exact metric;
:func:`l1_head_floor` how close any weighted L1 head could come.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import linprog
from scipy.stats import spearmanr

from bisimkit.errors import InputError

from ..scenes import Scene, check_distractors, make_distractors
from .exact import as_scene
from .references import PER_PAIR_FLOOR


def eval_frames(agent, scene: Scene, kinds, draws: int, seed: int, family: str = "training") -> np.ndarray:
    """``draws`` renderings of every evaluation state under fresh distractor draws of ``family`` (seeded apart
    from training), stacked to the agent's frame count: (N * draws, 3F, H, W)."""
    dist = make_distractors(
        kinds, scene.image_shape[0], np.random.default_rng([seed, 2 if family == "training" else 3]), family
    )
    states = np.repeat(np.asarray(scene.eval_states), draws, axis=0)
    frames = scene.frames(states, dist, dist.initial(len(states)))
    stack = agent.encoder.frames
    return np.concatenate([frames] * stack, axis=1) if stack > 1 else frames


def learned_distance_name(agent) -> str:
    """What :func:`learned_distance` reads, in words."""
    if agent.distance is not None:
        return f"the distance head ({type(agent.distance).__name__})"
    return "mean over latent coordinates of smooth-L1(z_i, z'_i), the comparison DBC's loss regresses"


def learned_distance(agent):
    """The agent's learned distance of latent rows: its distance head (:meth:`Agent.latent_distance`), or under
    DBC's update, which has none, ``mean_i smoothL1(z_i, z'_i)``, the per-coordinate comparison its loss
    (:func:`bisimkit.losses.dbc_coordinate_loss`) regresses on ``smoothL1(r, r') + c W2_i``."""
    from torch.nn import functional as F  # the agents extra, as in learn_metric

    if agent.distance is not None:
        return agent.latent_distance
    if getattr(agent, "dbc_update", False):
        return lambda z, z2: F.smooth_l1_loss(z, z2, reduction="none").mean(-1)
    raise InputError(f"method: {agent.config.method} has no distance head to measure")


def measure(
    agent, scene: Scene, distractors="all", draws: int = 8, seed: int = 0, family: str = "training"
) -> tuple[np.ndarray, float]:
    """The learned distance matrix over ``scene.eval_states`` of a (trained) agent, averaged over ``draws``
    distractor draws per state (every pair of draws; different draws on the diagonal), and the distractor
    invariance: the mean distance between renderings of the same state under different distractors over the
    mean distance between different states (0 is perfect). ``family``: ``training`` draws the distractors
    training draws; ``held-out`` those of :class:`agents.scenes.HeldOutDistractors`, never drawn in training.
    A frame-stacking agent sees the frame repeated."""
    import torch  # the agents extra, as in learn_metric

    scene = as_scene(scene)
    distance = learned_distance(agent)
    kinds = check_distractors(distractors)
    n = scene.n_eval
    obs = torch.as_tensor(eval_frames(agent, scene, kinds, draws, seed, family))
    with torch.no_grad():
        z = agent.embed(obs)
        rows = len(z)
        left = z.repeat_interleave(rows, 0)
        right = z.repeat(rows, 1)
        d = distance(left, right).reshape(n, draws, n, draws).double().cpu().numpy()
    learned = d.mean(axis=(1, 3))
    off_draws = ~np.eye(draws, dtype=bool)
    same = np.array([d[s, :, s, :][off_draws].mean() for s in range(n)])
    learned[np.arange(n), np.arange(n)] = same
    different = learned[~np.eye(n, dtype=bool)].mean()
    invariance = float(same.mean() / different) if different > 0 else math.inf
    return learned, invariance


def agent_policy(
    agent, scene: Scene, distractors="all", draws: int = 8, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A finite scene's per-state pre-squash mean and std of the agent's actor, averaged over draws."""
    import torch  # the agents extra, as in learn_metric

    obs = torch.as_tensor(eval_frames(agent, scene, check_distractors(distractors), draws, seed))
    with torch.no_grad():
        features = agent.encoder.trunk(obs.to(agent.device))
        mu, sigma = agent.actor(agent.actor_latent(features))
    mu = mu[:, 0].reshape(scene.n_eval, draws).mean(1).cpu().numpy()
    sigma = sigma[:, 0].reshape(scene.n_eval, draws).mean(1).cpu().numpy()
    return mu.astype(float), sigma.astype(float)


def summarise(learned: np.ndarray, exact: np.ndarray, invariance: float, floor: float = PER_PAIR_FLOOR) -> dict:
    """Errors over the pairs s < t relative to the largest exact distance, the per-pair relative errors
    ``|learned - exact| / exact`` over the pairs whose exact distance is at least ``floor`` times the largest
    (``per_pair_floor``; ``per_pair_pairs`` of them), Spearman's rank correlation, the largest diagonal error (the
    sampled operators' self-distances), and the invariance."""
    n = len(exact)
    i, j = np.triu_indices(n, 1)
    scale = float(np.max(exact[i, j]))
    err = np.abs(learned[i, j] - exact[i, j]) / (scale if scale > 0 else 1.0)
    rho = spearmanr(learned[i, j], exact[i, j]).statistic if n > 2 else float("nan")
    diag = np.abs(np.diag(learned) - np.diag(exact)) / (scale if scale > 0 else 1.0)
    keep = exact[i, j] >= floor * scale
    per_pair = (np.abs(learned[i, j] - exact[i, j])[keep] / exact[i, j][keep]) if keep.any() else np.array([math.nan])
    return {
        "mean_relative_error": float(err.mean()),
        "max_relative_error": float(err.max()),
        "per_pair_mean_relative_error": float(per_pair.mean()),
        "per_pair_max_relative_error": float(per_pair.max()),
        "per_pair_floor": floor,
        "per_pair_pairs": int(keep.sum()),
        "spearman": float(rho),
        "distractor_invariance": float(invariance),
        "diagonal_max_relative_error": float(diag.max()),
        "exact_max": scale,
        "learned_max": float(np.max(learned[i, j])),
        "states": int(n),
        "pairs": int(len(i)),
    }


def l1_head_floor(distances: np.ndarray, max_states: int = 12) -> float | None:
    """The smallest max error, relative to the largest distance over the pairs s < t, of any weighted L1 distance
    ``sum_i w_i |z_i - z'_i|`` between any points z(s) (the agents' heads on latents of any dimension): the
    distance of ``distances`` to the cut cone, by linear programming over the 2^(n-1) - 1 cuts. 0 when the matrix
    is L1-embeddable; None above ``max_states`` states (the LP grows as 2^n)."""
    d = np.asarray(distances, float)
    n = len(d)
    if n > max_states or n < 2:
        return None
    i, j = np.triu_indices(n, 1)
    target = d[i, j]
    bits = (np.arange(1, 2 ** (n - 1))[:, None] >> np.arange(n)[None, :]) & 1  # cuts containing state n-1 never
    cuts = (bits[:, i] != bits[:, j]).astype(float).T  # pairs x cuts
    ones = np.ones((len(target), 1))
    cost = np.zeros(cuts.shape[1] + 1)
    cost[-1] = 1.0
    res = linprog(
        cost,
        A_ub=np.block([[cuts, -ones], [-cuts, -ones]]),
        b_ub=np.concatenate([target, -target]),
        bounds=[(0, None)] * len(cost),
        method="highs",
    )
    scale = float(target.max())
    return float(res.x[-1] / scale) if res.success and scale > 0 else None
