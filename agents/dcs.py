"""The paper's six Distracting Control Suite tasks as pixel environments.

``make_env(task, background=..., camera=..., split=...)`` builds one of
ball_in_cup-catch, cartpole-swingup, cheetah-run, finger-spin, reacher-easy
and walker-walk with the paper's action repeat (4, 8, 4, 2, 4, 2), 84x84 RGB
frames and a stack of the last 3 frames (:data:`PAPER_TASKS`; :data:`EXTRA_TASKS`
adds the easier cartpole-balance and walker-stand, not in the paper):

* ``background``: dynamic video backgrounds (:mod:`agents.background`), from
  the 2 training videos (``split='train'``) or the 30 held-out ones
  (``split='eval'``), read from DAVIS-2017 or procedural videos (:mod:`agents.videos`);
* ``camera``: DCS's hard camera distraction (intensity 0.3, dynamic): the camera
  drifts in position and roll around the agent, out of plane, every control step;
* both off: plain dm_control.

The API is plain: ``reset() -> obs`` and ``step(action) -> (obs, reward, done,
info)`` with ``obs`` a uint8 array (3 * frame_stack, size, size), ``reward``
the sum over the repeated control steps, ``done`` at the task's time limit
(1000 control steps; ``info['truncated']`` is then true and ``info['discount']``
is 1) and ``action_spec`` the dm_env bounded spec (actions in [-1, 1]).
Physics, camera motion and background playback are deterministic given ``seed``.
"""

from __future__ import annotations

import math
import os
from collections import deque
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from bisimkit.errors import InputError, check_count

from .compat import distracting_control
from .render import PixelRenderer, fast_visuals
from .videos import VideoSource, resolve_videos, split_videos


@dataclass(frozen=True)
class Task:
    """A DCS task: dm_control domain and task names and the paper's action repeat."""

    domain: str
    task: str
    action_repeat: int


PAPER_TASKS: dict[str, Task] = {
    "ball_in_cup-catch": Task("ball_in_cup", "catch", 4),
    "cartpole-swingup": Task("cartpole", "swingup", 8),
    "cheetah-run": Task("cheetah", "run", 4),
    "finger-spin": Task("finger", "spin", 2),
    "reacher-easy": Task("reacher", "easy", 4),
    "walker-walk": Task("walker", "walk", 2),
}
# Easier tasks of the same domains (not in the paper), with their domain's action repeat:
# walker-stand is what the CPU learning check (benchmarks/learning_check.py) trains on.
EXTRA_TASKS: dict[str, Task] = {
    "cartpole-balance": Task("cartpole", "balance", 8),
    "walker-stand": Task("walker", "stand", 2),
}
TASKS: dict[str, Task] = {**PAPER_TASKS, **EXTRA_TASKS}
CAMERA_INTENSITY = 0.3  # DCS "hard"


def task_spec(name: str) -> Task:
    """The :class:`Task` called ``name`` (e.g. ``'walker-walk'``)."""
    if name not in TASKS:
        raise InputError(f"task: {name!r} is not one of {', '.join(TASKS)}")
    return TASKS[name]


def camera_kwargs(domain: str) -> dict:
    """DCS's hard, dynamic camera distraction for ``domain`` (distracting-control's own settings)."""
    return distracting_control().suite_utils.get_camera_kwargs(domain, CAMERA_INTENSITY, True)


class DCSEnv:
    """A DCS task with action repeat and a frame stack of rendered RGB frames (see the module doc)."""

    def __init__(
        self,
        name: str,
        env,
        physics,
        background,
        renderer: PixelRenderer,
        action_repeat: int,
        frame_stack: int,
        episode_steps: int,
        source: VideoSource | None,
        split: str | None,
    ):
        self.name = name
        self.action_repeat = action_repeat
        self.frame_stack = frame_stack
        self.action_spec = env.action_spec()
        self.max_episode_steps = math.ceil(episode_steps / action_repeat)
        self.background_source = source.describe() if source is not None else "no background distraction"
        self.split = split
        self._env, self._physics, self._background, self._renderer = env, physics, background, renderer
        self._frames: deque[np.ndarray] = deque(maxlen=frame_stack)
        self._steps = 0
        self._done = True
        self._task_obs = None

    @property
    def observation_shape(self) -> tuple[int, int, int]:
        """(3 * frame_stack, height, width)."""
        return (3 * self.frame_stack, *self._renderer.shape)

    @property
    def background_video(self) -> str | None:
        """Name of the video playing in this episode (None without backgrounds or before reset)."""
        if self._background is None or self._background._background is None:  # pylint: disable=protected-access
            return None
        return os.path.basename(str(self._background._current_video))  # pylint: disable=protected-access

    @property
    def task_state(self) -> np.ndarray:
        """The task's own state observation behind the current pixels (what a state-based agent of
        the suite reads: for walker, torso orientations, height and joint velocities), flattened in
        the order of :attr:`task_state_names`; distractors never enter it."""
        if self._task_obs is None:
            raise RuntimeError("task_state: no episode has started; call reset()")
        return np.concatenate([np.asarray(v, np.float64).ravel() for v in self._task_obs.values()])

    @property
    def task_state_names(self) -> list[str]:
        """A name per entry of :attr:`task_state`: ``key`` or ``key[i]``."""
        if self._task_obs is None:
            raise RuntimeError("task_state_names: no episode has started; call reset()")
        names = []
        for key, value in self._task_obs.items():
            size = int(np.asarray(value).size)
            names += [key] if size == 1 else [f"{key}[{i}]" for i in range(size)]
        return names

    def _frame(self) -> np.ndarray:
        if self._background is not None:
            self._background.sync()
        return np.ascontiguousarray(self._renderer.render().transpose(2, 0, 1))

    def _observation(self) -> np.ndarray:
        return np.concatenate(self._frames, axis=0)

    def reseed(self, seed: int) -> None:
        """Reseed the task and both distractions in place, each from its own stream of ``seed``.

        Called before :meth:`reset`, it makes the episode a function of ``seed``
        alone: a training run seeds episode k with (run seed, k), so a resumed
        run replays the same episodes as an uninterrupted one.
        """
        check_count("seed", seed, low=0)
        states, layer = [], self._env
        while layer is not None:
            if isinstance(getattr(layer, "_random_state", None), np.random.RandomState):
                states.append(layer._random_state)  # pylint: disable=protected-access
            task = getattr(layer, "task", None) if not hasattr(layer, "_env") else None
            if task is not None and isinstance(getattr(task, "random", None), np.random.RandomState):
                states.append(task.random)
            layer = getattr(layer, "_env", None)
        streams = np.random.SeedSequence(int(seed)).spawn(len(states))
        for state, stream in zip(states, streams):
            state.seed(int(stream.generate_state(1)[0]))

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Start an episode (after :meth:`reseed` with ``seed`` when given); returns the first
        observation (the first frame repeated)."""
        if seed is not None:
            self.reseed(seed)
        self._task_obs = self._env.reset().observation
        frame = self._frame()
        for _ in range(self.frame_stack):
            self._frames.append(frame)
        self._steps, self._done = 0, False
        return self._observation()

    def step(self, action) -> tuple[np.ndarray, float, bool, dict]:
        """Repeat ``action`` for ``action_repeat`` control steps; returns (obs, reward, done, info)."""
        if self._done:
            raise RuntimeError("step: the episode has ended (or not started); call reset()")
        action = np.asarray(action, dtype=np.float64)
        if action.shape != self.action_spec.shape:
            raise InputError(f"action: shape {action.shape} is not {self.action_spec.shape}")
        if not np.all(np.isfinite(action)):
            raise InputError("action: holds a non-finite value")
        action = np.clip(action, self.action_spec.minimum, self.action_spec.maximum)
        reward, discount, last = 0.0, 1.0, False
        for _ in range(self.action_repeat):
            time_step = self._env.step(action)
            self._task_obs = time_step.observation
            reward += float(time_step.reward or 0.0)
            discount = float(time_step.discount if time_step.discount is not None else 1.0)
            if time_step.last():
                last = True
                break
        self._steps += 1
        self._frames.append(self._frame())
        truncated = (last and discount > 0) or (not last and self._steps >= self.max_episode_steps)
        self._done = last or truncated
        return (
            self._observation(),
            reward,
            self._done,
            {"discount": discount, "truncated": truncated, "steps": self._steps},
        )

    def close(self) -> None:
        """Free the renderer and the GL context."""
        self._renderer.close()
        self._physics.free()


def make_env(
    task: str,
    background: bool = True,
    camera: bool = True,
    split: str = "train",
    davis: str | os.PathLike | None = None,
    seed: int = 0,
    image_size: int = 84,
    frame_stack: int = 3,
    action_repeat: int | None = None,
    videos: Sequence[str] | None = None,
    texture_size: int = 128,
    episode_steps: int | None = None,
    fast_render: bool = True,
) -> DCSEnv:
    """A DCS task with the chosen distractions (both off: plain dm_control); see the module doc.

    ``split`` picks the background videos ('train': 2, 'eval': 30 held out) unless
    ``videos`` names them; ``davis`` (or ``$BISIMKIT_DAVIS``) points at DAVIS-2017,
    otherwise procedural videos are used. ``action_repeat`` defaults to the paper's
    for the task, ``episode_steps`` (control steps) to the task's time limit.
    ``texture_size`` is the side of the background texture (the package uses 800).
    ``seed`` seeds the task and both distractions (one seed for all, as in
    distracting-control, so ours and the package's match under the same seed);
    ``fast_render=False`` keeps dm_control's visuals (shadows, 4x multisampling,
    28x16 tessellation; about 5x slower on CPU), see :mod:`agents.render`.
    """
    spec = task_spec(task)
    split_videos(split)
    for field, value, low in (
        ("image_size", image_size, 8),
        ("frame_stack", frame_stack, 1),
        ("texture_size", texture_size, 8),
        ("action_repeat", action_repeat, 1),
        ("episode_steps", episode_steps, 1),
    ):
        if value is not None:
            check_count(field, value, low)
    repeat = spec.action_repeat if action_repeat is None else int(action_repeat)
    source, folders = None, []
    if background:
        source = resolve_videos(davis)
        folders = source.videos(split if videos is None else list(videos))
    dc = distracting_control()
    env = dc.suite.load(
        spec.domain,
        spec.task,
        task_kwargs={"random": seed},
        distraction_types=("camera",) if camera else (),
        camera_kwargs=camera_kwargs(spec.domain) if camera else None,
        render_kwargs={"camera_id": 0},
        from_pixels=False,
        distraction_seed=seed,
    )
    physics = env.physics
    if background:
        from .background import FastBackgroundEnv  # OpenCV, MuJoCo: fast backgrounds only

        env = FastBackgroundEnv(env, folders, spec.domain, seed=seed, texture_size=texture_size)
    if fast_render:
        fast_visuals(physics)
    renderer = PixelRenderer(physics, image_size, image_size, camera_id=0)
    limit = getattr(env, "_step_limit")
    steps = int(limit) if episode_steps is None else min(int(episode_steps), int(limit))
    return DCSEnv(
        task,
        env,
        physics,
        env if background else None,
        renderer,
        repeat,
        frame_stack,
        steps,
        source,
        split if background else None,
    )
