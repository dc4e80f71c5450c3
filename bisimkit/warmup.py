"""Compile the numba kernels once (or load them from numba's disk cache).

``python -m bisimkit.warmup`` solves a small MDP with every kind of operator, which
compiles the transportation simplex, the coupling kernel and the assembly kernels.
``bisimkit verify`` runs it in a side process while the loss checks train.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from numba.core import event as numba_event

from .generators import random_mdp
from .solvers import solve

#: One metric per compiled code path.
METRICS = ("pi", "eps", "bisim", "eps-bar", "dbc", "psm")
#: What a cold first solve prints, and about how long compiling takes on 2 cores.
COMPILING_NOTE = ("compiling the solver kernels (once, about 20 s on 2 cores; numba caches them on disk, "
                  "later runs start at once)")


class CompileNotice(numba_event.Listener):
    """Says :data:`COMPILING_NOTE` once, when numba starts compiling a kernel.

    numba raises its ``numba:compile`` event only on a cache miss (a kernel found in its disk
    cache is loaded without it), so the note appears exactly when something really compiles."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.said = False

    def on_start(self, event) -> None:
        if not self.said:
            self.said = True
            self.say(COMPILING_NOTE)

    def on_end(self, event) -> None:
        pass


@contextmanager
def compile_notice(say: Callable[[str], None]) -> Iterator[CompileNotice]:
    """Within the block, ``say(COMPILING_NOTE)`` once if any kernel compiles."""
    notice = CompileNotice(say)
    with numba_event.install_listener("numba:compile", notice):
        yield notice


def warm_up() -> None:
    """Solve a random 8-state MDP with each of :data:`METRICS`."""
    mdp = random_mdp(8, 2, seed=0, max_support=4)
    for metric in METRICS:
        solve(mdp, metric)


if __name__ == "__main__":
    warm_up()
