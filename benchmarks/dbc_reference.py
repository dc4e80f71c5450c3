"""A transcription of DBC's update (facebookresearch/deep_bisim4control: agent/bisim_agent.py ``BisimAgent``,
sac_ae.py ``Actor``/``Critic``, encoder.py ``PixelEncoder``, transition_model.py
``ProbabilisticTransitionModel``, with run_local.sh's settings) in plain torch, to check
``--preset dbc`` (agents.agent with ``update_rule='dbc'``) against it (tests/test_agent.py).

Written from DBC's files, not from agents/, and in its layout: an encoder per actor and critic with
tied convolutions, a target critic with its own encoder, five Adam optimisers as DBC builds them
(actor; critic with its encoder; temperature; the transition and reward heads with weight decay;
a second one on the critic's encoder), and an update in DBC's order:

1. ``update_critic`` (bisim_agent.py): TD target from the actor's sample on the next observation
   and the target critic, the two Q regressions, a step of the critic optimiser;
2. ``update_transition_reward_model``: the encoder (as just stepped) on the observation, the Gaussian
   NLL of the detached next latent, and the reward decoder on a sample of the predicted next latent;
3. ``update_encoder``: per latent coordinate, smooth-L1 between the latents and their permutation,
   regressed on smooth-L1 of the rewards plus the discount times sqrt(dmu^2 + dsigma^2) of the
   transition's prediction (computed under no_grad); 2 and ``bisim_coef`` times 3 in one backward,
   a step of the encoder optimiser and one of the decoder optimiser;
4. every second update (the first included) the actor (convolutions detached) and the temperature;
5. every second update the target critic's Q networks at ``critic_tau`` and its encoder at
   ``encoder_tau``.

The liberty taken: DBC draws its permutation with ``np.random.permutation``; here it is
``torch.randperm`` at the same point of the update, and every draw (next action noise, the
reward decoder's sample, the permutation, the actor step's noise) is taken in the order
agents.agent takes it, so both see the same noise from one torch seed.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn
from torch.nn import functional as F

from benchmarks.drq_reference import copy_actor_critic

#: run_local.sh: critic_tau 0.01, encoder_tau 0.05, init_temperature 0.1, alpha_lr 1e-4, alpha_beta 0.5,
#: decoder_weight_lambda 1e-7; bisim_agent.py defaults: lr 1e-3 everywhere else, bisim_coef 0.5, discount 0.99.
SETTINGS = dict(
    lr=1e-3,
    alpha_lr=1e-4,
    alpha_beta=0.5,
    critic_tau=0.01,
    encoder_tau=0.05,
    init_temperature=0.1,
    decoder_weight_lambda=1e-7,
    bisim_coef=0.5,
    discount=0.99,
)


class Encoder(nn.Module):
    """encoder.py PixelEncoder: pixels / 255, 4 convs (ReLU), flatten, fc, LayerNorm (no tanh)."""

    def __init__(self, channels: int, side: int, features: int = 50):
        super().__init__()
        self.convs = nn.ModuleList(
            [nn.Conv2d(channels, 32, 3, stride=2)] + [nn.Conv2d(32, 32, 3, stride=1) for _ in range(3)]
        )
        self.fc = nn.Linear(32 * side * side, features)
        self.ln = nn.LayerNorm(features)

    def forward(self, obs, detach=False):
        h = obs / 255.0
        for conv in self.convs:
            h = torch.relu(conv(h))
        h = h.reshape(h.shape[0], -1)
        return self.ln(self.fc(h.detach() if detach else h))


def two_layer(inputs, hidden, outputs):
    return nn.Sequential(
        nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, outputs)
    )


class Actor(nn.Module):
    """sac_ae.py Actor: squashed Gaussian, log std through tanh into [-10, 2], SAC-AE's squash correction."""

    def __init__(self, encoder, actions, hidden, log_std_min=-10.0, log_std_max=2.0):
        super().__init__()
        self.encoder, self.trunk = encoder, two_layer(50, hidden, 2 * actions)
        self.low, self.high = log_std_min, log_std_max

    def forward(self, obs, detach_encoder=False):
        """(squashed sample, its log probability) with a fresh normal draw."""
        mu, raw = self.trunk(self.encoder(obs, detach=detach_encoder)).chunk(2, dim=-1)
        log_std = self.low + 0.5 * (self.high - self.low) * (torch.tanh(raw) + 1)
        noise = torch.randn_like(mu)
        pre = mu + noise * log_std.exp()
        log_pi = (-0.5 * noise.pow(2) - log_std).sum(-1, keepdim=True) - 0.5 * math.log(2 * math.pi) * mu.shape[-1]
        pi = torch.tanh(pre)
        log_pi = log_pi - torch.log(F.relu(1 - pi.pow(2)) + 1e-6).sum(-1, keepdim=True)
        return pi, log_pi


class Critic(nn.Module):
    """sac_ae.py Critic: an encoder and two Q networks on [latent, action]."""

    def __init__(self, encoder, actions, hidden):
        super().__init__()
        self.encoder = encoder
        self.Q1, self.Q2 = two_layer(50 + actions, hidden, 1), two_layer(50 + actions, hidden, 1)

    def forward(self, obs, action, detach_encoder=False):
        x = torch.cat([self.encoder(obs, detach=detach_encoder), action], dim=1)
        return self.Q1(x), self.Q2(x)


class Transition(nn.Module):
    """transition_model.py ProbabilisticTransitionModel: fc, LayerNorm, ReLU; mu and a sigmoid-bounded sigma."""

    def __init__(self, latent, actions, width=512, min_sigma=1e-4, max_sigma=10.0):
        super().__init__()
        self.fc, self.ln = nn.Linear(latent + actions, width), nn.LayerNorm(width)
        self.fc_mu, self.fc_sigma = nn.Linear(width, latent), nn.Linear(width, latent)
        self.min_sigma, self.max_sigma = min_sigma, max_sigma

    def forward(self, x):
        h = torch.relu(self.ln(self.fc(x)))
        return self.fc_mu(h), self.min_sigma + (self.max_sigma - self.min_sigma) * torch.sigmoid(self.fc_sigma(h))

    def sample_prediction(self, x):
        mu, sigma = self(x)
        return mu + sigma * torch.randn_like(sigma)


class DBC:
    """BisimAgent with the probabilistic transition model and run_local.sh's settings."""

    def __init__(self, channels, side, actions, hidden, device="cpu", **changes):
        s = {**SETTINGS, **changes}
        self.device, self.actions = torch.device(device), actions
        self.discount, self.bisim_coef = s["discount"], s["bisim_coef"]
        self.critic_tau, self.encoder_tau = s["critic_tau"], s["encoder_tau"]
        self.critic = Critic(Encoder(channels, side), actions, hidden).to(self.device)
        self.critic_target = copy.deepcopy(self.critic)
        actor_encoder = Encoder(channels, side)
        actor_encoder.convs = self.critic.encoder.convs  # the convolutions are shared, fc and ln are the actor's
        self.actor = Actor(actor_encoder, actions, hidden).to(self.device)
        self.transition = Transition(50, actions).to(self.device)
        self.reward_decoder = nn.Sequential(nn.Linear(50, 512), nn.LayerNorm(512), nn.ReLU(), nn.Linear(512, 1)).to(
            self.device
        )
        self.log_alpha = torch.tensor(math.log(s["init_temperature"]), device=self.device, requires_grad=True)
        self.target_entropy = -actions
        lr = s["lr"]
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=lr, betas=(0.9, 0.999))
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=lr, betas=(0.9, 0.999))
        self.log_alpha_optimizer = torch.optim.Adam([self.log_alpha], lr=s["alpha_lr"], betas=(s["alpha_beta"], 0.999))
        self.decoder_optimizer = torch.optim.Adam(
            list(self.reward_decoder.parameters()) + list(self.transition.parameters()),
            lr=lr,
            weight_decay=s["decoder_weight_lambda"],
        )
        self.encoder_optimizer = torch.optim.Adam(self.critic.encoder.parameters(), lr=lr)

    def update(self, batch, step):
        """One BisimAgent.update on a replay batch; the losses (detached; ``actor_loss`` on actor steps only)
        and, as ``*_scale``, the sizes of the terms each loss is made of (for the comparison's tolerance)."""
        dev = self.device
        obs = torch.as_tensor(batch["obs"], device=dev).float()
        next_obs = torch.as_tensor(batch["next_obs"], device=dev).float()
        action = torch.as_tensor(batch["action"], device=dev)
        reward = torch.as_tensor(batch["reward"], device=dev)[:, None]
        not_done = torch.as_tensor(batch["discount"], device=dev)[:, None]
        out = {}

        # 1. critic
        with torch.no_grad():
            next_pi, next_log_pi = self.actor(next_obs)
            target_q1, target_q2 = self.critic_target(next_obs, next_pi)
            target_v = torch.min(target_q1, target_q2) - self.log_alpha.exp().detach() * next_log_pi
            target_q = reward + not_done * self.discount * target_v
        q1, q2 = self.critic(obs, action)
        critic_loss = F.mse_loss(q1, target_q) + F.mse_loss(q2, target_q)
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        self.critic_optimizer.step()
        out["critic_loss"] = critic_loss.detach()

        # 2. transition and reward models, on the stepped encoder
        h = self.critic.encoder(obs)
        mu, sigma = self.transition(torch.cat([h, action], dim=1))
        next_h = self.critic.encoder(next_obs).detach()
        transition_loss = torch.mean(0.5 * ((mu - next_h) / sigma).pow(2) + torch.log(sigma))
        out["transition_loss_scale"] = torch.mean(
            0.5 * ((mu - next_h) / sigma).pow(2) + torch.log(sigma).abs()
        ).detach()
        predicted = self.transition.sample_prediction(torch.cat([h, action], dim=1))
        reward_loss = F.mse_loss(self.reward_decoder(predicted), reward)

        # 3. the bisimulation loss, coordinate by coordinate
        h = self.critic.encoder(obs)
        perm = torch.randperm(h.shape[0], device=dev)
        with torch.no_grad():
            mu1, sigma1 = self.transition(torch.cat([h, action], dim=1))
        z_dist = F.smooth_l1_loss(h, h[perm], reduction="none")
        r_dist = F.smooth_l1_loss(reward, reward[perm], reduction="none")
        w2 = torch.sqrt((mu1 - mu1[perm]).pow(2) + (sigma1 - sigma1[perm]).pow(2))
        encoder_loss = (z_dist - (r_dist + self.discount * w2)).pow(2).mean()
        total = self.bisim_coef * encoder_loss + transition_loss + reward_loss
        self.encoder_optimizer.zero_grad()
        self.decoder_optimizer.zero_grad()
        total.backward()
        self.encoder_optimizer.step()
        self.decoder_optimizer.step()
        out.update(
            transition_loss=transition_loss.detach(), reward_loss=reward_loss.detach(), bisim_loss=encoder_loss.detach()
        )

        # 4. actor and temperature
        if step % 2 == 0:
            pi, log_pi = self.actor(obs, detach_encoder=True)
            actor_q1, actor_q2 = self.critic(obs, pi, detach_encoder=True)
            entropy_term = self.log_alpha.exp().detach() * log_pi
            min_q = torch.min(actor_q1, actor_q2)
            actor_loss = (entropy_term - min_q).mean()
            self.actor_optimizer.zero_grad()
            actor_loss.backward()
            self.actor_optimizer.step()
            self.log_alpha_optimizer.zero_grad()
            alpha_loss = (self.log_alpha.exp() * (-log_pi - self.target_entropy).detach()).mean()
            alpha_loss.backward()
            self.log_alpha_optimizer.step()
            out["actor_loss"] = actor_loss.detach()
            out["actor_loss_scale"] = (entropy_term.abs().mean() + min_q.abs().mean()).detach()

        # 5. targets
        if step % 2 == 0:
            with torch.no_grad():
                for net, target, tau in (
                    (self.critic.Q1, self.critic_target.Q1, self.critic_tau),
                    (self.critic.Q2, self.critic_target.Q2, self.critic_tau),
                    (self.critic.encoder, self.critic_target.encoder, self.encoder_tau),
                ):
                    for p, t in zip(net.parameters(), target.parameters()):
                        t.copy_(tau * p + (1 - tau) * t)
        return out

    def networks(self) -> dict[str, nn.Module]:
        """The trained modules by name (what the comparison walks)."""
        return {
            "critic": self.critic,
            "actor": self.actor,
            "critic_target": self.critic_target,
            "transition": self.transition,
            "reward_decoder": self.reward_decoder,
        }


def load_from_agent(ref: DBC, agent) -> None:
    """Copy an agents.agent.Agent (``update_rule='dbc'``) into the reference, module by module."""
    copy_actor_critic(ref, agent, lambda encoder: (encoder.fc, encoder.ln))
    with torch.no_grad():
        for name in ("fc", "ln", "fc_mu", "fc_sigma"):
            getattr(ref.transition, name).load_state_dict(getattr(agent.transition, name).state_dict())
        ref.reward_decoder.load_state_dict(agent.reward_model.net.state_dict())
