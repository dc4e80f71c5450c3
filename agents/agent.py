"""The agent: SAC on a shared pixel encoder, with DrQ shifts and a bisimulation loss.

One :class:`Agent` serves all six methods (:data:`agents.config.METHODS`). An
update (:meth:`Agent.update`) on a replay batch does, in this order:

1. DrQ random shift of the observations and next observations (not for ``sac``);
2. encode; the critic target uses the next latents under stop-gradient;
3. critic loss (twin soft Q, clipped double-Q target with the entropy bonus);
4. world-model losses when the method has them: transition NLL of the
   detached next latent (per coordinate), reward regression on a sample of the
   predicted next latent, inverse dynamics (paper Alg. 2);
5. ``beta`` times the method's bisimulation loss on the batch latents, imported
   from :mod:`bisimkit.losses` (the same functions the verify job checks);
6. one Adam step on encoder, critics, world model and distance head;
7. every ``actor_update_every`` updates: actor and temperature on detached
   latents; every ``target_update_every``: soft update of the target critics.

The reward the bisimulation losses use is ``R(mu(z, a))``, the reward head on
the mean predicted next latent; the policy ground is ``tanh(mu_pi(z))``, the
squashed mean of the policy (the mean action of the paper's eps-pi, up to the
squashing of the noise).
"""

from __future__ import annotations

import math
from contextlib import nullcontext

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from bisimkit.losses import (DeferredChecks, LatentL1Distance, SeparableDistance, dbc_loss, entangled_loss, gaussian_policy,
                             gaussian_transition, gaussian_w2, policy_ground, psm_loss, reward_ground)

from .augment import random_shift
from .config import TrainConfig
from .critic import TwinCritic
from .encoder import PixelEncoder
from .mlp import make_target, soft_update
from .models import InverseDynamics, RewardModel, TransitionModel
from .policy import Actor


def pick_device(name: str = "auto") -> torch.device:
    """``auto``: CUDA when present, else CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if str(name).startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device: {name!r} asked for, but torch sees no CUDA device")
    return torch.device(name)


def fast_cuda_math() -> None:
    """TF32 matrix products and cuDNN autotuning: the usual speed settings for conv RL on NVIDIA GPUs."""
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True


class Agent(nn.Module):
    """Networks, optimisers and the update rule of one method (see the module doc)."""

    def __init__(self, obs_shape: tuple[int, int, int], action_dim: int, config: TrainConfig,
                 device: torch.device | str = "cpu"):
        super().__init__()
        self.config, self.action_dim = config, int(action_dim)
        self.method = config.spec
        frames = obs_shape[0] // 3
        hidden = config.hidden
        self.encoder = PixelEncoder(frames=frames, image_size=obs_shape[-1], stacked=config.stacked_frames)
        latent = self.encoder.latent_dim
        self.latent_dim = latent
        self.actor = Actor(latent, action_dim, hidden)
        self.critic = TwinCritic(latent, action_dim, hidden)
        self.critic_target = make_target(self.critic)
        self.world_model = config.world_model
        if self.world_model:
            self.transition = TransitionModel(latent, action_dim, hidden)
            self.reward_model = RewardModel(latent, hidden)
            self.inverse = InverseDynamics(latent, action_dim, hidden)
        self.distance: nn.Module | None = None
        if self.method.bisim is not None:
            self.distance = LatentL1Distance() if self.method.head == "latent-l1" else SeparableDistance(latent)
        self.log_alpha = nn.Parameter(torch.tensor(math.log(config.init_temperature)))
        self.target_entropy = -float(action_dim)
        self.to(device)
        self.device = torch.device(device)
        critic_side = [p for name, p in self.named_parameters()
                       if not name.startswith(("actor.", "critic_target.")) and name != "log_alpha"]
        self.model_opt = torch.optim.Adam(critic_side, lr=config.lr)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=config.lr)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=config.alpha_lr)
        self.updates = 0
        # On a GPU the losses' finiteness checks are collected and read when the trainer logs
        # (flush_checks), not once per loss call: each read would stall the GPU queue.
        self.checks = DeferredChecks() if self.device.type == "cuda" else None

    def flush_checks(self) -> None:
        """Raise the deferred ``ValueError`` of any non-finite loss tensor since the last flush."""
        if self.checks is not None:
            self.checks.flush()

    # ------------------------------------------------------------ acting
    @property
    def alpha(self) -> torch.Tensor:
        """The entropy temperature."""
        return self.log_alpha.exp()

    @torch.no_grad()
    def act(self, obs: np.ndarray, explore: bool) -> np.ndarray:
        """An action in [-1, 1]^k for one uint8 observation: sampled (``explore``) or tanh of the mean."""
        z = self.encoder(torch.as_tensor(obs, device=self.device).unsqueeze(0))
        if not explore:  # no noise drawn: evaluation leaves the training random stream alone
            return torch.tanh(self.actor(z)[0])[0].cpu().numpy()
        return self.actor.sample(z)[0][0].cpu().numpy()

    @torch.no_grad()
    def embed(self, obs: np.ndarray | torch.Tensor, batch: int = 256) -> torch.Tensor:
        """Latents of a stack of observations (N, 3F, H, W), in chunks."""
        obs = torch.as_tensor(obs)
        return torch.cat([self.encoder(obs[i:i + batch].to(self.device)) for i in range(0, len(obs), batch)])

    # ------------------------------------------------------ bisimulation
    def _next_reward(self, z: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        return self.reward_model(self.transition(z, a)[0])

    def _mean_action(self, z: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.actor(z)[0])

    def bisimulation_loss(self, z: torch.Tensor) -> torch.Tensor:
        """The method's loss from :mod:`bisimkit.losses` on latents ``z`` (gradient flows into ``z``)."""
        kind, c, k = self.method.bisim, self.config.discount, self.config.bisim_samples
        policy = gaussian_policy(self.actor, self.action_dim, squash=True)
        if kind == "dbc":
            return dbc_loss(z, distance=self.distance, policy=policy, reward=self._next_reward,
                            next_w2=gaussian_w2(self.transition), discount=c, samples=k)
        transition = gaussian_transition(self.transition, self.latent_dim)
        if kind == "psm":
            return psm_loss(z, distance=self.distance, policy=policy, transition=transition,
                            mean_action=self._mean_action, discount=c, samples=k)
        ground = reward_ground(self._next_reward) if kind == "entangled-reward" else policy_ground(self._mean_action)
        return entangled_loss(z, distance=self.distance, policy=policy, transition=transition, ground=ground,
                              discount=c, samples=k)

    # ------------------------------------------------------------ update
    def update(self, batch: dict[str, np.ndarray | torch.Tensor]) -> dict[str, torch.Tensor]:
        """One gradient update on a replay batch (see the module doc); returns the losses as
        detached 0-d tensors (read them with ``float`` only when logging: on a GPU each read syncs)."""
        cfg, dev = self.config, self.device
        obs = torch.as_tensor(batch["obs"], device=dev)
        next_obs = torch.as_tensor(batch["next_obs"], device=dev)
        action = torch.as_tensor(batch["action"], device=dev, dtype=torch.float32)
        reward = torch.as_tensor(batch["reward"], device=dev, dtype=torch.float32)
        discount = torch.as_tensor(batch["discount"], device=dev, dtype=torch.float32)
        if self.method.augment:
            obs, next_obs = random_shift(obs, cfg.pad), random_shift(next_obs, cfg.pad)
        rows = obs.shape[0]
        if self.world_model:  # the inverse-dynamics loss needs the gradient of both latents
            z, z_next_grad = self.encoder(torch.cat([obs, next_obs])).split(rows)
            z_next = z_next_grad.detach()
        else:
            z = self.encoder(obs)
            with torch.no_grad():
                z_next = self.encoder(next_obs)
        stats: dict[str, torch.Tensor] = {}

        with torch.no_grad():
            next_action, next_logp, _ = self.actor.sample(z_next)
            q1_t, q2_t = self.critic_target(z_next, next_action)
            value = torch.min(q1_t, q2_t) - self.alpha * next_logp
            q_target = reward + discount * cfg.discount * value
        q1, q2 = self.critic(z, action)
        loss = F.mse_loss(q1, q_target) + F.mse_loss(q2, q_target)
        stats["critic_loss"] = loss.detach()

        if self.world_model:
            mu, sigma = self.transition(z, action)
            transition_loss = (0.5 * ((z_next - mu) / sigma) ** 2 + sigma.log()).mean()
            reward_loss = F.mse_loss(self.reward_model(mu + sigma * torch.randn_like(mu)), reward)
            inverse_loss = F.mse_loss(self.inverse(z, z_next_grad), action)
            loss = loss + transition_loss + reward_loss + inverse_loss
            stats.update(transition_loss=transition_loss.detach(), reward_loss=reward_loss.detach(),
                         inverse_loss=inverse_loss.detach())
        if self.method.bisim is not None and cfg.beta > 0:
            with self.checks.collecting() if self.checks is not None else nullcontext():
                bisim = self.bisimulation_loss(z)
            loss = loss + cfg.beta * bisim
            stats["bisim_loss"] = bisim.detach()

        self.model_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.model_opt.step()
        self.updates += 1

        if self.updates % cfg.actor_update_every == 0:
            zd = z.detach()
            new_action, logp, _ = self.actor.sample(zd)
            q1_pi, q2_pi = self.critic(zd, new_action)
            actor_loss = (self.alpha.detach() * logp - torch.min(q1_pi, q2_pi)).mean()
            self.actor_opt.zero_grad(set_to_none=True)
            actor_loss.backward()
            self.actor_opt.step()
            alpha_loss = (self.alpha * (-logp.detach() - self.target_entropy)).mean()
            self.alpha_opt.zero_grad(set_to_none=True)
            alpha_loss.backward()
            self.alpha_opt.step()
            stats.update(actor_loss=actor_loss.detach(), alpha=self.alpha.detach(), entropy=-logp.detach().mean())
        if self.updates % cfg.target_update_every == 0:
            soft_update(self.critic_target, self.critic, cfg.tau)
        stats["q"] = q1.detach().mean()
        return stats

    # -------------------------------------------------------- state I/O
    def training_state(self) -> dict:
        """Networks, optimisers and the update counter (for checkpoints)."""
        return {"networks": self.state_dict(), "model_opt": self.model_opt.state_dict(),
                "actor_opt": self.actor_opt.state_dict(), "alpha_opt": self.alpha_opt.state_dict(),
                "updates": self.updates}

    def load_training_state(self, state: dict) -> None:
        """Inverse of :meth:`training_state`."""
        self.load_state_dict(state["networks"])
        self.model_opt.load_state_dict(state["model_opt"])
        self.actor_opt.load_state_dict(state["actor_opt"])
        self.alpha_opt.load_state_dict(state["alpha_opt"])
        self.updates = int(state["updates"])
