"""The memory estimate and check of ``bisimkit.memory``: what is available, the one-line refusal,
``force``, a real MemoryError on the command line, and the estimate against measured peaks."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.bench_memory import FACTOR, MALLOC_ENV, WORKLOADS, measure_in_child
from bisimkit import memory
from bisimkit.between import solve_between
from bisimkit.errors import InputError
from bisimkit.generators import random_mdp
from bisimkit.mdp import save_mdp
from bisimkit.memory import (
    MARGIN,
    Available,
    NotEnoughMemory,
    Shape,
    cgroup_room,
    check_memory,
    estimate_shape,
    estimate_solve,
    would_fit,
)
from bisimkit.solvers import solve
from bisimkit_cli.core import main

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ available
def _cgroup(tmp_path: Path, line: str, files: dict[str, str]) -> tuple[Path, Path]:
    membership = tmp_path / "cgroup"
    membership.write_text(line + "\n")
    for rel, text in files.items():
        path = tmp_path / "fs" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "fs", membership


def test_cgroup_v2_room_is_limit_less_usage_plus_reclaimable_cache(tmp_path):
    root, membership = _cgroup(
        tmp_path,
        "0::/job",
        {
            "cgroup.controllers": "memory",
            "memory.max": "max",
            "job/memory.max": "1000000",
            "job/memory.current": "400000",
            "job/memory.stat": "anon 1\ninactive_file 50000\n",
        },
    )
    assert cgroup_room(root, membership) == 1000000 - 400000 + 50000


def test_cgroup_v1_room_takes_the_tightest_ancestor(tmp_path):
    root, membership = _cgroup(
        tmp_path,
        "4:memory:/a/b",
        {
            "memory/memory.limit_in_bytes": "9223372036854771712",
            "memory/memory.usage_in_bytes": "10",
            "memory/a/memory.limit_in_bytes": "500000",
            "memory/a/memory.usage_in_bytes": "300000",
            "memory/a/b/memory.limit_in_bytes": "2000000",
            "memory/a/b/memory.usage_in_bytes": "100000",
        },
    )
    assert cgroup_room(root, membership) == 200000


def test_no_cgroup_limit_is_none(tmp_path):
    root, membership = _cgroup(
        tmp_path, "0::/", {"cgroup.controllers": "memory", "memory.max": "max", "memory.current": "5"}
    )
    assert cgroup_room(root, membership) is None
    assert Available(None, None, None).bytes == float("inf")
    assert Available(3e9, None, 1e9).bytes == 1e9


# ---------------------------------------------------------------- estimates
def test_estimates_grow_with_the_problem_and_follow_the_method():
    shape = Shape(300, 4, 8.0, 4.0, 20.0)
    for metric in ("pi", "bisim", "eps", "eps-bar", "mico", "dbc", "psm-sampled", "mico-reduced"):
        small, large = estimate_shape(shape.scaled(100), metric), estimate_shape(shape, metric)
        assert 0 < small.bytes < large.bytes, metric
    assert estimate_shape(shape, "pi", "vi").bytes < estimate_shape(shape, "pi").bytes  # plans are not kept
    assert estimate_shape(shape, "eps-bar", single_eps_bar=True).bytes < estimate_shape(shape, "eps-bar").bytes
    assert estimate_shape(shape, "mico-reduced").bytes == estimate_shape(shape, "mico").bytes


def test_shape_reads_the_supports():
    mdp = random_mdp(30, 3, seed=1, max_support=4)
    shape = Shape.of(mdp)
    assert shape.n == 30 and shape.m == 3
    assert shape.transition_support == pytest.approx(np.count_nonzero(mdp.transitions, axis=2).mean())
    assert 1 <= shape.transition_support <= 4 and 1 <= shape.policy_support <= 3 and shape.pi_support <= 12


# ------------------------------------------------------------------- refusal
def test_a_solve_that_does_not_fit_stops_in_one_line_naming_estimate_limit_and_what_fits():
    mdp = random_mdp(120, 4, seed=0, max_support=8)
    estimate = estimate_solve(mdp, "pi")
    room = 0.8 * MARGIN * estimate.bytes
    with pytest.raises(NotEnoughMemory) as info:
        check_memory(mdp, "pi", available=Available(room, None, None))
    message = str(info.value)
    assert "\n" not in message and isinstance(info.value, InputError)
    assert "about" in message and "available" in message and "would fit" in message
    assert "states" in message.split("would fit")[1]  # fewer states always fit at some size
    assert "force=True" in message and "--force" not in message
    assert info.value.for_option({"--force"}).endswith("--force tries anyway")
    assert check_memory(mdp, "pi", available=Available(1.01 * MARGIN * estimate.bytes, None, None)) == estimate


def test_what_would_fit_names_the_float32_eps_bar_path_the_quotient_and_sparser_transitions():
    shape = Shape(3000, 4, 8.0, 4.0, 30.0)  # 4.5 million pairs: the solver may take the float32 matrix
    f64 = estimate_shape(shape, "eps-bar", single_eps_bar=False)
    f32 = estimate_shape(shape, "eps-bar", single_eps_bar=True)
    room = MARGIN * (f32.bytes + f64.bytes) / 2
    ideas = would_fit(shape, "eps-bar", "auto", False, True, room)
    assert any(i.startswith("the float32 eps-bar matrix") for i in ideas)
    assert any(i.startswith("sparser transitions") for i in ideas)
    assert not any("float32" in i for i in would_fit(shape.scaled(300), "eps-bar", "auto", False, True, 1e6))
    assert would_fit(shape, "pi", "auto", False, False, 1e6)[0].startswith("quotient first")
    assert not any("quotient" in i for i in would_fit(shape, "pi", "auto", False, True, 1e6))


PROBE = """
import resource, sys
from pathlib import Path
from bisimkit_cli import core as cli
from bisimkit.generators import random_mdp
from bisimkit.mdp import save_mdp
n = 1500
base = random_mdp(n, 1, seed=0, max_support=8)
save_mdp(base, sys.argv[1])
del base
size = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize:"))
# a low address-space limit: what is mapped now plus 4.5 times the transitions (8 n^2 bytes). Loading
# the MDP fits; the mico solve needs about 9 such matrices, and with --force it fails in numpy while
# it builds its form, before any BLAS call (OpenBLAS, failing to allocate its own buffers, would end
# the process itself)
limit = size + int(4.5 * 8 * n * n)
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
sys.exit(cli.main(["solve", sys.argv[1], "--metric", "mico", "--out", sys.argv[2], "--quiet"] + sys.argv[3:]))
"""


def _under_low_address_space(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "mdp.npz"), str(tmp_path / "d.npy"), *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_under_a_low_address_space_limit_the_solve_is_refused_before_it_starts(tmp_path):
    proc = _under_low_address_space(tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bisimkit: error: memory: mico on 1500 states needs about")
    assert "address space" in lines[0] and "--force tries anyway" in lines[0] and "would fit" in lines[0]
    assert not (tmp_path / "d.npy").exists()


def test_forced_past_the_limit_a_memory_error_is_one_line_exit_3_and_nothing_written(tmp_path):
    proc = _under_low_address_space(tmp_path, "--force")
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "bisimkit: error: out of memory (MemoryError); nothing was written (docs/performance.md#memory)"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mdp.npz"]  # no output, no temp file


def test_force_solves_what_the_check_would_refuse(monkeypatch):
    import bisimkit.memory as memory

    mdp = random_mdp(6, 2, seed=0)
    monkeypatch.setattr(memory, "available_memory", lambda: Available(1.0, None, None))
    with pytest.raises(NotEnoughMemory):
        solve(mdp, "pi")
    assert solve(mdp, "pi", force=True).converged


# ------------------------------------------------------- against measurement
@pytest.mark.parametrize("workload, n", [("pi-dense", 60), ("eps-bar-sparse", 300), ("mico-dense", 1000)])
def test_the_estimate_is_within_the_factor_of_the_measured_peak(workload, n):
    record = measure_in_child(workload, n)
    assert 1 / FACTOR <= record["ratio"] <= FACTOR, json.dumps(record)


@pytest.mark.slow
@pytest.mark.parametrize("workload, n", [(w, n) for w, (_, _, sizes) in WORKLOADS.items() for n in sizes])
def test_every_path_at_three_sizes_is_within_the_factor_of_its_measured_peak(workload, n):
    record = measure_in_child(workload, n)
    assert 1 / FACTOR <= record["ratio"] <= FACTOR, json.dumps(record)


# ------------------------------------------------------------- two MDPs
def test_solve_between_refuses_what_does_not_fit_and_force_solves_it(monkeypatch, tmp_path, capsys):
    a, b = random_mdp(6, 2, seed=0), random_mdp(5, 2, seed=1)
    monkeypatch.setattr(memory, "available_memory", lambda: Available(1.0, None, None))
    with pytest.raises(NotEnoughMemory) as info:
        solve_between(a, b, "pi")
    assert "pi between 6 and 5 states needs about" in str(info.value) and "cross pairs" in str(info.value)
    assert solve_between(a, b, "pi", force=True).converged
    save_mdp(a, tmp_path / "a.npz")
    save_mdp(b, tmp_path / "b.npz")
    out = tmp_path / "d.npy"
    args = [
        "solve",
        str(tmp_path / "a.npz"),
        "--against",
        str(tmp_path / "b.npz"),
        "--metric",
        "mico",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(args) == 2 and not out.exists()
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "mico between 6 and 5 states" in lines[0] and "--force tries anyway" in lines[0]
    assert main(args + ["--force"]) == 0 and np.load(out).shape == (6, 5)


BETWEEN_PROBE = """
import json, sys
from pathlib import Path
from benchmarks.bench_memory import WARM_STATES, _status_bytes, build
from bisimkit.between import solve_between
from bisimkit.memory import estimate_between
metric, family, na, nb = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
a, b = build(family, na), build(family, nb)
# the same path on copies of at most 64 states first: whatever it compiles stays out of the measurement
solve_between(build(family, min(na, WARM_STATES)), build(family, min(nb, WARM_STATES)), metric)
estimate = estimate_between(a, b, metric)
Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current resident size
before = _status_bytes("VmRSS")
solve_between(a, b, metric)
print(json.dumps({"estimate": estimate.bytes, "measured": _status_bytes("VmHWM") - before}))
"""


@pytest.mark.parametrize("metric, family, na, nb", [("mico", "dense", 1000, 600), ("pi", "dense", 60, 40)])
def test_the_between_estimate_is_within_the_factor_of_the_measured_peak(metric, family, na, nb):
    out = subprocess.run(
        [sys.executable, "-c", BETWEEN_PROBE, metric, family, str(na), str(nb)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=True,
        env={**os.environ, **MALLOC_ENV},
    )
    record = json.loads(out.stdout.strip().splitlines()[-1])
    assert 1 / FACTOR <= record["estimate"] / record["measured"] <= FACTOR, json.dumps(record)


def test_a_solve_that_fits_only_on_its_blocks_is_solved_there_and_refused_when_their_lift_fails(monkeypatch):
    import bisimkit.memory as memory
    import bisimkit.solvers as solvers
    from bisimkit.generators import planted_bisimulation
    from bisimkit.memory import check_memory_blocks

    base = random_mdp(10, 2, seed=3)
    mdp, _ = planted_bisimulation(base, 4, seed=3)  # 40 states, 10 blocks
    full = estimate_solve(mdp, "pi").bytes
    blocks = check_memory_blocks(mdp, "pi", 10, available=Available(math.inf, None, None)).bytes
    assert blocks < full / 4
    room = MARGIN * (blocks + full) / 2
    monkeypatch.setattr(memory, "available_memory", lambda: Available(room, None, None))
    sol = solve(mdp, "pi")
    assert sol.converged and "quotient (10 of 40 states)" in sol.method
    reference = solve(mdp, "pi", force=True, quotient=False)
    assert np.max(np.abs(sol.distances - reference.distances)) <= sol.certified_error + reference.certified_error
    monkeypatch.setattr(solvers, "solve_on_quotient", lambda *args, **kwargs: None)
    with pytest.raises(NotEnoughMemory, match="their lift cannot be certified"):
        solve(mdp, "pi")
    monkeypatch.setattr(memory, "available_memory", lambda: Available(0.5 * MARGIN * blocks, None, None))
    with pytest.raises(NotEnoughMemory, match="on 10 blocks of 40 states"):
        solve(mdp, "pi")
