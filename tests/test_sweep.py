"""Sweeps: grids, validation, state and failures, status, gather; and a real SLURM.

The fast tests build grids (the paper's 540 runs in a dry run), refuse bad input,
count failures and read states without training. The sweep tests train a
2 tasks x 2 methods x 2 seeds grid of tiny runs (32x32 pixels, 32 or 64 agent steps,
batches of 4, one torch thread) through submitit's local executor and, when
``slurm-wlm`` and ``munge`` are installed, through a one-node SLURM started by
``agents/sweep/local_slurm.sh`` (the ``slurm`` fixture of ``conftest.py``: its own folder
and port; stopped in the fixture's finalizer), where one job is preempted (``scancel --signal=USR2``, what submitit
treats as preemption) mid-run, requeued, and must end with the same ``eval.csv`` as
the uninterrupted local run. Without SLURM those tests are skipped with the reason.
"""

import csv
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import pytest  # noqa: E402
from conftest import procedural_environment  # noqa: E402

from agents.sweep import cli  # noqa: E402
from agents.sweep.launch import pid_alive, plan, status_lines  # noqa: E402
from agents.sweep.runner import MAX_FAILURES, SweepJob, run_one  # noqa: E402
from agents.sweep.spec import load_spec  # noqa: E402
from bisimkit_runs.sweeps import read_state, read_sweep, write_state  # noqa: E402
from figures.sweep_report import gather  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "agents" / "sweep" / "paper"
#: 2 tasks x 2 methods x 2 seeds, tiny: cartpole (repeat 8) 32 agent steps, ball_in_cup (repeat 4) 64, episodes
#: of 32 environment steps, a checkpoint every episode, an evaluation every 64 environment steps.
GRID = ["--grid", "task=cartpole-swingup,ball_in_cup-catch", "--grid", "method=drq,eps-r", "--grid", "seed=0,1"]
TINY = [
    f"--set={item}"
    for item in (
        "preset=smoke",
        "env_steps=256",
        "episode_steps=32",
        "seed_steps=2",
        "batch_size=4",
        "eval_every=64",
        "checkpoint_every=32",
        "device=cpu",
        "eval_train_videos=false",
    )
]
PREEMPTED = "ball_in_cup-catch__eps-r__seed0"
TIMING = "elapsed_s"


@pytest.fixture(scope="module", autouse=True)
def environment(tmp_path_factory):
    """Procedural videos, no DAVIS, one torch thread in every job (jobs inherit this environment:
    submitit's local executor and sbatch export it; conftest's :func:`procedural_environment`)."""
    with procedural_environment(tmp_path_factory, OMP_NUM_THREADS="1", MUJOCO_GL="egl"):
        yield


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def read_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return [{k: v for k, v in row.items() if k != TIMING} for row in csv.DictReader(f)]


# ------------------------------------------------------------------ grids and bad input
def test_paper_grid_dry_run_validates_540_runs_quickly(tmp_path, capsys):
    root = tmp_path / "paper"
    start = time.perf_counter()
    code, out, err = run_cli(["launch", PAPER / "paper.toml", "--root", root, "--dry-run"], capsys)
    seconds = time.perf_counter() - start
    assert code == 0, err
    assert out.startswith("dry run: 540 runs: 540 to submit") and "nothing submitted" in out
    assert seconds < 10
    assert not root.exists()
    runs = load_spec(PAPER / "paper.toml").runs()
    assert {r.values["condition"] for r in runs} == {"distractions", "low-capacity", "no-camera"}
    low = next(r for r in runs if r.name == "walker-walk__eps-r__low-capacity__seed4")
    assert low.config["capacity"] == "low" and low.config["camera"] and low.config["env_steps"] == 2_000_000
    assert low.config["beta"] == 0.5  # resolved: the per-method default filled in
    for name, field, value in (
        ("table1-distractions", "camera", True),
        ("table2-low-capacity", "capacity", "low"),
        ("table3-no-camera", "camera", False),
    ):
        table = load_spec(PAPER / f"{name}.toml").runs()
        assert len(table) == 180 and all(r.config[field] == value for r in table)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--grid", "task=cartpole-swingup,pong", "--grid", "method=drq"], "task: 'pong' is not one of"),
        (["--grid", "task=cartpole-swingup", "--grid", "method=drq,ppo"], "method: 'ppo' is not one of"),
        (["--grid", "task=cartpole-swingup", "--grid", "learning_rate=1,2"], "unknown field 'learning_rate'"),
        (["--grid", "task=cartpole-swingup", "--set", "capacity=huge"], "capacity: 'huge' is not one of"),
        (["--grid", "seed="], "seed has no values (empty grid)"),
        (["--set", "seed=1"], "empty grid"),
        (["--grid", "task=cartpole-swingup", "--grid", "env_steps=many"], "env_steps: 'many' is not int"),
    ],
)
def test_bad_grid_is_one_line_exit_2_nothing_written(tmp_path, capsys, args, message):
    root = tmp_path / "root"
    code, out, err = run_cli(["launch", "--root", root, *args], capsys)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert not root.exists()


def test_a_root_that_cannot_be_written_is_refused_even_in_a_dry_run(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    root = tmp_path / "f" / "sweep"
    code, out, err = run_cli(["launch", "--root", root, "--grid", "seed=0,1", "--dry-run"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: root: cannot write") and "is not a folder" in err, err


def test_bad_spec_file_fields(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('[grid]\ntask = ["cartpole-swingup"]\n[config]\nbogus = 1\n')
    code, _, err = run_cli(["launch", spec, "--root", tmp_path / "r", "--dry-run"], capsys)
    assert code == 2 and "config: unknown field 'bogus'" in err and err.count("\n") == 1
    spec.write_text('[grid]\ntask = []\n')
    code, _, err = run_cli(["launch", spec, "--root", tmp_path / "r", "--dry-run"], capsys)
    assert code == 2 and "task has no values (empty grid)" in err
    spec.write_text('[grid]\ntask = ["cartpole-swingup"]\n[slurm]\ngpus = 1\n')
    code, _, err = run_cli(["launch", spec, "--root", tmp_path / "r", "--dry-run"], capsys)
    assert code == 2 and "slurm: unknown option 'gpus'" in err


def test_unreachable_slurm_submits_nothing(tmp_path, capsys, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sinfo").write_text("#!/bin/sh\necho 'sinfo: error: Unable to contact slurm controller' >&2\nexit 1\n")
    (bin_dir / "sinfo").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    root = tmp_path / "root"
    code, out, err = run_cli(["launch", "--root", root, "--executor", "slurm", *GRID, *TINY], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "SLURM is not reachable: sinfo failed (sinfo: error: Unable to contact slurm controller)" in err
    assert not root.exists()


def test_root_of_another_grid_is_refused(tmp_path, capsys):
    root = tmp_path / "root"
    root.mkdir()
    (root / "notes.txt").write_text("mine")
    code, _, err = run_cli(["launch", "--root", root, *GRID, *TINY, "--dry-run"], capsys)
    assert code == 2 and "is not empty and holds no sweep.json" in err
    other = tmp_path / "other"
    _fake_sweep(other, ["--grid", "task=cartpole-swingup", "--grid", "method=drq", *TINY])
    before = sorted(p.name for p in other.rglob("*"))
    code, out, err = run_cli(["launch", "--root", other, *GRID, *TINY], capsys)
    assert code == 2 and out == "" and "belongs to a different grid" in err and err.count("\n") == 1
    assert sorted(p.name for p in other.rglob("*")) == before


def _fake_sweep(root: Path, args: list[str]) -> list[str]:
    """A sweep root written as launch writes it, without submitting (the runs' names)."""
    from agents.sweep.launch import launch

    parser = cli.build_parser()
    parsed = parser.parse_args(["launch", "--root", str(root), *args])
    spec = cli.spec_from_args(parsed)
    spec.name = root.name
    result = launch(spec, root, dry_run=True, log=lambda *_: None)
    from bisimkit.files import atomic_write_json
    from bisimkit_runs.sweeps import SWEEP_FILE

    runs = spec.runs()
    atomic_write_json(
        root / SWEEP_FILE,
        {"grid": spec.grid_record(), "runs": [{"name": r.name, "values": r.values, "config": r.config} for r in runs]},
    )
    assert result["runs"] == len(runs)
    return [r.name for r in runs]


# ------------------------------------------------------------------ failures, preemption hook, status
def test_three_failures_mark_a_run_failed_with_its_last_error(tmp_path, capsys):
    root = tmp_path / "root"
    names = _fake_sweep(root, ["--grid", "task=cartpole-swingup", "--grid", "method=drq,eps-r", *TINY])
    calls = []

    def broken(cfg, out, **kwargs):
        calls.append(out)
        raise RuntimeError(f"CUDA error: out of memory (call {len(calls)})\nsecond line")

    config = read_sweep(root)["runs"][0]["config"]
    assert run_one(root, names[0], config, trainer=broken) == "failed"
    state = read_state(root, names[0])
    assert len(calls) == MAX_FAILURES and state["status"] == "failed" and state["failures"] == MAX_FAILURES
    assert state["last_error"] == "RuntimeError: CUDA error: out of memory (call 3)"
    assert run_one(root, names[0], config, trainer=broken) == "failed" and len(calls) == MAX_FAILURES  # not retried
    # an attempt that vanished (SIGKILL, node failure) counts too: two of them, then one more error
    write_state(root, names[1], {}, status="running", attempts=2, failures=1, pid=2**22 + 1, host="elsewhere")
    assert run_one(root, names[1], config, trainer=broken) == "failed"
    assert len(calls) == MAX_FAILURES + 1
    runs = load_spec_like(root)
    todo = plan(root, runs)
    assert todo["failed"] == names and todo["submit"] == []
    assert plan(root, runs, retry_failed=True)["submit"] == names
    code, out, _ = run_cli(["status", root], capsys)
    assert code == 0
    assert "failed" in out.splitlines()[0] and "last error: RuntimeError: CUDA error" in out
    assert out.splitlines()[-1] == "2 runs: 2 failed"


def load_spec_like(root: Path):
    from agents.sweep.spec import RunSpec

    return [RunSpec(r["name"], r["values"], r["config"]) for r in read_sweep(root)["runs"]]


def test_checkpoint_hook_requeues_the_same_runs(tmp_path):
    root = tmp_path / "root"
    names = _fake_sweep(root, ["--grid", "task=cartpole-swingup", "--grid", "method=drq,eps-r", *TINY])
    job = SweepJob(root)
    job.current = names[1]
    write_state(root, names[1], {}, status="running", attempts=1)
    delayed = job.checkpoint(names)
    assert delayed.args == (names,) and isinstance(delayed.function, SweepJob)
    assert delayed.function.root == str(root.resolve())
    state = read_state(root, names[1])
    assert state["status"] == "requeued" and state["preemptions"] == 1
    lines, counts = status_lines(root)
    assert counts == {"pending": 2} and "requeued 1x" in lines[1]


# ------------------------------------------------------------------ sweeps that train
def launch_tiny(root: Path, executor: str, capsys, *extra) -> tuple[int, str, str]:
    return run_cli(["launch", "--root", root, "--executor", executor, "--time-min", "30", *GRID, *TINY, *extra], capsys)


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    """The tiny grid through submitit's local executor, 2 jobs at a time (the uninterrupted reference)."""
    root = tmp_path_factory.mktemp("local") / "sweep"
    code = cli.main(
        ["launch", "--root", str(root), "--executor", "local", "--parallel", "2", "--time-min", "30", *GRID, *TINY]
    )
    assert code == 0
    return root


def test_local_sweep_runs_skips_finished_and_gathers(local_sweep, tmp_path, capsys):
    root = local_sweep
    lines, counts = status_lines(root)
    assert counts == {"done": 8}, "\n".join(lines)
    assert lines[-1] == "8 runs: 8 done"
    assert "ball_in_cup-catch__eps-r__seed0  done" in "\n".join(lines) and "256/256 env steps" in lines[0]
    records = json.loads((root / "submissions.json").read_text())
    assert len(records) == 1 and records[0]["executor"] == "local" and len(records[0]["jobs"]) == 2
    code, out, _ = launch_tiny(root, "local", capsys)
    assert code == 0 and out.startswith("nothing to submit: 8 runs: 0 to submit, 8 done")
    # gather: the paper's table, curves, the tidy CSV
    result = gather(root, tmp_path / "out")
    assert result["missing"] == [] and result["with_evaluations"] == 8
    table = (tmp_path / "out" / "table-all.md").read_text()
    assert "| DrQ | " in table and "seeds per cell: 2" in table and "All 8 runs of this condition are done" in table
    assert (tmp_path / "out" / "curves-all.png").stat().st_size > 0
    rows = list(csv.DictReader(open(tmp_path / "out" / "evaluations.csv")))
    assert len(rows) == 8 * 5 and {r["task"] for r in rows} == {"cartpole-swingup", "ball_in_cup-catch"}
    assert rows[0]["run"] == "cartpole-swingup__drq__seed0" and rows[0]["status"] == "done"
    # a partial sweep: one run not done, its folder gone
    partial = tmp_path / "partial"
    shutil.copytree(root, partial, ignore=shutil.ignore_patterns("buffer", "submitit"))
    shutil.rmtree(partial / "runs" / PREEMPTED)
    write_state(partial, PREEMPTED, {}, status="pending")
    result = gather(partial, tmp_path / "out2")
    assert result["missing"] == [f"all: {PREEMPTED} (pending, no evaluation yet)"]
    table = (tmp_path / "out2" / "table-all.md").read_text()
    assert "seeds per cell: 2 (except ε-R/BiC: 1)" in table and "Missing: 1 of 8 runs" in table


def _preempt_when_checkpointed(root: Path, name: str, timeout: float = 240) -> str:
    """Wait until run ``name`` has a checkpoint and is not done, then send its job USR2 (submitit: preempted).
    Returns the job id."""
    folder, deadline = root / "runs" / name, time.monotonic() + timeout
    while True:
        state = read_state(root, name)
        assert state.get("status") != "done", "the run ended before it could be preempted"
        if state.get("status") == "running" and (folder / "checkpoint.pt").is_file():
            break
        assert time.monotonic() < deadline, f"no checkpoint of {name} after {timeout} s: {state}"
        time.sleep(0.02)
    job = state["job_id"]
    subprocess.run(["scancel", "--signal=USR2", job], check=True, timeout=30)
    return job


def _release_when_requeued(job: str, root: Path, name: str, timeout: float = 120) -> None:
    """SLURM holds a requeued job for 2 min (BeginTime); start it now instead (the scheduler's delay, not ours)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T %r"], capture_output=True, text=True, timeout=30)
        if "BeginTime" in out.stdout:
            subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], timeout=30)
            return
        if read_state(root, name).get("status") == "done":
            return
        time.sleep(0.2)
    pytest.fail(f"job {job} was not requeued within {timeout} s")


def test_slurm_sweep_survives_preemption_and_matches_local(slurm, local_sweep, tmp_path, capsys):
    root = tmp_path / "slurm-sweep"
    code, out, err = launch_tiny(root, "slurm", capsys, "--cpus-per-run", "1")
    assert code == 0, err
    assert "submitted 8 run(s) in 8 slurm job(s)" in out
    job = _preempt_when_checkpointed(root, PREEMPTED)
    _release_when_requeued(job, root, PREEMPTED)
    from agents.sweep.launch import wait

    statuses = wait(root, [r["name"] for r in read_sweep(root)["runs"]], timeout=300, poll=0.5)
    assert set(statuses.values()) == {"done"}, statuses
    state = read_state(root, PREEMPTED)
    assert state["preemptions"] == 1 and state["attempts"] == 2 and state.get("failures", 0) == 0
    for run in read_sweep(root)["runs"]:
        name = run["name"]
        assert read_rows(root / "runs" / name / "eval.csv") == read_rows(local_sweep / "runs" / name / "eval.csv"), name
    code, out, _ = run_cli(["status", root], capsys)
    assert code == 0 and out.splitlines()[-1] == "8 runs: 8 done" and "requeued 1x" in out
    code, out, _ = launch_tiny(root, "slurm", capsys)  # launching again submits nothing
    assert code == 0 and out.startswith("nothing to submit")
    gather(root, tmp_path / "slurm-out")
    gather(local_sweep, tmp_path / "local-out")
    for name in ("table-all.md", "evaluations.csv"):
        got, want = (tmp_path / "slurm-out" / name).read_text(), (tmp_path / "local-out" / name).read_text()
        if name == "evaluations.csv":
            got, want = (_without_column(t, TIMING) for t in (got, want))
        assert got == want, name


def _without_column(text: str, column: str) -> list[dict]:
    return [{k: v for k, v in row.items() if k != column} for row in csv.DictReader(text.splitlines())]


def test_killed_run_resumes_when_the_sweep_is_launched_again(local_sweep, tmp_path, capsys):
    """SIGKILL (out of memory, node failure: no record) mid-run; launching the same sweep again counts one
    failure and resumes from the last checkpoint to the uninterrupted run's eval.csv."""
    import signal

    root = tmp_path / "one"
    grid = ["--grid", "task=ball_in_cup-catch", "--grid", "method=eps-r", "--grid", "seed=0"]
    code, out, err = run_cli(["launch", "--root", root, "--executor", "local", "--no-wait", *grid, *TINY], capsys)
    assert code == 0, err
    folder, deadline = root / "runs" / PREEMPTED, time.monotonic() + 240
    while not (read_state(root, PREEMPTED).get("status") == "running" and (folder / "checkpoint.pt").is_file()):
        assert read_state(root, PREEMPTED).get("status") != "done", "the run ended before it could be killed"
        assert time.monotonic() < deadline, "no checkpoint after 240 s"
        time.sleep(0.02)
    pid = read_state(root, PREEMPTED)["pid"]
    os.kill(pid, signal.SIGKILL)
    while pid_alive(pid):  # SIGKILL is delivered at once, but the process takes a moment to exit
        assert time.monotonic() < deadline, f"process {pid} still alive after SIGKILL"
        time.sleep(0.02)
    code, out, err = run_cli(["launch", "--root", root, "--executor", "local", *grid, *TINY], capsys)
    assert code == 0 and "submitted 1 run(s)" in out, err
    state = read_state(root, PREEMPTED)
    assert state["status"] == "done" and state["failures"] == 1 and state["attempts"] == 2
    assert "ended without a record" in state["last_error"]
    assert read_rows(folder / "eval.csv") == read_rows(local_sweep / "runs" / PREEMPTED / "eval.csv")


def test_carla_sweep_file_validates_and_gathers_into_the_carla_table(tmp_path):
    """The CARLA sweep file (no server needed to build and validate it) and gather's CARLA table:
    a condition of carla-highway runs only gets the paper's layout, ours beside the paper's values."""
    from bisimkit.files import atomic_write_json
    from bisimkit_runs.sweeps import RUNS_DIR, SWEEP_FILE
    from figures.sweep_report import gather

    spec = load_spec(Path(__file__).resolve().parents[1] / "agents" / "sweep" / "paper" / "carla.toml")
    runs = spec.runs()
    assert len(runs) == 25 and {r.config["task"] for r in runs} == {"carla-highway"}
    root = tmp_path / "carla"
    atomic_write_json(
        root / SWEEP_FILE,
        {"grid": spec.grid_record(), "runs": [{"name": r.name, "values": r.values, "config": r.config} for r in runs]},
    )
    for k, run in enumerate(r for r in runs if r.values["seed"] in (0, 1)):
        folder = root / RUNS_DIR / run.name
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps({"config": run.config, "device": "cpu"}))
        (folder / "eval.csv").write_text(
            f"env_step,mean_return,std_return,episodes,split,elapsed_s\n500000,{100 + k},0,10,eval,1.0\n"
        )
    result = gather(root, tmp_path / "out")
    table = (tmp_path / "out" / "tables.md").read_text()
    assert "| Method | CARLA highway (ours) | paper |" in table and "168 ± 9" in table
    assert result["with_evaluations"] == 10 and "25 of 25 runs of this condition are not done" in table
