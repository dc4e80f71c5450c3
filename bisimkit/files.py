"""Atomic file writes: results appear whole or not at all; output paths checked before any work."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from .errors import InputError


def atomic_write(path: str | os.PathLike, writer: Callable) -> Path:
    """Call ``writer(fh)`` on a temp file beside ``path``, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            writer(fh)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_write_bytes(path: str | os.PathLike, payload: bytes) -> Path:
    """Write ``payload`` to ``path`` atomically."""
    return atomic_write(path, lambda fh: fh.write(payload))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write_bytes(Path(path), text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, data: Any) -> Path:
    """Write ``data`` as indented JSON to ``path`` atomically."""
    return atomic_write_text(path, json.dumps(data, indent=2) + "\n")


#: What :func:`staged_folder` does with a folder already at its destination.
EXISTING = ("empty", "replace", "merge")


@contextmanager
def staged_folder(final: str | os.PathLike, existing: str = "empty") -> Iterator[Path]:
    """A folder written whole or not at all: yields a new folder beside ``final`` to write into;
    when the block ends without an error its contents take ``final``'s place, and on any error it
    is removed, so ``final`` never holds a half-written result.

    ``existing`` says what happens to a folder already at ``final``: ``"empty"``, the staged
    folder is renamed onto it, which the system refuses (:class:`OSError`) unless it is empty;
    ``"replace"``, it is removed first; ``"merge"``, each staged file is moved into it (a file of
    the same name is replaced, the others stay).
    """
    if existing not in EXISTING:
        raise ValueError(f"existing: {existing!r} is not one of {', '.join(EXISTING)}")
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        yield staging
        if existing == "merge" and final.is_dir():
            for item in sorted(staging.iterdir()):
                os.replace(item, final / item.name)
        else:
            if existing == "replace" and final.is_dir():
                shutil.rmtree(final)
            os.replace(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def check_output(path: str | os.PathLike, param: str = "out", folder: bool = False) -> Path:
    """``path`` as a :class:`Path` if a result can be written there (a file, or a folder when
    ``folder``); otherwise :class:`InputError` naming ``param``. Run before any work, so that a
    path that cannot take the result stops the command at once. It writes nothing that stays: the
    nearest existing folder above ``path`` is probed with a temporary file, deleted at once."""
    path = Path(path)
    if path.exists():
        if folder and not path.is_dir():
            raise InputError(f"{str(path)!r} exists and is not a folder", param=param)
        if not folder and path.is_dir():
            raise InputError(f"{str(path)!r} is a folder, not a file", param=param)
    here = path if folder else path.parent
    while not here.exists() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        raise InputError(f"cannot write {str(path)!r}: {str(here)!r} is not a folder", param=param)
    try:
        with tempfile.TemporaryFile(dir=here):
            pass
    except OSError as exc:
        raise InputError(f"cannot write {str(path)!r}: {exc.strerror or exc} in {str(here)!r}", param=param) from None
    return path


def file_error_line(exc: OSError) -> str:
    """The one line a command prints for a file error during its work: ``FILE: reason``."""
    return f"{exc.filename}: {exc.strerror or exc}" if exc.filename else str(exc.strerror or exc)
