"""Cheap headless rendering: the visual settings are set before the first GL context, and a renderer keeps its
camera."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("dm_control")

from agents.render import SLICES, STACKS, PixelRenderer, fast_visuals  # noqa: E402

XML = (
    '<mujoco><worldbody><light pos="0 0 3"/><camera name="c" pos="0 -2 1" xyaxes="1 0 0 0 1 2"/>'
    '<geom type="sphere" size="0.3" rgba="1 0 0 1"/></worldbody></mujoco>'
)


def test_fast_visuals_then_frames_of_the_asked_shape():
    from dm_control import mujoco

    physics = mujoco.Physics.from_xml_string(XML)
    fast_visuals(physics)
    quality = physics.model.vis.quality
    assert (quality.shadowsize, quality.offsamples, quality.numslices, quality.numstacks) == (0, 0, SLICES, STACKS)
    renderer = PixelRenderer(physics, height=24, width=32)
    frame = renderer.render()
    assert renderer.shape == (24, 32) and frame.shape == (24, 32, 3) and frame.dtype == np.uint8
    assert frame[..., 0].max() > frame[..., 2].max()  # the red sphere is in view
    renderer.close()
    physics.render(8, 8)
    with pytest.raises(RuntimeError, match="^fast_visuals: the physics already has a GL context"):
        fast_visuals(physics)
