"""The MLPs of the agent heads, and target copies with soft updates.

Every head (actor, critics, transition, reward, inverse dynamics) is an MLP with
two hidden ReLU layers of 1024 units (200 for the paper's low-capacity runs).
Linear layers start orthogonal with zero bias, as in the SAC-AE / DrQ code the
paper builds on.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch import nn

from .config import CAPACITIES

HIDDEN = CAPACITIES["high"]
HIDDEN_LOW_CAPACITY = CAPACITIES["low"]
_SKIP_INIT: ContextVar[bool] = ContextVar("agents_skip_init", default=False)


@contextmanager
def initialisation_skipped():
    """Within the block :func:`orthogonal_init` does nothing: for networks whose weights are about to be
    loaded from a checkpoint (the QR factorisations of the big layers cost seconds on a CPU)."""
    token = _SKIP_INIT.set(True)
    try:
        yield
    finally:
        _SKIP_INIT.reset(token)


def orthogonal_init(module: nn.Module) -> None:
    """Orthogonal weights and zero biases for linear and convolutional layers (use with ``Module.apply``)."""
    if isinstance(module, (nn.Linear, nn.Conv2d)) and not _SKIP_INIT.get():
        gain = nn.init.calculate_gain("relu") if isinstance(module, nn.Conv2d) else 1.0
        nn.init.orthogonal_(module.weight, gain)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


def delta_orthogonal_init(module: nn.Module) -> None:
    """SAC-AE's and DBC's convolution init (deep_bisim4control sac_ae.py, ``weight_init``): every kernel tap
    zero but the centre one, whose (out, in) matrix is orthogonal with ReLU gain; zero bias."""
    if isinstance(module, nn.Conv2d) and not _SKIP_INIT.get():
        with torch.no_grad():
            module.weight.zero_()
            module.bias.zero_()
            mid = module.weight.shape[2] // 2
            nn.init.orthogonal_(module.weight[:, :, mid, mid], nn.init.calculate_gain("relu"))


def mlp(inputs: int, outputs: int, hidden: int = HIDDEN, layers: int = 2) -> nn.Sequential:
    """``layers`` hidden ReLU layers of width ``hidden``, then a linear output layer."""
    if min(inputs, outputs, hidden, layers) < 1:
        raise ValueError(
            f"mlp: sizes must be positive, got inputs={inputs} outputs={outputs} hidden={hidden} layers={layers}"
        )
    sizes = [inputs] + [hidden] * layers
    parts: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        parts += [nn.Linear(a, b), nn.ReLU()]
    net = nn.Sequential(*parts, nn.Linear(sizes[-1], outputs))
    net.apply(orthogonal_init)
    return net


def make_target(module: nn.Module) -> nn.Module:
    """A frozen copy of ``module`` to be tracked with :func:`soft_update`."""
    target = copy.deepcopy(module)
    for p in target.parameters():
        p.requires_grad_(False)
    return target


@torch.no_grad()
def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """``target <- tau * source + (1 - tau) * target``, parameter by parameter (buffers copied)."""
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"tau: {tau} is not in [0, 1]")
    # one multi-tensor kernel per device and dtype, not one launch per parameter
    torch._foreach_lerp_(list(target.parameters()), list(source.parameters()), tau)  # pylint: disable=protected-access
    for t, s in zip(target.buffers(), source.buffers()):
        t.copy_(s)
