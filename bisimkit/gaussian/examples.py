"""Bundled Gaussian MDPs used by the figures, the verify job, the tests and the README."""

from __future__ import annotations

from typing import Any

from .model import GaussianMDP, LinearGaussianMDP, PendulumMDP

_DYNAMICS_2D: dict[str, Any] = dict(
    A=[[0.9, 0.2], [-0.1, 0.8]],
    B=[[0.0], [1.0]],
    K=[[-0.3, -0.6]],
    policy_std=[0.4],
    transition_std=[0.1, 0.2],
    discount=0.9,
)


def gaussian_example(name: str) -> GaussianMDP:
    """A bundled model by name (see :data:`GAUSSIAN_EXAMPLES`)."""
    if name == "linear-1d":
        return LinearGaussianMDP(
            A=0.8,
            B=1.0,
            K=-0.3,
            policy_std=0.3,
            transition_std=0.3,
            reward={"state": 1.0, "action": 0.5},
            discount=0.9,
            name=name,
        )
    if name == "quadratic-1d":
        return LinearGaussianMDP(
            A=0.8,
            B=1.0,
            K=-0.3,
            policy_std=0.3,
            transition_std=0.3,
            reward={"state": 1.0, "action": 0.5, "state_quadratic": -0.5},
            discount=0.9,
            name=name,
        )
    if name == "linear-2d":
        return LinearGaussianMDP(**_DYNAMICS_2D, reward={"state": [1.0, 0.5], "action": [0.3]}, name=name)
    if name == "quadratic-2d":
        return LinearGaussianMDP(
            **_DYNAMICS_2D,
            reward={
                "state": [1.0, 0.5],
                "action": [0.3],
                "state_quadratic": [[-0.5, 0.0], [0.0, -0.25]],
                "action_quadratic": [[-0.2]],
            },
            name=name,
        )
    if name == "squashed-2d":
        return LinearGaussianMDP(
            **_DYNAMICS_2D, reward={"state": [1.0, 0.5], "action": [0.3]}, squash=True, action_scale=1.0, name=name
        )
    if name == "contracting-2d":  # strongly contracting: little mass leaves a small box (grid studies)
        return LinearGaussianMDP(
            A=[[0.6, 0.1], [0.0, 0.5]],
            B=[[0.0], [1.0]],
            K=[[-0.1, -0.2]],
            policy_std=[0.3],
            transition_std=[0.3, 0.3],
            reward={"state": [1.0, 0.5], "action": [0.5]},
            discount=0.8,
            name=name,
        )
    if name == "pendulum":
        return PendulumMDP()
    raise KeyError(f"unknown Gaussian example '{name}' (choose from {', '.join(GAUSSIAN_EXAMPLES)})")


GAUSSIAN_EXAMPLES = (
    "linear-1d",
    "quadratic-1d",
    "linear-2d",
    "quadratic-2d",
    "squashed-2d",
    "contracting-2d",
    "pendulum",
)
