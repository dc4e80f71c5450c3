"""The learned bisimulation losses (``docs/losses.md``, paper Alg. 1) as plain torch functions.

All losses share one shape. A batch ``z`` (B x D) is paired with a permutation
of itself, ``z' = z[perm]``; for every pair a *target* is drawn and the loss is
``mean (d(z, z') - target)^2`` with the target under stop-gradient. The losses
differ only in how the target is sampled:

* **entangled** (paper Alg. 1): one noise draw xi for both actions and one draw
  eta for both next latents, ``target = G(z, a, z', a') + c d_target(z+, z'+)``.
  On identical states every sample has a = a', z+ = z'+ and so target = 0.
* **independent** (PSM / MICo style): the same target with separate noise
  for z and z'. Its expectation is the sampled operator (psm-sampled, mico),
  whose fixed point has d(s, s) > 0 under a stochastic policy.
* **DBC**: independent actions, ``target = |r(z, a) - r(z', a')| + c W2``, the
  W2 term between the two predicted next-latent laws (closed form for diagonal
  Gaussians, or any callable, e.g. exact W2 on a finite MDP).

The models enter as callables, so one implementation serves deep agents and
finite MDPs (see :mod:`bisimkit.losses.finite`):

* ``policy(z, xi) -> a``: a reparametrised sampler with attributes
  ``noise_dim`` and ``noise_law`` (``"normal"`` or ``"uniform"``); wrap a plain
  function with :class:`Reparam` or build one with :func:`gaussian_policy`.
* ``transition(z, a, eta) -> z+``: likewise (:func:`gaussian_transition`).
* ``ground(z, a, z', a') -> (B,)``: :func:`reward_ground`, :func:`policy_ground`.
* ``distance(z, z') -> (B,)``: a head from :mod:`bisimkit.losses.heads`.

Multi-sample targets (``samples=K``) average K independent draws of the
target (each draw shares its noise between z and z' in the entangled loss).
Every tensor argument is checked up front: a wrong shape or a non-finite entry
raises ``ValueError`` naming the tensor. Everything runs on the device and in
the dtype of ``z``.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Callable, Protocol

import torch

from ..gaussian.couplings import COUPLINGS as GAUSSIAN_COUPLINGS

Tensor = torch.Tensor

#: Noise laws a reparametrised sampler may ask for.
NOISE_LAWS = ("normal", "uniform")
#: How two reparametrised samples share their noise (the couplings of :mod:`bisimkit.gaussian.couplings`).
COUPLINGS = GAUSSIAN_COUPLINGS

Ground = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
Distance = Callable[[Tensor, Tensor], Tensor]
NextW2 = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]


class Sampler(Protocol):
    """A reparametrised sampler: called with its inputs and a noise tensor of
    shape (rows, noise_dim) drawn from ``noise_law``."""

    noise_dim: int
    noise_law: str

    def __call__(self, *inputs: Tensor) -> Tensor: ...


@dataclass(frozen=True)
class Reparam:
    """A plain function turned into a :class:`Sampler`: ``fn(*inputs, noise)``."""

    fn: Callable[..., Tensor]
    noise_dim: int
    noise_law: str = "normal"

    def __post_init__(self) -> None:
        if isinstance(self.noise_dim, bool) or not isinstance(self.noise_dim, int) or self.noise_dim < 1:
            raise ValueError(f"noise_dim: expected a positive integer, got {self.noise_dim!r}")
        if self.noise_law not in NOISE_LAWS:
            raise ValueError(f"noise_law: expected one of {', '.join(NOISE_LAWS)}, got {self.noise_law!r}")

    def __call__(self, *inputs: Tensor) -> Tensor:
        return self.fn(*inputs)


# ----------------------------------------------------------------- checking
def check_batch(name: str, x: Tensor, rows: int | None = None, ndim: int | None = 2) -> Tensor:
    """Check that ``x`` is a floating tensor with ``ndim`` dims (and ``rows`` rows).

    Shape problems raise ``ValueError`` naming ``name``; finiteness is checked
    separately by :func:`check_finite` (one device synchronisation for all).
    """
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name}: expected a torch tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise ValueError(f"{name}: expected a floating-point tensor, got dtype {x.dtype}")
    if ndim is not None and x.dim() != ndim:
        want = {1: "(B,)", 2: "(B, D)", 3: "(K, B, D)"}.get(ndim, f"{ndim} dims")
        raise ValueError(f"{name}: expected shape {want}, got {tuple(x.shape)}")
    if rows is not None and (x.dim() == 0 or x.shape[0] != rows):
        raise ValueError(f"{name}: expected {rows} rows (the batch size), got shape {tuple(x.shape)}")
    return x


class DeferredChecks:
    """Finiteness checks without a device synchronisation per loss call.

    Inside ``with checks.collecting():`` every :func:`check_finite` records, per
    tensor name, a running on-device flag instead of reading it back (each read
    stalls a GPU until its queue drains). :meth:`flush` reads all flags at once
    and raises the same ``ValueError`` naming the first tensor that was ever
    non-finite since the last flush. A training loop on a GPU collects during
    its updates and flushes when it logs; on a CPU immediate checks cost nothing.

    The flags are persistent tensors owned by the collector, ANDed in place and
    reset in place (``fill_``), never replaced: an update captured in a CUDA graph
    runs its Python (and so :meth:`record`) once, at capture, and each replay
    re-runs the recorded kernels, which write the same flag tensors at the same
    addresses. In-place updates make every replay since the last flush count; a
    new tensor per record, or a new dict per flush, would leave the graph writing
    tensors the collector does not read again. Every name must be recorded once before
    capture (the warm-up run that CUDA graph capture needs anyway does it): a flag
    first made inside the graph would be overwritten, not ANDed, on each replay.
    """

    def __init__(self) -> None:
        self.flags: dict[str, Tensor] = {}

    @contextmanager
    def collecting(self):
        """Route the :func:`check_finite` calls of the block to this collector."""
        token = _DEFERRED.set(self)
        try:
            yield self
        finally:
            _DEFERRED.reset(token)

    def record(self, name: str, ok: Tensor) -> None:
        """AND ``ok`` into the running flag of ``name`` in place (on the device, no synchronisation); the
        first record of a name stores a copy the collector owns."""
        flag = self.flags.get(name)
        if flag is None:
            if ok.is_cuda and torch.cuda.is_current_stream_capturing():  # the clone would rerun on each replay
                raise RuntimeError(
                    f"{name}: first deferred check during CUDA graph capture; record every name "
                    "once before capturing (the usual warm-up run does)"
                )
            self.flags[name] = ok.clone()
        else:
            flag.logical_and_(ok)

    def flush(self) -> None:
        """Read every flag (one synchronisation), reset them all to true in place, then raise ``ValueError``
        naming the first tensor that was non-finite since the last flush."""
        if not self.flags:
            return
        names = list(self.flags)
        values = torch.stack([self.flags[n] for n in names]).tolist()
        for flag in self.flags.values():
            flag.fill_(True)
        for name, ok in zip(names, values):
            if not ok:
                raise ValueError(f"{name}: not finite (found by a deferred check since the last flush)")


_DEFERRED: ContextVar["DeferredChecks | None"] = ContextVar("bisimkit_deferred_checks", default=None)


def check_finite(tensors: dict[str, Tensor]) -> None:
    """Raise ``ValueError`` naming the first tensor with a NaN or infinite entry
    (inside :meth:`DeferredChecks.collecting`, record the check for a later flush instead)."""
    items = [(k, v) for k, v in tensors.items() if v is not None and v.numel() > 0]
    if not items:
        return
    sink = _DEFERRED.get()
    if sink is not None:
        for name, value in items:
            sink.record(name, torch.isfinite(value).all())
        return
    flags = torch.stack([torch.isfinite(v).all() for _, v in items])
    if bool(flags.all()):
        return
    for (name, value), ok in zip(items, flags.tolist()):
        if not ok:
            bad = (~torch.isfinite(value)).nonzero()[0].tolist()
            raise ValueError(f"{name}: not finite at index {tuple(bad)} ({value[tuple(bad)].item()})")


def _check_output(name: str, x: Tensor, rows: int) -> Tensor:
    """A model output must be a tensor with ``rows`` rows."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name}: expected a torch tensor, got {type(x).__name__}")
    if x.dim() == 0 or x.shape[0] != rows:
        raise ValueError(f"{name}: expected {rows} rows (the batch size), got shape {tuple(x.shape)}")
    return x


def _scalar_rows(name: str, x: Tensor, rows: int) -> Tensor:
    """A per-row scalar: shape (B,) or (B, 1), returned as (B,)."""
    _check_output(name, x, rows)
    if x.dim() == 2 and x.shape[1] == 1:
        x = x[:, 0]
    if x.dim() != 1:
        raise ValueError(f"{name}: expected shape ({rows},) or ({rows}, 1), got {tuple(x.shape)}")
    return x


def _noise_spec(name: str, sampler) -> tuple[int, str]:
    dim = getattr(sampler, "noise_dim", None)
    law = getattr(sampler, "noise_law", "normal")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(
            f"{name}: needs an integer attribute noise_dim >= 1 (wrap a function with "
            f"Reparam(fn, noise_dim, noise_law)), got {dim!r}"
        )
    if law not in NOISE_LAWS:
        raise ValueError(f"{name}: noise_law must be one of {', '.join(NOISE_LAWS)}, got {law!r}")
    return dim, law


def _check_discount(discount: float) -> float:
    try:
        c = float(discount)
    except (TypeError, ValueError):
        raise ValueError(f"discount: expected a number, got {discount!r}") from None
    if not 0.0 <= c < 1.0:
        raise ValueError(f"discount: must satisfy 0 <= discount < 1, got {discount}")
    return c


def _check_samples(samples: int) -> int:
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples: expected a positive integer, got {samples!r}")
    return samples


def _check_generator(generator: torch.Generator | None, like: Tensor) -> None:
    if generator is not None and generator.device.type != like.device.type:
        raise ValueError(f"generator: is on {generator.device}, but z is on {like.device}")


# -------------------------------------------------------------------- noise
def draw_noise(law: str, shape: tuple[int, ...], like: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """Noise of ``shape`` from ``law`` ("normal", or "uniform" on (0, 1)) on ``like``'s device and dtype."""
    if law == "normal":
        return torch.randn(shape, generator=generator, device=like.device, dtype=like.dtype)
    u = torch.rand(shape, generator=generator, device=like.device, dtype=like.dtype)
    return u.clamp_min(torch.finfo(like.dtype).tiny)  # (0, 1): u = 0 would pick a zero-mass first atom


def _pair_noise(
    name: str,
    law: str,
    dim: int,
    coupling: str,
    samples: int,
    rows: int,
    like: Tensor,
    generator: torch.Generator | None,
    given: Tensor | None,
) -> Tensor:
    """Noise for the stacked batch [z; z'] (K x 2B x dim): shared halves when entangled."""
    if given is None:
        if coupling == "entangled":
            half = draw_noise(law, (samples, rows, dim), like, generator)
            return torch.cat([half, half], dim=1)
        return draw_noise(law, (samples, 2 * rows, dim), like, generator)
    want = (samples, rows, dim) if coupling == "entangled" else (samples, 2, rows, dim)
    check_batch(name, given, ndim=None)
    if tuple(given.shape) != want:
        what = "(K, B, noise_dim)" if coupling == "entangled" else "(K, 2, B, noise_dim): [:, 0] for z, [:, 1] for z'"
        raise ValueError(f"{name}: expected shape {what} = {want}, got {tuple(given.shape)}")
    given = given.to(device=like.device, dtype=like.dtype)
    if coupling == "entangled":
        return torch.cat([given, given], dim=1)
    return given.reshape(samples, 2 * rows, dim)


# ---------------------------------------------------------- ground metrics
def reward_ground(reward: Callable[[Tensor, Tensor], Tensor]) -> Ground:
    """``G(z, a, z', a') = |r(z, a) - r(z', a')|`` from a reward model ``reward(z, a) -> (B,)``."""

    def ground(z: Tensor, a: Tensor, z2: Tensor, a2: Tensor) -> Tensor:
        rows = z.shape[0]
        r1 = _scalar_rows("reward(z, a)", reward(z, a), rows)
        r2 = _scalar_rows("reward(z', a')", reward(z2, a2), rows)
        return (r1 - r2).abs()

    return ground


def state_reward_ground(reward: Callable[[Tensor], Tensor]) -> Ground:
    """``G = |r(z) - r(z')|`` from a state reward model (e.g. the policy-averaged reward; MICo)."""

    def ground(z: Tensor, a: Tensor, z2: Tensor, a2: Tensor) -> Tensor:
        rows = z.shape[0]
        return (_scalar_rows("reward(z)", reward(z), rows) - _scalar_rows("reward(z')", reward(z2), rows)).abs()

    return ground


def policy_ground(mean_action: Callable[[Tensor], Tensor]) -> Ground:
    """``G = ||abar(z) - abar(z')||_1`` from the policy's mean action ``mean_action(z) -> (B, k)``."""

    def ground(z: Tensor, a: Tensor, z2: Tensor, a2: Tensor) -> Tensor:
        rows = z.shape[0]
        m1 = _check_output("mean_action(z)", mean_action(z), rows)
        m2 = _check_output("mean_action(z')", mean_action(z2), rows)
        return (m1 - m2).abs().reshape(rows, -1).sum(dim=1)

    return ground


# ----------------------------------------------------- Gaussian samplers
def gaussian_policy(model: Callable[[Tensor], tuple[Tensor, Tensor]], action_dim: int, squash: bool = False) -> Reparam:
    """The reparametrised policy ``a = mu(z) + sigma(z) * xi`` (``tanh`` of it with ``squash``),
    from ``model(z) -> (mu, sigma)``, each (B, action_dim)."""

    def act(z: Tensor, xi: Tensor) -> Tensor:
        mu, sigma = model(z)
        a = mu + sigma * xi
        return torch.tanh(a) if squash else a

    return Reparam(act, action_dim, "normal")


def gaussian_transition(model: Callable[[Tensor, Tensor], tuple[Tensor, Tensor]], latent_dim: int) -> Reparam:
    """The reparametrised latent transition ``z+ = mu(z, a) + sigma(z, a) * eta`` (coordinate
    independent), from ``model(z, a) -> (mu, sigma)``, each (B, latent_dim)."""

    def step(z: Tensor, a: Tensor, eta: Tensor) -> Tensor:
        mu, sigma = model(z, a)
        return mu + sigma * eta

    return Reparam(step, latent_dim, "normal")


def diagonal_gaussian_w2(mu1: Tensor, sigma1: Tensor, mu2: Tensor, sigma2: Tensor) -> Tensor:
    """W2 (Euclidean cost) between N(mu1, diag sigma1^2) and N(mu2, diag sigma2^2), row by row:
    ``sqrt(||mu1 - mu2||^2 + ||sigma1 - sigma2||^2)``."""
    rows = mu1.shape[0]
    for name, x in (("mu1", mu1), ("sigma1", sigma1), ("mu2", mu2), ("sigma2", sigma2)):
        check_batch(name, x, rows=rows)
        if x.shape != mu1.shape:
            raise ValueError(f"{name}: expected shape {tuple(mu1.shape)} (as mu1), got {tuple(x.shape)}")
    sq = (mu1 - mu2).pow(2).sum(dim=1) + (sigma1 - sigma2).pow(2).sum(dim=1)
    # sqrt has an infinite derivative at 0; the value is exact, the gradient is taken as 0 there.
    return torch.where(sq > 0, sq.clamp_min(torch.finfo(sq.dtype).tiny).sqrt(), torch.zeros_like(sq))


def gaussian_w2(model: Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]) -> NextW2:
    """DBC's next-state term: W2 between the Gaussians ``model(z, a)`` and ``model(z', a')``."""

    def w2(z: Tensor, a: Tensor, z2: Tensor, a2: Tensor) -> Tensor:
        mu1, s1 = model(z, a)
        mu2, s2 = model(z2, a2)
        return diagonal_gaussian_w2(mu1, s1, mu2, s2)

    return w2


# ------------------------------------------------------------------ targets
def _pairing(z: Tensor, perm: Tensor | None, generator: torch.Generator | None) -> Tensor:
    """The permutation pairing z[i] with z[perm[i]] (random when not given, checked when given)."""
    rows = z.shape[0]
    if perm is None:
        return torch.randperm(rows, generator=generator, device=z.device)
    if not isinstance(perm, torch.Tensor) or perm.dtype not in (torch.int64, torch.int32):
        raise ValueError(
            f"perm: expected an integer torch tensor, got {type(perm).__name__}"
            f"{'' if not isinstance(perm, torch.Tensor) else ' of dtype ' + str(perm.dtype)}"
        )
    if tuple(perm.shape) != (rows,):
        raise ValueError(f"perm: expected shape ({rows},) (the batch size), got {tuple(perm.shape)}")
    if not torch.equal(torch.sort(perm).values.cpu(), torch.arange(rows, dtype=perm.dtype)):
        raise ValueError(f"perm: not a permutation of 0..{rows - 1}")
    return perm.to(device=z.device, dtype=torch.int64)


def _start(z: Tensor, z2: Tensor, discount: float, samples: int, generator) -> tuple[int, float, int]:
    check_batch("z", z)
    check_batch("z'", z2, rows=z.shape[0])
    if z2.shape != z.shape:
        raise ValueError(f"z': expected shape {tuple(z.shape)} (as z), got {tuple(z2.shape)}")
    if z.shape[0] == 0:
        raise ValueError("z: the batch is empty")
    _check_generator(generator, z)
    return z.shape[0], _check_discount(discount), _check_samples(samples)


def bisimulation_targets(
    z: Tensor,
    z2: Tensor,
    *,
    policy: Sampler,
    transition: Sampler,
    ground: Ground,
    distance: Distance,
    discount: float,
    coupling: str = "entangled",
    samples: int = 1,
    generator: torch.Generator | None = None,
    action_noise: Tensor | None = None,
    state_noise: Tensor | None = None,
) -> Tensor:
    """Every sampled target ``G(z, a, z', a') + c d(z+, z'+)`` of the pairs (z[i], z'[i]), as K x B.

    ``coupling="entangled"`` shares each noise draw between z and z' (paper Alg. 1);
    ``"independent"`` draws them separately (PSM / MICo). Explicit noise, if given, is
    K x B x dim (entangled) or K x 2 x B x dim (independent: [:, 0] for z, [:, 1] for z').
    Computed without gradient (the target is under stop-gradient).
    """
    rows, c, K = _start(z, z2, discount, samples, generator)
    if coupling not in COUPLINGS:
        raise ValueError(f"coupling: expected one of {', '.join(COUPLINGS)}, got {coupling!r}")
    a_dim, a_law = _noise_spec("policy", policy)
    s_dim, s_law = _noise_spec("transition", transition)
    with torch.no_grad():
        xi = _pair_noise("action_noise", a_law, a_dim, coupling, K, rows, z, generator, action_noise)
        eta = _pair_noise("state_noise", s_law, s_dim, coupling, K, rows, z, generator, state_noise)
        check_finite({"z": z, "z'": z2, "action_noise": xi, "state_noise": eta})
        both = torch.cat([z, z2]).detach()  # one forward pass for z and z' (K draws stacked)
        zz = both.repeat(K, 1)
        a = _check_output("policy(z, noise)", policy(zz, xi.reshape(K * 2 * rows, a_dim)), K * 2 * rows)
        nxt = _check_output(
            "transition(z, a, noise)", transition(zz, a, eta.reshape(K * 2 * rows, s_dim)), K * 2 * rows
        )
        first = torch.arange(K * 2 * rows, device=z.device).reshape(K, 2, rows)
        i, j = first[:, 0].reshape(-1), first[:, 1].reshape(-1)
        g = _scalar_rows("ground(z, a, z', a')", ground(zz[i], a[i], zz[j], a[j]), K * rows)
        d_next = _scalar_rows("distance(z+, z'+)", distance(nxt[i], nxt[j]), K * rows)
        target = (g + c * d_next).reshape(K, rows)
        check_finite({"target G + c d(z+, z'+)": target})
    return target


def dbc_targets(
    z: Tensor,
    z2: Tensor,
    *,
    policy: Sampler,
    reward: Callable[[Tensor, Tensor], Tensor],
    next_w2: NextW2,
    discount: float,
    samples: int = 1,
    generator: torch.Generator | None = None,
    action_noise: Tensor | None = None,
) -> Tensor:
    """Every sampled DBC target ``|r(z, a) - r(z', a')| + c W2(z, a, z', a')`` as K x B,
    with independently drawn actions (``action_noise``: K x 2 x B x dim if given)."""
    rows, c, K = _start(z, z2, discount, samples, generator)
    a_dim, a_law = _noise_spec("policy", policy)
    with torch.no_grad():
        xi = _pair_noise("action_noise", a_law, a_dim, "independent", K, rows, z, generator, action_noise)
        check_finite({"z": z, "z'": z2, "action_noise": xi})
        zz = torch.cat([z, z2]).detach().repeat(K, 1)
        a = _check_output("policy(z, noise)", policy(zz, xi.reshape(K * 2 * rows, a_dim)), K * 2 * rows)
        first = torch.arange(K * 2 * rows, device=z.device).reshape(K, 2, rows)
        i, j = first[:, 0].reshape(-1), first[:, 1].reshape(-1)
        g = reward_ground(reward)(zz[i], a[i], zz[j], a[j])
        w2 = _scalar_rows("next_w2(z, a, z', a')", next_w2(zz[i], a[i], zz[j], a[j]), K * rows)
        target = (g + c * w2).reshape(K, rows)
        check_finite({"target |r - r'| + c W2": target})
    return target


# -------------------------------------------------------------------- losses
def regression_loss(prediction: Tensor, target: Tensor) -> Tensor:
    """``mean (prediction - target)^2`` with the target detached (both (B,))."""
    check_batch("prediction d(z, z')", prediction, ndim=1)
    check_batch("target", target, rows=prediction.shape[0], ndim=1)
    check_finite({"prediction d(z, z')": prediction})
    return (prediction - target.detach()).pow(2).mean()


def _predict(distance: Distance, z: Tensor, z2: Tensor) -> Tensor:
    return _scalar_rows("distance(z, z')", distance(z, z2), z.shape[0])


def sampled_loss(
    z: Tensor,
    *,
    distance: Distance,
    policy: Sampler,
    transition: Sampler,
    ground: Ground,
    discount: float,
    coupling: str = "entangled",
    perm: Tensor | None = None,
    samples: int = 1,
    target_distance: Distance | None = None,
    generator: torch.Generator | None = None,
    action_noise: Tensor | None = None,
    state_noise: Tensor | None = None,
) -> Tensor:
    """The bisimulation loss ``mean (d(z, z') - mean_K target)^2`` over the pairs (z, z[perm]),
    with targets from :func:`bisimulation_targets` (``target_distance`` defaults to ``distance``)."""
    check_batch("z", z)
    _check_generator(generator, z)
    perm = _pairing(z, perm, generator)
    z2 = z[perm]
    target = bisimulation_targets(
        z,
        z2,
        policy=policy,
        transition=transition,
        ground=ground,
        distance=distance if target_distance is None else target_distance,
        discount=discount,
        coupling=coupling,
        samples=samples,
        generator=generator,
        action_noise=action_noise,
        state_noise=state_noise,
    )
    return regression_loss(_predict(distance, z, z2), target.mean(dim=0))


def entangled_loss(
    z: Tensor,
    *,
    distance: Distance,
    policy: Sampler,
    transition: Sampler,
    ground: Ground,
    discount: float,
    perm: Tensor | None = None,
    samples: int = 1,
    target_distance: Distance | None = None,
    generator: torch.Generator | None = None,
    action_noise: Tensor | None = None,
    state_noise: Tensor | None = None,
) -> Tensor:
    """The entangled bisimulation loss of paper Alg. 1 (shared action and next-state noise).

    In expectation its target is the eps-bar operator applied to ``target_distance``;
    ``ground`` is :func:`reward_ground` (eps-R) or :func:`policy_ground` (eps-pi).
    """
    return sampled_loss(
        z,
        distance=distance,
        policy=policy,
        transition=transition,
        ground=ground,
        discount=discount,
        coupling="entangled",
        perm=perm,
        samples=samples,
        target_distance=target_distance,
        generator=generator,
        action_noise=action_noise,
        state_noise=state_noise,
    )


def psm_loss(
    z: Tensor,
    *,
    distance: Distance,
    policy: Sampler,
    transition: Sampler,
    mean_action: Callable[[Tensor], Tensor],
    discount: float,
    perm: Tensor | None = None,
    samples: int = 1,
    target_distance: Distance | None = None,
    generator: torch.Generator | None = None,
    action_noise: Tensor | None = None,
    state_noise: Tensor | None = None,
) -> Tensor:
    """The PSM / PSE-style loss: ``||abar(z) - abar(z')||_1 + c d(z+, z'+)`` with independently
    sampled actions and next states; in expectation the ``psm-sampled`` operator."""
    return sampled_loss(
        z,
        distance=distance,
        policy=policy,
        transition=transition,
        ground=policy_ground(mean_action),
        discount=discount,
        coupling="independent",
        perm=perm,
        samples=samples,
        target_distance=target_distance,
        generator=generator,
        action_noise=action_noise,
        state_noise=state_noise,
    )


def mico_loss(
    z: Tensor,
    *,
    distance: Distance,
    policy: Sampler,
    transition: Sampler,
    reward: Callable[[Tensor], Tensor],
    discount: float,
    perm: Tensor | None = None,
    samples: int = 1,
    target_distance: Distance | None = None,
    generator: torch.Generator | None = None,
    action_noise: Tensor | None = None,
    state_noise: Tensor | None = None,
) -> Tensor:
    """The MICo loss: ``|r(z) - r(z')| + c d(z+, z'+)`` with independent sampling; with ``reward``
    the policy-averaged reward r_pi(z) it is in expectation the ``mico`` operator."""
    return sampled_loss(
        z,
        distance=distance,
        policy=policy,
        transition=transition,
        ground=state_reward_ground(reward),
        discount=discount,
        coupling="independent",
        perm=perm,
        samples=samples,
        target_distance=target_distance,
        generator=generator,
        action_noise=action_noise,
        state_noise=state_noise,
    )


def dbc_loss(
    z: Tensor,
    *,
    distance: Distance,
    policy: Sampler,
    reward: Callable[[Tensor, Tensor], Tensor],
    next_w2: NextW2,
    discount: float,
    perm: Tensor | None = None,
    samples: int = 1,
    generator: torch.Generator | None = None,
    action_noise: Tensor | None = None,
) -> Tensor:
    """The DBC loss: ``mean (d(z, z') - |r(z,a) - r(z',a')| - c W2)^2`` with independent actions.

    Deep form (Zhang et al. 2020, paper Eq. 5): ``distance`` = :class:`LatentL1Distance`,
    ``next_w2`` = :func:`gaussian_w2` of the latent transition model (W2 with Euclidean cost
    between the predicted diagonal Gaussians). On a finite MDP with ``next_w2`` the exact
    W2(P(s,a), P(t,a'); d) under a distance table, its expected target is the
    ``dbc-sampled`` operator. (DBC's reference code compares per coordinate with smooth-L1;
    this is the summed form the paper writes.)
    """
    check_batch("z", z)
    _check_generator(generator, z)
    perm = _pairing(z, perm, generator)
    z2 = z[perm]
    target = dbc_targets(
        z,
        z2,
        policy=policy,
        reward=reward,
        next_w2=next_w2,
        discount=discount,
        samples=samples,
        generator=generator,
        action_noise=action_noise,
    )
    return regression_loss(_predict(distance, z, z2), target.mean(dim=0))


def dbc_coordinate_loss(
    z: Tensor,
    *,
    reward: Tensor,
    next_mean: Tensor,
    next_sigma: Tensor,
    discount: float,
    perm: Tensor | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """DBC's loss as its code computes it (facebookresearch/deep_bisim4control, agent/bisim_agent.py,
    ``update_encoder``): coordinate by coordinate, with the batch's own rewards.

    For the pair (z, z' = z[perm]) and each latent coordinate i, ``smoothL1(z_i, z'_i)`` is regressed on
    ``smoothL1(r, r') + c sqrt((mu_i - mu'_i)^2 + (sigma_i - sigma'_i)^2)``, the coordinate's term of W2
    between the predicted next-latent Gaussians N(mu, diag sigma^2) of z and z'; the loss is the mean over
    rows and coordinates. ``reward`` (B,) holds the rewards observed with z; ``next_mean`` and
    ``next_sigma`` (B, D) the transition's prediction for z and the batch action, taken as constants (DBC
    computes them under ``no_grad``). The gradient flows into both z and z' (DBC does not detach
    ``h[perm]``); the target carries none. :func:`dbc_loss` is the summed form DBC's paper writes.
    """
    check_batch("z", z)
    rows = z.shape[0]
    c = _check_discount(discount)
    _check_generator(generator, z)
    r = _scalar_rows("reward", reward, rows)
    for name, x in (("next_mean", next_mean), ("next_sigma", next_sigma)):
        check_batch(name, x, rows=rows)
        if x.shape != z.shape:
            raise ValueError(f"{name}: expected shape {tuple(z.shape)} (as z), got {tuple(x.shape)}")
    check_finite({"z": z, "reward": r, "next_mean": next_mean, "next_sigma": next_sigma})
    perm = _pairing(z, perm, generator)
    smooth_l1 = torch.nn.functional.smooth_l1_loss
    with torch.no_grad():
        w2 = ((next_mean - next_mean[perm]).pow(2) + (next_sigma - next_sigma[perm]).pow(2)).sqrt()
        target = smooth_l1(r, r[perm], reduction="none")[:, None] + c * w2
    return (smooth_l1(z, z[perm], reduction="none") - target).pow(2).mean()
