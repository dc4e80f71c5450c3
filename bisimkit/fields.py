"""Checks on input fields shared by every model (finite and Gaussian MDPs, pair files).

Each raises :class:`~bisimkit.errors.InputError` naming the field and the index of
the first bad entry, e.g. ``rewards[s=0, a=0] is not finite (nan)`` or
``pairs[0][1]: expected a number, got "a"``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from .errors import InputError

#: Rows of ``transitions`` and ``policy`` may be off by this much (and entries
#: this negative) before they are rejected; accepted rows are then cleaned.
ROW_TOLERANCE = 1e-9


def format_index(names: tuple[str, ...], idx: tuple[int, ...]) -> str:
    return ", ".join(f"{k}={int(i)}" for k, i in zip(names, idx))


def to_float_array(field: str, value: Any) -> np.ndarray:
    """Convert to a float64 array, naming the first non-numeric or ragged entry."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise InputError(f"{field}: expected numbers, got an array of dtype {value.dtype}")
        return value.astype(np.float64)
    _check_nested(field, value, [])
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:  # pragma: no cover - _check_nested catches these
        raise InputError(f"{field}: not a rectangular array of numbers ({exc})") from None


def _check_nested(field: str, value: Any, path: list[int]) -> None:
    """Check nested lists are a rectangular array of numbers, naming the first bad entry.

    The expected shape is read along the first entries; every other list must match it.
    """
    shape: list[int] = []
    probe = value
    while isinstance(probe, list | tuple):
        shape.append(len(probe))
        probe = probe[0] if len(probe) else None
    _walk(field, value, path, shape)


def _walk(field: str, value: Any, path: list[int], shape: list[int]) -> None:
    where = field + "".join(f"[{i}]" for i in path)
    depth = len(path)
    if isinstance(value, list | tuple):
        if depth >= len(shape):
            raise InputError(f"{where}: expected a number, got a list (ragged array)")
        if len(value) != shape[depth]:
            raise InputError(f"{where}: has length {len(value)}, expected {shape[depth]} (ragged array)")
        for i, item in enumerate(value):
            _walk(field, item, path + [i], shape)
        return
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        text = json.dumps(value)[:40] if isinstance(value, str | dict | type(None)) else type(value).__name__
        raise InputError(f"{where}: expected a number, got {text}")
    if depth < len(shape):
        raise InputError(f"{where}: expected a list of length {shape[depth]}, got a number (ragged array)")


def check_finite(field: str, array: np.ndarray, names: tuple[str, ...]) -> None:
    """Reject the first NaN or infinite entry, naming it by ``names`` (e.g. ``("s", "a")``)."""
    bad = np.argwhere(~np.isfinite(array))
    if len(bad):
        idx = tuple(bad[0])
        raise InputError(f"{field}[{format_index(names, idx)}] is not finite ({array[idx]})")


def validate_discount(value: Any) -> float:
    """A discount ``0 <= c < 1`` as a float."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        shown = json.dumps(value) if not isinstance(value, np.ndarray) else "an array"
        raise InputError(f"discount: expected a number, got {shown}"[:120])
    c = float(value)
    if not math.isfinite(c) or not 0.0 <= c < 1.0:
        raise InputError(f"discount = {c} must satisfy 0 <= discount < 1")
    return c


def check_keys(data: dict, allowed: tuple[str, ...], required: tuple[str, ...], source: str) -> None:
    """Reject the first key of ``data`` not in ``allowed``, then the first missing ``required`` one."""
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise InputError(f"{source}: unknown field '{unknown[0]}' (allowed: {', '.join(allowed)})")
    for key in required:
        if key not in data:
            raise InputError(f"{source}: missing field '{key}'")
