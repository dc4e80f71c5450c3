"""Runtime shims that let distracting-control 0.1.1rc3 run on MuJoCo 3 and numpy 2.

Nothing in site-packages is edited; :func:`distracting_control` applies the shims
in this process and returns the package's modules.

* MuJoCo 3 renamed ``mjModel.tex_rgb`` to ``tex_data``. The package's background
  wrapper reads and writes ``physics.model.tex_rgb``; dm_control's ``MjModel``
  wrapper class gets a ``tex_rgb`` property aliasing ``tex_data``.
* The package's ``__init__`` imports gym (unmaintained; its env checker uses
  ``np.bool8``, removed in numpy 2) only to register gym ids for its gym wrapper,
  which fails on numpy 2. We never use that wrapper: the package is imported
  with a stand-in ``gym`` whose ``register`` does nothing, and the stand-in is
  removed from ``sys.modules`` afterwards (a real gym imported later is untouched).
* dm_control picks its OpenGL backend when first imported: :func:`distracting_control`
  sets ``MUJOCO_GL`` to ``egl`` (headless; works with Mesa on CPU and with NVIDIA
  drivers) when it is unset, just before that first import; importing this module
  changes nothing.
"""

from __future__ import annotations

import os
import sys
import types
from typing import NamedTuple


class DistractingControl(NamedTuple):
    """The distracting-control modules, shims applied."""

    suite: types.ModuleType
    background: types.ModuleType
    camera: types.ModuleType
    suite_utils: types.ModuleType


def alias_tex_rgb() -> None:
    """Give dm_control's ``MjModel`` a ``tex_rgb`` property that aliases MuJoCo 3's ``tex_data``."""
    from dm_control.mujoco.wrapper.core import MjModel  # agents' extra: first environment

    if not hasattr(MjModel, "tex_rgb"):
        MjModel.tex_rgb = property(
            lambda self: self.ptr.tex_data, lambda self, value: setattr(self.ptr, "tex_data", value)
        )


def _stand_in_gym() -> dict[str, types.ModuleType]:
    gym = types.ModuleType("gym")
    envs = types.ModuleType("gym.envs")
    envs.register = lambda *args, **kwargs: None
    gym.envs = envs
    return {"gym": gym, "gym.envs": envs}


def distracting_control() -> DistractingControl:
    """Import distracting-control with the MuJoCo-3 and numpy-2 shims applied."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    alias_tex_rgb()
    if "distracting_control" not in sys.modules and "gym" not in sys.modules:
        stand_ins = _stand_in_gym()
        sys.modules.update(stand_ins)
        try:
            import distracting_control  # noqa: F401  (runs the package __init__ against the stand-in)
        finally:
            for name, module in stand_ins.items():
                if sys.modules.get(name) is module:
                    del sys.modules[name]
    from distracting_control import background, camera, suite, suite_utils  # agents' extra: first environment

    return DistractingControl(suite, background, camera, suite_utils)
