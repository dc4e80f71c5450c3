"""Shared figure set-up: headless backend, readable defaults, atomic PNG saving."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 130, "font.size": 10, "axes.titlesize": 10,
                     "axes.grid": False})


def save(fig, path: str | os.PathLike) -> Path:
    """Save ``fig`` as PNG atomically and close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, bbox_inches="tight")
    os.replace(tmp, path)
    plt.close(fig)
    return path
