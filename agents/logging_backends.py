"""Where a training run's scalars and frames go besides its CSV files: TensorBoard and Weights & Biases.

The CSV files (``train.csv``, ``eval.csv``; :class:`agents.train.CsvLog`) are the run's record.
:class:`Scalars` hands every logged row to each backend behind one interface,
``add(prefix, row, step)``, ``add_frames(tag, frames, step)`` and ``close()``, with ``step``
the environment step:

* :class:`TensorBoard` writes ``RUN/tb/`` with torch's ``SummaryWriter`` (the ``tensorboard``
  package, extra ``tensorboard``): the scalars of every row as ``PREFIX/NAME`` and the frames as
  images; :meth:`TensorBoard.describe` says in one line whether it is on and, if not, why;
* :class:`WandB` logs the same scalars to a Weights & Biases run (``--wandb PROJECT``, extra
  ``wandb``); frames are not sent.

What a run logs (``agents.train.Trainer``): ``train/*`` (each training episode's ``train.csv`` row),
``eval/*`` and ``eval_train/*`` (each evaluation row), ``metric/*`` (the learned-metric losses of the
methods that learn one, :data:`METRIC_LOSSES`, from the same training row) and, at the start of the
first training episode and of the first episode after each evaluation, ``frames/train``: the
observation's stacked frames side by side, backgrounds and camera distraction as the agent sees them.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import numpy as np

from bisimkit.files import atomic_write_text
from bisimkit_runs.files import METRIC_LOSSES

#: The extra to install for TensorBoard.
TENSORBOARD_HINT = "pip install -e '.[tensorboard]'"


def numeric(row: dict) -> dict[str, float]:
    """The numeric fields of ``row`` but ``env_step`` (the step every scalar is logged against)."""
    return {
        key: value
        for key, value in row.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "env_step"
    }


def metric_row(row: dict) -> dict[str, float]:
    """The learned-metric losses in a training row (empty for methods without one)."""
    return {key: row[key] for key in METRIC_LOSSES if isinstance(row.get(key), (int, float))}


def frame_strip(obs: np.ndarray) -> np.ndarray:
    """A stacked observation ``(3 k, H, W)`` uint8 as one ``(H, k W, 3)`` image, oldest frame left."""
    obs = np.asarray(obs)
    if obs.ndim != 3 or obs.shape[0] % 3:
        raise ValueError(f"frames: expected a (3k, H, W) observation, got shape {obs.shape}")
    frames = obs.reshape(obs.shape[0] // 3, 3, *obs.shape[1:])
    return np.concatenate([f.transpose(1, 2, 0) for f in frames], axis=1).astype(np.uint8)


class TensorBoard:
    """Scalars and frames to ``folder`` (``RUN/tb``) through torch's ``SummaryWriter``; ``enabled=False``
    (``--no-tensorboard``) or a missing ``tensorboard`` package turn it off, which :meth:`describe` says."""

    def __init__(self, folder: Path, enabled: bool):
        self.folder, self.writer, self.reason = Path(folder), None, "--no-tensorboard"
        if enabled:
            try:
                from torch.utils.tensorboard import SummaryWriter  # the tensorboard extra, only with --tensorboard
            except ImportError:
                self.reason = f"the tensorboard package is not installed: {TENSORBOARD_HINT}"
            else:
                self.writer = SummaryWriter(str(self.folder))

    @property
    def on(self) -> bool:
        """Whether events are being written."""
        return self.writer is not None

    def describe(self) -> str:
        """One line for the run's first line: ``TensorBoard on (RUN/tb)`` or ``TensorBoard off (why)``."""
        return f"TensorBoard on ({self.folder})" if self.on else f"TensorBoard off ({self.reason})"

    def add(self, prefix: str, row: dict, step: int) -> None:
        if self.writer is not None:
            for key, value in numeric(row).items():
                self.writer.add_scalar(f"{prefix}/{key}", value, step)

    def add_frames(self, tag: str, obs: np.ndarray, step: int) -> None:
        if self.writer is not None:
            self.writer.add_image(tag, frame_strip(obs), step, dataformats="HWC")

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class WandB:
    """The same scalars as :class:`TensorBoard` in a Weights & Biases run of ``project`` (``--wandb``);
    nothing (and no ``import wandb``) without a project. wandb's own settings apply:
    ``WANDB_MODE=offline`` writes the run under ``OUT/wandb`` for a later ``wandb sync``. A resumed
    run continues the same W&B run (its id is kept in ``OUT/wandb_run_id``)."""

    ID_FILE = "wandb_run_id"

    def __init__(self, project: str | None, folder: Path, config: dict, name: str):
        self.run = None
        if not project:
            return
        import wandb  # the wandb extra, only with --wandb

        id_path = folder / self.ID_FILE
        run_id = id_path.read_text().strip() if id_path.exists() else secrets.token_hex(4)
        self.run = wandb.init(project=project, dir=str(folder), config=config, name=name, id=run_id, resume="allow")
        atomic_write_text(id_path, run_id)
        self.run.define_metric("env_step")
        self.run.define_metric("*", step_metric="env_step")

    def add(self, prefix: str, row: dict, step: int) -> None:
        if self.run is not None:
            data = {f"{prefix}/{key}": value for key, value in numeric(row).items()}
            self.run.log({**data, "env_step": step})

    def add_frames(self, tag: str, obs: np.ndarray, step: int) -> None:
        """Frames go to TensorBoard only."""

    def close(self) -> None:
        if self.run is not None:
            self.run.finish()
            self.run = None


class Scalars:
    """Each row (and frame) to every backend (TensorBoard, W&B)."""

    def __init__(self, *logs):
        self.logs = logs

    def add(self, prefix: str, row: dict, step: int) -> None:
        for log in self.logs:
            log.add(prefix, row, step)

    def add_frames(self, tag: str, obs: np.ndarray, step: int) -> None:
        for log in self.logs:
            log.add_frames(tag, obs, step)

    def close(self) -> None:
        for log in self.logs:
            log.close()
