"""distracting-control under MuJoCo 3 and numpy 2: its modules import, MjModel has ``tex_rgb``, and no stand-in
``gym`` is left behind."""

import os
import sys

os.environ.setdefault("MUJOCO_GL", "egl")

import pytest  # noqa: E402

pytest.importorskip("dm_control")

from agents.compat import alias_tex_rgb, distracting_control  # noqa: E402


def test_the_package_imports_with_its_shims():
    modules = distracting_control()
    assert modules.suite.__name__ == "distracting_control.suite"
    assert hasattr(modules.background, "DAVIS17_TRAINING_VIDEOS")
    assert "gym" not in sys.modules or sys.modules["gym"].__spec__ is not None  # no stand-in left
    assert distracting_control().camera is modules.camera


def test_tex_rgb_aliases_tex_data():
    from dm_control import mujoco

    alias_tex_rgb()
    physics = mujoco.Physics.from_xml_string(
        '<mujoco><asset><texture name="t" type="2d" builtin="checker" width="4" height="4"/></asset>'
        '<worldbody/></mujoco>'
    )
    model = physics.model
    assert model.tex_rgb.shape == model.ptr.tex_data.shape
    model.tex_rgb[:] = 7
    assert (model.ptr.tex_data == 7).all()
