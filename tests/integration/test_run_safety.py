"""Run folders from someone else are read as data: a checkpoint that would run code is refused by every
entry point that opens one, and truncated, empty or foreign files are one line naming the file."""

import json
import os

os.environ.setdefault("MUJOCO_GL", "egl")

import pytest  # noqa: E402
import torch  # noqa: E402
from test_checkpoint import Payload, sample_checkpoint  # noqa: E402

from agents.checkpoint import CHECKPOINT  # noqa: E402
from agents.config import TrainConfig  # noqa: E402
from agents.evaluate import main as evaluate_main  # noqa: E402
from agents.train import main as train_main  # noqa: E402
from bisimkit.errors import InputError  # noqa: E402
from bisimkit_runs.runs import find_runs  # noqa: E402
from figures.learning_curves import main as curves_main  # noqa: E402
from figures.nearest_neighbours.__main__ import main as neighbours_main  # noqa: E402


def one_error(capsys, *needles: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    for needle in needles:
        assert needle in err[0], err[0]
    return err[0]


def test_every_entry_point_refuses_a_checkpoint_that_would_run_code(tmp_path, capsys):
    marker, run = tmp_path / "marker", tmp_path / "run"
    run.mkdir()
    torch.save({**vars(sample_checkpoint()), "agent": {"networks": {}, "evil": Payload(marker)}}, run / CHECKPOINT)
    assert train_main(["--resume", "--out", str(run), "--quiet", "--no-tensorboard"]) == 2
    one_error(capsys, str(run / CHECKPOINT), "holds getattr (code, not data)")
    assert evaluate_main([str(run), "--device", "cpu"]) == 2
    one_error(capsys, "holds getattr (code, not data)")
    assert neighbours_main([str(run), "--out", str(tmp_path / "nn.png"), "--device", "cpu"]) == 2
    one_error(capsys, "holds getattr (code, not data)")
    assert not marker.exists() and not (tmp_path / "nn.png").exists()
    assert sorted(p.name for p in run.iterdir()) == [CHECKPOINT]  # the resume wrote nothing


def test_a_truncated_checkpoint_is_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    sample_checkpoint().save(run / CHECKPOINT)
    data = (run / CHECKPOINT).read_bytes()
    (run / CHECKPOINT).write_bytes(data[: len(data) // 2])
    assert evaluate_main([str(run), "--device", "cpu"]) == 2
    one_error(capsys, "checkpoint: cannot read", str(run / CHECKPOINT))


def test_a_file_that_is_not_a_torch_file_is_one_line_saying_so(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / CHECKPOINT).write_text("not a checkpoint\n")
    assert evaluate_main([str(run), "--device", "cpu"]) == 2
    line = one_error(capsys, "checkpoint: cannot read", "not a file written by torch.save")
    assert "code" not in line


def test_a_checkpoint_config_with_an_unknown_field_or_a_wrong_type_is_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    for config, needle in (
        ({**TrainConfig().to_dict(), "k_views": 2}, "config: unknown field(s) k_views"),
        ({**TrainConfig().to_dict(), "batch_size": "512"}, "batch_size: '512' is not a positive"),
    ):
        sample_checkpoint(config=config).save(run / CHECKPOINT)
        assert evaluate_main([str(run), "--device", "cpu"]) == 2
        one_error(capsys, str(run / CHECKPOINT), needle)


def run_folder(tmp_path, eval_text: str, config: dict | None = None):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(
        json.dumps({"config": config or {"task": "walker-walk", "method": "drq", "seed": 0}})
    )
    (run / "eval.csv").write_text(eval_text)
    return run


def test_an_empty_eval_csv_is_one_line_naming_it(tmp_path, capsys):
    run = run_folder(tmp_path, "")
    with pytest.raises(InputError, match=r"^eval\.csv: .*run/eval\.csv is empty"):
        find_runs(run)
    assert curves_main([str(run), "--out", str(tmp_path / "c.png")]) == 2
    one_error(capsys, "eval.csv", "is empty")


def test_a_config_json_of_another_shape_is_one_line_naming_it(tmp_path, capsys):
    run = run_folder(
        tmp_path, "env_step,mean_return\n0,1.0\n", {"task": "walker-walk", "method": "drq", "seed": "first"}
    )
    assert curves_main([str(run), "--out", str(tmp_path / "c.png")]) == 2
    one_error(capsys, "config.json", str(run / "config.json"))
    (run / "config.json").write_text("{not json")
    assert curves_main([str(run), "--out", str(tmp_path / "c.png")]) == 2
    one_error(capsys, "config.json", str(run / "config.json"))
