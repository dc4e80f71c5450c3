"""Tolerances for holding one float32 update to another, derived from the arithmetic, not from one CPU.

Two correct implementations of the same update (our agent and a transcription of a reference
agent, or one update on two instruction sets or thread counts) differ only by rounding: oneDNN
and MKL pick AVX2 or AVX-512 kernels, and the thread count changes the order of the sums. The
checks in ``tests/test_agent.py`` use the bounds below, each stated in terms of float32's
epsilon (2^-23) and the sizes of the quantities compared.

**Losses.** A loss computed through a network of ``depth`` weighted layers whose widest dot
product sums ``fan_in`` terms carries a relative rounding error of about
``depth * sqrt(fan_in) * eps`` (each dot product's error grows as the square root of its
length for rounding errors of random sign, and the layers add theirs): :func:`loss_rtol`. It is
applied to the *size* of the loss's terms (for a mean of squares the loss itself; for the actor's
``alpha log pi - min Q`` the mean absolute values of both terms, since the loss may be near zero).
After the first update the two sides' weights differ too, but only as described next, on entries
whose gradient is zero to rounding, so their first-order effect on the losses is nil.

**Weights.** Adam moves a weight by ``lr * m_hat / (sqrt(v_hat) + eps)``, and by Cauchy-Schwarz
``|m_hat| / sqrt(v_hat) <= sqrt(sum_i w_i^2 / u_i)`` for the bias-corrected weights ``w_i``, ``u_i``
of the first and second moments (:func:`adam_step_bound`: 1 at the first step, 1.0068 at the
fourth for betas (0.9, 0.999)), whatever the gradients. Where a gradient entry is zero to
rounding its sign is the rounding's, and two correct implementations may step that entry in
opposite directions: after ``steps`` Adam steps they can differ by up to :func:`adam_drift`
``= 2 lr sum_t bound_t``. No rounding can move an entry further: that is the per-entry bound. It
cannot tell a wrong update, since Adam's steps are bounded whatever the gradient; the per-tensor
mean can. Rounding reverses the step only of the entries whose gradient lies within its own
rounding error of zero: a share of the entries of the order of a gradient's relative rounding
error, at most :func:`reduction_rtol` of the longest sum the backward pass accumulates (a
first-layer weight gradient sums over every row and output position). A wrong or missing term
changes the gradient, and so the step, of most entries. The mean absolute difference of a
tensor may be that share of the drift, plus the rounding of the weights themselves
(``4 eps |w|`` per step: the moments, the step and a Polyak average each round once). A dropped
loss term, a wrong constant or a shared optimiser state exceeds some loss's or weight's
tolerance by a factor of 100 to 10^4 (``tests/test_agent.py`` breaks updates on purpose
and checks that).

**Long sums.** Where a comparison rests on one long reduction (a weight gradient over a batch of
feature maps), its relative error is bounded by :func:`reduction_rtol`, the worst case ``n eps``:
blocked accumulations reach a sizeable part of it, as measured in
``tests/test_encoder.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import torch
from torch import nn

EPS32 = float(torch.finfo(torch.float32).eps)
#: Rounding operations on a weight per Adam step (first and second moments, the step, a Polyak average).
ROUNDINGS_PER_STEP = 4


def fan_ins(*modules: nn.Module) -> list[int]:
    """The length of the dot products of every Linear and Conv2d layer in ``modules`` (in order)."""
    return [
        m.weight[0].numel() for module in modules for m in module.modules() if isinstance(m, (nn.Linear, nn.Conv2d))
    ]


def loss_rtol(*path: nn.Module) -> float:
    """Relative rounding of a loss computed along ``path`` (the modules one forward pass runs through in
    sequence, e.g. an encoder, an actor and a critic): layers x sqrt(widest fan-in) x eps, the
    probabilistic estimate of rounding errors of random sign (Higham and Mary, 2019)."""
    sizes = fan_ins(*path)
    return len(sizes) * math.sqrt(max(sizes)) * EPS32


def reduction_rtol(terms: int) -> float:
    """The worst-case relative error of a float32 sum of ``terms`` terms of one sign, ``n eps`` (Higham's
    gamma_n to first order), capped at 1. Kernels that accumulate long reductions in blocks come near it: a
    conv weight gradient over 20 172 positions was 4e-4 off its float64 value with one AVX2 kernel, where
    the random-walk estimate ``sqrt(n) eps`` gives 1.7e-5 (tests/test_encoder.py)."""
    return min(1.0, terms * EPS32)


def adam_step_bound(t: int, beta1: float = 0.9, beta2: float = 0.999) -> float:
    """The largest ``|m_hat_t| / sqrt(v_hat_t)`` over all gradient sequences, at step ``t`` (from 1)."""
    w = [(1 - beta1) * beta1 ** (t - i) / (1 - beta1**t) for i in range(1, t + 1)]
    u = [(1 - beta2) * beta2 ** (t - i) / (1 - beta2**t) for i in range(1, t + 1)]
    return math.sqrt(sum(a * a / b for a, b in zip(w, u)))


def adam_drift(lr: float, steps: int, beta1: float = 0.9, beta2: float = 0.999) -> float:
    """How far apart ``steps`` Adam steps can take one weight when the gradient's sign is rounding's."""
    return 2 * lr * sum(adam_step_bound(t, beta1, beta2) for t in range(1, steps + 1))


@dataclass
class Check:
    """One comparison: what, the measured difference, the tolerance."""

    what: str
    measured: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return self.measured <= self.tolerance

    @property
    def ratio(self) -> float:
        return self.measured / self.tolerance


def check_loss(
    what: str, ours: torch.Tensor, reference: torch.Tensor, scale: torch.Tensor | float, rtol: float
) -> Check:
    """|ours - reference| against ``rtol`` x the size of the loss's terms (``scale``)."""
    return Check(what, float((ours - reference).abs()), rtol * float(abs(scale)))


def check_weights(
    pairs: Iterable[tuple[str, torch.Tensor, torch.Tensor]], lr: float, steps: int, share: float
) -> list[Check]:
    """Per tensor: the largest entry difference against the drift bound (plus the weights' rounding),
    and the mean difference against ``share`` of the drift (plus the weights' mean rounding)."""
    drift = adam_drift(lr, steps)
    out = []
    for name, a, b in pairs:
        d = (a.detach().double() - b.detach().double()).abs()
        rounding = steps * ROUNDINGS_PER_STEP * EPS32 * b.detach().double().abs()
        over = d - (drift + rounding)
        out.append(
            Check(
                f"{name} (largest entry)",
                float(d.flatten()[over.argmax()]),
                float((drift + rounding).flatten()[over.argmax()]),
            )
        )
        out.append(Check(f"{name} (mean)", float(d.mean()), share * drift + float(rounding.mean())))
    return out
