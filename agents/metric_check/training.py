"""A metric check's training: one object holds its state, the two modes are its methods.

* **isolated** (:meth:`Training.isolated`): each step is the agent's ``metric_step`` (the world-model
  losses and ``beta`` x the bisimulation loss, the same code the full update runs, and one Adam step
  of the encoder, world model and head; under DBC's update its encoder and model step), the world
  model alone for the first ``warmup`` steps (``bisim_warmup``), on fresh transitions of the scene's
  behaviour (:func:`behaviour_batch`); the actor, whose samples and mean the loss reads, is fitted to
  the behaviour by maximum likelihood of its pre-squash actions on the detached latents. No critic.
* **agent** (:meth:`Training.in_agent`): the full :meth:`agents.agent.Agent.update` (critic, actor,
  temperature, targets, bisimulation loss) on transitions the agent collects itself in the scene,
  random actions for ``seed_steps`` then its own policy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..replay import ReplayBuffer
from ..scenes import Distractors, Scene
from .measure import measure, summarise
from .methods import agent_class
from .settings import Settings


def behaviour_batch(scene: Scene, dist: Distractors, rows: int, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    """A batch of behaviour transitions: start states, pre-squash actions, the replay batch."""
    s = scene.sample_states(rows, rng)
    mu, sd = scene.behaviour(s)
    u = mu + sd * rng.standard_normal(mu.shape)
    nxt, r, a = scene.step(s, u, rng)
    before = dist.initial(rows)
    return u, {
        "obs": scene.frames(s, dist, before),
        "next_obs": scene.frames(nxt, dist, dist.step(before)),
        "action": a.astype(np.float32),
        "reward": np.asarray(r, np.float32),
        "discount": np.ones(rows, np.float32),
    }


def learning_rate(step: int, steps: int, base: float, schedule: str) -> float:
    """``constant``, or ``decay``: constant for the first half, then a cosine down to a tenth."""
    if schedule == "constant" or step < steps // 2:
        return base
    x = (step - steps // 2) / max(1, steps - steps // 2)
    return base * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * x)))


@dataclass
class Training:
    """The state of one check's training: its checked settings, the scene and distractor kinds, the agent, the
    distractors' and transitions' random stream, the exact matrix the curve is measured against (isolated mode),
    the curve and the ``progress(step, row)`` callback."""

    settings: Settings
    scene: Scene
    kinds: tuple
    agent: object
    distractors: Distractors
    rng: np.random.Generator
    exact: np.ndarray | None = None
    progress: Callable | None = None
    curve: list = field(default_factory=list)

    @classmethod
    def begin(cls, settings: Settings, scene: Scene, kinds: tuple, progress: Callable | None = None) -> "Training":
        """Seed torch with ``settings.seed``, and build the random stream, the distractors and the agent of the
        settings' method and variant (:func:`~agents.metric_check.methods.agent_class`)."""
        import torch  # the agents extra (scenes and exact metrics work without)

        from ..agent import pick_device

        cfg = settings.train_config(scene)
        height, width = scene.image_shape
        torch.manual_seed(settings.seed)
        rng = np.random.default_rng(settings.seed)
        dist = Distractors(kinds, height, np.random.default_rng([settings.seed, 1]))
        agent = agent_class(settings.coupling, settings.update_rule)(
            (3, height, width), scene.action_dim, cfg, pick_device(settings.device)
        )
        return cls(settings, scene, kinds, agent, dist, rng, progress=progress)

    def isolated(self, exact: np.ndarray) -> None:
        """``settings.steps`` metric steps on the behaviour's transitions, the curve measured against ``exact``."""
        import torch  # the agents extra, as in begin

        from ..mlp import soft_update

        agent, s = self.agent, self.settings
        cfg = agent.config
        self.exact = exact
        for step in range(s.steps):
            u, data = behaviour_batch(self.scene, self.distractors, s.batch, self.rng)
            lr = learning_rate(step, s.steps, cfg.lr, s.schedule)
            for group in (
                g
                for opt in (agent.model_opt, agent.encoder_opt, agent.world_opt)
                if opt is not None
                for g in opt.param_groups
            ):
                group["lr"] = lr
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
            self.record(step + 1, {**stats, "bc_loss": bc.detach()})

    def in_agent(self, episode: int = 200) -> None:
        """The full update on the agent's own transitions: random actions for ``seed_steps``, then its policy;
        an episode ends after ``episode`` steps."""
        agent, scene, dist, rng, s = self.agent, self.scene, self.distractors, self.rng, self.settings
        cfg = agent.config
        height, width = scene.image_shape
        buffer = ReplayBuffer(max(s.steps + cfg.seed_steps, 1000), (3, height, width), scene.action_dim)
        state, dstate, t = scene.sample_states(1, rng), dist.initial(1), 0
        obs = scene.frames(state, dist, dstate)[0]
        for step in range(s.steps + cfg.seed_steps):
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
                stats = agent.update(buffer.sample(s.batch, rng))
                self.record(step - cfg.seed_steps + 1, stats)

    def record(self, done: int, stats: dict) -> None:
        """After ``done`` updates: a curve row every ``eval_every`` updates and at the end (the learned matrix,
        the invariance and, against ``exact``, the errors), and the ``progress`` call."""
        s = self.settings
        if not (s.eval_every and (done % s.eval_every == 0 or done == s.steps)) and not (
            self.progress and done == s.steps
        ):
            return
        row = {"step": done, **{k: float(v) for k, v in stats.items()}}
        if s.eval_every:
            learned, invariance = measure(self.agent, self.scene, self.kinds, s.draws, s.seed)
            if self.exact is not None:
                summary = summarise(learned, self.exact, invariance)
                row.update({k: summary[k] for k in ("mean_relative_error", "max_relative_error", "spearman")})
            row.update(invariance=invariance, learned=learned.tolist())
            self.curve.append(row)
        if self.progress:
            self.progress(done, row)
