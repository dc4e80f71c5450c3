"""The agent's world-model heads: latent transition, reward predictor, inverse dynamics.

* :class:`TransitionModel` P(z+ | z, a): a coordinate-independent Gaussian
  ``N(mu(z, a), diag sigma(z, a)^2)`` with sigma in [1e-4, 10] (a sigmoid, as in
  DBC's transition_model.py); the sigmoid's bias starts where sigma equals
  ``sigma_init`` (DBC starts at the midpoint, about 5: with independent noise
  that makes a PSM target a sum of 150 draws of spread 7, thousands of times the
  critic loss); ``forward`` returns ``(mu, sigma)``, :meth:`TransitionModel.sample`
  reparametrises with optional given noise, :meth:`TransitionModel.log_prob`
  scores observed next latents (the dynamics loss).
* :class:`RewardModel` R(z) -> r, applied to predicted next latents.
* :class:`InverseDynamics` A(z_t, z_t+1) -> a in [-1, 1] (tanh output).
* :class:`DBCTransitionModel`, :class:`DBCRewardModel`: DBC's own heads (deep_bisim4control
  transition_model.py ``ProbabilisticTransitionModel``, agent/bisim_agent.py ``reward_decoder``): one
  hidden layer of 512 units with LayerNorm, PyTorch's default initialisation (DBC applies no custom
  init to them), so sigma starts near the midpoint of its bounds; used by DBC's update
  (``update_rule='dbc'``).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .config import SIGMA_BOUNDS, SIGMA_INIT
from .mlp import HIDDEN, mlp


class TransitionModel(nn.Module):
    """Diagonal Gaussian latent dynamics from an MLP on (z, a)."""

    def __init__(
        self,
        latent_dim: int,
        action_dim: int,
        hidden: int = HIDDEN,
        sigma_bounds: tuple[float, float] = SIGMA_BOUNDS,
        sigma_init: float | None = SIGMA_INIT,
    ):
        super().__init__()
        if not 0 < sigma_bounds[0] < sigma_bounds[1]:
            raise ValueError(f"sigma_bounds: {sigma_bounds} is not an increasing positive pair")
        low, high = float(sigma_bounds[0]), float(sigma_bounds[1])
        if sigma_init is not None and not low < sigma_init < high:
            raise ValueError(f"sigma_init: {sigma_init} is not strictly inside sigma_bounds {sigma_bounds}")
        self.latent_dim, self.sigma_bounds = latent_dim, (low, high)
        self.net = mlp(latent_dim + action_dim, 2 * latent_dim, hidden)
        if sigma_init is not None:  # None: the midpoint, as DBC
            with torch.no_grad():
                self.net[-1].bias[latent_dim:] = math.log((sigma_init - low) / (high - sigma_init))

    def forward(self, z: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and standard deviation of z+, each (B, latent_dim)."""
        mu, raw = self.net(torch.cat([z, action], dim=-1)).chunk(2, dim=-1)
        low, high = self.sigma_bounds
        return mu, low + (high - low) * torch.sigmoid(raw)

    def sample(self, z: torch.Tensor, action: torch.Tensor, noise: torch.Tensor | None = None) -> torch.Tensor:
        """z+ = mu + sigma * noise, ``noise`` ~ N(0, I) if not given."""
        mu, sigma = self(z, action)
        if noise is None:
            noise = torch.randn_like(mu)
        elif noise.shape != mu.shape:
            raise ValueError(f"noise: expected shape {tuple(mu.shape)}, got {tuple(noise.shape)}")
        return mu + sigma * noise

    def log_prob(self, z: torch.Tensor, action: torch.Tensor, z_next: torch.Tensor) -> torch.Tensor:
        """log P(z_next | z, a), summed over latent coordinates: (B,)."""
        mu, sigma = self(z, action)
        return (-0.5 * ((z_next - mu) / sigma) ** 2 - sigma.log() - 0.5 * math.log(2 * math.pi)).sum(-1)


class RewardModel(nn.Module):
    """R(z): the reward predicted from a (predicted) latent state."""

    def __init__(self, latent_dim: int, hidden: int = HIDDEN):
        super().__init__()
        self.net = mlp(latent_dim, 1, hidden)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """Predicted rewards, (B,)."""
        return self.net(z).squeeze(-1)


class InverseDynamics(nn.Module):
    """A(z_t, z_t+1): the action that links two consecutive latents, in [-1, 1]."""

    def __init__(self, latent_dim: int, action_dim: int, hidden: int = HIDDEN):
        super().__init__()
        self.net = mlp(2 * latent_dim, action_dim, hidden)

    def forward(self, z: torch.Tensor, z_next: torch.Tensor) -> torch.Tensor:
        """Predicted actions, (B, action_dim)."""
        return torch.tanh(self.net(torch.cat([z, z_next], dim=-1)))


#: Width of DBC's transition and reward heads (transition_model.py ``layer_width``; bisim_agent.py 512).
DBC_WIDTH = 512


class DBCTransitionModel(TransitionModel):
    """DBC's ProbabilisticTransitionModel: Linear(z ++ a, 512), LayerNorm, ReLU, then a Linear to mu and a
    Linear to the sigmoid of sigma's position in its bounds (transition_model.py, ``forward``).
    ``sigma_init`` sets that last bias as :class:`TransitionModel` does; None keeps PyTorch's init (DBC)."""

    def __init__(
        self,
        latent_dim: int,
        action_dim: int,
        width: int = DBC_WIDTH,
        sigma_bounds: tuple[float, float] = SIGMA_BOUNDS,
        sigma_init: float | None = None,
    ):
        nn.Module.__init__(self)
        low, high = float(sigma_bounds[0]), float(sigma_bounds[1])
        if not 0 < low < high:
            raise ValueError(f"sigma_bounds: {sigma_bounds} is not an increasing positive pair")
        if sigma_init is not None and not low < sigma_init < high:
            raise ValueError(f"sigma_init: {sigma_init} is not strictly inside sigma_bounds {sigma_bounds}")
        self.latent_dim, self.sigma_bounds = latent_dim, (low, high)
        self.fc = nn.Linear(latent_dim + action_dim, width)
        self.ln = nn.LayerNorm(width)
        self.fc_mu = nn.Linear(width, latent_dim)
        self.fc_sigma = nn.Linear(width, latent_dim)
        if sigma_init is not None:
            with torch.no_grad():
                self.fc_sigma.bias.fill_(math.log((sigma_init - low) / (high - sigma_init)))

    def forward(self, z: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and standard deviation of z+, each (B, latent_dim)."""
        h = torch.relu(self.ln(self.fc(torch.cat([z, action], dim=-1))))
        low, high = self.sigma_bounds
        return self.fc_mu(h), low + (high - low) * torch.sigmoid(self.fc_sigma(h))


class DBCRewardModel(RewardModel):
    """DBC's reward decoder: Linear(z, 512), LayerNorm, ReLU, Linear(512, 1) (bisim_agent.py, ``__init__``)."""

    def __init__(self, latent_dim: int, width: int = DBC_WIDTH):
        nn.Module.__init__(self)
        self.net = nn.Sequential(nn.Linear(latent_dim, width), nn.LayerNorm(width), nn.ReLU(), nn.Linear(width, 1))
