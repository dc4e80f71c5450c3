"""The logging backends' helpers: the frame strip of a stacked observation."""

import numpy as np
import pytest


def test_frame_strip_refuses_a_shape_it_cannot_split():
    from agents.logging_backends import frame_strip

    assert frame_strip(np.arange(6 * 2 * 2, dtype=np.uint8).reshape(6, 2, 2)).shape == (2, 4, 3)
    with pytest.raises(ValueError, match="^frames: "):
        frame_strip(np.zeros((4, 2, 2), np.uint8))


def test_numeric_fields_but_the_step_and_the_metric_losses():
    from agents.logging_backends import metric_row, numeric
    from bisimkit_runs.files import METRIC_LOSSES

    row = {"env_step": 10, "loss": 0.5, "done": True, "split": "eval", "episodes": 3}
    assert numeric(row) == {"loss": 0.5, "episodes": 3}
    name = METRIC_LOSSES[0]
    assert metric_row({name: 1.5, "loss": 2.0}) == {name: 1.5} and metric_row({name: None}) == {}


def test_the_strip_puts_the_oldest_frame_left():
    from agents.logging_backends import frame_strip

    obs = np.zeros((6, 1, 1), np.uint8)
    obs[:3] = 1  # the oldest frame
    obs[3:] = 2
    assert frame_strip(obs)[0].tolist() == [[1, 1, 1], [2, 2, 2]]


def test_every_backend_gets_each_row_and_off_is_said(tmp_path):
    from agents.logging_backends import Scalars, TensorBoard, WandB

    class Recorder:
        def __init__(self):
            self.rows, self.closed = [], False

        def add(self, prefix, row, step):
            self.rows.append((prefix, row, step))

        def add_frames(self, tag, obs, step):
            self.rows.append((tag, None, step))

        def close(self):
            self.closed = True

    a, b = Recorder(), Recorder()
    log = Scalars(a, b)
    log.add("train", {"loss": 1.0}, 5)
    log.add_frames("eval/frames", np.zeros((3, 2, 2), np.uint8), 5)
    log.close()
    assert a.rows == b.rows == [("train", {"loss": 1.0}, 5), ("eval/frames", None, 5)] and a.closed and b.closed
    off = TensorBoard(tmp_path / "tb", enabled=False)
    assert not off.on and off.describe() == "TensorBoard off (--no-tensorboard)" and not (tmp_path / "tb").exists()
    assert WandB(None, tmp_path, {}, "run").run is None
