"""The checkpoint format: a checkpoint round-trips as data, and one holding code, truncated, empty or of another
format is refused in one line without running anything."""

import os
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import pytest  # noqa: E402
import torch  # noqa: E402

from agents.checkpoint import CHECKPOINT, Checkpoint  # noqa: E402
from agents.config import TrainConfig  # noqa: E402
from bisimkit.errors import InputError  # noqa: E402


def sample_checkpoint(**changes) -> Checkpoint:
    base = dict(
        config=TrainConfig().to_dict(),
        agent={"networks": {"w": torch.zeros(2)}, "updates": 0},
        t=1,
        episode=0,
        buffer_total=1,
        numpy_rng={"bit_generator": "PCG64", "state": {"state": 1, "inc": 3}},
        torch_rng={"torch": torch.get_rng_state()},
        last_checkpoint=8,
        last_eval_step=0,
        elapsed_s=1.0,
        recent_returns=[],
        csv_rows={"train.csv": 1},
        complete=False,
    )
    return Checkpoint(**{**base, **changes})


def test_checkpoint_round_trips_as_data(tmp_path):
    path = tmp_path / CHECKPOINT
    sample_checkpoint().save(path)
    back = Checkpoint.load(path)
    assert (
        back.t == 1 and back.csv_rows == {"train.csv": 1} and torch.equal(back.agent["networks"]["w"], torch.zeros(2))
    )


class Payload:
    """A pickle that would create a marker file when loaded with weights_only=False."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_checkpoint_holding_code_is_refused_and_never_run(tmp_path):
    marker, path = tmp_path / "marker", tmp_path / CHECKPOINT
    torch.save({**vars(sample_checkpoint()), "agent": {"networks": {}, "evil": Payload(marker)}}, path)
    with pytest.raises(InputError, match=r"^checkpoint: .* holds getattr \(code, not data\); refusing to load it"):
        Checkpoint.load(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "cannot read"),
        (b"PK\x03\x04 truncated", "cannot read"),
    ],
)
def test_truncated_or_empty_checkpoint_is_one_error(tmp_path, content, message):
    path = tmp_path / CHECKPOINT
    path.write_bytes(content)
    with pytest.raises(InputError, match=f"^checkpoint: {message}"):
        Checkpoint.load(path)


def test_checkpoint_of_another_format_is_refused(tmp_path):
    path = tmp_path / CHECKPOINT
    torch.save({"config": {}, "agent": {}, "t": 3}, path)  # the first releases' dict
    with pytest.raises(InputError, match="has format 1; this version of agents reads format 2"):
        Checkpoint.load(path)
    torch.save({**vars(sample_checkpoint()), "t": "three"}, path)
    with pytest.raises(InputError, match="t is a str, expected int"):
        Checkpoint.load(path)
