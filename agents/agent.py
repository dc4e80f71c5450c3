"""The agent: SAC on a shared pixel encoder, with DrQ shifts, a target encoder and a bisimulation loss.

One :class:`Agent` serves all six methods (:data:`agents.config.METHODS`) under
any preset. An update (:meth:`Agent.update`) on a replay batch does, in order:

1. DrQ views: M random shifts of the observations and K of the next
   observations (one unshifted view each for ``sac``);
2. critic latents of the M views, with gradient (and of the first next view
   when the world model needs its gradient);
3. the TD target under stop-gradient, averaged over the K next views: the next
   action from the actor on the online encoder (the first next view's trunk
   features reused from step 2 when it computed them), its value from the
   target critics on the *target encoder* (``target_encoder``; else the online one);
4. the critic loss, summed over the M views against that one target
   (DrQ's ``update_critic``, denisyarats/drq drq.py);
5. world-model losses when the method has them, on the first view: transition
   NLL of the detached next latent, reward regression on a sample of the
   predicted next latent, inverse dynamics (paper Alg. 2);
6. ``beta`` times the method's bisimulation loss on the first view's latents,
   imported from :mod:`bisimkit.losses` (the functions the verify job checks);
7. one Adam step on encoder, critics, world model and distance head;
8. every ``actor_update_every`` updates (counting from the first): actor and
   temperature on latents recomputed after that step, the conv trunk detached
   (DrQ ``update_actor_and_alpha``); the actor reads the critic's latent, or its
   own projection head with ``actor_head``;
9. every ``target_update_every``: soft updates of the target critics (``tau``)
   and the target encoder (``encoder_tau``).

The reward the bisimulation losses use is ``R(mu(z, a))``, the reward head on
the mean predicted next latent; the policy ground is ``tanh(mu_pi(z))``, the
squashed mean of the policy (the mean action of the paper's eps-pi, up to the
squashing of the noise).

``fast`` (default on CUDA): channels-last convolutions, the conv trunk and its
projection in bfloat16 autocast, fused Adam; everything after the encoder's
LayerNorm stays float32. ``tests/test_agent.py`` checks that 50 updates
both ways agree, and that the plain update equals a transcription of DrQ's.

``update_rule='dbc'`` (``--preset dbc``) replaces steps 2-7 with DBC's own update
(facebookresearch/deep_bisim4control, agent/bisim_agent.py ``BisimAgent.update``), on one
unshifted view: the critic loss and an Adam step on encoder and critics (``update_critic``);
then, on latents recomputed with the stepped encoder, the transition NLL, the reward
regression on a sample of the predicted next latent (``update_transition_reward_model``) and
``beta`` times :func:`bisimkit.losses.dbc_coordinate_loss` (``update_encoder``: the batch's
rewards, the transition's prediction under stop-gradient), with a second Adam (its own state)
on the encoder and a third on DBC's transition and reward heads (weight decay 1e-7,
run_local.sh). The actor's log-probability takes DBC's ``log(relu(1 - tanh^2) + 1e-6)``
Jacobian (sac_ae.py ``squash``) and the convolutions start delta-orthogonal (sac_ae.py
``weight_init``). ``benchmarks/dbc_reference.py`` transcribes DBC's update and
``tests/test_agent.py`` holds the agent to it.

``compile``: the conv trunks run through ``torch.compile`` (bias add, ReLU and
input scaling fused; :mod:`agents.encoder`), on any device.

``graphs`` (CUDA only; default on with CUDA, as ``fast``: :func:`speed_defaults`): the update is
captured in CUDA graphs and replayed
(:class:`UpdateGraphs`), one graph per pattern of due steps (actor and
temperature step or not, target update or not). A GPU update launches about a
thousand small kernels; replaying a graph launches them in one call, so the
update costs its device time instead of the host's launch time. The update
has no host synchronisation to allow this (finiteness checks are deferred,
``tests/test_agent.py`` audits the dispatched operations), and replays
draw the same random numbers eager execution would from the same generator
state (``python -m benchmarks.bench_updates --check-graphs`` compares 50
updates both ways on a GPU).
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from contextlib import nullcontext

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from bisimkit.losses import (DeferredChecks, LatentL1Distance, SeparableDistance, dbc_coordinate_loss, dbc_loss,
                             entangled_loss, gaussian_policy, gaussian_transition, gaussian_w2, policy_ground,
                             psm_loss, reward_ground)

from .augment import random_shift
from .config import TrainConfig
from .critic import TwinCritic
from .encoder import LatentHead, PixelEncoder
from .mlp import delta_orthogonal_init, make_target, soft_update
from .models import DBCRewardModel, DBCTransitionModel, InverseDynamics, RewardModel, TransitionModel
from .policy import Actor


#: DBC's update (``update_rule='dbc'``): the weight decay of its transition and reward heads' Adam
#: (run_local.sh ``--decoder_weight_lambda``) and the epsilon of its actor's log Jacobian (sac_ae.py ``squash``).
DBC_DECODER_WEIGHT_DECAY = 1e-7
DBC_JACOBIAN_EPS = 1e-6


def pick_device(name: str = "auto") -> torch.device:
    """``auto``: CUDA when present, else CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if str(name).startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device: {name!r} asked for, but torch sees no CUDA device")
    return torch.device(name)


def speed_defaults(config: TrainConfig, device: torch.device | str) -> tuple[bool, bool]:
    """(fast, graphs) of ``config`` on ``device``: each unset one is on with CUDA and off elsewhere. A CUDA graph
    capture that fails falls back to eager updates with one warning line (:class:`UpdateGraphs`)."""
    cuda = torch.device(device).type == "cuda"
    return (cuda if config.fast is None else bool(config.fast),
            cuda if config.graphs is None else bool(config.graphs))


def fast_cuda_math() -> None:
    """cuDNN autotuning and TF32 convolutions (PyTorch's default for cuDNN); matrix products stay full
    float32 (PyTorch's default too): the critics and the actor are MLPs whose products cost next to nothing
    on a GPU, and TF32's 10-bit mantissa would round the Q values the TD targets are built from. (The conv
    trunk and its projection run in bfloat16 on the fast path anyway.)"""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True


class Agent(nn.Module):
    """Networks, optimisers and the update rule of one method (see the module doc).

    ``config`` should be resolved (:meth:`TrainConfig.resolved`); it is resolved here otherwise.
    """

    def __init__(self, obs_shape: tuple[int, int, int], action_dim: int, config: TrainConfig,
                 device: torch.device | str = "cpu"):
        super().__init__()
        config = config.resolved()
        self.config, self.action_dim = config, int(action_dim)
        self.method = config.spec
        self.device = torch.device(device)
        self.fast, self.graphs = speed_defaults(config, self.device)
        if self.graphs and self.device.type != "cuda":
            raise ValueError(f"graphs: CUDA graphs need a CUDA device, got {self.device}")
        frames, hidden = obs_shape[0] // 3, config.hidden
        self.encoder = PixelEncoder(frames=frames, image_size=tuple(obs_shape[-2:]), stacked=config.stacked_frames,
                                    squash=config.latent_squash)
        self.dbc_update = config.update_rule == "dbc"
        if self.dbc_update:  # DBC's critic applies sac_ae.py's weight_init: delta-orthogonal convolutions
            self.encoder.trunk.apply(delta_orthogonal_init)
        latent = self.latent_dim = self.encoder.latent_dim
        self.actor_head = LatentHead(self.encoder.trunk.out_features, frames, config.stacked_frames,
                                     squash=config.latent_squash) if config.actor_head else None
        self.actor = Actor(latent, action_dim, hidden, jacobian_eps=DBC_JACOBIAN_EPS if self.dbc_update else None)
        self.critic = TwinCritic(latent, action_dim, hidden)
        self.critic_target = make_target(self.critic)
        self.encoder_target = make_target(self.encoder) if config.target_encoder else None
        self.world_model = config.world_model
        # the joint update trains the world model with the critic; DBC's in a step of its own
        self.joint_world = self.world_model and not self.dbc_update
        if self.dbc_update:
            self.transition = DBCTransitionModel(latent, action_dim, sigma_bounds=(config.transition_sigma_min,
                                                 config.transition_sigma_max), sigma_init=config.transition_sigma_init)
            self.reward_model = DBCRewardModel(latent)
        elif self.world_model:
            self.transition = TransitionModel(latent, action_dim, hidden,
                                              (config.transition_sigma_min, config.transition_sigma_max),
                                              config.transition_sigma_init)
            self.reward_model = RewardModel(latent, hidden)
            self.inverse = InverseDynamics(latent, action_dim, hidden)
        self.distance: nn.Module | None = None
        if self.method.bisim is not None and not self.dbc_update:
            scale = latent ** -0.5 if config.distance_scale is None else config.distance_scale
            self.distance = LatentL1Distance(scale) if self.method.head == "latent-l1" else \
                SeparableDistance(latent, init=scale)
        if config.spread_units:  # a bias-corrected running mean of the batch spread, for evaluations
            self.register_buffer("spread_sum", torch.zeros(()))
            self.register_buffer("spread_weight", torch.zeros(()))
        self.log_alpha = nn.Parameter(torch.tensor(math.log(config.init_temperature)))
        self.target_entropy = -float(action_dim)
        if self.fast or config.compile:
            autocast = torch.bfloat16 if self.fast else None
            for encoder in (self.encoder, self.encoder_target):
                if encoder is not None:
                    encoder.speed(channels_last=self.fast, autocast=autocast, compile=config.compile)
            if self.actor_head is not None:  # it reads the channels-last trunk's (H, W, C)-ordered features
                self.actor_head.speed(autocast, self.encoder.trunk.feature_shape if self.fast else None)
        self.to(self.device)
        actor_side = ("actor.", "actor_head.")
        critic_side = [p for name, p in self.named_parameters()
                       if not name.startswith(actor_side + ("critic_target.", "encoder_target.")) and
                       name != "log_alpha"]
        actor_params = [p for name, p in self.named_parameters() if name.startswith(actor_side)]
        # fused: None is torch's default (foreach); capturable: the step counts live on the device
        adam = {"fused": True if self.fast else None, "capturable": self.graphs}
        self.encoder_opt = self.world_opt = None
        if self.dbc_update:  # DBC: critic_optimizer (encoder + critics), encoder_optimizer, decoder_optimizer
            critic_side = list(self.encoder.parameters()) + list(self.critic.parameters())
            self.encoder_opt = torch.optim.Adam(self.encoder.parameters(), lr=config.lr, **adam)
            self.world_opt = torch.optim.Adam(list(self.reward_model.parameters()) + list(self.transition.parameters()),
                                              lr=config.lr, weight_decay=DBC_DECODER_WEIGHT_DECAY, **adam)
        self.model_opt = torch.optim.Adam(critic_side, lr=config.lr, **adam)
        self.actor_opt = torch.optim.Adam(actor_params, lr=config.lr, **adam)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=config.alpha_lr, betas=(config.alpha_beta1, 0.999),
                                          **adam)
        self.updates = 0
        # On a GPU the losses' finiteness checks are collected and read when the trainer logs
        # (flush_checks), not once per loss call: each read would stall the GPU queue.
        self.checks = DeferredChecks() if self.device.type == "cuda" else None
        self.captured = UpdateGraphs(self) if self.graphs else None

    def flush_checks(self) -> None:
        """Raise the deferred ``ValueError`` of any non-finite loss tensor since the last flush."""
        if self.checks is not None:
            self.checks.flush()

    # ------------------------------------------------------------ acting
    @property
    def alpha(self) -> torch.Tensor:
        """The entropy temperature."""
        return self.log_alpha.exp()

    def actor_latent(self, features: torch.Tensor, critic_latent: torch.Tensor | None = None) -> torch.Tensor:
        """What the actor reads: its own head on detached trunk ``features``, or the critic's latent."""
        if self.actor_head is not None:
            return self.actor_head(features.detach())
        return (self.encoder.head(features) if critic_latent is None else critic_latent).detach()

    @torch.no_grad()
    def act(self, obs: np.ndarray, explore: bool) -> np.ndarray:
        """An action in [-1, 1]^k for one uint8 observation: sampled (``explore``) or tanh of the mean."""
        z = self.actor_latent(self.encoder.trunk(torch.as_tensor(obs, device=self.device).unsqueeze(0)))
        if not explore:  # no noise drawn: evaluation leaves the training random stream alone
            return torch.tanh(self.actor(z)[0])[0].cpu().numpy()
        return self.actor.sample(z)[0][0].cpu().numpy()

    @torch.no_grad()
    def embed(self, obs: np.ndarray | torch.Tensor, batch: int = 256) -> torch.Tensor:
        """Critic latents of a stack of observations (N, 3F, H, W), in chunks."""
        obs = torch.as_tensor(obs)
        return torch.cat([self.encoder(obs[i:i + batch].to(self.device)) for i in range(0, len(obs), batch)])

    # ------------------------------------------------------ bisimulation
    def _next_reward(self, z: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        return self.reward_model(self.transition(z, a)[0])

    def _mean_action(self, z: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.actor(z)[0])

    #: Weight of a batch in the running mean of the latent spread (``spread_units``).
    SPREAD_MOMENTUM = 0.01

    def latent_distance(self, z: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
        """The learned distance of the rows of ``z`` and ``z2``: the distance head's, divided by the running
        mean of the batch spread under ``spread_units`` (the units the bisimulation loss trains it in; 1 before
        the loss has read a batch)."""
        if self.distance is None:
            raise ValueError(f"method: {self.config.method} has no distance head")
        d = self.distance(z, z2)
        if self.config.spread_units:
            seen = self.spread_weight > 0
            spread = torch.where(seen, self.spread_sum / self.spread_weight.clamp_min(1e-12), torch.ones_like(d[:1]))
            d = d / spread.clamp_min(1e-12)
        return d

    def bisimulation_loss(self, z: torch.Tensor) -> torch.Tensor:
        """The method's loss from :mod:`bisimkit.losses` on latents ``z`` (gradient flows into ``z``); under
        ``spread_units`` on distances divided by the batch's latent spread (with its gradient)."""
        if not self.config.spread_units:
            return self._bisimulation_loss(z, self.distance)
        spread = z.float().std(0).mean().clamp_min(1e-6)
        with torch.no_grad():  # in place: no host synchronisation, safe inside a CUDA graph
            w = self.SPREAD_MOMENTUM
            self.spread_sum.mul_(1 - w).add_(w * spread.detach())
            self.spread_weight.mul_(1 - w).add_(w)
        head = self.distance
        return self._bisimulation_loss(z, lambda a, b: head(a, b) / spread)

    def _bisimulation_loss(self, z: torch.Tensor, distance) -> torch.Tensor:
        kind, c, k = self.method.bisim, self.config.discount, self.config.bisim_samples
        policy = gaussian_policy(self.actor, self.action_dim, squash=True)
        if kind == "dbc":
            return dbc_loss(z, distance=distance, policy=policy, reward=self._next_reward,
                            next_w2=gaussian_w2(self.transition), discount=c, samples=k)
        transition = gaussian_transition(self.transition, self.latent_dim)
        if kind == "psm":
            return psm_loss(z, distance=distance, policy=policy, transition=transition,
                            mean_action=self._mean_action, discount=c, samples=k)
        ground = reward_ground(self._next_reward) if kind == "entangled-reward" else policy_ground(self._mean_action)
        return entangled_loss(z, distance=distance, policy=policy, transition=transition, ground=ground,
                              discount=c, samples=k)

    # ------------------------------------------------------------ update
    def _batch(self, batch: dict) -> tuple[torch.Tensor, ...]:
        dev = self.device
        as_float = {"device": dev, "dtype": torch.float32}
        return (torch.as_tensor(batch["obs"], device=dev), torch.as_tensor(batch["next_obs"], device=dev),
                torch.as_tensor(batch["action"], **as_float), torch.as_tensor(batch["reward"], **as_float),
                torch.as_tensor(batch["discount"], **as_float))

    def _views(self, obs: torch.Tensor, count: int) -> list[torch.Tensor]:
        """``count`` DrQ random shifts of ``obs`` (the unshifted batch for methods without augmentation)."""
        if not self.config.augmented:
            return [obs]
        return [random_shift(obs, self.config.pad) for _ in range(count)]

    def critic_losses(self, batch: dict) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
        """Steps 1-6 of the module doc: (total loss, its terms as detached 0-d tensors, the first view's
        observations for the actor step)."""
        return self._critic_losses(self._batch(batch))

    def loss_terms(self, batch: dict) -> dict[str, torch.Tensor]:
        """The joint update's loss (steps 1-6) split into its weighted terms, each with its graph: 'critic',
        and where the method trains them, 'transition', 'reward', 'inverse' and 'bisim' (``beta`` times the
        bisimulation loss). Their sum is the loss :meth:`update` steps on; a term's gradient on
        ``self.encoder`` shows how much of the encoder's update it drives."""
        if self.dbc_update:
            raise ValueError("update_rule: DBC's update steps on two losses in turn; loss_terms splits the joint one")
        terms: dict[str, torch.Tensor] = {}
        self._critic_losses(self._batch(batch), terms)
        return terms

    def _critic_losses(self, tensors: tuple[torch.Tensor, ...], terms: dict[str, torch.Tensor] | None = None
                       ) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
        """:meth:`critic_losses` of a batch already on the device (:meth:`_batch`); ``terms``, when given,
        receives the weighted terms of the loss with their graphs (:meth:`loss_terms`)."""
        terms = {} if terms is None else terms
        cfg = self.config
        obs, next_obs, action, reward, discount = tensors
        rows = obs.shape[0]
        k, m = cfg.views
        obs_views, next_views = self._views(obs, m), self._views(next_obs, k)
        grad_inputs = obs_views + ([next_views[0]] if self.joint_world else [])
        grad_features = self.encoder.trunk(torch.cat(grad_inputs))
        latents = self.encoder.head(grad_features)
        z_views = latents[:m * rows]
        z = z_views[:rows]

        with torch.no_grad():  # the TD target, averaged over the K next views
            next_all = torch.cat(next_views)
            if self.joint_world:  # the first next view went through the trunk with the gradient pass: reuse it
                per_view = grad_features.shape[0] // len(grad_inputs)  # rows (frames, frame-wise) of one view
                parts = [grad_features[m * per_view:].detach()]
                if k > 1:
                    parts.append(self.encoder.trunk(torch.cat(next_views[1:])))
                features = torch.cat(parts) if len(parts) > 1 else parts[0]
            else:
                features = self.encoder.trunk(next_all)
            online = self.encoder.head(features)
            next_action, next_logp, _ = self.actor.sample(self.actor_latent(features, online))
            target_latent = online if self.encoder_target is None else self.encoder_target(next_all)
            q1_t, q2_t = self.critic_target(target_latent, next_action)
            value = torch.min(q1_t, q2_t) - self.alpha * next_logp
            q_target = (reward.repeat(k) + discount.repeat(k) * cfg.discount * value).reshape(k, rows).mean(0)
        q1, q2 = self.critic(z_views, action.repeat(m, 1))
        target = q_target.repeat(m)
        loss = m * (F.mse_loss(q1, target) + F.mse_loss(q2, target))  # DrQ: the sum over the M views
        stats = {"critic_loss": loss.detach(), "q": q1[:rows].detach().mean()}
        terms["critic"] = loss

        if self.joint_world:
            model_loss, model_stats = self.world_model_losses(z, latents[m * rows:], action, reward, terms)
            loss = loss + model_loss
            stats.update(model_stats)
        if self.method.bisim is not None and cfg.beta > 0 and not self.dbc_update and self.bisim_active:
            with self.checks.collecting() if self.checks is not None else nullcontext():
                bisim = self.bisimulation_loss(z)
            terms["bisim"] = cfg.beta * bisim
            loss = loss + terms["bisim"]
            stats["bisim_loss"] = bisim.detach()
        return loss, stats, obs_views[0]

    @property
    def bisim_active(self) -> bool:
        """Whether the bisimulation loss trains the encoder at this update (after ``bisim_warmup`` updates)."""
        return self.updates >= self.config.bisim_warmup

    def world_model_losses(self, z: torch.Tensor, z_next_grad: torch.Tensor, action: torch.Tensor,
                           reward: torch.Tensor, terms: dict[str, torch.Tensor] | None = None
                           ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Step 5: transition NLL of the detached next latent, reward regression on a sample of the predicted
        next latent (both on a detached ``z`` when ``model_grad`` is off), inverse dynamics (gradient into
        ``z_next_grad``); (their sum, the terms detached).
        ``terms``, when given, receives the three with their graphs."""
        z_next = z_next_grad.detach()
        mu, sigma = self.transition(z if self.config.model_grad else z.detach(), action)
        transition_loss = (0.5 * ((z_next - mu) / sigma) ** 2 + sigma.log()).mean()
        reward_loss = F.mse_loss(self.reward_model(mu + sigma * torch.randn_like(mu)), reward)
        inverse_loss = F.mse_loss(self.inverse(z, z_next_grad), action)
        if terms is not None:
            terms.update(transition=transition_loss, reward=reward_loss, inverse=inverse_loss)
        return transition_loss + reward_loss + inverse_loss, {
            "transition_loss": transition_loss.detach(), "reward_loss": reward_loss.detach(),
            "inverse_loss": inverse_loss.detach()}

    def metric_losses(self, batch: dict) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
        """The encoder's metric learning alone (``agents.metric_check``, isolated): steps 1, 2, 5 and 6 of the
        module doc on one view of the observations and of the next observations (DrQ shifts when the method
        augments), without the critic; (world-model losses + ``beta`` x bisimulation loss, the terms detached,
        the latents z of the first view, with gradient)."""
        if self.method.bisim is None:
            raise ValueError(f"method: {self.config.method} has no bisimulation loss")
        obs, next_obs, action, reward, _ = self._batch(batch)
        latents = self.encoder(torch.cat(self._views(obs, 1) + self._views(next_obs, 1)))
        rows = obs.shape[0]
        z = latents[:rows]
        loss, stats = self.world_model_losses(z, latents[rows:], action, reward)
        if not self.bisim_active:  # the world model alone first (bisim_warmup): the loss is measured, not trained
            with torch.no_grad():
                stats["bisim_loss"] = self.bisimulation_loss(z)
            return loss, stats, z
        with self.checks.collecting() if self.checks is not None else nullcontext():
            bisim = self.bisimulation_loss(z)
        stats["bisim_loss"] = bisim.detach()
        return loss + self.config.beta * bisim, stats, z

    def dbc_model_losses(self, tensors: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """DBC's second step (agent/bisim_agent.py ``update``: ``update_transition_reward_model`` +
        ``bisim_coef * update_encoder``) on latents of the current encoder: the transition NLL of the next
        latent (no gradient into it), the reward regression on a sample of the predicted next latent, and
        ``beta`` times DBC's per-coordinate loss on the batch's rewards and the transition's prediction under
        stop-gradient; (the total, its terms detached)."""
        obs, next_obs, action, reward, _ = tensors
        h = self.encoder(obs)
        with torch.no_grad():
            h_next = self.encoder(next_obs)
        mu, sigma = self.transition(h, action)
        transition_loss = (0.5 * ((mu - h_next) / sigma) ** 2 + sigma.log()).mean()
        reward_loss = F.mse_loss(self.reward_model(mu + sigma * torch.randn_like(sigma)), reward)
        with self.checks.collecting() if self.checks is not None else nullcontext():
            bisim = dbc_coordinate_loss(h, reward=reward, next_mean=mu.detach(), next_sigma=sigma.detach(),
                                        discount=self.config.discount)
        weight = self.config.beta if self.bisim_active else 0.0  # bisim_warmup: the models alone first
        return transition_loss + reward_loss + weight * bisim, {
            "transition_loss": transition_loss.detach(), "reward_loss": reward_loss.detach(),
            "bisim_loss": bisim.detach()}

    def actor_losses(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """Step 8: (actor loss, temperature loss, stats) on observations ``obs``, the trunk detached."""
        with torch.no_grad():
            features = self.encoder.trunk(obs)
            z_critic = self.encoder.head(features)
        new_action, logp, _ = self.actor.sample(self.actor_latent(features, z_critic))
        q1_pi, q2_pi = self.critic(z_critic, new_action)
        actor_loss = (self.alpha.detach() * logp - torch.min(q1_pi, q2_pi)).mean()
        alpha_loss = (self.alpha * (-logp.detach() - self.target_entropy)).mean()
        return actor_loss, alpha_loss, {"actor_loss": actor_loss.detach(), "alpha": self.alpha.detach(),
                                        "entropy": -logp.detach().mean()}

    def update(self, batch: dict[str, np.ndarray | torch.Tensor]) -> dict[str, torch.Tensor]:
        """One gradient update on a replay batch (see the module doc); returns the losses as
        detached 0-d tensors (read them with ``float`` only when logging: on a GPU each read syncs;
        with ``graphs`` they are the graph's outputs, overwritten by its next replay)."""
        cfg = self.config
        due = (self.updates % cfg.actor_update_every == 0, self.updates % cfg.target_update_every == 0)
        if self.captured is not None:
            stats = self.captured.update(batch, due)
        else:
            stats = self.step(self._batch(batch), *due)
        self.updates += 1
        return stats

    def step(self, tensors: tuple[torch.Tensor, ...], actor_due: bool, target_due: bool) -> dict[str, torch.Tensor]:
        """Steps 1-9 of the module doc on a batch already on the device; the work :meth:`update` does
        (or captures in a CUDA graph)."""
        cfg = self.config
        loss, stats, obs = self._critic_losses(tensors)
        self.model_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.model_opt.step()
        if self.dbc_update:
            model_loss, model_stats = self.dbc_model_losses(tensors)
            self.encoder_opt.zero_grad(set_to_none=True)
            self.world_opt.zero_grad(set_to_none=True)
            model_loss.backward()
            self.encoder_opt.step()
            self.world_opt.step()
            stats.update(model_stats)

        if actor_due:
            actor_loss, alpha_loss, actor_stats = self.actor_losses(obs)
            self.actor_opt.zero_grad(set_to_none=True)
            actor_loss.backward()
            self.actor_opt.step()
            self.alpha_opt.zero_grad(set_to_none=True)
            alpha_loss.backward()
            self.alpha_opt.step()
            stats.update(actor_stats)
        if target_due:
            soft_update(self.critic_target, self.critic, cfg.tau)
            if self.encoder_target is not None:
                soft_update(self.encoder_target, self.encoder, cfg.encoder_tau)
        return stats

    # -------------------------------------------------------- state I/O
    def training_state(self) -> dict:
        """Networks, optimisers and the update counter (for checkpoints)."""
        state = {"networks": self.state_dict(), "model_opt": self.model_opt.state_dict(),
                 "actor_opt": self.actor_opt.state_dict(), "alpha_opt": self.alpha_opt.state_dict(),
                 "updates": self.updates}
        if self.dbc_update:
            state.update(encoder_opt=self.encoder_opt.state_dict(), world_opt=self.world_opt.state_dict())
        return state

    def load_training_state(self, state: dict) -> None:
        """Inverse of :meth:`training_state`."""
        self.load_state_dict(state["networks"])
        self.model_opt.load_state_dict(state["model_opt"])
        self.actor_opt.load_state_dict(state["actor_opt"])
        self.alpha_opt.load_state_dict(state["alpha_opt"])
        if self.dbc_update:
            self.encoder_opt.load_state_dict(state["encoder_opt"])
            self.world_opt.load_state_dict(state["world_opt"])
        self.updates = int(state["updates"])
        if self.captured is not None:  # the graphs hold the replaced optimiser states' addresses
            self.captured = UpdateGraphs(self)


class UpdateGraphs:
    """An agent's update replayed from CUDA graphs (PyTorch's whole-network capture recipe).

    The batch is copied into fixed input tensors; each pattern of due steps
    ``(actor_due, target_due)`` runs ``warmup`` times eagerly on a side stream
    (allocator, cuDNN autotuning, the optimisers' lazily built states), is then
    captured once in its own graph and memory pool, and replayed from then on.
    The capture itself runs nothing, so the capturing update is a replay too.
    If a capture fails, a one-line warning says why and the agent goes on with
    eager updates.
    """

    def __init__(self, agent: Agent, warmup: int = 3):
        self.agent, self.warmup = agent, int(warmup)
        self.inputs: tuple[torch.Tensor, ...] | None = None
        self.graphs: dict[tuple[bool, bool], torch.cuda.CUDAGraph] = {}
        self.outputs: dict[tuple[bool, bool], dict[str, torch.Tensor]] = {}
        self.eager_runs: Counter = Counter()
        self.failed: str | None = None

    def stage(self, batch: dict) -> tuple[torch.Tensor, ...]:
        """Copy ``batch`` into the graphs' input tensors (allocated from the first batch)."""
        tensors = self.agent._batch(batch)  # pylint: disable=protected-access
        if self.inputs is None:
            self.inputs = tuple(t.clone() for t in tensors)
            return self.inputs
        for name, fixed, t in zip(("obs", "next_obs", "action", "reward", "discount"), self.inputs, tensors):
            if fixed.shape != t.shape or fixed.dtype != t.dtype:
                raise ValueError(f"{name}: CUDA graphs need a fixed batch, got shape {tuple(t.shape)} "
                                 f"{t.dtype} after {tuple(fixed.shape)} {fixed.dtype}")
            fixed.copy_(t, non_blocking=True)
        return self.inputs

    def update(self, batch: dict, due: tuple[bool, bool]) -> dict[str, torch.Tensor]:
        """One update: a replay when ``due``'s graph exists, else a warm-up run or the capture."""
        inputs = self.stage(batch)
        key = (*due, self.agent.bisim_active)  # the bisimulation term joins after bisim_warmup: its own graphs
        graph = self.graphs.get(key)
        if graph is not None:
            graph.replay()
            return self.outputs[key]
        if self.failed is not None or self.eager_runs[key] < self.warmup:
            return self._eager(inputs, due)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                outputs = self.agent.step(inputs, *due)
        except RuntimeError as exc:  # an operation that cannot be captured: go on eagerly
            self.failed = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            print(f"graphs: capturing the update failed ({self.failed}); eager updates from now on",
                  file=sys.stderr)
            return self._eager(inputs, due)
        self.graphs[key], self.outputs[key] = graph, outputs
        graph.replay()
        return outputs

    def _eager(self, inputs: tuple[torch.Tensor, ...], due: tuple[bool, bool]) -> dict[str, torch.Tensor]:
        """An eager update on a side stream (PyTorch's warm-up recipe before a capture)."""
        self.eager_runs[(*due, self.agent.bisim_active)] += 1
        device = inputs[0].device
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            stats = self.agent.step(inputs, *due)
        torch.cuda.current_stream(device).wait_stream(side)
        return stats
