"""A child process running another checkout's code with this interpreter (``bench_revisions``, ``bench_startup``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def tree_env(tree: Path, **extra: str) -> dict:
    """The environment of a child process that imports ``tree``'s bisimkit.

    ``PYTHONPATH`` starts with the tree (an inherited ``PYTHONPATH`` follows it). An editable install
    (``pip install -e .``) puts scikit-build-core's import hook ahead of ``PYTHONPATH``, which would take
    bisimkit from the installed checkout whatever the tree: the hook is turned off in the child
    (``SKBUILD_EDITABLE_SKIP``, the variable it reads for that), so the tree's Python code is the one
    imported. The compiled kernels (``bisimkit_native``) are those installed for this interpreter, or the
    first found on ``PYTHONPATH``: a tree whose C++ differs from them needs its own build on that path.
    ``extra``: further variables (threads, say)."""
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(tree)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    hooks = [
        str(f.path)
        for f in sys.meta_path
        if type(f).__name__ == "ScikitBuildRedirectingFinder" and getattr(f, "path", None)
    ]
    if hooks:
        env["SKBUILD_EDITABLE_SKIP"] = os.pathsep.join([p for p in (env.get("SKBUILD_EDITABLE_SKIP"), *hooks) if p])
    return env
