"""The actor: a tanh-squashed Gaussian policy, reparametrised.

``a = tanh(mu(z) + sigma(z) * xi)`` with ``xi ~ N(0, I)``; log sigma is squashed
into [-10, 2]. ``forward`` returns the pre-squash ``(mu, sigma)`` (the shape the
bisimulation losses' Gaussian samplers take); :meth:`Actor.sample` draws an
action, optionally with given noise, so two states can share one draw (the
entangled coupling of the paper's Alg. 1).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from .mlp import HIDDEN, mlp

LOG_STD_BOUNDS = (-10.0, 2.0)


def squashed_log_prob(
    u: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor, jacobian_eps: float | None = None
) -> torch.Tensor:
    """log density of ``tanh(u)`` for ``u ~ N(mu, diag sigma^2)``, summed over action coordinates.

    ``jacobian_eps``: None takes the exact log Jacobian; a number ``e`` takes SAC-AE's and DBC's
    ``log(relu(1 - tanh(u)^2) + e)`` (deep_bisim4control sac_ae.py, ``squash``: e = 1e-6)."""
    gaussian = (-0.5 * ((u - mu) / sigma) ** 2 - sigma.log() - 0.5 * math.log(2 * math.pi)).sum(-1)
    if jacobian_eps is not None:
        return gaussian - torch.log(F.relu(1.0 - torch.tanh(u) ** 2) + jacobian_eps).sum(-1)
    # log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), stable for large |u|
    jacobian = (2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))).sum(-1)
    return gaussian - jacobian


class Actor(nn.Module):
    """pi(a | z): MLP (two hidden layers) to the mean and bounded log std of a squashed Gaussian."""

    def __init__(
        self,
        latent_dim: int,
        action_dim: int,
        hidden: int = HIDDEN,
        log_std_bounds: tuple[float, float] = LOG_STD_BOUNDS,
        jacobian_eps: float | None = None,
    ):
        super().__init__()
        self.jacobian_eps = jacobian_eps  # see squashed_log_prob
        low, high = log_std_bounds
        if not low < high:
            raise ValueError(f"log_std_bounds: {log_std_bounds} is not an increasing pair")
        self.action_dim, self.log_std_bounds = action_dim, (float(low), float(high))
        self.net = mlp(latent_dim, 2 * action_dim, hidden)

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Pre-squash mean and standard deviation, each (B, action_dim)."""
        mu, raw = self.net(z).chunk(2, dim=-1)
        low, high = self.log_std_bounds
        log_std = low + 0.5 * (high - low) * (torch.tanh(raw) + 1.0)
        return mu, log_std.exp()

    def sample(
        self, z: torch.Tensor, noise: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(action, log pi(action | z), deterministic action tanh(mu)); ``noise`` ~ N(0, I) if not given."""
        mu, sigma = self(z)
        if noise is None:
            noise = torch.randn_like(mu)
        elif noise.shape != mu.shape:
            raise ValueError(f"noise: expected shape {tuple(mu.shape)}, got {tuple(noise.shape)}")
        u = mu + sigma * noise
        return torch.tanh(u), squashed_log_prob(u, mu, sigma, self.jacobian_eps), torch.tanh(mu)
