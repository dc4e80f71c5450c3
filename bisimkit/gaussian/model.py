"""Gaussian MDPs (``docs/gaussian.md``): continuous states and actions.

A :class:`GaussianMDP` has states z in R^n and actions a in R^k with

    a  = mu_pi(z) + sigma_pi(z) * xi            xi  ~ N(0, I_k)
         (or scale * tanh(...) when the policy is squashed)
    z+ = mu_P(z, a) + sigma_P(z, a) * eta       eta ~ N(0, I_n)

(diagonal standard deviations, so transitions are coordinate independent),
a reward R(z, a) and a discount c. Every method is vectorised over a batch:
``z`` is (B, n), ``a`` is (B, k).

Two concrete models:

* :class:`LinearGaussianMDP`: ``mu_pi = K z``, ``mu_P = A z + B a``, constant
  standard deviations, reward ``r_z.z + r_a.a + z'Qz + a'Sa + z'Na``. It has a
  JSON form (:func:`linear_gaussian_from_dict`, :func:`load_gaussian`) that the
  command line reads.
* :class:`PendulumMDP`: a damped pendulum with a tanh-squashed torque policy
  and heteroscedastic (velocity-dependent) transition noise; bounded reward.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..fields import check_finite, check_keys, to_float_array, validate_discount
from ..files import atomic_write_json
from ..ground import BUILTIN_GROUNDS

#: The ground metrics on state-action pairs (docs/operators.md, paper Lemma 4.4): the finite MDPs' built-in ones.
GROUNDS = BUILTIN_GROUNDS

#: Gauss-Hermite nodes used for the mean of a tanh-squashed action.
MEAN_ACTION_NODES = 64


class GaussianMDP:
    """Base class: subclasses define the five model functions below.

    Attributes ``state_dim`` (n), ``action_dim`` (k), ``discount`` (c),
    ``squash`` (tanh-squashed policy), ``action_scale`` (the squashed action is
    ``action_scale * tanh(pre-action)``) and ``name``.
    """

    state_dim: int
    action_dim: int
    discount: float
    squash: bool = False
    action_scale: float = 1.0
    name: str | None = None

    # --------------------------------------------------- model functions
    def policy_mean(self, z: np.ndarray) -> np.ndarray:
        """Mean of the (pre-squash) action, (B, k)."""
        raise NotImplementedError

    def policy_std(self, z: np.ndarray) -> np.ndarray:
        """Standard deviation of the (pre-squash) action, (B, k)."""
        raise NotImplementedError

    def transition_mean(self, z: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Mean of the next state, (B, n)."""
        raise NotImplementedError

    def transition_std(self, z: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Per-coordinate standard deviation of the next state, (B, n)."""
        raise NotImplementedError

    def reward(self, z: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Reward R(z, a), (B,)."""
        raise NotImplementedError

    def reward_bound(self) -> float:
        """Upper bound on |R(z, a) - R(z', a')| over all arguments (inf if unbounded)."""
        return math.inf

    # ------------------------------------------------------------ derived
    @property
    def label(self) -> str:
        """The model's name, or a description of its size."""
        return self.name or f"{type(self).__name__}[n={self.state_dim}, k={self.action_dim}]"

    def states(self, z: Any, field_name: str = "z") -> np.ndarray:
        """``z`` as a validated (B, n) float array."""
        z = np.asarray(z, dtype=np.float64)
        if z.ndim == 1:
            z = z[None, :]
        if z.ndim != 2 or z.shape[1] != self.state_dim:
            raise InputError(f"{field_name}: expected states of dimension {self.state_dim}, got shape {z.shape}")
        return z

    def act(self, z: np.ndarray, xi: np.ndarray) -> np.ndarray:
        """The action drawn with standard normal noise ``xi`` (B, k): reparametrised sampling."""
        pre = self.policy_mean(z) + self.policy_std(z) * xi
        return self.action_scale * np.tanh(pre) if self.squash else pre

    def step(self, z: np.ndarray, a: np.ndarray, eta: np.ndarray) -> np.ndarray:
        """The next state drawn with standard normal noise ``eta`` (B, n)."""
        return self.transition_mean(z, a) + self.transition_std(z, a) * eta

    def mean_action(self, z: np.ndarray) -> np.ndarray:
        """``abar(z) = E[a | z]`` (B, k): the policy mean, or for a squashed policy
        ``scale * E tanh(mu + sigma Z)`` by 64-node Gauss-Hermite quadrature
        (tanh is analytic, so this is accurate to about machine precision for
        sigma up to a few units)."""
        mu, sd = self.policy_mean(z), self.policy_std(z)
        if not self.squash:
            return mu
        x, w = gauss_hermite(MEAN_ACTION_NODES)
        return self.action_scale * np.tensordot(np.tanh(mu[..., None] + sd[..., None] * x), w, axes=(-1, 0))

    def ground(self, name: str, z: np.ndarray, a: np.ndarray, z2: np.ndarray, a2: np.ndarray) -> np.ndarray:
        """``G(z, a, z2, a2)`` (B,): ``reward`` = |R(z,a) - R(z2,a2)|,
        ``policy`` = ||abar(z) - abar(z2)||_1."""
        if name == "reward":
            return np.abs(self.reward(z, a) - self.reward(z2, a2))
        if name == "policy":
            return np.abs(self.mean_action(z) - self.mean_action(z2)).sum(axis=-1)
        raise InputError(
            f"unknown ground metric '{name}' for a Gaussian MDP (use {' or '.join(GROUNDS)})", param="ground"
        )

    def ground_bound(self, name: str) -> float:
        """Upper bound on the ground metric over all arguments (inf if none is known)."""
        if name == "reward":
            return self.reward_bound()
        if name == "policy" and self.squash:
            return 2.0 * self.action_scale * self.action_dim
        return math.inf


def gauss_hermite(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of the m-point Gauss-Hermite rule for N(0, 1) (weights sum to 1)."""
    x, w = np.polynomial.hermite_e.hermegauss(m)
    return x, w / w.sum()


# ----------------------------------------------------------- linear-Gaussian
@dataclass(frozen=True, eq=False)
class QuadraticReward:
    """``R(z, a) = state.z + action.a + z'(state_quadratic)z + a'(action_quadratic)a + z'(cross)a``.

    Unset terms are zero. :attr:`H` and :attr:`h` write it as ``x'Hx + h.x``
    in ``x = [z; a]`` with H symmetric.
    """

    state: np.ndarray
    action: np.ndarray
    state_quadratic: np.ndarray
    action_quadratic: np.ndarray
    cross: np.ndarray

    @property
    def is_linear(self) -> bool:
        """True when every quadratic term is zero."""
        return not (np.any(self.state_quadratic) or np.any(self.action_quadratic) or np.any(self.cross))

    @cached_property
    def H(self) -> np.ndarray:
        """Symmetric (n+k) x (n+k) matrix of the quadratic part in x = [z; a]."""
        Q, S, N = self.state_quadratic, self.action_quadratic, self.cross
        top = np.hstack([(Q + Q.T) / 2, N / 2])
        bottom = np.hstack([N.T / 2, (S + S.T) / 2])
        return np.vstack([top, bottom])

    @cached_property
    def h(self) -> np.ndarray:
        """Linear part in x = [z; a]."""
        return np.concatenate([self.state, self.action])

    def __call__(self, z: np.ndarray, a: np.ndarray) -> np.ndarray:
        x = np.concatenate([z, a], axis=-1)
        return x @ self.h + np.einsum("bi,ij,bj->b", x, self.H, x)

    def to_dict(self) -> dict:
        """JSON form, omitting zero terms (``state`` and ``action`` always kept)."""
        out = {"state": self.state.tolist(), "action": self.action.tolist()}
        for key in ("state_quadratic", "action_quadratic", "cross"):
            value = getattr(self, key)
            if np.any(value):
                out[key] = value.tolist()
        return out


class LinearGaussianMDP(GaussianMDP):
    """Linear-Gaussian MDP: ``a = K z + policy_std * xi`` (optionally squashed),
    ``z+ = A z + B a + transition_std * eta``, :class:`QuadraticReward`.

    The closed loop ``M = A + B K`` drives the difference of entangled pairs
    (see :mod:`bisimkit.gaussian.exact`). All inputs are validated; bad input
    raises :class:`InputError` naming the field and index.
    """

    def __init__(
        self,
        A,
        B,
        K,
        policy_std,
        transition_std,
        reward: QuadraticReward | dict | None = None,
        discount: float = 0.9,
        squash: bool = False,
        action_scale: float = 1.0,
        name: str | None = None,
    ) -> None:
        A = _matrix("A", A, None)
        n = A.shape[0]
        if A.shape != (n, n):
            raise InputError(f"A: expected a square matrix (n, n), got shape {A.shape}")
        B = _matrix("B", B, None, rows=n)
        k = B.shape[1]
        self.A, self.B = A, B
        self.K = _matrix("K", K, (k, n))
        self.policy_std_vector = _std("policy_std", policy_std, k)
        self.transition_std_vector = _std("transition_std", transition_std, n)
        if reward is None:
            reward = {}
        self.reward_terms = reward if isinstance(reward, QuadraticReward) else _reward_from_dict(reward, n, k)
        self.discount = validate_discount(discount)
        if not isinstance(squash, bool):
            raise InputError(f"squash: expected true or false, got {json.dumps(squash)[:40]}")
        self.squash = squash
        scale = to_float_array("action_scale", action_scale)
        if scale.shape != () or not np.isfinite(scale) or float(scale) <= 0:
            raise InputError(f"action_scale: expected a positive number, got {action_scale!r}"[:120])
        self.action_scale = float(scale)
        if name is not None and not isinstance(name, str):
            raise InputError(f"name: expected a string, got {type(name).__name__}")
        self.name = name
        self.state_dim, self.action_dim = n, k
        for array in (self.A, self.B, self.K, self.policy_std_vector, self.transition_std_vector):
            array.setflags(write=False)

    def policy_mean(self, z):
        return z @ self.K.T

    def policy_std(self, z):
        return np.broadcast_to(self.policy_std_vector, (z.shape[0], self.action_dim))

    def transition_mean(self, z, a):
        return z @ self.A.T + a @ self.B.T

    def transition_std(self, z, a):
        return np.broadcast_to(self.transition_std_vector, (z.shape[0], self.state_dim))

    def reward(self, z, a):
        return self.reward_terms(z, a)

    @cached_property
    def closed_loop(self) -> np.ndarray:
        """``M = A + B K``: entangled pairs evolve by ``Delta_{t+1} = M Delta_t`` (unsquashed policy)."""
        return self.A + self.B @ self.K

    @cached_property
    def spectral_radius(self) -> float:
        """rho(M), the largest modulus of an eigenvalue of the closed loop."""
        return float(np.max(np.abs(np.linalg.eigvals(self.closed_loop))))

    @cached_property
    def step_covariance(self) -> np.ndarray:
        """Covariance of ``z+`` given z under the (unsquashed) policy:
        ``B diag(policy_std^2) B' + diag(transition_std^2)``."""
        return (self.B * self.policy_std_vector**2) @ self.B.T + np.diag(self.transition_std_vector**2)

    def to_dict(self) -> dict:
        """The JSON description (``kind: linear-gaussian``)."""
        out: dict[str, Any] = {"kind": "linear-gaussian"}
        if self.name is not None:
            out["name"] = self.name
        out.update(
            {
                "A": self.A.tolist(),
                "B": self.B.tolist(),
                "K": self.K.tolist(),
                "policy_std": self.policy_std_vector.tolist(),
                "transition_std": self.transition_std_vector.tolist(),
                "reward": self.reward_terms.to_dict(),
                "discount": self.discount,
            }
        )
        if self.squash:
            out["squash"] = True
            out["action_scale"] = self.action_scale
        return out


# --------------------------------------------------------------- pendulum
class PendulumMDP(GaussianMDP):
    """A damped pendulum, z = (angle, angular velocity), one torque action.

    Policy: ``u = max_torque * tanh(-(gain_angle sin(angle) + gain_velocity velocity) + policy_noise xi)``.
    Transitions (Euler step ``dt``)::

        angle+    = angle + dt velocity                                   + angle_noise eta_1
        velocity+ = velocity + dt (-g sin(angle) - damping velocity + u) + velocity_noise (1 + |velocity|) eta_2

    so the noise is heteroscedastic. Reward ``cos(angle) - 0.1 (u / max_torque)^2``
    is bounded, which gives Monte Carlo estimates a rigorous truncation bound.
    """

    # the physical parameters, set from the constructor's checked values
    dt: float
    gravity: float
    damping: float
    max_torque: float
    gain_angle: float
    gain_velocity: float
    policy_noise: float
    angle_noise: float
    velocity_noise: float

    def __init__(
        self,
        discount: float = 0.9,
        dt: float = 0.1,
        gravity: float = 9.81,
        damping: float = 0.5,
        max_torque: float = 2.0,
        gain_angle: float = 2.0,
        gain_velocity: float = 0.5,
        policy_noise: float = 0.5,
        angle_noise: float = 0.02,
        velocity_noise: float = 0.05,
        name: str | None = "pendulum",
    ) -> None:
        values = dict(
            dt=dt,
            gravity=gravity,
            damping=damping,
            max_torque=max_torque,
            gain_angle=gain_angle,
            gain_velocity=gain_velocity,
            policy_noise=policy_noise,
            angle_noise=angle_noise,
            velocity_noise=velocity_noise,
        )
        for key, value in values.items():
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise InputError(f"{key}: expected a non-negative number, got {value!r}")
        if max_torque <= 0:
            raise InputError(f"max_torque: expected a positive number, got {max_torque!r}")
        self.__dict__.update(values)
        self.discount = validate_discount(discount)
        self.state_dim, self.action_dim = 2, 1
        self.squash, self.action_scale, self.name = True, float(max_torque), name

    def policy_mean(self, z):
        return -(self.gain_angle * np.sin(z[:, :1]) + self.gain_velocity * z[:, 1:2])

    def policy_std(self, z):
        return np.full((z.shape[0], 1), self.policy_noise)

    def transition_mean(self, z, a):
        angle, velocity = z[:, 0], z[:, 1]
        acc = -self.gravity * np.sin(angle) - self.damping * velocity + a[:, 0]
        return np.column_stack([angle + self.dt * velocity, velocity + self.dt * acc])

    def transition_std(self, z, a):
        sd = np.empty((z.shape[0], 2))
        sd[:, 0] = self.angle_noise
        sd[:, 1] = self.velocity_noise * (1.0 + np.abs(z[:, 1]))
        return sd

    def reward(self, z, a):
        return np.cos(z[:, 0]) - 0.1 * (a[:, 0] / self.max_torque) ** 2

    def reward_bound(self) -> float:
        return 2.1  # cos in [-1, 1], the torque penalty in [0, 0.1]


# ---------------------------------------------------------------- validation
def _matrix(field_name: str, value: Any, shape: tuple[int, int] | None, rows: int | None = None) -> np.ndarray:
    X = to_float_array(field_name, value)
    if X.ndim == 0 and (shape in (None, (1, 1))) and rows in (None, 1):
        X = X.reshape(1, 1)  # a number stands for a 1 x 1 matrix
    if X.ndim != 2 or X.size == 0:
        expected = f"shape {shape}" if shape else "a non-empty 2-D array"
        raise InputError(f"{field_name}: expected {expected}, got shape {X.shape}")
    if shape is not None and X.shape != shape:
        raise InputError(f"{field_name}: expected shape {shape}, got {X.shape}")
    if rows is not None and X.shape[0] != rows:
        raise InputError(f"{field_name}: expected {rows} rows (the state dimension), got shape {X.shape}")
    check_finite(field_name, X, ("i", "j"))
    return X


def _vector(field_name: str, value: Any, size: int) -> np.ndarray:
    v = to_float_array(field_name, value)
    if v.ndim == 0 and size == 1:
        v = v.reshape(1)
    if v.shape != (size,):
        raise InputError(f"{field_name}: expected {size} numbers, got shape {v.shape}")
    check_finite(field_name, v, ("i",))
    return v


def _std(field_name: str, value: Any, size: int) -> np.ndarray:
    v = _vector(field_name, value, size)
    bad = np.flatnonzero(v < 0)
    if len(bad):
        raise InputError(f"{field_name}[{bad[0]}] = {v[bad[0]]:g} is negative (standard deviations are >= 0)")
    return v


REWARD_FIELDS = ("state", "action", "state_quadratic", "action_quadratic", "cross")


def _reward_from_dict(data: Any, n: int, k: int) -> QuadraticReward:
    if not isinstance(data, dict):
        raise InputError(
            f"reward: expected an object with fields {', '.join(REWARD_FIELDS)}, got {type(data).__name__}"
        )
    unknown = sorted(set(data) - set(REWARD_FIELDS))
    if unknown:
        raise InputError(f"reward: unknown field '{unknown[0]}' (allowed: {', '.join(REWARD_FIELDS)})")
    shapes = {"state_quadratic": (n, n), "action_quadratic": (k, k), "cross": (n, k)}
    parts = {
        "state": _vector("reward.state", data["state"], n) if "state" in data else np.zeros(n),
        "action": _vector("reward.action", data["action"], k) if "action" in data else np.zeros(k),
    }
    for key, shape in shapes.items():
        parts[key] = _matrix(f"reward.{key}", data[key], shape) if key in data else np.zeros(shape)
    return QuadraticReward(**parts)


LINEAR_FIELDS = (
    "kind",
    "name",
    "A",
    "B",
    "K",
    "policy_std",
    "transition_std",
    "reward",
    "discount",
    "squash",
    "action_scale",
)
LINEAR_REQUIRED = ("A", "B", "K", "policy_std", "transition_std", "discount")


def linear_gaussian_from_dict(data: Any, source: str = "input") -> LinearGaussianMDP:
    """Build a validated :class:`LinearGaussianMDP` from its JSON object.

    Schema: ``{"kind": "linear-gaussian", "A": n x n, "B": n x k, "K": k x n,
    "policy_std": k, "transition_std": n, "reward": {...}, "discount": c}``
    plus optional ``name``, ``squash`` (bool) and ``action_scale``. ``reward``
    holds any of ``state`` (n), ``action`` (k), ``state_quadratic`` (n x n),
    ``action_quadratic`` (k x k), ``cross`` (n x k); missing terms are zero.
    A plain number stands for a 1 x 1 matrix or a length-1 vector.
    """
    if not isinstance(data, dict):
        raise InputError(f"{source}: expected a JSON object, got {type(data).__name__}")
    if data.get("kind") != "linear-gaussian":
        raise InputError(f"{source}: kind: expected 'linear-gaussian', got {json.dumps(data.get('kind'))[:40]}")
    check_keys(data, LINEAR_FIELDS, LINEAR_REQUIRED, source)
    return LinearGaussianMDP(
        data["A"],
        data["B"],
        data["K"],
        data["policy_std"],
        data["transition_std"],
        data.get("reward", {}),
        data["discount"],
        data.get("squash", False),
        data.get("action_scale", 1.0),
        data.get("name"),
    )


def is_gaussian_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a JSON file whose top-level ``kind`` names a Gaussian MDP."""
    path = Path(path)
    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return False  # the finite loader reports unreadable files
    return isinstance(data, dict) and "kind" in data


def load_gaussian(path: str | os.PathLike) -> LinearGaussianMDP:
    """Load and validate a linear-Gaussian MDP from a JSON file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    return linear_gaussian_from_dict(data, source=str(path))


def save_gaussian(model: LinearGaussianMDP, path: str | os.PathLike) -> Path:
    """Write the JSON description of ``model`` (atomically)."""
    return atomic_write_json(path, model.to_dict())
