"""Couplings of Gaussian (and tanh-Gaussian) policies and transitions by their noise.

Both laws are pushed forward from standard normal noise by maps that are
increasing in each noise coordinate (``mu + sigma * xi``, then optionally
``scale * tanh``). Hence:

* **entangled**: the two draws share the noise. Per coordinate this is the
  quantile coupling, and with diagonal standard deviations it is the Rosenblatt
  chain rule of the paper's Def. 4.2 (each coordinate's conditional law does
  not depend on the others), i.e. the entangled coupling of ``docs/couplings.md``.
* **independent**: each draw gets its own noise (the product coupling).

Functions take a ``numpy.random.Generator`` and return arrays batched like the
states they are given.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .model import GaussianMDP

COUPLINGS = ("entangled", "independent")


def _check(coupling: str) -> None:
    if coupling not in COUPLINGS:
        raise InputError(f"coupling: unknown coupling '{coupling}' (choose from {', '.join(COUPLINGS)})")


def paired_noise(
    rng: np.random.Generator, shape: tuple[int, ...], coupling: str = "entangled"
) -> tuple[np.ndarray, np.ndarray]:
    """Standard normal noise for the two members of a pair: the same array twice
    (entangled) or two independent arrays."""
    _check(coupling)
    first = rng.standard_normal(shape)
    return (first, first) if coupling == "entangled" else (first, rng.standard_normal(shape))


def coupled_actions(
    model: GaussianMDP, z: np.ndarray, z2: np.ndarray, rng: np.random.Generator, coupling: str = "entangled"
) -> tuple[np.ndarray, np.ndarray]:
    """A draw ``(a, a2)`` of a coupling of pi(. | z) and pi(. | z2), row by row."""
    xi, xi2 = paired_noise(rng, (z.shape[0], model.action_dim), coupling)
    return model.act(z, xi), model.act(z2, xi2)


def coupled_next_states(
    model: GaussianMDP,
    z: np.ndarray,
    a: np.ndarray,
    z2: np.ndarray,
    a2: np.ndarray,
    rng: np.random.Generator,
    coupling: str = "entangled",
) -> tuple[np.ndarray, np.ndarray]:
    """A draw ``(z+, z2+)`` of a coupling of P(. | z, a) and P(. | z2, a2), row by row."""
    eta, eta2 = paired_noise(rng, (z.shape[0], model.state_dim), coupling)
    return model.step(z, a, eta), model.step(z2, a2, eta2)


def coupled_step(
    model: GaussianMDP, z: np.ndarray, z2: np.ndarray, rng: np.random.Generator, coupling: str = "entangled"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One step of two coupled rollouts: ``(a, a2, z+, z2+)``; the same coupling
    is used for the actions and for the transitions (paper Alg. 1 when entangled)."""
    a, a2 = coupled_actions(model, z, z2, rng, coupling)
    zp, z2p = coupled_next_states(model, z, a, z2, a2, rng, coupling)
    return a, a2, zp, z2p
