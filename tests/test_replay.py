"""The replay buffer: storage layout, sampling, circular overwrite and chunked checkpoints."""

import shutil

import numpy as np
import pytest

from agents.replay import ReplayBuffer

FRAMES, SIDE, ACTIONS = 3, 6, 2
SHAPE = (3 * FRAMES, SIDE, SIDE)


def frame(k: int) -> np.ndarray:
    """Frame k of a synthetic episode stream: every pixel holds k (mod 256)."""
    return np.full((3, SIDE, SIDE), k % 256, np.uint8)


def stack(k: int) -> np.ndarray:
    """The observation after frame k: frames k-2, k-1, k."""
    return np.concatenate([frame(k - FRAMES + 1 + j) for j in range(FRAMES)])


def add(buffer: ReplayBuffer, k: int) -> None:
    """Transition k: obs = stack(k), next_obs = stack(k + 1); the action, reward and discount encode k."""
    buffer.add(stack(k), np.array([k, -k], np.float32), float(k) / 2, float(k % 2), stack(k + 1))


def expected(k: int) -> dict:
    return {
        "obs": stack(k),
        "next_obs": stack(k + 1),
        "action": np.array([k, -k], np.float32),
        "reward": np.float32(k / 2),
        "discount": np.float32(k % 2),
    }


def assert_holds(buffer: ReplayBuffer, transitions) -> None:
    """Each transition k is in slot k % capacity, with its stored arrays intact."""
    transitions = list(transitions)
    assert len(buffer) == len(transitions)
    for k in transitions:
        slot = k % buffer.capacity
        assert np.array_equal(buffer.obs[slot], stack(k)), k
        assert np.array_equal(buffer.next_frame[slot], frame(k + 1)), k
        assert np.array_equal(buffer.action[slot], [k, -k]), k
        assert buffer.reward[slot] == k / 2 and buffer.discount[slot] == k % 2, k


def test_add_and_sample_shapes_and_next_obs_is_the_shifted_stack():
    buffer = ReplayBuffer(16, SHAPE, ACTIONS)
    for k in range(10):
        add(buffer, k)
    assert len(buffer) == 10 and buffer.total == 10
    # only the new frame of the next observation is stored
    assert buffer.next_frame.shape == (16, 3, SIDE, SIDE) and buffer.obs.shape == (16, *SHAPE)
    batch = buffer.sample(64, np.random.default_rng(0))
    assert batch["obs"].shape == batch["next_obs"].shape == (64, *SHAPE)
    assert batch["obs"].dtype == batch["next_obs"].dtype == np.uint8
    assert batch["action"].shape == (64, ACTIONS) and batch["action"].dtype == np.float32
    assert batch["reward"].shape == batch["discount"].shape == (64,)
    seen = set()
    for i in range(64):
        k = int(batch["action"][i, 0])
        seen.add(k)
        for name, value in expected(k).items():
            assert np.array_equal(batch[name][i], value), (name, k)
        # next_obs = obs shifted by one frame, plus the stored next frame
        assert np.array_equal(batch["next_obs"][i, :-3], batch["obs"][i, 3:])
    assert seen == set(range(10))  # uniform over the filled slots only


def test_sample_uses_the_given_generator():
    buffer = ReplayBuffer(8, SHAPE, ACTIONS)
    for k in range(8):
        add(buffer, k)
    a = buffer.sample(5, np.random.default_rng(3))["action"]
    b = buffer.sample(5, np.random.default_rng(3))["action"]
    assert np.array_equal(a, b)


def test_circular_overwrite():
    buffer = ReplayBuffer(5, SHAPE, ACTIONS)
    for k in range(12):
        add(buffer, k)
    assert len(buffer) == 5 and buffer.total == 12
    assert_holds(buffer, range(7, 12))
    ks = buffer.sample(200, np.random.default_rng(1))["action"][:, 0]
    assert set(ks.astype(int)) == set(range(7, 12))


def test_bad_arguments():
    with pytest.raises(ValueError, match="^capacity:"):
        ReplayBuffer(0, SHAPE, ACTIONS)
    with pytest.raises(ValueError, match="^obs_shape:"):
        ReplayBuffer(4, (4, SIDE, SIDE), ACTIONS)
    with pytest.raises(ValueError, match="^sample: the buffer is empty"):
        ReplayBuffer(4, SHAPE, ACTIONS).sample(2, np.random.default_rng(0))


def chunk_names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_chunks_round_trip_with_wrap_around(tmp_path):
    """Save after each burst of additions (as checkpoints do), snapshot the folder, and rebuild the
    buffer from every snapshot: each rebuild equals the live buffer at that checkpoint, also once
    the data has wrapped past the capacity; chunks wholly overwritten are deleted."""
    live, folder = ReplayBuffer(5, SHAPE, ACTIONS), tmp_path / "buffer"
    k, snapshots = 0, []
    for burst in (3, 4, 6, 2, 9):
        for _ in range(burst):
            add(live, k)
            k += 1
        live.save_chunk(folder)
        snap = tmp_path / f"snap-{k}"
        shutil.copytree(folder, snap)
        snapshots.append((k, snap))
    assert live.save_chunk(folder) is None  # nothing new: no empty chunk
    # chunk ranges: [0,3) [3,7) [8,13) (7 was overwritten before it was saved) [13,15) [19,24); a save
    # deletes the chunks the previous checkpoint does not need (those ending by its total - capacity)
    names = [chunk_names(snap) for _, snap in snapshots]
    assert names[1] == ["chunk-0000000000-0000000003.npz", "chunk-0000000003-0000000007.npz"]
    assert names[2] == names[1] + ["chunk-0000000008-0000000013.npz"]
    assert names[3] == ["chunk-0000000008-0000000013.npz", "chunk-0000000013-0000000015.npz"]
    assert chunk_names(folder) == names[3] + ["chunk-0000000019-0000000024.npz"]
    for total, snap in snapshots:
        rebuilt = ReplayBuffer(5, SHAPE, ACTIONS)
        rebuilt.load_chunks(snap, total)
        assert rebuilt.total == rebuilt.saved == total
        assert_holds(rebuilt, range(max(0, total - 5), total))
        # a rebuilt buffer keeps appending where the run left off
        add(rebuilt, total)
        path = rebuilt.save_chunk(snap)
        assert path.name == f"chunk-{max(total, total + 1 - 5):010d}-{total + 1:010d}.npz"


def test_load_deletes_chunks_past_the_checkpointed_total(tmp_path):
    """A run killed after a checkpoint left later chunks behind: loading the checkpoint's
    total removes them, so the resumed run's own chunks cannot collide with them."""
    live, folder = ReplayBuffer(10, SHAPE, ACTIONS), tmp_path / "buffer"
    for k in range(4):
        add(live, k)
    live.save_chunk(folder)  # the checkpoint: total 4
    for k in range(4, 7):
        add(live, k)
    live.save_chunk(folder)  # written, then killed before its checkpoint
    rebuilt = ReplayBuffer(10, SHAPE, ACTIONS)
    rebuilt.load_chunks(folder, 4)
    assert chunk_names(folder) == ["chunk-0000000000-0000000004.npz"]
    assert_holds(rebuilt, range(4))
    add(rebuilt, 4)
    rebuilt.save_chunk(folder)
    assert chunk_names(folder) == ["chunk-0000000000-0000000004.npz", "chunk-0000000004-0000000005.npz"]


def test_killed_between_chunk_and_checkpoint_after_wrap_around_stays_resumable(tmp_path):
    """Writing a chunk may delete only chunks the *previous* checkpoint does not need: the run can
    die after the chunk is written and before its checkpoint, and then resumes from the previous one."""
    live, folder = ReplayBuffer(5, SHAPE, ACTIONS), tmp_path / "buffer"
    for k in range(6):
        add(live, k)
    live.save_chunk(folder)  # checkpoint at total 6 (needs transitions 1..5)
    for k in range(6, 12):
        add(live, k)
    live.save_chunk(folder)  # chunk [7, 12) written; the run dies before its checkpoint
    rebuilt = ReplayBuffer(5, SHAPE, ACTIONS)
    rebuilt.load_chunks(folder, 6)
    assert_holds(rebuilt, range(1, 6))
    assert chunk_names(folder) == ["chunk-0000000001-0000000006.npz"]
    # and the files do not pile up: the next checkpoint's chunk prunes what no checkpoint needs
    for k in range(6, 20):
        add(rebuilt, k)
    rebuilt.save_chunk(folder)  # total 20: the checkpoint at 6 is superseded
    for k in range(20, 22):
        add(rebuilt, k)
    rebuilt.save_chunk(folder)  # total 22: only chunks ending after 20 - 5 stay
    assert chunk_names(folder) == ["chunk-0000000015-0000000020.npz", "chunk-0000000020-0000000022.npz"]


def test_missing_chunk_is_an_error(tmp_path):
    live, folder = ReplayBuffer(10, SHAPE, ACTIONS), tmp_path / "buffer"
    for burst in range(3):
        for k in range(3 * burst, 3 * burst + 3):
            add(live, k)
        live.save_chunk(folder)
    (folder / "chunk-0000000003-0000000006.npz").unlink()
    with pytest.raises(ValueError, match=r"^buffer: chunk files miss transitions 3\.\.5 in "):
        ReplayBuffer(10, SHAPE, ACTIONS).load_chunks(folder, 9)
    needs_four = r"^buffer: chunk files in .* hold transitions up to 3, the checkpoint needs 4$"
    with pytest.raises(ValueError, match=needs_four):
        ReplayBuffer(10, SHAPE, ACTIONS).load_chunks(folder, 4)
    shutil.rmtree(folder)
    with pytest.raises(ValueError, match="hold transitions up to 0, the checkpoint needs 2"):
        ReplayBuffer(10, SHAPE, ACTIONS).load_chunks(folder, 2)
    ReplayBuffer(10, SHAPE, ACTIONS).load_chunks(folder, 0)  # an empty buffer needs no file
