"""Shared figure set-up: headless backend, readable defaults, atomic PNG saving."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from bisimkit.files import atomic_write  # noqa: E402

plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 130, "font.size": 10, "axes.titlesize": 10,
                     "axes.grid": False})


def save(fig, path: str | os.PathLike) -> Path:
    """Save ``fig`` as PNG atomically (:func:`bisimkit.files.atomic_write`) and close it."""
    path = Path(path)
    try:
        atomic_write(path, lambda fh: fig.savefig(fh, format="png", bbox_inches="tight"))
    finally:
        plt.close(fig)
    return path
