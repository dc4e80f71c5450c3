"""The training checkpoint: one declared structure, written atomically, read as data only.

A :class:`Checkpoint` is everything a run needs to continue exactly where it
stopped (the agent's networks and optimisers, the replay count, the random
generators, the loop counters, how many rows each CSV log had). It is saved
with ``torch.save`` to a temporary file and renamed, and loaded with
``torch.load(weights_only=True)``: only tensors, numbers, strings, lists,
tuples and dicts are accepted, so opening someone else's checkpoint cannot
run code. A file holding anything else, a truncated file, or one from another
format version is refused with one line naming the file.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path

from bisimkit.errors import InputError
from bisimkit.files import atomic_write

CHECKPOINT = "checkpoint.pt"
FORMAT = 2  # 1: the dict of the first releases (string keys, no version)


@dataclass
class Checkpoint:
    """The state of a run at an episode end (see the module doc)."""

    config: dict  # the run's resolved TrainConfig.to_dict()
    agent: dict  # Agent.training_state(): networks, optimisers, update count
    t: int  # agent steps done
    episode: int  # training episodes finished
    buffer_total: int  # transitions ever added to the replay (its chunks hold them)
    numpy_rng: dict  # the replay sampler's / seed actions' generator state
    torch_rng: dict  # {'torch': CPU generator state, 'cuda': [per-device states]}
    last_checkpoint: int  # environment steps at this checkpoint
    last_eval_step: int  # environment steps of the last evaluation (-1: none yet)
    elapsed_s: float  # training seconds so far
    recent_returns: list  # the last (up to 5) training episode returns
    csv_rows: dict  # rows each CSV log held at this checkpoint, by file name
    complete: bool  # the run reached env_steps
    format: int = FORMAT

    def save(self, path: str | os.PathLike) -> None:
        """``torch.save`` to a temporary file, then rename: a crash never leaves half a checkpoint."""
        import torch  # torch, the agents' extra: reading run files needs none

        atomic_write(Path(path), lambda fh: torch.save(dataclasses.asdict(self), fh))

    @classmethod
    def load(cls, path: str | os.PathLike, device="cpu") -> "Checkpoint":
        """Read a checkpoint as data only (see the module doc); every problem is one :class:`InputError`."""
        state = _load_data(Path(path), device)
        if not isinstance(state, dict):
            raise InputError(
                f"checkpoint: {path} is not an agents.train checkpoint (holds a {type(state).__name__}, not a dict)"
            )
        version = state.get("format", 1)
        if version != FORMAT:
            raise InputError(
                f"checkpoint: {path} has format {version!r}; this version of agents reads "
                f"format {FORMAT} (train the run again, or use the release that wrote it)"
            )
        names = {f.name for f in dataclasses.fields(cls)}
        missing, unknown = sorted(names - set(state) - {"format"}), sorted(set(state) - names)
        if missing or unknown:
            raise InputError(
                f"checkpoint: {path} is not an agents.train checkpoint "
                f"({'missing ' + ', '.join(missing) if missing else 'unknown ' + ', '.join(unknown)})"
            )
        for f in dataclasses.fields(cls):
            want = {"dict": dict, "int": int, "float": (int, float), "list": list, "bool": bool}[str(f.type)]
            value = state[f.name]
            if not isinstance(value, want) or (want is int and isinstance(value, bool)):
                raise InputError(f"checkpoint: {path}: {f.name} is a {type(value).__name__}, expected {f.type}")
        if not isinstance(state["agent"].get("networks"), dict):
            raise InputError(f"checkpoint: {path} holds no agent networks")
        return cls(**state)


def _load_data(path: Path, device) -> object:
    import torch  # torch, the agents' extra: reading run files needs none

    if not path.is_file():
        raise InputError(f"checkpoint: no such file: {path}")
    try:
        return torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        if not found and re.search(r"Unsupported operand|invalid load key", str(exc)):
            raise InputError(
                f"checkpoint: cannot read {path}: not a file written by torch.save (its bytes are not a pickle stream)"
            ) from None
        what = found.group(1) if found else "an object that is not plain data"
        raise InputError(
            f"checkpoint: {path} holds {what} (code, not data); refusing to load it "
            f"(checkpoints hold only tensors, numbers, strings, lists and dicts)"
        ) from None
    except Exception as exc:  # noqa: BLE001  (a truncated, empty or foreign file)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"checkpoint: cannot read {path}: {reason}") from None


def load_checkpoint(path: str | os.PathLike, device="cpu") -> Checkpoint:
    """:meth:`Checkpoint.load`."""
    return Checkpoint.load(path, device)


@dataclass
class Counters:
    """The training loop's counters: what a checkpoint restores besides networks, replay and generators."""

    t: int = 0  # agent steps done
    episode: int = 0  # training episodes finished
    last_checkpoint: int = 0  # environment steps at the last checkpoint
    last_eval_step: int = -1  # environment steps of the last evaluation (-1: none yet)
    elapsed_before: float = 0.0  # training seconds before this process started
    recent: list = field(default_factory=list)  # the last 5 training episode returns

    @classmethod
    def of(cls, checkpoint: Checkpoint) -> "Counters":
        """The counters a checkpoint recorded."""
        return cls(
            checkpoint.t,
            checkpoint.episode,
            checkpoint.last_checkpoint,
            checkpoint.last_eval_step,
            checkpoint.elapsed_s,
            list(checkpoint.recent_returns),
        )
