"""A dynamic video background that costs about a millisecond per rendered frame.

distracting-control's background wrapper resizes every frame of the episode's
video to an 800x800 skybox texture on each reset and re-uploads that texture
(six cube faces plus mipmaps, about 25 ms on one CPU core) after every physics
step, rendered or not. :class:`FastBackgroundEnv` keeps the package's playback
(same random video, start frame and direction for the same seed; the frame
index moves back and forth one frame per control step) and changes three things:

* the skybox texture is ``texture_size`` squared (default 128; a sky face spans 90
  degrees and the 45-degree camera sees half of it in 84 pixels, so 168 pixels
  would be 1:1; 84x84 frames differ from an 800x800 texture's by 0.3-0.5 grey
  levels on average); the upload costs about 0.7 ms instead of 25 ms;
* frames are decoded and resized once per video and process (an LRU cache);
* the texture is uploaded only when a frame is about to be rendered and differs
  from the one on the GPU (:meth:`FastBackgroundEnv.sync`), so with action
  repeat k there is one upload per k control steps.

The class derives from distracting-control's wrapper, so it is built when first
asked for (``from agents.background import FastBackgroundEnv``): importing this
module loads neither dm_control nor OpenCV and leaves the environment alone.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from bisimkit.errors import InputError

from .compat import distracting_control

DEFAULT_SIZE = 128
CACHED_VIDEOS = 32


@functools.lru_cache(maxsize=CACHED_VIDEOS)
def load_frames(video_dir: str, size: int) -> np.ndarray:
    """Frames of a ``<video>/*.jpg`` folder as a read-only (T, size*size*3) uint8 array (RGB rows)."""
    import cv2  # the agents' extra (OpenCV): loaded with the first background

    names = sorted(n for n in os.listdir(video_dir) if n.lower().endswith((".jpg", ".jpeg")))
    if not names:
        raise InputError(f"videos: no .jpg frames in {video_dir}")
    frames = np.empty((len(names), size * size * 3), np.uint8)
    for i, name in enumerate(names):
        image = cv2.imread(os.path.join(video_dir, name), cv2.IMREAD_COLOR)
        if image is None:
            raise InputError(f"videos: cannot decode {os.path.join(video_dir, name)} (not a JPEG image?)")
        image = cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA)
        frames[i] = cv2.cvtColor(image, cv2.COLOR_BGR2RGB).reshape(-1)
    frames.flags.writeable = False
    return frames


def ground_plane_alpha(domain: str) -> float:
    """Transparency of the floor grid under video backgrounds, as distracting-control sets it per domain."""
    return distracting_control().suite_utils.get_background_kwargs(domain, None, True, None)["ground_plane_alpha"]


def __getattr__(name: str):
    if name == "FastBackgroundEnv":
        return _fast_background_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.lru_cache(maxsize=None)
def _fast_background_class() -> type:
    """:class:`FastBackgroundEnv`, derived from distracting-control's wrapper (loaded on first use)."""
    dc = distracting_control()
    sky = dc.background.SKY_TEXTURE_INDEX

    class FastBackgroundEnv(dc.background.DistractingBackgroundEnv):
        """distracting-control's dynamic video background with a small texture and lazy uploads."""

        def __init__(
            self,
            env,
            videos: Sequence[str | os.PathLike],
            domain: str,
            seed: int | None = None,
            texture_size: int = DEFAULT_SIZE,
        ):
            super().__init__(
                env,
                dataset_path=None,
                video_alpha=1.0,
                ground_plane_alpha=ground_plane_alpha(domain),
                dynamic=True,
                seed=seed,
            )
            if not videos:
                raise InputError("videos: at least one video folder is needed")
            model = env.physics.model
            if not 8 <= texture_size <= model.tex_width[sky]:
                raise InputError(f"texture_size: {texture_size} is not in [8, {model.tex_width[sky]}]")
            self._video_paths = [str(Path(v)) for v in videos]
            self._size = int(texture_size)
            self._current_video: str | None = None
            self._videos_loaded = 0  # counts _reset_background calls: (count, frame) names the frame on the GPU
            self._on_gpu: tuple[int, int] | None = None
            # A square skybox texture is drawn on all six cube faces; shrink it before any GL context exists.
            model.tex_height[sky] = model.tex_width[sky] = self._size

        def _reset_background(self) -> None:
            physics = self._env.physics
            if self._ground_plane_alpha is not None:
                physics.named.model.mat_rgba["grid", "a"] = self._ground_plane_alpha
            # Same random draws, in the same order, as the package's dynamic background.
            video = self._random_state.choice(self._video_paths)
            frames = load_frames(str(video), self._size)
            self._current_video = str(video)
            self._current_img_index = self._random_state.choice(len(frames))
            self._step_direction = self._random_state.choice([-1, 1])
            self._background = dc.background.Texture(frames.shape[1], physics.model.tex_adr[sky], frames)
            self._videos_loaded += 1
            self._apply()

        def _apply(self) -> None:
            """Called by the package after every control step: the upload waits for :meth:`sync`."""

        @property
        def current_frame(self) -> np.ndarray:
            """The background frame of the current control step, (size, size, 3) uint8."""
            return self._background.textures[self._current_img_index].reshape(self._size, self._size, 3)

        def sync(self) -> None:
            """Upload the current frame to the GPU if it is not the one already there (call before rendering)."""
            if self._background is None:
                return
            key = (self._videos_loaded, int(self._current_img_index))
            if key == self._on_gpu:
                return
            import mujoco  # the agents' extra (simulator): loaded with the first environment

            physics = self._env.physics
            start = self._background.address
            physics.model.tex_data[start : start + self._background.size] = self._background.textures[key[1]]
            with physics.contexts.gl.make_current() as ctx:
                ctx.call(mujoco.mjr_uploadTexture, physics.model.ptr, physics.contexts.mujoco.ptr, sky)
            self._on_gpu = key

    return FastBackgroundEnv
