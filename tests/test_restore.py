"""Finding and reading a run's checkpoint: a run folder or the file, refused in one line otherwise."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import pytest  # noqa: E402
from test_checkpoint import sample_checkpoint  # noqa: E402

from agents.checkpoint import CHECKPOINT  # noqa: E402
from agents.config import TrainConfig  # noqa: E402
from agents.restore import read_checkpoint, resolve_checkpoint  # noqa: E402
from bisimkit.errors import InputError  # noqa: E402


def test_a_run_folder_or_the_file_itself(tmp_path):
    sample_checkpoint().save(tmp_path / CHECKPOINT)
    assert resolve_checkpoint(tmp_path) == tmp_path / CHECKPOINT == resolve_checkpoint(tmp_path / CHECKPOINT)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"^checkpoint: folder .*empty holds no checkpoint\.pt \(is it a run"):
        resolve_checkpoint(tmp_path / "empty")
    with pytest.raises(InputError, match=r"^checkpoint: no such file or folder: .*missing$"):
        resolve_checkpoint(tmp_path / "missing")


def test_the_checkpoint_and_its_config_are_read_as_data(tmp_path):
    sample_checkpoint(t=5).save(tmp_path / CHECKPOINT)
    path, checkpoint, config = read_checkpoint(tmp_path)
    assert path == tmp_path / CHECKPOINT and checkpoint.t == 5 and config == TrainConfig()
    sample_checkpoint(config={**TrainConfig().to_dict(), "k_views": 2}).save(tmp_path / CHECKPOINT)
    with pytest.raises(InputError, match=r"^checkpoint: .*checkpoint\.pt: config: unknown field\(s\) k_views"):
        read_checkpoint(tmp_path)
