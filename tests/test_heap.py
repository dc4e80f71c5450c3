"""Large solves keep freed blocks for the next round (bisimkit.heap)."""

import os
import subprocess
import sys

import pytest

from bisimkit import heap
from bisimkit.generators import random_mdp
from bisimkit.solvers import solve

GLIBC = sys.platform.startswith("linux") and os.confstr("CS_GNU_LIBC_VERSION") is not None

FAULTS = """
import resource, sys
import numpy as np
from bisimkit.heap import large_solve

def faults(rounds=6):
    np.ones(8 * 2**20)  # the first block of this size, mapped either way
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(rounds):
        block = np.ones(8 * 2**20)  # 64 MiB, above glibc's own largest mmap threshold
        del block
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

plain = faults()
with large_solve(int(sys.argv[1])):
    kept = faults()
print(plain, kept)
"""


def run_faults(pairs: int, env: dict | None = None) -> tuple[int, int]:
    out = subprocess.run(
        [sys.executable, "-c", FAULTS, str(pairs)],
        capture_output=True,
        text=True,
        check=True,
        env={key: value for key, value in (env or os.environ).items()},
    )
    plain, kept = out.stdout.split()
    return int(plain), int(kept)


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator only")
def test_a_large_solve_reuses_its_freed_blocks():
    env = {key: value for key, value in os.environ.items() if not key.startswith("MALLOC_")}
    plain, kept = run_faults(heap.LARGE_PAIRS, env)
    assert plain > 0 and kept * 4 < plain  # each 64 MiB block faulted in afresh, against reused pages


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator only")
def test_small_solves_and_the_users_own_settings_change_nothing():
    env = {key: value for key, value in os.environ.items() if not key.startswith("MALLOC_")}
    plain, kept = run_faults(heap.LARGE_PAIRS - 1, env)
    assert kept * 4 > plain  # below the size: blocks mapped afresh as before
    plain, kept = run_faults(heap.LARGE_PAIRS, {**env, "MALLOC_ARENA_MAX": "2"})
    assert kept * 4 > plain  # the user chose the allocator's settings: left as they are


def test_the_thresholds_are_raised_for_the_solve_only_and_nest(monkeypatch):
    monkeypatch.setattr(heap, "_libc", None)  # no allocator calls in this process
    with heap.large_solve(heap.LARGE_PAIRS):
        assert not heap.raised()  # nothing to raise without glibc
    if not GLIBC or any(key.startswith("MALLOC_") for key in os.environ):
        return
    monkeypatch.setattr(heap, "_libc", heap._UNSEEN)  # looked up again
    seen = []
    with heap.large_solve(heap.LARGE_PAIRS):
        with heap.large_solve(heap.LARGE_PAIRS):
            seen.append(heap.raised())
        seen.append(heap.raised())
    seen.append(heap.raised())
    assert seen == [True, True, False]


def test_solve_raises_them_from_the_large_size_on(monkeypatch):
    if not GLIBC or any(key.startswith("MALLOC_") for key in os.environ):
        pytest.skip("glibc's allocator with its default settings only")
    mdp = random_mdp(20, 2, seed=0)
    for limit, expected in ((190, True), (191, False)):  # 20 states: 190 pairs
        monkeypatch.setattr(heap, "LARGE_PAIRS", limit)
        seen = []
        solve(mdp, "pi", progress=lambda *_: seen.append(heap.raised()), quotient=False)
        assert seen and set(seen) == {expected}
    assert not heap.raised()
