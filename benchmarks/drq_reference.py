"""A transcription of DrQ's update (denisyarats/drq, drq.py: Encoder, Actor, Critic, DRQAgent.update_critic,
update_actor_and_alpha, update) in plain torch, to check agents.agent against it (tests/test_agent.py
on a CPU, ``python -m benchmarks.drq_compare`` on any device).

Written from the reference file, not from agents/: its own modules (an encoder per actor and critic
with tied convs, a separate target critic with its own encoder), the target and the critic loss
computed view by view as DrQ does. The one liberty: the random draws are taken in the order
agents.agent takes them (observation shifts, next-observation shifts, one normal draw for all K
target views), so both see the same noise from one seed.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn
from torch.nn import functional as F

from agents.augment import random_shift


class Encoder(nn.Module):
    """drq.py Encoder: 4 convs (ReLU), flatten, Linear + LayerNorm, tanh."""

    def __init__(self, channels: int, side: int, features: int = 50):
        super().__init__()
        self.convs = nn.ModuleList(
            [nn.Conv2d(channels, 32, 3, stride=2)] + [nn.Conv2d(32, 32, 3, stride=1) for _ in range(3)]
        )
        self.head = nn.Sequential(nn.Linear(32 * side * side, features), nn.LayerNorm(features))

    def forward(self, obs, detach=False):
        h = obs / 255.0
        for conv in self.convs:
            h = torch.relu(conv(h))
        h = h.reshape(h.size(0), -1)
        if detach:
            h = h.detach()
        return torch.tanh(self.head(h))


def mlp(inputs, hidden, outputs):
    return nn.Sequential(
        nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, outputs)
    )


class Actor(nn.Module):
    def __init__(self, encoder, actions, hidden, log_std_bounds=(-10.0, 2.0)):
        super().__init__()
        self.encoder, self.trunk, self.bounds = encoder, mlp(50, hidden, 2 * actions), log_std_bounds

    def forward(self, obs, noise, detach_encoder=False):
        """(action, log prob) of a reparametrised squashed Gaussian with the given noise."""
        mu, log_std = self.trunk(self.encoder(obs, detach=detach_encoder)).chunk(2, dim=-1)
        low, high = self.bounds
        log_std = low + 0.5 * (high - low) * (torch.tanh(log_std) + 1)
        dist = torch.distributions.TransformedDistribution(
            torch.distributions.Normal(mu, log_std.exp()), [torch.distributions.TanhTransform(cache_size=1)]
        )
        u = mu + log_std.exp() * noise
        action = torch.tanh(u)
        # log prob of the pre-squash sample, with the tanh Jacobian (what SquashedNormal.log_prob gives)
        log_prob = dist.base_dist.log_prob(u) - 2 * (math.log(2) - u - F.softplus(-2 * u))
        return action, log_prob.sum(-1, keepdim=True)


class Critic(nn.Module):
    def __init__(self, encoder, actions, hidden):
        super().__init__()
        self.encoder, self.Q1, self.Q2 = encoder, mlp(50 + actions, hidden, 1), mlp(50 + actions, hidden, 1)

    def forward(self, obs, action, detach_encoder=False):
        x = torch.cat([self.encoder(obs, detach=detach_encoder), action], dim=-1)
        return self.Q1(x), self.Q2(x)


class DrQ:
    """DRQAgent with the hyper-parameters of drq's config.yaml (lr and temperature lr 1e-3, tau 0.01)."""

    def __init__(
        self, channels, side, actions, hidden, lr=1e-3, tau=0.01, init_temperature=0.1, discount=0.99, device="cpu"
    ):
        self.device = torch.device(device)
        self.critic = Critic(Encoder(channels, side), actions, hidden).to(self.device)
        actor_encoder = Encoder(channels, side)
        actor_encoder.convs = self.critic.encoder.convs  # tie conv layers between actor and critic
        self.actor = Actor(actor_encoder, actions, hidden).to(self.device)
        self.critic_target = copy.deepcopy(self.critic)
        self.log_alpha = torch.tensor(math.log(init_temperature), device=self.device, requires_grad=True)
        self.target_entropy, self.tau, self.discount, self.actions = -actions, tau, discount, actions
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=lr)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=lr)
        self.log_alpha_optimizer = torch.optim.Adam([self.log_alpha], lr=lr)

    def update(self, batch, step, pad=4):
        """One update (drq.py DRQAgent.update with K = M = 2); returns (critic loss, actor loss or None)."""
        dev = self.device
        obs, next_obs = torch.as_tensor(batch["obs"], device=dev), torch.as_tensor(batch["next_obs"], device=dev)
        action = torch.as_tensor(batch["action"], device=dev)
        reward = torch.as_tensor(batch["reward"], device=dev)[:, None]
        not_done = torch.as_tensor(batch["discount"], device=dev)[:, None]
        obs_1, obs_2 = random_shift(obs, pad), random_shift(obs, pad)
        next_1, next_2 = random_shift(next_obs, pad), random_shift(next_obs, pad)
        obs_1, obs_2, next_1, next_2 = (x.float() for x in (obs_1, obs_2, next_1, next_2))
        rows = obs.shape[0]
        noise = torch.randn(2 * rows, self.actions, device=dev)
        with torch.no_grad():
            targets = []
            for view, xi in ((next_1, noise[:rows]), (next_2, noise[rows:])):
                next_action, log_prob = self.actor(view, xi)
                target_q1, target_q2 = self.critic_target(view, next_action)
                target_v = torch.min(target_q1, target_q2) - self.log_alpha.exp().detach() * log_prob
                targets.append(reward + not_done * self.discount * target_v)
            target_q = (targets[0] + targets[1]) / 2
        q1, q2 = self.critic(obs_1, action)
        critic_loss = F.mse_loss(q1, target_q) + F.mse_loss(q2, target_q)
        q1_aug, q2_aug = self.critic(obs_2, action)
        critic_loss = critic_loss + F.mse_loss(q1_aug, target_q) + F.mse_loss(q2_aug, target_q)
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        self.critic_optimizer.step()
        actor_loss = None
        if step % 2 == 0:
            action_pi, log_prob = self.actor(obs_1, torch.randn(rows, self.actions, device=dev), detach_encoder=True)
            actor_q1, actor_q2 = self.critic(obs_1, action_pi, detach_encoder=True)
            entropy_term, min_q = self.log_alpha.exp().detach() * log_prob, torch.min(actor_q1, actor_q2)
            actor_loss = (entropy_term - min_q).mean()
            # the size of the actor loss's terms (the loss itself may be near zero): for comparison tolerances
            self.actor_scale = (entropy_term.abs().mean() + min_q.abs().mean()).detach()
            self.actor_optimizer.zero_grad()
            actor_loss.backward()
            self.actor_optimizer.step()
            self.log_alpha_optimizer.zero_grad()
            alpha_loss = (self.log_alpha.exp() * (-log_prob - self.target_entropy).detach()).mean()
            alpha_loss.backward()
            self.log_alpha_optimizer.step()
        if step % 2 == 0:
            with torch.no_grad():
                for param, target in zip(self.critic.parameters(), self.critic_target.parameters()):
                    target.data.copy_(self.tau * param.data + (1 - self.tau) * target.data)
        self.last_q = q1.detach().mean()
        return critic_loss.detach(), actor_loss


def copy_actor_critic(ref, agent, head_layers) -> None:
    """Copy an agents.agent.Agent's encoders, actor trunk, critics and temperature into a transcription
    laid out as DrQ and DBC lay theirs out: ``ref.critic``, ``ref.actor`` and ``ref.critic_target`` each
    with an ``encoder`` (``convs`` plus the head layers ``head_layers(encoder) = (projection, norm)``),
    ``Q1``/``Q2`` and ``actor.trunk``."""
    with torch.no_grad():

        def copy_encoder(dst, trunk, head) -> None:
            convs = [m for m in trunk.convs if isinstance(m, nn.Conv2d)]
            for d, s in zip(dst.convs, convs):
                d.weight.copy_(s.weight)
                d.bias.copy_(s.bias)
            projection, norm = head_layers(dst)
            projection.load_state_dict(head.project.state_dict())
            norm.load_state_dict(head.norm.state_dict())

        copy_encoder(ref.critic.encoder, agent.encoder.trunk, agent.encoder.head)
        copy_encoder(ref.actor.encoder, agent.encoder.trunk, agent.actor_head)
        copy_encoder(ref.critic_target.encoder, agent.encoder_target.trunk, agent.encoder_target.head)
        ref.actor.trunk.load_state_dict(agent.actor.net.state_dict())
        for dst, src in ((ref.critic, agent.critic), (ref.critic_target, agent.critic_target)):
            dst.Q1.load_state_dict(src.q1.state_dict())
            dst.Q2.load_state_dict(src.q2.state_dict())
        ref.log_alpha.copy_(agent.log_alpha)


def load_from_agent(ref: DrQ, agent) -> None:
    """Copy an agents.agent.Agent (drq preset) into the reference, module by module."""
    copy_actor_critic(ref, agent, lambda encoder: (encoder.head[0], encoder.head[1]))
