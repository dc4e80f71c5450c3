"""Pixel scenes with an exact metric behind them (``agents.metric_check``, docs/agents.md).

A :class:`Scene` is an MDP whose exact bisimulation metric ``bisimkit`` computes,
a renderer that draws its true state, and a fixed behaviour policy the agents'
model class contains:

* the agent acts with ``a = tanh(u)``, ``u ~ N(mu_b(s), sigma_b(s)^2)`` (one
  action coordinate per action dimension), which its squashed Gaussian actor holds
  exactly;
* **finite** scenes (:func:`finite_scene`) have deterministic transitions; the
  continuous action picks discrete action ``k`` when ``a`` falls in the k-th of
  ``m`` equal intervals of [-1, 1], in index order. Sharing the action noise
  between two states then draws the north-west-corner (comonotone) coupling of the
  two discrete laws, the coupling of the finite ``eps-bar`` operator, and the
  finite policy is ``pi(k|s) = P(tanh(u) in I_k)``. The reward must be a function
  of the next state, ``R[s, a] = rho(next(s, a))``: the agent predicts it from the
  predicted next latent;
* **linear-Gaussian** scenes (:func:`gaussian_scene`): ``s+ = A s + B a + L eta``
  with the squashed policy above (``K s`` its pre-squash mean, constant
  ``policy_std``) and the reward ``w . (A s + B a)`` of the mean next state.

Distractors change pixels and never the dynamics or rewards: their process has its
own random stream and never sees the state (:class:`Distractors`):

* ``background``: a new random colour field behind the sprites every step;
* ``colour``: per-channel gains on the whole frame, on their own Markov chain;
* ``sprite``: a hollow square on its own random walk over a 5 x 5 lattice,
  drawn behind the state's sprite.

A second family of the same three kinds, :class:`HeldOutDistractors`, is drawn
only to evaluate, never in training, and shares no value with the training
family: a background of soft stripes in colours whose every channel lies in
[190, 255] (the training field stays in [0, 180]), colour gains in [0.3, 0.5] or
[1.5, 1.7] (training: [0.6, 1.4]), and a filled cyan plus sign at continuous
positions (training: a red hollow square on the lattice).

A renderer returns one ``(H, W, 3)`` or ``(H, W, 4)`` uint8 image of a state (a
state index for a finite MDP, a state vector for a Gaussian one). Where the
alpha channel is 0 (or, without alpha, where the pixel is exactly black) the
distractors show through. The built-in scenes draw a fixed border, a reference
that keeps positions readable under DrQ's random shifts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy.stats import norm

from bisimkit.errors import InputError
from bisimkit.gaussian import LinearGaussianMDP
from bisimkit.mdp import FiniteMDP

DISTRACTORS = ("background", "colour", "sprite")
#: Pixel side of the built-in scenes unless asked for another.
IMAGE_SIZE = 32
#: Distractor sprite lattice (positions per side) and its chance of staying put each step.
SPRITE_LATTICE = 5
SPRITE_STAY = 0.2
#: The colour gains' AR(1) chain: g+ = 1 + rho (g - 1) + sd * noise, clipped to [1 - span, 1 + span].
GAIN_RHO, GAIN_SD, GAIN_SPAN = 0.8, 0.12, 0.4
#: Largest value of the training background field (4 x 4 colours in [0, 150] plus pixel noise in [0, 30]).
BACKGROUND_MAX = 180.0
#: The held-out family (:class:`HeldOutDistractors`): stripe colours per channel, gains' distance from 1, and the
#: plus sign's colour.
HELD_OUT_STRIPES = (190.0, 255.0)
HELD_OUT_GAIN_OFFSET = (0.5, 0.7)
HELD_OUT_COLOUR = np.array([40.0, 220.0, 230.0], np.float32)
#: The distractor families: the one drawn in training, and the one drawn only to evaluate.
FAMILIES = ("training", "held-out")
BORDER = (255, 0, 255)


# ------------------------------------------------------------ distractors
def check_distractors(distractors) -> tuple[str, ...]:
    """The distractor names, checked: a subset of :data:`DISTRACTORS` ("all" for all, "none" or () for none)."""
    if distractors in ("all", None):
        return DISTRACTORS if distractors == "all" else ()
    if distractors == "none":
        return ()
    if isinstance(distractors, str):
        distractors = [d for d in distractors.split(",") if d]
    names = tuple(distractors)
    for i, name in enumerate(names):
        if name not in DISTRACTORS:
            raise InputError(f"distractors[{i}]: {name!r} is not one of {', '.join(DISTRACTORS)}")
    return tuple(d for d in DISTRACTORS if d in names)


@dataclass
class DistractorState:
    """Per-image distractor state: colour gains (B, 3), sprite lattice cell (B, 2), and nothing for the
    background (a fresh draw every step)."""

    gains: np.ndarray
    cell: np.ndarray


class Distractors:
    """The distractor process of a batch of images (see the module doc); ``rng`` is its own stream. One
    batch at a time: :meth:`compose` keeps its work arrays between calls."""

    def __init__(self, kinds, size: int, rng: np.random.Generator):
        self.kinds, self.size, self.rng = check_distractors(kinds), int(size), rng
        self._buffers: dict[str, np.ndarray] = {}
        self._outline_pixels: tuple[tuple[int, int], np.ndarray] | None = None

    def initial(self, rows: int) -> DistractorState:
        """A draw from each chain's stationary law (gains: run the AR(1) chain 30 steps from 1)."""
        state = DistractorState(np.ones((rows, 3)), self.rng.integers(0, SPRITE_LATTICE, (rows, 2)))
        for _ in range(30):
            state = self.step(state)
        return state

    def step(self, state: DistractorState) -> DistractorState:
        """One step of every chain, independent of the MDP's state."""
        rows = len(state.gains)
        gains = 1.0 + GAIN_RHO * (state.gains - 1.0) + GAIN_SD * self.rng.standard_normal((rows, 3))
        gains = np.clip(gains, 1.0 - GAIN_SPAN, 1.0 + GAIN_SPAN)
        move = self.rng.integers(-1, 2, (rows, 2)) * (self.rng.random((rows, 1)) > SPRITE_STAY)
        cell = np.clip(state.cell + move, 0, SPRITE_LATTICE - 1)
        return DistractorState(gains, cell)

    def compose(self, rgb: np.ndarray, alpha: np.ndarray, state: DistractorState) -> np.ndarray:
        """Frames (B, 3, H, W) uint8 of the states' images ``rgb`` (B, 3, H, W) float in [0, 255] with their
        ``alpha`` (B, 1, H, W) in [0, 1] over the distractors of ``state``.

        Per pixel and channel: ``back + (image - back) * alpha``, times the colour gain, plus 0.5, clipped to
        [0, 255] and truncated, where ``back`` is the background (black without it) with the distractor sprite
        painted over it. The canvas is laid out channels first, like the frames, and worked on in place."""
        rows, size = rgb.shape[0], tuple(rgb.shape[2:])
        if "background" in self.kinds:
            canvas = self._background(rows, size)
        else:
            canvas = self._buffer("canvas", (rows, 3, *size), np.float32)
            canvas.fill(0.0)
        if "sprite" in self.kinds:
            self._paint_sprite(canvas, state.cell)
        blend = np.subtract(rgb, canvas, out=self._buffer("blend", canvas.shape, canvas.dtype))
        blend *= alpha
        canvas += blend
        if "colour" in self.kinds:
            canvas *= state.gains[:, :, None, None].astype(np.float32)
        canvas += 0.5
        np.clip(canvas, 0, 255, out=canvas)
        return canvas.astype(np.uint8)

    def _background(self, rows: int, size: tuple[int, int]) -> np.ndarray:
        """A 4 x 4 field of random colours, bilinearly upsampled, plus pixel noise: values in [0, 180], float64,
        channels first (B, 3, H, W)."""
        coarse = 150 * self.rng.random((rows, 4, 4, 3), np.float32)
        ys, xs = (np.linspace(0, 3, n, dtype=np.float32) for n in size)
        wy = np.maximum(0, 1 - np.abs(ys[:, None] - np.arange(4)[None, :]))  # (H, 4) hat weights
        wx = np.maximum(0, 1 - np.abs(xs[:, None] - np.arange(4)[None, :]))  # (W, 4)
        field = np.einsum("hi,bijc,wj->bhwc", wy, coarse, wx, optimize=True)
        noise = self._buffer("noise", (rows, *size, 3), np.float32)
        self.rng.random(out=noise, dtype=np.float32)
        noise *= 30
        return np.add(
            field.transpose(0, 3, 1, 2),
            noise.transpose(0, 3, 1, 2),
            out=self._buffer("canvas", (rows, 3, *size), np.float64),
        )

    def _buffer(self, name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
        """A work array of :meth:`compose` kept between calls (fresh arrays of a frame batch's size cost the
        kernel's page faults, about as much time as the arithmetic on them); new when the shape or dtype
        changes."""
        array = self._buffers.get(name)
        if array is None or array.shape != tuple(shape) or array.dtype != dtype:
            array = self._buffers[name] = np.empty(shape, dtype)
        return array

    def _paint_sprite(self, canvas: np.ndarray, cell: np.ndarray) -> None:
        """Paint a hollow square (side 30% of the frame, dark with a red rim) at each row's lattice ``cell`` on
        ``canvas`` (B, 3, H, W) in place: ``back + (colour - back)`` on the pixels of its outline."""
        rows, _, height, width = canvas.shape
        outline = self._outlines((height, width))[cell[:, 0] * SPRITE_LATTICE + cell[:, 1]]  # (B, L)
        planes = (np.arange(rows)[:, None] * 3 + np.arange(3)[None, :]) * (height * width)  # (B, 3) plane starts
        index = planes[:, :, None] + outline[:, None, :]  # (B, 3, L) into the flat canvas
        flat = canvas.reshape(-1)
        back = flat[index]
        flat[index] = back + (SPRITE_COLOUR[:, None] - back)

    def _outlines(self, size: tuple[int, int]) -> np.ndarray:
        """The square's outline at every lattice cell as pixel indices into one (H, W) plane, (cells, L),
        computed once per frame size (every cell's square lies inside the frame: L is the same)."""
        if self._outline_pixels is not None and self._outline_pixels[0] == tuple(size):
            return self._outline_pixels[1]
        h, w = size
        side = max(3, int(round(0.3 * min(h, w))))
        thick = max(1, side // 5)
        masks = np.zeros((SPRITE_LATTICE**2, h, w), bool)
        for k in range(SPRITE_LATTICE**2):
            cy, cx = divmod(k, SPRITE_LATTICE)
            y = int(round(cy * (h - side) / (SPRITE_LATTICE - 1)))
            x = int(round(cx * (w - side) / (SPRITE_LATTICE - 1)))
            masks[k, y : y + side, x : x + side] = True
            masks[k, y + thick : y + side - thick, x + thick : x + side - thick] = False
        pixels = np.stack([np.flatnonzero(mask) for mask in masks])
        self._outline_pixels = (tuple(size), pixels)
        return pixels


#: The distractor sprite's rim colour.
SPRITE_COLOUR = np.array([230.0, 40.0, 40.0], np.float32)


class HeldOutDistractors(Distractors):
    """The evaluation-only family (module doc): the same three kinds drawn so that no frame of it can come
    from the training family. ``DistractorState.gains`` are per-channel gains with ``|g - 1|`` in
    :data:`HELD_OUT_GAIN_OFFSET` (each channel darker or brighter, its side kept along the chain);
    ``DistractorState.cell`` holds the plus sign's centre as fractions of the frame, (B, 2) floats in [0.2, 0.8].

    * ``background``: ``c1 + (c2 - c1) (1 + sin(2 pi (y cos t + x sin t) / p + phase)) / 2`` per channel, with
      two colours ``c1, c2`` uniform in :data:`HELD_OUT_STRIPES`, an orientation ``t`` in [0, pi), a period ``p``
      of 20-45% of the frame and a phase, a fresh draw every step;
    * ``colour``: ``|g - 1|`` moves by a clipped Gaussian step of sd 0.03 within [0.5, 0.7];
    * ``sprite``: a filled plus sign (side 30% of the frame, bars a third of it thick) in
      :data:`HELD_OUT_COLOUR`, moved by a Gaussian step of sd 0.05 of the frame, clipped to [0.2, 0.8].
    """

    def initial(self, rows: int) -> DistractorState:
        side = np.where(self.rng.random((rows, 3)) < 0.5, -1.0, 1.0)
        gains = 1.0 + side * self.rng.uniform(*HELD_OUT_GAIN_OFFSET, (rows, 3))
        return DistractorState(gains, self.rng.uniform(0.2, 0.8, (rows, 2)))

    def step(self, state: DistractorState) -> DistractorState:
        rows = len(state.gains)
        side = np.sign(state.gains - 1.0)
        offset = np.clip(np.abs(state.gains - 1.0) + 0.03 * self.rng.standard_normal((rows, 3)), *HELD_OUT_GAIN_OFFSET)
        cell = np.clip(state.cell + 0.05 * self.rng.standard_normal((rows, 2)), 0.2, 0.8)
        return DistractorState(1.0 + side * offset, cell)

    def _background(self, rows: int, size: tuple[int, int]) -> np.ndarray:
        h, w = size
        low, high = HELD_OUT_STRIPES
        colours = self.rng.uniform(low, high, (rows, 2, 3))
        angle = self.rng.uniform(0.0, np.pi, rows)
        period = self.rng.uniform(0.2, 0.45, rows) * min(h, w)
        phase = self.rng.uniform(0.0, 2 * np.pi, rows)
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
        along = yy[None] * np.cos(angle)[:, None, None] + xx[None] * np.sin(angle)[:, None, None]
        mix = 0.5 * (1.0 + np.sin(2 * np.pi * along / period[:, None, None] + phase[:, None, None]))  # (B, H, W)
        canvas = self._buffer("canvas", (rows, 3, h, w), np.float64)
        canvas[:] = colours[:, 0, :, None, None] + (colours[:, 1] - colours[:, 0])[:, :, None, None] * mix[:, None]
        return canvas

    def _paint_sprite(self, canvas: np.ndarray, cell: np.ndarray) -> None:
        mask = plus_masks(canvas.shape[2:], cell)  # (B, H, W)
        colour = HELD_OUT_COLOUR.astype(canvas.dtype)[None, :, None, None]
        np.copyto(canvas, np.broadcast_to(colour, canvas.shape), where=mask[:, None])


def plus_masks(size: tuple[int, int], centres: np.ndarray) -> np.ndarray:
    """Boolean masks (B, H, W) of a filled plus sign of side 30% of the frame, bars a third of the side thick,
    centred at ``centres`` (B, 2), fractions of the frame (y, x)."""
    h, w = size
    side = max(3, int(round(0.3 * min(h, w))))
    bar = max(1, side // 3)
    cy = np.round(np.asarray(centres)[:, 0] * h).astype(int)
    cx = np.round(np.asarray(centres)[:, 1] * w).astype(int)
    yy, xx = np.mgrid[0:h, 0:w]
    dy, dx = yy[None] - cy[:, None, None], xx[None] - cx[:, None, None]
    inside = (np.abs(dy) <= side // 2) & (np.abs(dx) <= side // 2)
    return inside & ((np.abs(dy) <= bar // 2) | (np.abs(dx) <= bar // 2))


def make_distractors(kinds, size: int, rng: np.random.Generator, family: str = "training") -> Distractors:
    """The distractor process of ``family``: ``training`` (:class:`Distractors`) or ``held-out``
    (:class:`HeldOutDistractors`, drawn only to evaluate)."""
    if family not in FAMILIES:
        raise InputError(f"family: {family!r} is not one of {', '.join(FAMILIES)}")
    return (Distractors if family == "training" else HeldOutDistractors)(kinds, size, rng)


# ------------------------------------------------------------------ scenes
@dataclass
class Scene:
    """An MDP behind pixels: see the module doc. ``kind`` is ``finite`` or ``gaussian``.

    ``behaviour_mean`` / ``behaviour_std``: the pre-squash behaviour policy (n x k arrays per state for a
    finite scene; for a Gaussian one the model's ``K`` and ``policy_std`` are used). ``eval_states``: the
    states the metric is measured on (all states of a finite scene). ``render_batch``: optional, the images of
    many states of a Gaussian scene at once, (B, H, W, 3|4) uint8, the same as ``render`` one at a time."""

    name: str
    kind: str
    mdp: FiniteMDP | LinearGaussianMDP
    render: Callable[[np.ndarray | int], np.ndarray]
    eval_states: np.ndarray
    behaviour_mean: np.ndarray | None = None
    behaviour_std: np.ndarray | None = None
    start_box: float = 0.7
    image_shape: tuple[int, int] = field(default=(0, 0))
    render_batch: Callable[[np.ndarray], np.ndarray] | None = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def discount(self) -> float:
        return float(self.mdp.discount)

    @property
    def action_dim(self) -> int:
        return 1 if self.kind == "finite" else int(self.mdp.action_dim)

    @property
    def n_eval(self) -> int:
        return len(self.eval_states)

    # --------------------------------------------------------- sampling
    def sample_states(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        """Start states of a batch of transitions: uniform over the states (finite), uniform on
        [-start_box, start_box]^n (Gaussian)."""
        if self.kind == "finite":
            return rng.integers(0, self.mdp.n_states, rows)
        return rng.uniform(-self.start_box, self.start_box, (rows, self.mdp.state_dim))

    def behaviour(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pre-squash mean and std of the behaviour's action at ``states``, each (B, k)."""
        if self.kind == "finite":
            return self.behaviour_mean[states], self.behaviour_std[states]
        return self.mdp.policy_mean(states), self.mdp.policy_std(states)

    def step(
        self, states: np.ndarray, u: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(next states, rewards, actions tanh(u)) of ``states`` under pre-squash actions ``u`` (B, k)."""
        a = np.tanh(u)
        if self.kind == "finite":
            k = discrete_actions(a[:, 0], self.mdp.n_actions)
            nxt = self.mdp.transitions[states, k].argmax(axis=1)
            return nxt, self.mdp.rewards[states, k], a
        model = self.mdp
        mean = model.transition_mean(states, a)
        nxt = mean + model.transition_std(states, a) * rng.standard_normal(mean.shape)
        return nxt, model.reward(states, a), a

    # ---------------------------------------------------------- drawing
    def images(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Clean images (B, H, W, 3) float and alpha (B, H, W, 1) of ``states`` (views of :meth:`layers`)."""
        rgb, alpha = self.layers(states)
        return rgb.transpose(0, 2, 3, 1), alpha.transpose(0, 2, 3, 1)

    def layers(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Clean images (B, 3, H, W) float32 and alpha (B, 1, H, W) of ``states``, channels first like the frames
        (finite: every state drawn once and cached)."""
        if self.kind == "finite":
            if "layers" not in self._cache:
                self._cache["layers"] = channels_first(
                    np.stack(
                        [checked_image(self.render(int(s)), s, self.image_shape) for s in range(self.mdp.n_states)]
                    )
                )
            rgb, alpha = self._cache["layers"]
            return rgb[states], alpha[states]
        if self.render_batch is not None:
            return channels_first(self.render_batch(np.asarray(states)))
        return channels_first(
            np.stack([checked_image(self.render(s), i, self.image_shape) for i, s in enumerate(states)])
        )

    def frames(self, states: np.ndarray, distractors: Distractors, state: DistractorState) -> np.ndarray:
        """Observations (B, 3, H, W) uint8 of ``states`` under the distractor ``state``."""
        rgb, alpha = self.layers(states)
        return distractors.compose(rgb, alpha, state)


def checked_image(image, index, shape: tuple[int, int]) -> np.ndarray:
    """A renderer's output as (H, W, 3|4) uint8, or one line naming the state whose image is wrong."""
    if not isinstance(image, np.ndarray):
        raise InputError(f"render(state {index}): expected a numpy array, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise InputError(f"render(state {index}): expected dtype uint8, got {image.dtype}")
    if image.ndim != 3 or image.shape[2] not in (3, 4):
        raise InputError(f"render(state {index}): expected shape (H, W, 3) or (H, W, 4), got {image.shape}")
    if shape != (0, 0) and tuple(image.shape[:2]) != tuple(shape):
        raise InputError(
            f"render(state {index}): expected shape {tuple(shape)} like the other states, got {tuple(image.shape[:2])}"
        )
    if min(image.shape[:2]) < 16:
        raise InputError(
            f"render(state {index}): images of side {min(image.shape[:2])} are too small for the encoder (16 or more)"
        )
    return image


def channels_first(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Images (B, H, W, 3|4) uint8 as RGB (B, 3, H, W) float32 and alpha (B, 1, H, W) in [0, 1], channels
    first like the frames (RGB input: black pixels are transparent)."""
    rgb = images[..., :3].transpose(0, 3, 1, 2).astype(np.float32, order="C")
    if images.shape[-1] == 4:
        return rgb, images[:, None, :, :, 3].astype(np.float32) / 255.0
    return rgb, (images.max(axis=-1) > 0)[:, None].astype(np.float32)


def discrete_actions(a: np.ndarray, m: int) -> np.ndarray:
    """The index of the interval of [-1, 1] cut in ``m`` equal parts that each action ``a`` falls in."""
    return np.clip(np.floor((np.asarray(a) + 1.0) * m / 2.0), 0, m - 1).astype(int)


def interval_probabilities(mean: np.ndarray, std: np.ndarray, m: int) -> np.ndarray:
    """``pi(k|s) = P(tanh(u) in I_k)``, u ~ N(mean_s, std_s^2), for the m equal intervals of [-1, 1]."""
    cuts = np.arctanh(np.linspace(-1.0, 1.0, m + 1)[1:-1])
    cdf = norm.cdf((cuts[None, :] - mean[:, None]) / std[:, None])
    cdf = np.concatenate([np.zeros((len(mean), 1)), cdf, np.ones((len(mean), 1))], axis=1)
    return np.diff(cdf, axis=1)


# ------------------------------------------------------ scene builders
def finite_scene(
    mdp: FiniteMDP, render: Callable[[int], np.ndarray], behaviour_mean, behaviour_std, name: str | None = None
) -> Scene:
    """A scene of a finite MDP with deterministic transitions and next-state rewards (module doc), acted in by
    the squashed Gaussian behaviour ``(behaviour_mean[s], behaviour_std[s])``; the MDP's policy becomes the
    behaviour's interval probabilities."""
    if not isinstance(mdp, FiniteMDP):
        raise InputError(f"mdp: expected a bisimkit FiniteMDP, got {type(mdp).__name__}")
    n, m = mdp.n_states, mdp.n_actions
    P = mdp.transitions
    for s in range(n):
        for a in range(m):
            if P[s, a].max() < 1.0 - 1e-12:
                raise InputError(
                    f"transitions[s={s}, a={a}]: not deterministic; the agents' Gaussian latent "
                    "model cannot hold a stochastic finite transition, so no exact target exists"
                )
    nxt = P.argmax(axis=2)
    rho: dict[int, tuple[float, int, int]] = {}
    for s in range(n):
        for a in range(m):
            t, r = int(nxt[s, a]), float(mdp.rewards[s, a])
            if t in rho and abs(rho[t][0] - r) > 1e-12:
                raise InputError(
                    f"rewards[s={s}, a={a}]: {r:g} differs from rewards[s={rho[t][1]}, a={rho[t][2]}]"
                    f" = {rho[t][0]:g} with the same next state {t}; the agents predict the reward "
                    "from the predicted next latent, so it must be a function of the next state"
                )
            rho.setdefault(t, (r, s, a))
    mean = _per_state("behaviour_mean", behaviour_mean, n)
    std = _per_state("behaviour_std", behaviour_std, n)
    if np.any(std <= 0) or np.any(std > 7.0):
        i = int(np.argmax((std <= 0) | (std > 7.0)))
        raise InputError(f"behaviour_std[{i}]: {std[i]:g} is outside (0, 7] (the actor's std range)")
    policy = interval_probabilities(mean, std, m)
    scene_mdp = FiniteMDP(P, mdp.rewards, mdp.discount, policy, mdp.action_values, mdp.state_shape, name or mdp.name)
    return Scene(
        name or mdp.label,
        "finite",
        scene_mdp,
        render,
        np.arange(n),
        mean[:, None],
        std[:, None],
        image_shape=_first_shape(render, 0),
    )


def gaussian_scene(
    model: LinearGaussianMDP,
    render: Callable[[np.ndarray], np.ndarray],
    eval_states=None,
    name: str | None = None,
    start_box: float = 0.7,
    render_batch: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Scene:
    """A scene of a linear-Gaussian MDP (module doc): a squashed policy with action scale 1, and a reward of
    the mean next state. ``eval_states`` (N x n) default to a 5-per-side grid on [-0.6, 0.6]^n (n <= 2).
    ``render_batch``: ``render`` of many states at once (:class:`Scene`)."""
    if not isinstance(model, LinearGaussianMDP):
        raise InputError(f"mdp: expected a bisimkit LinearGaussianMDP, got {type(model).__name__}")
    if not model.squash or model.action_scale != 1.0:
        raise InputError(
            "squash: the agents act with tanh-squashed actions in [-1, 1]; give the policy "
            "\"squash\": true and \"action_scale\": 1"
        )
    _check_mean_next_reward(model)
    n = model.state_dim
    if eval_states is None:
        if n > 2:
            raise InputError(f"eval_states: give the evaluation states of a {n}-dimensional model")
        axis = np.linspace(-0.6, 0.6, 5)
        eval_states = np.stack(np.meshgrid(*([axis] * n), indexing="ij"), -1).reshape(-1, n)
    eval_states = np.asarray(eval_states, float)
    if eval_states.ndim != 2 or eval_states.shape[1] != n or len(eval_states) < 3:
        raise InputError(f"eval_states: expected an (N, {n}) array with N >= 3, got shape {eval_states.shape}")
    return Scene(
        name or model.label,
        "gaussian",
        model,
        render,
        eval_states,
        start_box=float(start_box),
        image_shape=_first_shape(render, np.zeros(n)),
        render_batch=render_batch,
    )


def _check_mean_next_reward(model: LinearGaussianMDP) -> None:
    """The reward must be ``w . (A s + B a)`` for some w (the agents read it off the predicted next latent)."""
    data = model.to_dict().get("reward", {})
    for key in ("state_quadratic", "action_quadratic", "cross"):
        if key in data and np.any(np.asarray(data[key], float) != 0):
            raise InputError(
                f"reward.{key}: the agents predict the reward from the mean next state, so it must "
                "be linear, w . (A s + B a)"
            )
    r_z = np.asarray(data.get("state", np.zeros(model.state_dim)), float).reshape(-1)
    r_a = np.asarray(data.get("action", np.zeros(model.action_dim)), float).reshape(-1)
    AB = np.hstack([np.asarray(model.A), np.asarray(model.B)])  # n x (n + k)
    target = np.concatenate([r_z, r_a])
    w, *_ = np.linalg.lstsq(AB.T, target, rcond=None)
    if np.max(np.abs(AB.T @ w - target)) > 1e-9 * max(1.0, np.max(np.abs(target))):
        raise InputError(
            "reward: not of the form w . (A s + B a); the agents predict the reward from the mean "
            "next state, so no exact target exists for this reward"
        )


def _per_state(name: str, value, n: int) -> np.ndarray:
    arr = np.asarray(value, float).reshape(-1)
    if arr.shape != (n,):
        raise InputError(f"{name}: expected {n} numbers (one per state), got shape {np.shape(value)}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name}[{int(np.argmin(np.isfinite(arr)))}]: not finite")
    return arr


def _first_shape(render, state) -> tuple[int, int]:
    return tuple(checked_image(render(state), 0 if np.ndim(state) == 0 else "0", (0, 0)).shape[:2])


# ------------------------------------------------------- built-in scenes
def _canvas(size: int) -> np.ndarray:
    """An RGBA canvas, transparent, with the opaque border of the built-in scenes."""
    img = np.zeros((size, size, 4), np.uint8)
    edge = max(1, size // 16)
    for sl in (np.s_[:edge], np.s_[-edge:], np.s_[:, :edge], np.s_[:, -edge:]):
        img[sl] = (*BORDER, 255)
    return img


def disc(size: int, centre: tuple[float, float], radius: float, colour=(255, 230, 40)) -> np.ndarray:
    """An RGBA image with an anti-aliased disc at ``centre`` (pixels, y then x) over the built-in canvas."""
    return discs(size, np.asarray([centre], float), radius, colour)[0]


def discs(size: int, centres: np.ndarray, radius: float, colour=(255, 230, 40)) -> np.ndarray:
    """Images (B, size, size, 4) of one anti-aliased disc each, at ``centres`` (B, 2) in pixels, y then x.

    A pixel's cover is ``clip(radius + 0.5 - |pixel centre - disc centre|, 0, 1)``: its alpha is the larger of
    the canvas's and ``round(255 cover)``, and its colour ``colour`` where the cover is positive. Only a
    window of each image around its disc is computed (the cover is 0 outside it)."""
    centres = np.asarray(centres, float).reshape(-1, 2)
    rows = len(centres)
    img = np.repeat(_canvas(size)[None], rows, axis=0)
    span = int(math.ceil(2 * radius)) + 3  # every pixel p with p + 0.5 within radius + 0.5 of the centre
    start = np.clip(np.floor(centres - radius - 1.0), -span, size).astype(int)  # far-away discs: any window
    ys = start[:, 0, None] + np.arange(span)  # (B, span) pixel rows of each window
    xs = start[:, 1, None] + np.arange(span)
    dist = np.hypot((ys + 0.5 - centres[:, 0, None])[:, :, None], (xs + 0.5 - centres[:, 1, None])[:, None, :])
    cover = np.clip(radius + 0.5 - dist, 0.0, 1.0)  # (B, span, span)
    shown = ((ys >= 0) & (ys < size))[:, :, None] & ((xs >= 0) & (xs < size))[:, None, :]
    b, i, j = np.nonzero(shown)
    pixel = (b * size + ys[b, i]) * size + xs[b, j]  # into the (B * size * size, 4) pixels
    c = cover[b, i, j]
    pixels = img.reshape(-1, 4)
    pixels[pixel, 3] = np.maximum(pixels[pixel, 3], (c * 255).round().astype(np.uint8))
    pixels[pixel[c > 0], :3] = np.asarray(colour, np.uint8)
    return img


def squash_sigma(mean: float, m: int = 3, lo: float = 1e-3, hi: float = 50.0) -> float:
    """The std that makes the mean of the discrete action values (-1, 0, 1) equal ``tanh(mean)`` for the 3 equal
    intervals: then the finite MDP's mean action is the squashed mean the agents' policy ground reads."""
    if m != 3:
        raise ValueError("m: only 3 actions")
    if abs(mean) < 1e-12:
        return 1.0
    mean = abs(mean)  # symmetric: the same std for -mean

    def gap(sd: float) -> float:
        p = interval_probabilities(np.array([mean]), np.array([sd]), 3)[0]
        return p[2] - p[0] - math.tanh(mean)

    grid = np.geomspace(lo, hi, 400)
    p = interval_probabilities(np.full(len(grid), mean), grid, 3)
    vals = p[:, 2] - p[:, 0] - math.tanh(mean)
    k = int(np.max(np.nonzero(vals > 0)[0]))  # the largest sd with too much drift: the root lies just above
    a, b = grid[k], grid[k + 1]
    for _ in range(100):
        mid = 0.5 * (a + b)
        a, b = (mid, b) if gap(mid) > 0 else (a, mid)
    return 0.5 * (a + b)


def ring_mdp(n: int = 8, discount: float = 0.9) -> tuple[FiniteMDP, np.ndarray, np.ndarray]:
    """A ring of ``n`` cells; actions left, stay, right (action values -1, 0, 1); reward cos(2 pi s+ / n) of the
    next cell; the behaviour's squashed mean drifts with the cell, its std chosen so that the finite mean action
    is exactly that squashed mean (:func:`squash_sigma`)."""
    P = np.zeros((n, 3, n))
    for s in range(n):
        for a, move in enumerate((-1, 0, 1)):
            P[s, a, (s + move) % n] = 1.0
    nxt = P.argmax(axis=2)
    R = np.cos(2 * np.pi * nxt / n)
    mean = 1.2 * np.sin(2 * np.pi * np.arange(n) / n + 0.4)
    std = np.array([squash_sigma(m) for m in mean])
    mdp = FiniteMDP(P, R, discount, interval_probabilities(mean, std, 3), np.array([[-1.0], [0.0], [1.0]]), name="ring")
    return mdp, mean, std


def grid_mdp(side: int = 4, discount: float = 0.9) -> tuple[FiniteMDP, np.ndarray, np.ndarray]:
    """A ``side`` x ``side`` grid (state_shape); action 0 moves up a row, 1 stays, 2 moves right a column (walls
    clip; action values -1, 0, 1); reward of the next cell
    ``(row + 1)(col + 1) / side^2`` (a product: the metric couples the two coordinates)."""
    n = side * side
    P = np.zeros((n, 3, n))
    for s in range(n):
        r, c = divmod(s, side)
        for a, (dr, dc) in enumerate(((-1, 0), (0, 0), (0, 1))):
            rr, cc = min(max(r + dr, 0), side - 1), min(max(c + dc, 0), side - 1)
            P[s, a, rr * side + cc] = 1.0
    nxt = P.argmax(axis=2)
    rows, cols = np.divmod(nxt, side)
    R = (rows + 1) * (cols + 1) / side**2
    cells = np.arange(n)
    mean = 0.9 * np.cos(np.pi * cells / n * 3.0)
    std = np.array([squash_sigma(m) for m in mean])
    mdp = FiniteMDP(
        P,
        R,
        discount,
        interval_probabilities(mean, std, 3),
        np.array([[-1.0], [0.0], [1.0]]),
        state_shape=(side, side),
        name="grid",
    )
    return mdp, mean, std


#: The transition noise of the sprite and of the noisy sprite (per coordinate).
SPRITE_NOISE = 0.05
NOISY_SPRITE_NOISE = 0.2


def sprite_model(discount: float = 0.9, noise: float = SPRITE_NOISE, name: str = "sprite") -> LinearGaussianMDP:
    """The 2-D linear-Gaussian sprite: ``s+ = 0.8 s + 0.3 a + noise eta`` (``noise`` 0.05 by default),
    ``a = tanh(-0.8 s + 0.5 xi)`` per coordinate, reward ``w . (A s + B a)`` with ``w = (4, -2)``."""
    A, B = 0.8 * np.eye(2), 0.3 * np.eye(2)
    w = np.array([4.0, -2.0])
    return LinearGaussianMDP(
        A,
        B,
        -0.8 * np.eye(2),
        [0.5, 0.5],
        [noise, noise],
        {"state": (A.T @ w).tolist(), "action": (B.T @ w).tolist()},
        discount,
        squash=True,
        action_scale=1.0,
        name=name,
    )


SCENES = ("ring", "grid", "sprite", "sprite-noisy")


def build_scene(name: str, image_size: int = IMAGE_SIZE, discount: float = 0.9) -> Scene:
    """A built-in scene: ``ring`` (8 cells on a circle), ``grid`` (4 x 4, a metric that is not a sum of
    per-coordinate terms), ``sprite`` (the 2-D linear-Gaussian sprite), ``sprite-noisy`` (the sprite with four
    times the transition noise, 0.2 per coordinate: where two states' next states are coupled matters).

    Two entangled next states share their transition noise, which moves both by the same amount; the squashed
    policy then acts on the moved states, so the noise still changes the entangled metrics, and more so the
    independent-sampling ones, whose self-distances grow with it."""
    size = int(image_size)
    if name == "ring":
        mdp, mean, std = ring_mdp(discount=discount)
        n = mdp.n_states

        def render(s: int) -> np.ndarray:
            angle = 2 * np.pi * s / n
            return disc(
                size, (size / 2 - 0.28 * size * math.cos(angle), size / 2 + 0.28 * size * math.sin(angle)), 0.12 * size
            )

        return finite_scene(mdp, render, mean, std, "ring")
    if name == "grid":
        mdp, mean, std = grid_mdp(discount=discount)
        side = mdp.state_shape[0]

        def render(s: int) -> np.ndarray:
            r, c = divmod(s, side)
            step = size * 0.8 / side
            return disc(size, (size * 0.1 + (r + 0.5) * step, size * 0.1 + (c + 0.5) * step), 0.35 * step)

        return finite_scene(mdp, render, mean, std, "grid")
    if name in ("sprite", "sprite-noisy"):
        model = sprite_model(discount, SPRITE_NOISE if name == "sprite" else NOISY_SPRITE_NOISE, name)

        def render(s: np.ndarray) -> np.ndarray:
            return render_batch(np.asarray(s, float)[None])[0]

        def render_batch(states: np.ndarray) -> np.ndarray:
            y, x = np.asarray(states, float)[:, 0], np.asarray(states, float)[:, 1]
            return discs(size, np.stack([size / 2 + 0.4 * size * y, size / 2 + 0.4 * size * x], 1), 0.12 * size)

        return gaussian_scene(model, render, name=name, render_batch=render_batch)
    raise InputError(f"scene: {name!r} is not one of {', '.join(SCENES)}")
