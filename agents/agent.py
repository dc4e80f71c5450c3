"""The agents: SAC on a shared pixel encoder, one class per update rule.

:class:`Agent` holds what every update rule shares: the networks of the paper's appendix C
(the conv trunk and latent head, the actor, the twin critics, their targets and a target
encoder), the temperature, the optimisers, acting, the TD target, the actor and temperature
step, the soft updates, the deferred finiteness checks, CUDA graphs and the training state.
``Agent(obs_shape, action_dim, config, device)`` builds the class of the config's update rule
(:func:`update_rule_class`); each rule is a short class whose :meth:`~Agent.step` reads top to
bottom, as DrQ-v2's agents do:

* :class:`DrQAgent` (``sac``, ``drq``): DrQ's update (denisyarats/drq drq.py ``update_critic``,
  ``update_actor_and_alpha``): the critic loss summed over M random shifts of the observations
  against a TD target averaged over K shifts of the next observations, one Adam step on encoder and
  critics; ``sac`` is the same update on unshifted observations (K = M = 1).
* :class:`JointAgent` (``eps-r``, ``eps-pi``, ``drq+pse``, ``drq+dbc``; ``--update-rule joint``): the
  paper's update (Alg. 2), one Adam step on ``J_SAC + J_P + J_R + J_ID + beta J_bisim``: DrQ's critic
  loss, the world model's losses on the first view (transition NLL of the detached next latent,
  reward regression on a sample of the predicted next latent, inverse dynamics) and ``beta`` times the
  method's bisimulation loss from :mod:`bisimkit.losses` (:data:`BISIMULATION_LOSSES`, the functions
  the verify job checks) on the first view's latents, with a distance head.
* :class:`DBCAgent` (``--update-rule dbc``, the ``dbc`` preset): DBC's own update
  (facebookresearch/deep_bisim4control agent/bisim_agent.py ``BisimAgent.update``) on one unshifted
  view: DrQ's critic step, then on latents recomputed with the stepped encoder the transition NLL,
  the reward regression (``update_transition_reward_model``) and ``beta`` times
  :func:`bisimkit.losses.dbc_coordinate_loss` (``update_encoder``: the batch's rewards, the
  transition's prediction under stop-gradient), with a second Adam (its own state) on the encoder and
  a third on DBC's transition and reward heads (weight decay 1e-7, run_local.sh). Its actor's
  log-probability takes DBC's ``log(relu(1 - tanh^2) + 1e-6)`` Jacobian (sac_ae.py ``squash``) and its
  convolutions start delta-orthogonal (sac_ae.py ``weight_init``).

Every update then, every ``actor_update_every`` updates (counting from the first), steps the actor
and temperature on latents recomputed after the critic step, the conv trunk detached (DrQ
``update_actor_and_alpha``; the actor reads the critic's latent, or its own projection head with
``actor_head``), and every ``target_update_every`` soft-updates the target critics (``tau``) and
the target encoder (``encoder_tau``). The TD target is computed under stop-gradient: the next action
from the actor on the online encoder, its value from the target critics on the target encoder.

The reward the bisimulation losses use is ``R(mu(z, a))``, the reward head on the mean predicted
next latent; the policy ground is ``tanh(mu_pi(z))``, the squashed mean of the policy (the mean
action of the paper's eps-pi, up to the squashing of the noise). ``benchmarks/drq_reference.py`` and
``benchmarks/dbc_reference.py`` transcribe DrQ's and DBC's updates and ``tests/test_agent.py``
holds the ``drq`` and ``dbc`` presets to them.

``fast`` (default on CUDA): channels-last convolutions, the conv trunk and its projection in
bfloat16 autocast, fused Adam; everything after the encoder's LayerNorm stays float32.
``tests/test_agent.py`` checks that 50 updates both ways agree. ``compile``: the conv trunks run
through ``torch.compile`` (bias add, ReLU and input scaling fused; :mod:`agents.encoder`), on any
device.

``graphs`` (CUDA only; default on with CUDA, as ``fast``: :func:`speed_defaults`): the update is
captured in CUDA graphs and replayed (:class:`UpdateGraphs`), one graph per pattern of due steps
(actor and temperature step or not, target update or not). A GPU update launches about a thousand
small kernels; replaying a graph launches them in one call, so the update costs its device time
instead of the host's launch time. The update has no host synchronisation to allow this
(finiteness checks are deferred, ``tests/test_agent.py`` audits the dispatched operations), and
replays draw the same random numbers eager execution would from the same generator state
(``python -m benchmarks.bench_updates --check-graphs`` compares 50 updates both ways on a GPU).
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from bisimkit.losses import (
    DeferredChecks,
    LatentL1Distance,
    SeparableDistance,
    dbc_coordinate_loss,
    dbc_loss,
    entangled_loss,
    gaussian_policy,
    gaussian_transition,
    gaussian_w2,
    policy_ground,
    psm_loss,
    reward_ground,
)

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

#: A batch on the device: (obs, next_obs, action, reward, discount).
Tensors = tuple[torch.Tensor, ...]
#: Detached 0-d loss tensors by name (read them only when logging: on a GPU each read syncs).
Stats = dict[str, torch.Tensor]


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
    return (cuda if config.fast is None else bool(config.fast), cuda if config.graphs is None else bool(config.graphs))


def fast_cuda_math() -> None:
    """cuDNN autotuning and TF32 convolutions (PyTorch's default for cuDNN); matrix products stay full
    float32 (PyTorch's default too): the critics and the actor are MLPs whose products cost next to nothing
    on a GPU, and TF32's 10-bit mantissa would round the Q values the TD targets are built from. (The conv
    trunk and its projection run in bfloat16 on the fast path anyway.)"""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True


def update_rule_class(config: TrainConfig) -> type["Agent"]:
    """The agent class of ``config``: :class:`DBCAgent` under ``update_rule`` dbc, :class:`JointAgent` when the
    method has a bisimulation loss or trains the world model (``aux``), :class:`DrQAgent` otherwise."""
    if config.update_rule == "dbc":
        return DBCAgent
    if config.world_model or config.spec.bisim is not None:
        return JointAgent
    return DrQAgent


class Agent(nn.Module):
    """The networks, optimisers and steps every update rule shares (see the module doc); a rule's class
    adds its own networks (:meth:`build_heads`), optimisers (:meth:`build_optimizers`) and :meth:`step`.

    ``Agent(obs_shape, action_dim, config, device)`` builds the class :func:`update_rule_class` names.
    ``config`` should be resolved (:meth:`TrainConfig.resolved`); it is resolved here otherwise.
    """

    #: The actor's log-Jacobian epsilon (None: the exact ``log(1 - tanh^2)``; DBC's agent sets its own).
    JACOBIAN_EPS: float | None = None
    #: Whether this is DBC's update (two optimiser steps on the encoder per update).
    dbc_update = False
    #: Weight of a batch in the running mean of the latent spread (``spread_units``).
    SPREAD_MOMENTUM = 0.01

    def __new__(cls, *args, **kwargs):
        if cls is Agent:  # the rule the config names
            config = kwargs["config"] if "config" in kwargs else args[2]
            cls = update_rule_class(config)
        return super().__new__(cls)

    def __init__(
        self, obs_shape: tuple[int, int, int], action_dim: int, config: TrainConfig, device: torch.device | str = "cpu"
    ):
        super().__init__()
        config = config.resolved()
        self.config, self.action_dim = config, int(action_dim)
        self.method = config.spec
        self.device = torch.device(device)
        self.fast, self.graphs = speed_defaults(config, self.device)
        if self.graphs and self.device.type != "cuda":
            raise ValueError(f"graphs: CUDA graphs need a CUDA device, got {self.device}")
        frames, hidden = obs_shape[0] // 3, config.hidden
        self.encoder = PixelEncoder(
            frames=frames, image_size=tuple(obs_shape[-2:]), stacked=config.stacked_frames, squash=config.latent_squash
        )
        self.init_trunk()
        latent = self.latent_dim = self.encoder.latent_dim
        self.actor_head = (
            LatentHead(self.encoder.trunk.out_features, frames, config.stacked_frames, squash=config.latent_squash)
            if config.actor_head
            else None
        )
        self.actor = Actor(latent, action_dim, hidden, jacobian_eps=self.JACOBIAN_EPS)
        self.critic = TwinCritic(latent, action_dim, hidden)
        self.critic_target = make_target(self.critic)
        self.encoder_target = make_target(self.encoder) if config.target_encoder else None
        self.world_model = config.world_model
        self.distance: nn.Module | None = None
        self.build_heads(latent, hidden)
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
        # fused: None is torch's default (foreach); capturable: the step counts live on the device
        self.build_optimizers({"fused": True if self.fast else None, "capturable": self.graphs})
        self.updates = 0
        # On a GPU the losses' finiteness checks are collected and read when the trainer logs
        # (flush_checks), not once per loss call: each read would stall the GPU queue.
        self.checks = DeferredChecks() if self.device.type == "cuda" else None
        self.captured = UpdateGraphs(self) if self.graphs else None

    # ------------------------------------------------------- what a rule adds
    def init_trunk(self) -> None:
        """Initialise the conv trunk beyond PyTorch's default (nothing here)."""

    def build_heads(self, latent: int, hidden: int) -> None:
        """Build the rule's own networks on latents of size ``latent`` (nothing here)."""

    def model_parameters(self) -> list[nn.Parameter]:
        """What the first optimiser (``model_opt``) steps: every parameter but the actor's side, the targets'
        and the temperature."""
        skip = ("actor.", "actor_head.", "critic_target.", "encoder_target.")
        return [p for name, p in self.named_parameters() if not name.startswith(skip) and name != "log_alpha"]

    def build_optimizers(self, adam: dict) -> None:
        """``model_opt`` on :meth:`model_parameters`, ``actor_opt`` on the actor and its head, ``alpha_opt`` on
        the temperature; ``encoder_opt`` and ``world_opt`` are DBC's (None here)."""
        cfg = self.config
        actor_params = [p for name, p in self.named_parameters() if name.startswith(("actor.", "actor_head."))]
        self.encoder_opt = self.world_opt = None
        self.model_opt = torch.optim.Adam(self.model_parameters(), lr=cfg.lr, **adam)
        self.actor_opt = torch.optim.Adam(actor_params, lr=cfg.lr, **adam)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=cfg.alpha_lr, betas=(cfg.alpha_beta1, 0.999), **adam)

    def step(self, tensors: Tensors, actor_due: bool, target_due: bool) -> Stats:
        """One update on a batch already on the device: the work :meth:`update` does (or captures in a CUDA
        graph). Each rule writes its own."""
        raise NotImplementedError

    def flush_checks(self) -> None:
        """Raise the deferred ``ValueError`` of any non-finite loss tensor since the last flush."""
        if self.checks is not None:
            self.checks.flush()

    def checking(self):
        """The context the bisimulation losses run in: their finiteness checks deferred on a GPU."""
        return self.checks.collecting() if self.checks is not None else nullcontext()

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
        return torch.cat([self.encoder(obs[i : i + batch].to(self.device)) for i in range(0, len(obs), batch)])

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

    # ------------------------------------------------------- shared steps
    def _batch(self, batch: dict) -> Tensors:
        dev = self.device
        as_float = {"device": dev, "dtype": torch.float32}
        return (
            torch.as_tensor(batch["obs"], device=dev),
            torch.as_tensor(batch["next_obs"], device=dev),
            torch.as_tensor(batch["action"], **as_float),
            torch.as_tensor(batch["reward"], **as_float),
            torch.as_tensor(batch["discount"], **as_float),
        )

    def _views(self, obs: torch.Tensor, count: int) -> list[torch.Tensor]:
        """``count`` DrQ random shifts of ``obs`` (the unshifted batch for methods without augmentation)."""
        if not self.config.augmented:
            return [obs]
        return [random_shift(obs, self.config.pad) for _ in range(count)]

    @property
    def bisim_active(self) -> bool:
        """Whether the bisimulation loss trains the encoder at this update (after ``bisim_warmup`` updates)."""
        return self.updates >= self.config.bisim_warmup

    def td_target(
        self,
        next_views: list[torch.Tensor],
        reward: torch.Tensor,
        discount: torch.Tensor,
        first_features: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The TD target under stop-gradient, averaged over the K ``next_views``: the next action from the actor
        on the online encoder, its value from the target critics on the target encoder (else the online one).
        ``first_features``: the trunk's features of the first next view, when a gradient pass computed them."""
        k, rows = len(next_views), reward.shape[0]
        with torch.no_grad():
            next_all = torch.cat(next_views)
            if first_features is not None:  # reuse them; the trunk runs on the other views only
                parts = [first_features.detach()]
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
            return (reward.repeat(k) + discount.repeat(k) * self.config.discount * value).reshape(k, rows).mean(0)

    def critic_loss(
        self, z_views: torch.Tensor, action: torch.Tensor, q_target: torch.Tensor
    ) -> tuple[torch.Tensor, Stats]:
        """The critics' squared TD errors on the latents of M views (stacked in ``z_views``) against one target,
        summed over the views (DrQ ``update_critic``); (the loss, its stats)."""
        rows = q_target.shape[0]
        m = z_views.shape[0] // rows
        q1, q2 = self.critic(z_views, action.repeat(m, 1))
        target = q_target.repeat(m)
        loss = m * (F.mse_loss(q1, target) + F.mse_loss(q2, target))  # DrQ: the sum over the M views
        return loss, {"critic_loss": loss.detach(), "q": q1[:rows].detach().mean()}

    def actor_losses(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, Stats]:
        """(actor loss, temperature loss, stats) on observations ``obs``, the trunk detached."""
        with torch.no_grad():
            features = self.encoder.trunk(obs)
            z_critic = self.encoder.head(features)
        new_action, logp, _ = self.actor.sample(self.actor_latent(features, z_critic))
        q1_pi, q2_pi = self.critic(z_critic, new_action)
        actor_loss = (self.alpha.detach() * logp - torch.min(q1_pi, q2_pi)).mean()
        alpha_loss = (self.alpha * (-logp.detach() - self.target_entropy)).mean()
        return (
            actor_loss,
            alpha_loss,
            {"actor_loss": actor_loss.detach(), "alpha": self.alpha.detach(), "entropy": -logp.detach().mean()},
        )

    @staticmethod
    def adam_step(loss: torch.Tensor, *optimizers: torch.optim.Optimizer) -> None:
        """Clear the gradients of ``optimizers``, back-propagate ``loss`` and step each."""
        for opt in optimizers:
            opt.zero_grad(set_to_none=True)
        loss.backward()
        for opt in optimizers:
            opt.step()

    def update_actor(self, obs: torch.Tensor) -> Stats:
        """The actor's and then the temperature's Adam step on observations ``obs`` (DrQ
        ``update_actor_and_alpha``)."""
        actor_loss, alpha_loss, stats = self.actor_losses(obs)
        self.adam_step(actor_loss, self.actor_opt)
        self.adam_step(alpha_loss, self.alpha_opt)
        return stats

    def update_targets(self) -> None:
        """Soft updates of the target critics (``tau``) and the target encoder (``encoder_tau``)."""
        soft_update(self.critic_target, self.critic, self.config.tau)
        if self.encoder_target is not None:
            soft_update(self.encoder_target, self.encoder, self.config.encoder_tau)

    def critic_losses(self, batch: dict) -> tuple[torch.Tensor, Stats, torch.Tensor]:
        """The loss of the rule's first step on a replay batch: (total loss, its terms as detached 0-d tensors,
        the first view's observations for the actor step)."""
        return self._critic_losses(self._batch(batch))

    def _critic_losses(
        self, tensors: Tensors, terms: dict[str, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, Stats, torch.Tensor]:
        raise NotImplementedError

    def update(self, batch: dict[str, np.ndarray | torch.Tensor]) -> Stats:
        """One gradient update on a replay batch (:meth:`step`); returns the losses as detached 0-d tensors
        (read them with ``float`` only when logging: on a GPU each read syncs; with ``graphs`` they are the
        graph's outputs, overwritten by its next replay)."""
        cfg = self.config
        due = (self.updates % cfg.actor_update_every == 0, self.updates % cfg.target_update_every == 0)
        if self.captured is not None:
            stats = self.captured.update(batch, due)
        else:
            stats = self.step(self._batch(batch), *due)
        self.updates += 1
        return stats

    # -------------------------------------------------------- state I/O
    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """The optimisers a checkpoint holds, by their key in :meth:`training_state`."""
        return {"model_opt": self.model_opt, "actor_opt": self.actor_opt, "alpha_opt": self.alpha_opt}

    def training_state(self) -> dict:
        """Networks, optimisers and the update counter (for checkpoints)."""
        shared = ("model_opt", "actor_opt", "alpha_opt")  # first, then the count, then a rule's own optimisers
        opts = {k: opt.state_dict() for k, opt in self.optimizers().items()}
        return {"networks": self.state_dict(), **{k: opts.pop(k) for k in shared}, "updates": self.updates, **opts}

    def load_training_state(self, state: dict) -> None:
        """Inverse of :meth:`training_state`."""
        self.load_state_dict(state["networks"])
        for key, opt in self.optimizers().items():
            opt.load_state_dict(state[key])
        self.updates = int(state["updates"])
        if self.captured is not None:  # the graphs hold the replaced optimiser states' addresses
            self.captured = UpdateGraphs(self)


class DrQAgent(Agent):
    """DrQ's update (Kostrikov et al. 2020): SAC whose critic loss is summed over M random shifts of the
    observations against a TD target averaged over K shifts of the next ones (``sac``: one unshifted view)."""

    def step(self, tensors: Tensors, actor_due: bool, target_due: bool) -> Stats:
        """The critic step, the actor and temperature step when due, the soft updates when due."""
        obs, stats = self.update_critic(tensors)
        if actor_due:
            stats.update(self.update_actor(obs))
        if target_due:
            self.update_targets()
        return stats

    def update_critic(self, tensors: Tensors) -> tuple[torch.Tensor, Stats]:
        """One Adam step of ``model_opt`` on :meth:`_critic_losses`; (the first view for the actor step, the
        stats)."""
        loss, stats, obs = self._critic_losses(tensors)
        self.adam_step(loss, self.model_opt)
        return obs, stats

    def _critic_losses(
        self, tensors: Tensors, terms: dict[str, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, Stats, torch.Tensor]:
        """DrQ's critic loss on a batch on the device: (loss, stats, the first view for the actor step);
        ``terms``, when given, receives the loss with its graph as 'critic'."""
        obs, next_obs, action, reward, discount = tensors
        k, m = self.config.views
        obs_views, next_views = self._views(obs, m), self._views(next_obs, k)
        z_views = self.encoder.head(self.encoder.trunk(torch.cat(obs_views)))
        loss, stats = self.critic_loss(z_views, action, self.td_target(next_views, reward, discount))
        if terms is not None:
            terms["critic"] = loss
        return loss, stats, obs_views[0]

    def loss_terms(self, batch: dict) -> dict[str, torch.Tensor]:
        """The update's loss split into its weighted terms, each with its graph: 'critic', and where the rule
        trains them, 'transition', 'reward', 'inverse' and 'bisim' (``beta`` times the bisimulation loss).
        Their sum is the loss :meth:`update` steps on; a term's gradient on ``self.encoder`` shows how much of
        the encoder's update it drives."""
        terms: dict[str, torch.Tensor] = {}
        self._critic_losses(self._batch(batch), terms)
        return terms


class JointAgent(DrQAgent):
    """The paper's update (Alg. 2): one Adam step on DrQ's critic loss, the world model's losses and ``beta``
    times the method's bisimulation loss (:data:`BISIMULATION_LOSSES`), all on one encoder."""

    def build_heads(self, latent: int, hidden: int) -> None:
        """The latent transition, reward and inverse-dynamics heads (``aux``) and the distance head."""
        cfg = self.config
        if self.world_model:
            self.transition = TransitionModel(
                latent,
                self.action_dim,
                hidden,
                (cfg.transition_sigma_min, cfg.transition_sigma_max),
                cfg.transition_sigma_init,
            )
            self.reward_model = RewardModel(latent, hidden)
            self.inverse = InverseDynamics(latent, self.action_dim, hidden)
        if self.method.bisim is not None:
            scale = latent**-0.5 if cfg.distance_scale is None else cfg.distance_scale
            self.distance = (
                LatentL1Distance(scale) if self.method.head == "latent-l1" else SeparableDistance(latent, init=scale)
            )
        if cfg.spread_units:  # a bias-corrected running mean of the batch spread, for evaluations
            self.register_buffer("spread_sum", torch.zeros(()))
            self.register_buffer("spread_weight", torch.zeros(()))

    def _critic_losses(
        self, tensors: Tensors, terms: dict[str, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, Stats, torch.Tensor]:
        """The joint loss on a batch on the device: DrQ's critic loss, the world model's losses on the first view
        (its first next view passes the trunk with the gradient, and the TD target reuses those features) and
        ``beta`` times the bisimulation loss on the first view's latents once ``bisim_warmup`` updates are done;
        (loss, stats, the first view for the actor step). ``terms`` receives the weighted terms with their
        graphs (:meth:`loss_terms`)."""
        terms = {} if terms is None else terms
        obs, next_obs, action, reward, discount = tensors
        rows, (k, m) = obs.shape[0], self.config.views
        obs_views, next_views = self._views(obs, m), self._views(next_obs, k)
        inputs = obs_views + ([next_views[0]] if self.world_model else [])
        features = self.encoder.trunk(torch.cat(inputs))
        latents = self.encoder.head(features)
        per_view = features.shape[0] // len(inputs)  # rows (frames, frame-wise) of one view
        reused = features[m * per_view :] if self.world_model else None
        loss, stats = self.critic_loss(
            latents[: m * rows], action, self.td_target(next_views, reward, discount, reused)
        )
        terms["critic"] = loss
        z = latents[:rows]
        if self.world_model:
            model_loss, model_stats = self.world_model_losses(z, latents[m * rows :], action, reward, terms)
            loss = loss + model_loss
            stats.update(model_stats)
        if self.method.bisim is not None and self.config.beta > 0 and self.bisim_active:
            with self.checking():
                bisim = self.bisimulation_loss(z)
            terms["bisim"] = self.config.beta * bisim
            loss = loss + terms["bisim"]
            stats["bisim_loss"] = bisim.detach()
        return loss, stats, obs_views[0]

    def world_model_losses(
        self,
        z: torch.Tensor,
        z_next_grad: torch.Tensor,
        action: torch.Tensor,
        reward: torch.Tensor,
        terms: dict[str, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, Stats]:
        """Transition NLL of the detached next latent, reward regression on a sample of the predicted next
        latent (both on a detached ``z`` when ``model_grad`` is off), inverse dynamics (gradient into
        ``z_next_grad``); (their sum, the terms detached). ``terms``, when given, receives the three with their
        graphs."""
        z_next = z_next_grad.detach()
        mu, sigma = self.transition(z if self.config.model_grad else z.detach(), action)
        transition_loss = (0.5 * ((z_next - mu) / sigma) ** 2 + sigma.log()).mean()
        reward_loss = F.mse_loss(self.reward_model(mu + sigma * torch.randn_like(mu)), reward)
        inverse_loss = F.mse_loss(self.inverse(z, z_next_grad), action)
        if terms is not None:
            terms.update(transition=transition_loss, reward=reward_loss, inverse=inverse_loss)
        return transition_loss + reward_loss + inverse_loss, {
            "transition_loss": transition_loss.detach(),
            "reward_loss": reward_loss.detach(),
            "inverse_loss": inverse_loss.detach(),
        }

    # ------------------------------------------------------ bisimulation
    def next_reward(self, z: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """``R(mu(z, a))``: the reward head on the mean predicted next latent (the reward ground's reward)."""
        return self.reward_model(self.transition(z, a)[0])

    def mean_action(self, z: torch.Tensor) -> torch.Tensor:
        """``tanh(mu_pi(z))``: the squashed mean of the policy (the policy ground's action)."""
        return torch.tanh(self.actor(z)[0])

    def bisimulation_loss(self, z: torch.Tensor) -> torch.Tensor:
        """The method's loss (:meth:`bisimulation_term`) on latents ``z`` (gradient flows into ``z``) under the
        distance head; under ``spread_units`` on distances divided by the batch's latent spread (with its
        gradient)."""
        if not self.config.spread_units:
            return self.bisimulation_term(z, self.distance)
        spread = z.float().std(0).mean().clamp_min(1e-6)
        with torch.no_grad():  # in place: no host synchronisation, safe inside a CUDA graph
            w = self.SPREAD_MOMENTUM
            self.spread_sum.mul_(1 - w).add_(w * spread.detach())
            self.spread_weight.mul_(1 - w).add_(w)
        head = self.distance
        return self.bisimulation_term(z, lambda a, b: head(a, b) / spread)

    def bisimulation_term(self, z: torch.Tensor, distance: Callable) -> torch.Tensor:
        """The method's bisimulation loss from :mod:`bisimkit.losses` (:data:`BISIMULATION_LOSSES`) on latents
        ``z`` with the distance function ``distance``. A variant of a method overrides this (e.g. eps-r with the
        independent coupling, :func:`agents.metric_check.methods.independent_reward_agent`)."""
        return BISIMULATION_LOSSES[self.method.bisim](self, z, distance)

    def metric_losses(self, batch: dict) -> tuple[torch.Tensor, Stats, torch.Tensor]:
        """The encoder's metric learning alone (``agents.metric_check``, isolated): the world model's losses and
        ``beta`` times the bisimulation loss on one view of the observations and of the next observations (DrQ
        shifts when the method augments), without the critic; (the loss, its terms detached, the latents z of the
        first view, with gradient)."""
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
        with self.checking():
            bisim = self.bisimulation_loss(z)
        stats["bisim_loss"] = bisim.detach()
        return loss + self.config.beta * bisim, stats, z

    def metric_step(self, batch: dict) -> tuple[Stats, torch.Tensor]:
        """The metric learning alone, without the critic (``agents.metric_check``, isolated): one Adam step of
        :meth:`metric_losses` (encoder, world model, distance head); (its stats, the latents z of the first
        view, with gradient)."""
        loss, stats, z = self.metric_losses(batch)
        self.adam_step(loss, self.model_opt)
        return stats, z


def _policy(agent: JointAgent):
    return gaussian_policy(agent.actor, agent.action_dim, squash=True)


def _transition(agent: JointAgent):
    return gaussian_transition(agent.transition, agent.latent_dim)


#: Each bisimulation loss of :data:`agents.config.METHODS` (``Method.bisim``) under the joint update:
#: ``loss(agent, z, distance)`` from :mod:`bisimkit.losses` on the agent's actor and world model.
BISIMULATION_LOSSES: dict[str, Callable[[JointAgent, torch.Tensor, Callable], torch.Tensor]] = {
    "dbc": lambda agent, z, distance: dbc_loss(
        z,
        distance=distance,
        policy=_policy(agent),
        reward=agent.next_reward,
        next_w2=gaussian_w2(agent.transition),
        discount=agent.config.discount,
        samples=agent.config.bisim_samples,
    ),
    "psm": lambda agent, z, distance: psm_loss(
        z,
        distance=distance,
        policy=_policy(agent),
        transition=_transition(agent),
        mean_action=agent.mean_action,
        discount=agent.config.discount,
        samples=agent.config.bisim_samples,
    ),
    "entangled-reward": lambda agent, z, distance: entangled_loss(
        z,
        distance=distance,
        policy=_policy(agent),
        transition=_transition(agent),
        ground=reward_ground(agent.next_reward),
        discount=agent.config.discount,
        samples=agent.config.bisim_samples,
    ),
    "entangled-policy": lambda agent, z, distance: entangled_loss(
        z,
        distance=distance,
        policy=_policy(agent),
        transition=_transition(agent),
        ground=policy_ground(agent.mean_action),
        discount=agent.config.discount,
        samples=agent.config.bisim_samples,
    ),
}


class DBCAgent(DrQAgent):
    """DBC's own update (facebookresearch/deep_bisim4control agent/bisim_agent.py ``BisimAgent.update``): DrQ's
    critic step on one unshifted view, then its encoder and model step (:meth:`update_metric`) with Adams of
    their own, then the actor and the soft updates."""

    JACOBIAN_EPS = DBC_JACOBIAN_EPS
    dbc_update = True

    def init_trunk(self) -> None:
        """Delta-orthogonal convolutions (DBC's critic applies sac_ae.py's ``weight_init``)."""
        self.encoder.trunk.apply(delta_orthogonal_init)

    def build_heads(self, latent: int, hidden: int) -> None:
        """DBC's transition and reward heads (``ProbabilisticTransitionModel``, ``reward_decoder``)."""
        cfg = self.config
        self.transition = DBCTransitionModel(
            latent,
            self.action_dim,
            sigma_bounds=(cfg.transition_sigma_min, cfg.transition_sigma_max),
            sigma_init=cfg.transition_sigma_init,
        )
        self.reward_model = DBCRewardModel(latent)

    def model_parameters(self) -> list[nn.Parameter]:
        """DBC's ``critic_optimizer``: the encoder and the critics."""
        return list(self.encoder.parameters()) + list(self.critic.parameters())

    def build_optimizers(self, adam: dict) -> None:
        """The shared three, then DBC's ``encoder_optimizer`` and ``decoder_optimizer`` (weight decay 1e-7)."""
        super().build_optimizers(adam)
        self.encoder_opt = torch.optim.Adam(self.encoder.parameters(), lr=self.config.lr, **adam)
        self.world_opt = torch.optim.Adam(
            list(self.reward_model.parameters()) + list(self.transition.parameters()),
            lr=self.config.lr,
            weight_decay=DBC_DECODER_WEIGHT_DECAY,
            **adam,
        )

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """The shared three and DBC's two."""
        return {**super().optimizers(), "encoder_opt": self.encoder_opt, "world_opt": self.world_opt}

    def step(self, tensors: Tensors, actor_due: bool, target_due: bool) -> Stats:
        """``update_critic``, then ``update_transition_reward_model`` with ``update_encoder``, then the actor and
        temperature step and the soft updates when due."""
        obs, stats = self.update_critic(tensors)
        stats.update(self.update_metric(tensors))
        if actor_due:
            stats.update(self.update_actor(obs))
        if target_due:
            self.update_targets()
        return stats

    def dbc_model_losses(self, tensors: Tensors) -> tuple[torch.Tensor, Stats]:
        """DBC's second step (``update_transition_reward_model`` + ``bisim_coef * update_encoder``) on latents of
        the current encoder: the transition NLL of the next latent (no gradient into it), the reward regression
        on a sample of the predicted next latent, and ``beta`` times DBC's per-coordinate loss on the batch's
        rewards and the transition's prediction under stop-gradient; (the total, its terms detached)."""
        obs, next_obs, action, reward, _ = tensors
        h = self.encoder(obs)
        with torch.no_grad():
            h_next = self.encoder(next_obs)
        mu, sigma = self.transition(h, action)
        transition_loss = (0.5 * ((mu - h_next) / sigma) ** 2 + sigma.log()).mean()
        reward_loss = F.mse_loss(self.reward_model(mu + sigma * torch.randn_like(sigma)), reward)
        with self.checking():
            bisim = dbc_coordinate_loss(
                h, reward=reward, next_mean=mu.detach(), next_sigma=sigma.detach(), discount=self.config.discount
            )
        weight = self.config.beta if self.bisim_active else 0.0  # bisim_warmup: the models alone first
        return transition_loss + reward_loss + weight * bisim, {
            "transition_loss": transition_loss.detach(),
            "reward_loss": reward_loss.detach(),
            "bisim_loss": bisim.detach(),
        }

    def update_metric(self, tensors: Tensors) -> Stats:
        """The Adam steps of :meth:`dbc_model_losses` on the encoder and on the heads, each with its own state."""
        loss, stats = self.dbc_model_losses(tensors)
        self.adam_step(loss, self.encoder_opt, self.world_opt)
        return stats

    def metric_step(self, batch: dict) -> tuple[Stats, torch.Tensor]:
        """The metric learning alone, without the critic (``agents.metric_check``, isolated): :meth:`update_metric`;
        (its stats, the latents of the observations after the step, without gradient)."""
        tensors = self._batch(batch)
        stats = self.update_metric(tensors)
        with torch.no_grad():
            z = self.encoder(tensors[0])
        return stats, z

    def loss_terms(self, batch: dict) -> dict[str, torch.Tensor]:
        """Refused: DBC's update steps on two losses in turn, which no split of one loss describes."""
        raise ValueError("update_rule: DBC's update steps on two losses in turn; loss_terms splits the joint one")


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
                raise ValueError(
                    f"{name}: CUDA graphs need a fixed batch, got shape {tuple(t.shape)} "
                    f"{t.dtype} after {tuple(fixed.shape)} {fixed.dtype}"
                )
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
            print(f"graphs: capturing the update failed ({self.failed}); eager updates from now on", file=sys.stderr)
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
