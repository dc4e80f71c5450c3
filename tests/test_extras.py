"""A missing optional extra is one line naming the extra to install, exit 2, no traceback (each entry
point run in a subprocess with the module hidden from imports)."""

import subprocess
import sys
from pathlib import Path

import pytest

from bisimkit.extras import EXTRAS, missing_extra

ROOT = Path(__file__).resolve().parents[1]

#: Runs the module ``argv[1]`` as __main__ with the top-level modules in ``argv[2]`` (comma-separated)
#: made unimportable, the rest of ``argv`` as its arguments.
HIDE = """
import runpy, sys
hidden = set(sys.argv[2].split(","))

class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in hidden:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Hide())
module = sys.argv[1]
sys.argv = [module] + sys.argv[3:]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def run_hidden(module: str, hidden: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", HIDE, module, hidden, *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    "module, hidden, args, extra",
    [
        (
            "agents.train",
            "dm_control,distracting_control",
            ["--task", "reacher-easy", "--env-steps", "4000", "--seed-steps", "10"],
            "agents",
        ),
        ("agents.train", "torch", ["--task", "reacher-easy", "--env-steps", "4000", "--seed-steps", "10"], "torch"),
        (
            "agents.train",
            "wandb",
            ["--task", "reacher-easy", "--env-steps", "4000", "--seed-steps", "10", "--wandb", "my-project"],
            "wandb",
        ),
        ("agents.evaluate", "torch", ["RUN"], "torch"),
        ("figures.nearest_neighbours", "torch", ["RUN"], "torch"),
        ("benchmarks.learning_check", "torch", ["--out", "RUN"], "torch"),
    ],
)
def test_entry_points_name_the_missing_extra(tmp_path, module, hidden, args, extra):
    args = [str(tmp_path / "run") if a == "RUN" else a for a in args]
    if module == "agents.train":
        args += ["--out", str(tmp_path / "run")]
    proc = run_hidden(module, hidden, *args)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines[0].startswith("error: ") and f"pip install -e '.[{extra}]'" in lines[0], lines[0]
    assert not (tmp_path / "run").exists()  # nothing written


def test_importing_the_losses_without_torch_says_which_extra():
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            HIDE.replace("runpy.run_module(module, run_name=\"__main__\", alter_sys=True)", "import bisimkit.losses"),
            "bisimkit.losses",
            "torch",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1
    assert "bisimkit.losses needs torch, which is not installed: pip install -e '.[torch]'" in proc.stderr


def test_messages_name_the_module_and_the_extra():
    assert missing_extra(ModuleNotFoundError("x", name="dm_control.suite")) == (
        "dm_control is not installed; it comes with the 'agents' extra: pip install -e '.[agents]'"
    )
    assert missing_extra(ModuleNotFoundError("x", name="numpy")) is None  # a core dependency: not an extra
    assert missing_extra(ModuleNotFoundError("x", name="gymnasium")) == (
        "gymnasium is not installed; it comes with the 'gym' extra: pip install -e '.[gym]'"
    )
    assert set(EXTRAS.values()) <= {"torch", "agents", "test", "gym", "wandb", "storm"}
    assert missing_extra(ModuleNotFoundError("x", name="stormpy")) == (
        "stormpy is not installed; it comes with the 'storm' extra: pip install -e '.[storm]'"
    )
