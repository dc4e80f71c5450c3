"""Twin soft Q critics Q1, Q2(z, a); their targets are :func:`agents.mlp.make_target` copies."""

from __future__ import annotations

import torch
from torch import nn

from .mlp import HIDDEN, mlp


class TwinCritic(nn.Module):
    """Two independent MLP Q-functions on the concatenation of latent and action."""

    def __init__(self, latent_dim: int, action_dim: int, hidden: int = HIDDEN):
        super().__init__()
        self.q1 = mlp(latent_dim + action_dim, 1, hidden)
        self.q2 = mlp(latent_dim + action_dim, 1, hidden)

    def forward(self, z: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(Q1, Q2), each (B,)."""
        if z.shape[:-1] != action.shape[:-1]:
            raise ValueError(f"action: batch shape {tuple(action.shape[:-1])} differs from z's {tuple(z.shape[:-1])}")
        x = torch.cat([z, action], dim=-1)
        return self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)
