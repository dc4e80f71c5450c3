"""A replay buffer of pixel transitions that checkpoints in append-only chunks.

A transition is stored as its observation stack (uint8, 3F x H x W), the one
new frame of the next observation (3 x H x W; the next stack is the current
one shifted by a frame), the action, the reward and the bootstrap discount
(0 only at a true terminal; DCS episodes end by time limit, so 1). That is
(F + 1) / (2F) of the memory of storing both stacks. Transition k lives in
slot ``k % capacity``; arrays are allocated lazily, so a small run touches
little memory.

Checkpoints never rewrite the buffer: :meth:`ReplayBuffer.save_chunk` writes
the transitions added since the last call to a new file, and
:meth:`ReplayBuffer.load_chunks` replays the chunk files in order up to the
count a checkpoint recorded, which puts every transition back in its slot.
A chunk is deleted once the previous checkpoint does not need it (all its
transitions were overwritten before that checkpoint), so a run killed between
writing a chunk and its checkpoint still resumes from the previous one.

On a GPU, ``mirror_device='cuda'`` keeps a copy of the pixel arrays in GPU
memory (8.5 GB at the paper's 100k capacity) so a batch is gathered there
instead of being copied from host memory every update; the host arrays stay
the source of truth for checkpoints, and the batch indices come from the same
numpy generator either way.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from bisimkit.files import atomic_write

CHUNK = re.compile(r"^chunk-(\d{10})-(\d{10})\.npz$")
#: The stored arrays, in the order of ReplayBuffer.add's arguments; the pixel ones are mirrored on a GPU.
FIELDS = ("obs", "action", "reward", "discount", "next_frame")
PIXELS = ("obs", "next_frame")


class ReplayBuffer:
    """Circular storage of (obs, action, reward, discount, next frame); see the module doc."""

    def __init__(
        self, capacity: int, obs_shape: tuple[int, int, int], action_dim: int, mirror_device: str | None = None
    ):
        if capacity < 1:
            raise ValueError(f"capacity: {capacity} is not positive")
        channels, height, width = obs_shape
        if channels % 3:
            raise ValueError(f"obs_shape: {obs_shape} does not hold whole RGB frames")
        self.capacity, self.obs_shape, self.action_dim = int(capacity), tuple(obs_shape), int(action_dim)
        self.obs = np.empty((capacity, channels, height, width), np.uint8)
        self.next_frame = np.empty((capacity, 3, height, width), np.uint8)
        self.action = np.empty((capacity, action_dim), np.float32)
        self.reward = np.empty((capacity,), np.float32)
        self.discount = np.empty((capacity,), np.float32)
        self.total = 0  # transitions ever added
        self.saved = 0  # transitions written to chunk files
        self.mirror = None
        if mirror_device is not None:
            import torch  # torch, the agents' extra: the buffer itself is numpy

            self.mirror = {
                name: torch.empty(getattr(self, name).shape, dtype=torch.uint8, device=mirror_device) for name in PIXELS
            }

    def __len__(self) -> int:
        return min(self.total, self.capacity)

    def add(self, obs: np.ndarray, action: np.ndarray, reward: float, discount: float, next_obs: np.ndarray) -> None:
        """Store one transition (``next_obs`` is the full next stack; only its last frame is kept)."""
        i = self.total % self.capacity
        for name, value in zip(FIELDS, (obs, action, reward, discount, next_obs[-3:])):
            getattr(self, name)[i] = value
        if self.mirror is not None:
            self._upload(np.array([i]))
        self.total += 1

    def _upload(self, slots: np.ndarray) -> None:
        import torch  # torch, the agents' extra: the buffer itself is numpy

        index = torch.as_tensor(slots, device=self.mirror["obs"].device)
        for name in PIXELS:
            self.mirror[name][index] = torch.as_tensor(getattr(self, name)[slots]).to(index.device)

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict:
        """A uniform batch (with replacement): obs, action, reward, discount, next_obs
        (numpy arrays; the pixels as torch tensors on the mirror's device when there is one)."""
        if len(self) == 0:
            raise ValueError("sample: the buffer is empty")
        idx = rng.integers(0, len(self), size=batch_size)
        if self.mirror is not None:
            import torch  # torch, the agents' extra: the buffer itself is numpy

            index = torch.as_tensor(idx, device=self.mirror["obs"].device)
            obs = self.mirror["obs"][index]
            return {
                "obs": obs,
                "action": self.action[idx],
                "reward": self.reward[idx],
                "discount": self.discount[idx],
                "next_obs": torch.cat([obs[:, 3:], self.mirror["next_frame"][index]], dim=1),
            }
        obs = self.obs[idx]
        next_obs = np.concatenate([obs[:, 3:], self.next_frame[idx]], axis=1)
        return {
            "obs": obs,
            "action": self.action[idx],
            "reward": self.reward[idx],
            "discount": self.discount[idx],
            "next_obs": next_obs,
        }

    # -------------------------------------------------------------- chunks
    def save_chunk(self, folder: str | os.PathLike) -> Path | None:
        """Write the transitions added since the last call to ``folder`` (atomically); returns the file."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        start = max(self.saved, self.total - self.capacity)
        if start >= self.total:
            return None
        slots = np.arange(start, self.total) % self.capacity
        path = folder / f"chunk-{start:010d}-{self.total:010d}.npz"
        atomic_write(path, lambda fh: np.savez(fh, **{name: getattr(self, name)[slots] for name in FIELDS}))
        # prune only what the previous save (the last committed checkpoint) does not need:
        # a run killed before this save's checkpoint resumes from that one
        keep_after, self.saved = self.saved - self.capacity, self.total
        for old, (_, end) in _chunks(folder):
            if end <= keep_after:
                old.unlink(missing_ok=True)
        return path

    def load_chunks(self, folder: str | os.PathLike, total: int) -> None:
        """Refill the buffer from ``folder``'s chunks with transitions [0, total) as a checkpoint recorded.

        Chunks past ``total`` (written by a run killed before its checkpoint) are removed.
        """
        folder = Path(folder)
        need_from = max(0, total - self.capacity)
        covered = need_from
        for path, (start, end) in _chunks(folder):
            if start >= total:
                path.unlink(missing_ok=True)
                continue
            if end <= need_from:
                continue
            if start > covered:
                raise ValueError(f"buffer: chunk files miss transitions {covered}..{start - 1} in {folder}")
            with np.load(path) as data:
                lo, hi = max(start, need_from), min(end, total)
                rows = slice(lo - start, hi - start)
                slots = np.arange(lo, hi) % self.capacity
                for name in FIELDS:
                    getattr(self, name)[slots] = data[name][rows]
                if self.mirror is not None:
                    self._upload(slots)
            covered = max(covered, hi)
        if covered < total:
            raise ValueError(
                f"buffer: chunk files in {folder} hold transitions up to {covered}, the checkpoint needs {total}"
            )
        self.total = self.saved = int(total)


def _chunks(folder: Path) -> list[tuple[Path, tuple[int, int]]]:
    """The chunk files of ``folder`` with their [start, end) ranges, in order."""
    found = []
    if folder.is_dir():
        for path in folder.iterdir():
            match = CHUNK.match(path.name)
            if match:
                found.append((path, (int(match.group(1)), int(match.group(2)))))
    return sorted(found, key=lambda item: item[1])
