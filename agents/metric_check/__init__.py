"""The learned metric against the exact one: an agent's encoder on pixel scenes with distractors.

:func:`learn_metric` trains the agent of ``agents.agent`` (its encoder, latent
transition / reward / inverse models, distance head and Adam, built from a
:class:`~agents.config.TrainConfig` exactly as ``agents.train`` builds it) on
transitions of a fixed behaviour policy in a scene of :mod:`agents.scenes`,
and compares the latent distance it learns with the exact fixed point of the
operator the method's loss targets:

* **isolated** (``mode="isolated"``): each step is the agent's ``metric_step``
  (the world-model losses and ``beta`` x the bisimulation loss, the same code
  the full update runs) and one Adam step of the encoder, world model and head,
  the world model alone for the first ``warmup`` steps (``bisim_warmup``);
  the actor, whose samples and mean the loss reads, is fitted to the behaviour by
  maximum likelihood of its pre-squash actions on the detached latents. No critic.
* **agent** (``mode="agent"``): the full :meth:`Agent.update` (critic, actor,
  temperature, targets, bisimulation loss) on transitions the agent collects
  itself in the scene, random actions for ``seed_steps`` then its own policy;
  the exact metric is then that of the agent's final policy (finite scenes: its
  squashed Gaussian read at every state, averaged over distractor draws, turned
  into interval probabilities). :func:`measure` takes any trained agent.

The exact metric (:func:`exact_metric`) by method: ``eps-r`` the ``eps-bar``
fixed point with the reward ground, ``eps-pi`` with the policy ground of the
squashed mean ``tanh(mu_pi)`` the agent's loss reads, ``drq+pse``
``psm-sampled``, ``drq+dbc`` ``dbc-sampled``. On a finite scene ``bisimkit.solve``
gives them to 1e-9; on a linear-Gaussian scene the squashed policy has no exact
series, and ``bisimkit.gaussian.estimate_distance`` gives Monte Carlo values with
a certified truncation bound and a standard error (entangled for the eps family,
independent for drq+pse). DBC's deep target uses W2 between the *latent*
Gaussians with a Euclidean cost, not the learned distance, so no state-space
operator is its fixed point: ``dbc-sampled`` (and, on a Gaussian scene, the
independent reward fixed point) is a reference, and ``target_exact`` says so.

Two variants change one thing about a method:

* ``coupling="independent"`` with eps-r: the same reward-ground loss
  (:func:`bisimkit.losses.sampled_loss`, ``reward_ground``) with each noise draw
  independent for the two states instead of shared; eps-r and it differ only in
  the coupling, as eps-pi and drq+pse do on the policy ground. Its fixed point is
  the independent-sampling reward fixed point (``dbc-sampled`` on a finite scene,
  whose transitions are deterministic);
* ``update_rule="dbc"`` with drq+dbc: DBC's own update (the ``dbc`` preset's
  update, without DrQ shifts; ``TrainConfig.update_rule``), isolated as the other
  methods are (its encoder and world-model step, no critic). It has no distance
  head: the learned distance is the mean over latent coordinates of the smooth-L1
  comparison its loss regresses (:func:`learned_distance`).

``samples_per_pair`` is the number of noise draws averaged per bisimulation
target (``TrainConfig.bisim_samples``); its default is training's, 1, and every
summary states it. The distractor invariance is measured on fresh draws of the
training family and on the held-out family (:class:`agents.scenes.HeldOutDistractors`),
never drawn in training. :mod:`.references` holds the exact metrics a method
intends (optimal coupling) beside its loss's own fixed point, which
``benchmarks/coupling_study.py`` compares over seeds.
"""

from __future__ import annotations

import io
import json
import math
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy.optimize import linprog
from scipy.stats import spearmanr

from bisimkit.errors import InputError
from bisimkit.files import atomic_write_bytes, atomic_write_json
from bisimkit.fitting import FIXED_POINTS
from bisimkit.gaussian import LinearGaussianMDP, save_gaussian
from bisimkit.mdp import FiniteMDP, save_mdp
from bisimkit.separable import separability

from ..config import METHODS, PRESETS, UPDATE_RULES, TrainConfig
from ..replay import ReplayBuffer
from ..scenes import (IMAGE_SIZE, SCENES, Distractors, Scene, build_scene, check_distractors, finite_scene,
                      gaussian_scene, make_distractors)
from .references import MC_SAMPLES, PER_PAIR_FLOOR, REFERENCES, Reference, compare, reference_metric  # noqa: F401

#: The methods with a metric loss, and the exact (operator, ground) their loss learns on a finite scene:
#: the fixed point of the method's loss (:data:`bisimkit.fitting.FIXED_POINTS`).
METRIC_METHODS = {name: FIXED_POINTS[method.bisim] for name, method in METHODS.items() if method.bisim is not None}
MODES = ("isolated", "agent")
#: The ground each method's loss compares states with.
GROUNDS = {"eps-r": "reward", "drq+dbc": "reward", "eps-pi": "policy", "drq+pse": "policy"}
#: The coupling of each method's loss (eps-r may be given ``coupling="independent"``).
COUPLINGS = {"eps-r": "entangled", "eps-pi": "entangled", "drq+pse": "independent", "drq+dbc": "independent"}
#: Noise draws averaged per bisimulation target by default: training's (``TrainConfig.bisim_samples``).
SAMPLES_PER_PAIR = TrainConfig.bisim_samples
#: DBC's preset fields the check keeps under ``update_rule="dbc"``: its update, not its batch or frame stack.
DBC_FIELDS = tuple(k for k in PRESETS["dbc"].values if k not in ("method", "batch_size", "stacked_frames"))


@dataclass
class MetricCheck:
    """What :func:`learn_metric` returns: the learned and exact matrices over the evaluation ``states`` (the
    learned one averaged over distractor draws of the training family; ``learned_held_out`` over draws of the
    held-out family), the summary numbers, the scene, the trained agent and, in agent mode on a finite scene, the
    agent's final policy (per-state pre-squash mean and std) whose metric ``exact`` is."""

    learned: np.ndarray
    exact: np.ndarray
    states: np.ndarray
    summary: dict
    scene: Scene
    agent: object = field(repr=False, default=None)
    curve: list = field(default_factory=list)
    learned_held_out: np.ndarray | None = None
    policy: tuple[np.ndarray, np.ndarray] | None = None


# ---------------------------------------------------------------- checks
def check_method(method: str) -> str:
    """``method`` if it has a metric loss; sac and drq have none."""
    if method not in METRIC_METHODS:
        raise InputError(f"method: {method!r} has no metric loss to check (choose from "
                         f"{', '.join(METRIC_METHODS)})")
    return method


def check_variant(method: str, coupling: str | None = None, update_rule: str = "joint") -> tuple[str, str]:
    """``(coupling, update_rule)`` of ``method`` with the given variant, checked: ``coupling`` None (the method's
    own) or ``"independent"`` (eps-r only: eps-pi's independent variant is drq+pse), ``update_rule`` ``joint``
    or ``dbc`` (drq+dbc only)."""
    check_method(method)
    if coupling not in (None, COUPLINGS[method]) and not (coupling == "independent" and method == "eps-r"):
        raise InputError(f"coupling: {coupling!r} with {method}: only eps-r has a variant here, 'independent' "
                         "(eps-pi's independent variant is drq+pse)")
    if update_rule not in UPDATE_RULES:
        raise InputError(f"update_rule: {update_rule!r} is not one of {', '.join(UPDATE_RULES)}")
    if update_rule == "dbc" and method != "drq+dbc":
        raise InputError(f"update_rule: dbc is DBC's update of drq+dbc, and method is {method}")
    return coupling or COUPLINGS[method], update_rule


def intended_metric(method: str) -> str:
    """The metric ``method`` is meant to estimate, with the optimal coupling: ``pi`` for the reward ground,
    ``psm`` for the policy ground (:mod:`.references`)."""
    return "pi" if GROUNDS[check_method(method)] == "reward" else "psm"


def own_fixed_point(method: str, coupling: str | None = None, update_rule: str = "joint") -> str | None:
    """The :mod:`.references` name of the fixed point of ``method``'s loss (with the variant), or None for the
    deep DBC losses, whose target is no operator on states."""
    coupling, update_rule = check_variant(method, coupling, update_rule)
    if method == "drq+dbc":
        return None
    if method == "drq+pse":
        return "psm-sampled"
    if method == "eps-pi":
        return "eps-bar-policy"
    return "eps-bar-reward" if coupling == "entangled" else "independent-reward"


def as_scene(mdp, render=None, *, behaviour=None, eval_states=None, image_size: int = IMAGE_SIZE,
             discount: float | None = None) -> Scene:
    """A :class:`Scene` from a built-in name, a Scene, or a user's MDP and renderer.

    A :class:`~bisimkit.mdp.FiniteMDP` needs ``behaviour=(mean, std)``: the pre-squash mean and std of the
    behaviour's action per state (the MDP's own policy is replaced by their interval probabilities).
    A :class:`~bisimkit.gaussian.LinearGaussianMDP` acts with its own (squashed) policy."""
    if isinstance(mdp, Scene):
        return mdp
    if isinstance(mdp, str):
        return build_scene(mdp, image_size, 0.9 if discount is None else discount)
    if render is None or not callable(render):
        raise InputError("render: expected a function of a state returning an (H, W, 3) uint8 image")
    if isinstance(mdp, FiniteMDP):
        if behaviour is None:
            raise InputError("behaviour: a finite MDP needs the behaviour's pre-squash (mean, std) per state")
        return finite_scene(mdp, render, behaviour[0], behaviour[1])
    if isinstance(mdp, LinearGaussianMDP):
        return gaussian_scene(mdp, render, eval_states)
    raise InputError(f"mdp: expected a scene name ({', '.join(SCENES)}), a FiniteMDP or a LinearGaussianMDP, got "
                     f"{type(mdp).__name__}")


# ----------------------------------------------------------------- exact
def exact_metric(scene: Scene, method: str, policy: tuple[np.ndarray, np.ndarray] | None = None,
                 samples: int = MC_SAMPLES, seed: int = 0, coupling: str | None = None,
                 update_rule: str = "joint") -> tuple[np.ndarray, dict]:
    """The matrix over ``scene.eval_states`` of the fixed point ``method``'s loss targets (:func:`own_fixed_point`;
    for the deep DBC losses a reference, ``dbc-sampled`` on a finite scene and the independent reward fixed point
    on a Gaussian one), and what it is (``operator``, ``ground``, ``solver``, ``certified_error`` or the Monte
    Carlo ``stderr_max``, ``target_exact``, ``note``). ``policy``: another squashed Gaussian policy (per-state
    mean, std) of a finite scene, e.g. a trained agent's."""
    coupling, update_rule = check_variant(method, coupling, update_rule)
    own = own_fixed_point(method, coupling, update_rule)
    name = own or ("dbc-sampled" if scene.kind == "finite" else "independent-reward")
    ref = reference_metric(scene, name, policy=policy, samples=samples, seed=seed)
    info = {"operator": ref.info.get("operator", name if scene.kind == "finite" else (
                "eps-bar" if name.startswith("eps-bar") else "independent-sampling fixed point")),
            "ground": ref.info.get("ground"), "target_exact": own is not None, "note": ref.info.get("note", ""),
            "reference": name}
    info.update({k: v for k, v in ref.info.items() if k in ("solver", "certified_error", "stderr_max",
                                                            "truncation_max", "policy_mean_action_gap")})
    if own is None:
        info["note"] = ("the deep DBC target uses W2 between latent Gaussians with a Euclidean cost, not the learned "
                        f"distance: no operator on states is its fixed point, and {name} is a reference")
    mdp = scene.mdp
    if scene.kind == "finite" and mdp.state_shape is not None and name == "eps-bar-reward":
        sep = separability(mdp, "reward")  # bisimkit info's line: a head fed the grid coordinates
        info["separable_in_state_shape"] = sep.describe()
        info["separable_lower_bound"] = float(sep.lower / sep.scale) if sep.scale > 0 else 0.0
    if scene.kind == "finite" and mdp.state_shape is not None and name == "eps-bar-policy" and policy is None:
        sep = separability(mdp, "policy")
        info["separable_in_state_shape"] = sep.describe()
        info["separable_lower_bound"] = float(sep.lower / sep.scale) if sep.scale > 0 else 0.0
    return ref.matrix, info


# ---------------------------------------------------------------- learning
def _config(scene: Scene, method: str, image_size: int, batch: int, seed: int, device: str, samples_per_pair: int,
            update_rule: str, overrides: dict):
    fields = dict(method=method, image_size=image_size, frame_stack=1, capacity="low", batch_size=batch,
                  discount=scene.discount, seed=seed, device=device, background=False, camera=False,
                  bisim_samples=samples_per_pair)
    if update_rule == "dbc":  # DBC's update as its preset sets it up, at the check's batch and frames
        fields.update({k: PRESETS["dbc"].values[k] for k in DBC_FIELDS})
    fields.update(overrides)
    try:
        return TrainConfig(**fields).resolved()
    except TypeError as exc:
        raise InputError(f"config: {exc}") from None


def _agent_class(coupling: str, update_rule: str):
    """:class:`agents.agent.Agent` (the config's update rule), or under the joint update with the independent
    coupling the agent whose bisimulation loss draws the two states' noise independently
    (:func:`bisimkit.losses.sampled_loss`, reward ground)."""
    from ..agent import Agent  # torch: the agents extra, as in learn_metric

    return Agent if coupling != "independent" or update_rule == "dbc" else independent_reward_agent()


@lru_cache(maxsize=None)
def independent_reward_agent():
    """The class of eps-r's independent-coupling variant (a subclass of :class:`agents.agent.JointAgent` whose
    :meth:`~agents.agent.JointAgent.bisimulation_term` it replaces; built on first use, as it needs torch)."""
    from bisimkit.losses import gaussian_policy, gaussian_transition, reward_ground, sampled_loss  # torch, as above

    from ..agent import JointAgent  # torch: the agents extra

    class IndependentRewardAgent(JointAgent):
        """eps-r with the independent coupling: ``sampled_loss`` with the reward ground and
        ``coupling="independent"`` in place of ``entangled_loss`` (everything else is eps-r's)."""

        def bisimulation_term(self, z, distance):
            return sampled_loss(z, distance=distance, policy=gaussian_policy(self.actor, self.action_dim, squash=True),
                                transition=gaussian_transition(self.transition, self.latent_dim),
                                ground=reward_ground(self.next_reward), discount=self.config.discount,
                                coupling="independent", samples=self.config.bisim_samples)

    IndependentRewardAgent.__qualname__ = "IndependentRewardAgent"
    return IndependentRewardAgent


def _batch(scene: Scene, dist: Distractors, rows: int, rng: np.random.Generator):
    """A batch of behaviour transitions: start states, pre-squash actions, the replay batch."""
    s = scene.sample_states(rows, rng)
    mu, sd = scene.behaviour(s)
    u = mu + sd * rng.standard_normal(mu.shape)
    nxt, r, a = scene.step(s, u, rng)
    before = dist.initial(rows)
    return u, {"obs": scene.frames(s, dist, before), "next_obs": scene.frames(nxt, dist, dist.step(before)),
               "action": a.astype(np.float32), "reward": np.asarray(r, np.float32),
               "discount": np.ones(rows, np.float32)}


def _lr(step: int, steps: int, base: float, schedule: str) -> float:
    """``constant``, or ``decay``: constant for the first half, then a cosine down to a tenth."""
    if schedule == "constant" or step < steps // 2:
        return base
    x = (step - steps // 2) / max(1, steps - steps // 2)
    return base * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * x)))


def learn_metric(mdp, render=None, method: str = "eps-r", distractors="all", steps: int = 1500, *,
                 mode: str = "isolated", batch: int = 64, image_size: int = IMAGE_SIZE, seed: int = 0,
                 device: str = "cpu", draws: int = 8, behaviour=None, eval_states=None,
                 schedule: str = "decay", eval_every: int = 0, samples: int = MC_SAMPLES,
                 warmup: int | None = None, config: dict | None = None, progress=None,
                 samples_per_pair: int = SAMPLES_PER_PAIR, coupling: str | None = None, update_rule: str = "joint",
                 target: tuple[np.ndarray, dict] | None = None) -> MetricCheck:
    """Train ``method``'s agent on ``mdp`` rendered by ``render`` (or a built-in scene name) with
    ``distractors`` for ``steps`` updates and measure the learned metric against the exact one
    (module doc). ``config``: more :class:`~agents.config.TrainConfig` fields (e.g. ``{"augment": False}``);
    ``eval_every``: also measure every that many steps (the ``curve``); ``progress(step, stats)`` is called
    then. ``warmup``: updates of the world model alone before the bisimulation loss joins
    (``TrainConfig.bisim_warmup``; default a third of ``steps``; a ``bisim_warmup`` in ``config`` wins).
    ``samples_per_pair``: noise draws averaged per bisimulation target (``TrainConfig.bisim_samples``; training
    draws 1). ``coupling``, ``update_rule``: the variants of the module doc. ``target``: the exact matrix of the
    scene's behaviour and its info, computed before (else :func:`exact_metric`; agent mode on a finite scene always
    solves for the agent's final policy). Returns a :class:`MetricCheck`."""
    import torch  # torch and the modules built on it: the agents extra (scenes and exact metrics work without)

    from ..agent import pick_device

    check_method(method)
    coupling, update_rule = check_variant(method, coupling, update_rule)
    if mode not in MODES:
        raise InputError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    if schedule not in ("constant", "decay"):
        raise InputError(f"schedule: {schedule!r} is not constant or decay")
    warmup_updates = steps // 3 if warmup is None else warmup  # the world model alone for a third, by default
    for name, value, low in (("steps", steps, 1), ("batch", batch, 2), ("draws", draws, 2),
                             ("image_size", image_size, 16), ("eval_every", eval_every, 0),
                             ("warmup", warmup_updates, 0), ("samples_per_pair", samples_per_pair, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InputError(f"{name}: expected an integer >= {low}, got {value!r}")
    if warmup is not None and warmup >= steps:
        raise InputError(f"warmup: {warmup} updates leave none of the {steps} steps to the bisimulation loss")
    kinds = check_distractors(distractors)
    scene = as_scene(mdp, render, behaviour=behaviour, eval_states=eval_states, image_size=image_size)
    height, width = scene.image_shape
    cfg = _config(scene, method, height if height == width else (height, width), batch, seed, device,
                  samples_per_pair, update_rule, {"bisim_warmup": warmup_updates, **(config or {})})
    start, cpu_start = time.monotonic(), time.process_time()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    dist = Distractors(kinds, height, np.random.default_rng([seed, 1]))
    agent = _agent_class(coupling, update_rule)((3, height, width), scene.action_dim, cfg, pick_device(device))
    curve: list = []
    policy = None
    if mode == "isolated":  # the behaviour's metric, known before training: the curve tracks the errors
        exact, info = target if target is not None else exact_metric(scene, method, samples=samples, seed=seed,
                                                                     coupling=coupling, update_rule=update_rule)
        _train_isolated(agent, scene, dist, rng, steps, batch, schedule, eval_every, kinds, draws, seed, curve,
                        progress, exact)
    else:
        _train_agent(agent, scene, dist, rng, steps, batch, eval_every, kinds, draws, seed, curve, progress)
    seconds, cpu_seconds = time.monotonic() - start, time.process_time() - cpu_start
    learned, invariance = measure(agent, scene, kinds, draws, seed)
    held_out, invariance_held_out = measure(agent, scene, kinds, draws, seed, family="held-out") if kinds else \
        (learned, invariance)
    if mode == "agent":  # the metric of the agent's final policy where it can be read off (finite scenes)
        policy = agent_policy(agent, scene, kinds, draws, seed) if scene.kind == "finite" else None
        exact, info = target if policy is None and target is not None else exact_metric(
            scene, method, policy=policy, samples=samples, seed=seed, coupling=coupling, update_rule=update_rule)
        info["policy"] = "the agent's final policy" if policy is not None else \
            "the scene's behaviour policy (no exact metric of the agent's own policy on a Gaussian scene)"
    summary = summarise(learned, exact, invariance)
    held = summarise(held_out, exact, invariance_held_out)
    summary.update(held_out={k: held[k] for k in ("mean_relative_error", "max_relative_error", "spearman",
                                                   "distractor_invariance")})
    floor = l1_head_floor(exact)
    if floor is not None:
        info["l1_head_floor"] = floor
    summary.update(seconds=round(seconds, 1), cpu_seconds=round(cpu_seconds, 1), scene=scene.name, method=method,
                   coupling=coupling, update_rule=update_rule, samples_per_pair=samples_per_pair, mode=mode,
                   steps=steps, batch=batch, image_size=height, distractors=list(kinds), draws=draws, seed=seed,
                   device=str(agent.device), schedule=schedule, learned_distance=learned_distance_name(agent),
                   exact=info,
                   config={k: v for k, v in cfg.to_dict().items() if k in (
                       "augment", "beta", "bisim_samples", "bisim_warmup", "capacity", "discount", "lr", "latent_squash",
                       "model_grad", "spread_units", "update_rule")})
    return MetricCheck(learned, exact, np.asarray(scene.eval_states), summary, scene, agent, curve, held_out, policy)


def _set_lr(optimizers, lr: float) -> None:
    for opt in optimizers:
        if opt is not None:
            for group in opt.param_groups:
                group["lr"] = lr


def _train_isolated(agent, scene, dist, rng, steps, batch, schedule, eval_every, kinds, draws, seed, curve,
                    progress, exact) -> None:
    import torch  # the agents extra, as in learn_metric

    from ..mlp import soft_update

    cfg = agent.config
    for step in range(steps):
        u, data = _batch(scene, dist, batch, rng)
        _set_lr((agent.model_opt, agent.encoder_opt, agent.world_opt), _lr(step, steps, cfg.lr, schedule))
        stats, z = agent.metric_step(data)  # the update's metric learning without the critic
        # the actor the loss samples from follows the behaviour: maximum likelihood of its pre-squash actions
        mu, sigma = agent.actor(z.detach())
        target = torch.as_tensor(u, dtype=torch.float32, device=mu.device)
        bc = (0.5 * ((target - mu) / sigma) ** 2 + sigma.log()).sum(-1).mean()
        agent.actor_opt.zero_grad(set_to_none=True)
        bc.backward()
        agent.actor_opt.step()
        if agent.encoder_target is not None and step % cfg.target_update_every == 0:
            soft_update(agent.encoder_target, agent.encoder, cfg.encoder_tau)
        agent.updates += 1
        _maybe_measure(agent, scene, kinds, draws, seed, step + 1, steps, eval_every, curve, progress,
                       {**stats, "bc_loss": bc.detach()}, exact)


def _train_agent(agent, scene, dist, rng, steps, batch, eval_every, kinds, draws, seed, curve, progress,
                 episode: int = 200) -> None:
    """The full update on the agent's own transitions: random actions for ``seed_steps``, then its policy."""
    cfg = agent.config
    height, width = scene.image_shape
    buffer = ReplayBuffer(max(steps + cfg.seed_steps, 1000), (3, height, width), scene.action_dim)
    state, dstate, t = scene.sample_states(1, rng), dist.initial(1), 0
    obs = scene.frames(state, dist, dstate)[0]
    for step in range(steps + cfg.seed_steps):
        if step < cfg.seed_steps:
            a = rng.uniform(-1.0, 1.0, scene.action_dim)
        else:
            a = agent.act(obs, explore=True)
        u = np.arctanh(np.clip(a, -1 + 1e-6, 1 - 1e-6))[None]
        nxt, r, _ = scene.step(state, u, rng)
        dstate = dist.step(dstate)
        next_obs = scene.frames(nxt, dist, dstate)[0]
        t += 1
        buffer.add(obs, np.tanh(u[0]).astype(np.float32), float(np.asarray(r).reshape(-1)[0]), 1.0, next_obs)
        state, obs = nxt, next_obs
        if t >= episode:
            state, dstate, t = scene.sample_states(1, rng), dist.initial(1), 0
            obs = scene.frames(state, dist, dstate)[0]
        if step >= cfg.seed_steps:
            stats = agent.update(buffer.sample(batch, rng))
            done = step - cfg.seed_steps + 1
            _maybe_measure(agent, scene, kinds, draws, seed, done, steps, eval_every, curve, progress, stats)


def _maybe_measure(agent, scene, kinds, draws, seed, done, steps, eval_every, curve, progress, stats,
                   exact=None) -> None:
    if not (eval_every and (done % eval_every == 0 or done == steps)) and not (progress and done == steps):
        return
    row = {"step": done, **{k: float(v) for k, v in stats.items()}}
    if eval_every:
        learned, invariance = measure(agent, scene, kinds, draws, seed)
        if exact is not None:
            s = summarise(learned, exact, invariance)
            row.update({k: s[k] for k in ("mean_relative_error", "max_relative_error", "spearman")})
        row.update(invariance=invariance, learned=learned.tolist())
        curve.append(row)
    if progress:
        progress(done, row)


# ------------------------------------------------------------- measuring
def _eval_frames(agent, scene: Scene, kinds, draws: int, seed: int, family: str = "training") -> np.ndarray:
    """``draws`` renderings of every evaluation state under fresh distractor draws of ``family`` (seeded apart
    from training), stacked to the agent's frame count: (N * draws, 3F, H, W)."""
    dist = make_distractors(kinds, scene.image_shape[0],
                            np.random.default_rng([seed, 2 if family == "training" else 3]), family)
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


def measure(agent, scene: Scene, distractors="all", draws: int = 8, seed: int = 0, family: str = "training"
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
    obs = torch.as_tensor(_eval_frames(agent, scene, kinds, draws, seed, family))
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


def agent_policy(agent, scene: Scene, distractors="all", draws: int = 8, seed: int = 0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """A finite scene's per-state pre-squash mean and std of the agent's actor, averaged over draws."""
    import torch  # the agents extra, as in learn_metric

    obs = torch.as_tensor(_eval_frames(agent, scene, check_distractors(distractors), draws, seed))
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
    return {"mean_relative_error": float(err.mean()), "max_relative_error": float(err.max()),
            "per_pair_mean_relative_error": float(per_pair.mean()),
            "per_pair_max_relative_error": float(per_pair.max()), "per_pair_floor": floor,
            "per_pair_pairs": int(keep.sum()),
            "spearman": float(rho), "distractor_invariance": float(invariance),
            "diagonal_max_relative_error": float(diag.max()), "exact_max": scale,
            "learned_max": float(np.max(learned[i, j])), "states": int(n), "pairs": int(len(i))}


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
    res = linprog(cost, A_ub=np.block([[cuts, -ones], [-cuts, -ones]]), b_ub=np.concatenate([target, -target]),
                  bounds=[(0, None)] * len(cost), method="highs")
    scale = float(target.max())
    return float(res.x[-1] / scale) if res.success and scale > 0 else None


# --------------------------------------------------------------- writing
TARGETS = {"mean_relative_error": 0.05, "max_relative_error": 0.15, "spearman": 0.95, "distractor_invariance": 0.05}


def meets_targets(summary: dict) -> dict[str, bool]:
    """Each number of the scene check's targets (eps-r and eps-pi, isolated), met or not."""
    return {k: (summary[k] >= v if k == "spearman" else summary[k] <= v) for k, v in TARGETS.items()}


def markdown_table(summaries: list[dict]) -> str:
    """One row per run: scene, method, mode, the four numbers and the seconds."""
    head = ("| scene | method | mode | mean rel. error | max rel. error | Spearman | distractor invariance | "
            "target exact | seconds |\n|---|---|---|---|---|---|---|---|---|\n")
    rows = [f"| {s['scene']} | {s['method']} | {s['mode']} | {100 * s['mean_relative_error']:.1f}% | "
            f"{100 * s['max_relative_error']:.1f}% | {s['spearman']:.3f} | {s['distractor_invariance']:.3f} | "
            f"{'yes' if s['exact']['target_exact'] else 'no'} | {s['seconds']:.0f} |" for s in summaries]
    return head + "\n".join(rows) + "\n"


def write_results(check: MetricCheck, out: str | Path) -> list[Path]:
    """``summary.json``, ``learned.npy``, ``exact.npy``, ``states.npy``, the scene's MDP (``mdp.json``, or
    ``mdp-gaussian.json`` for a linear-Gaussian scene: both load with ``bisimkit``), ``table.md`` and, in
    agent mode or with a curve, ``curve.json``; each written atomically."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, array in (("learned.npy", check.learned), ("exact.npy", check.exact), ("states.npy", check.states)):
        written.append(atomic_write_bytes(out / name, _npy_bytes(array)))
    if check.scene.kind == "finite":
        written.append(save_mdp(check.scene.mdp, out / "mdp.json"))
    else:
        written.append(save_gaussian(check.scene.mdp, out / "mdp-gaussian.json"))
    written.append(atomic_write_json(out / "summary.json", check.summary))
    written.append(atomic_write_bytes(out / "table.md", markdown_table([check.summary]).encode()))
    if check.curve:
        written.append(atomic_write_json(out / "curve.json", check.curve))
    return [Path(p) for p in written]


def _npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(array))
    return buf.getvalue()


def load_results(folder: str | Path) -> dict:
    """The summary and matrices a :func:`write_results` folder holds."""
    folder = Path(folder)
    return {"summary": json.loads((folder / "summary.json").read_text()),
            "learned": np.load(folder / "learned.npy"), "exact": np.load(folder / "exact.npy"),
            "states": np.load(folder / "states.npy")}
