"""Cheap headless rendering of dm_control physics.

Two costs dominate an 84x84 frame on a CPU (Mesa llvmpipe): shadow maps with
4x multisampling (about 25 ms) and building a new ``Camera`` with its scene
buffers on every ``physics.render`` call (about 1.4 ms). :func:`fast_visuals`
turns shadows and multisampling off (set before the first GL context exists);
:class:`PixelRenderer` keeps one camera for the life of the environment.
Reflections, the skybox, lighting and haze stay as in dm_control.
"""

from __future__ import annotations

import numpy as np

from . import compat  # noqa: F401  (MUJOCO_GL defaults to egl before dm_control loads)


def fast_visuals(physics, shadows: bool = False, multisampling: bool = False) -> None:
    """Switch shadow maps and multisampling off; call before the physics first renders."""
    if getattr(physics, "_contexts", None) is not None:
        raise RuntimeError("fast_visuals: the physics already has a GL context; call it before rendering")
    if not shadows:
        physics.model.vis.quality.shadowsize = 0
    if not multisampling:
        physics.model.vis.quality.offsamples = 0


class PixelRenderer:
    """Renders one camera of a physics into RGB arrays, reusing the camera and its scene."""

    def __init__(self, physics, height: int = 84, width: int = 84, camera_id: int = 0):
        from dm_control.mujoco import engine
        self._camera = engine.Camera(physics, height=height, width=width, camera_id=camera_id)

    def render(self) -> np.ndarray:
        """The current view as a (height, width, 3) uint8 array (valid until the next call)."""
        return self._camera.render()

    def close(self) -> None:
        """Free the camera's scene."""
        self._camera._scene.free()  # pylint: disable=protected-access
