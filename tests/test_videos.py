"""The background videos: the DAVIS splits, procedural videos by seed in DAVIS's layout, the cache, and the checks
of a DAVIS folder."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import procedural_environment  # noqa: E402

from agents import videos as V  # noqa: E402
from bisimkit.errors import InputError  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def video_cache(tmp_path_factory):
    """Procedural videos (generated into a temporary cache unless the cache in use holds them); no DAVIS from
    the environment."""
    with procedural_environment(tmp_path_factory) as folder:
        yield folder


def test_splits_are_disjoint_and_match_distracting_control():
    from agents.compat import distracting_control

    background = distracting_control().background
    train, held_out = V.split_videos("train"), V.split_videos("eval")
    assert len(train) == 2 and len(held_out) == 30 and not set(train) & set(held_out)
    assert list(train) == background.DAVIS17_TRAINING_VIDEOS[:2]
    assert list(held_out) == background.DAVIS17_VALIDATION_VIDEOS
    with pytest.raises(InputError, match="^split: 'test' is not one of"):
        V.split_videos("test")


def test_procedural_video_is_deterministic_by_seed():
    a, b, c = V.procedural_video(5, frames=6), V.procedural_video(5, frames=6), V.procedural_video(6, frames=6)
    assert a.shape == (6, 108, 192, 3) and a.dtype == np.uint8
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.abs(np.diff(a.astype(int), axis=0)).mean() > 0.5  # it moves
    assert 40 <= len(V.procedural_video(7)) <= 70


def test_procedural_folder_has_davis_layout(video_cache):
    import json

    manifest = json.loads((video_cache / V.MANIFEST).read_text())
    assert manifest["videos"] == list(V.TRAIN_VIDEOS + V.EVAL_VIDEOS)
    for name in V.TRAIN_VIDEOS + V.EVAL_VIDEOS:
        frames = sorted((video_cache / name).iterdir())
        assert frames[0].name == "00000.jpg" and all(f.suffix == ".jpg" for f in frames)
        assert [f.name for f in frames] == [f"{i:05d}.jpg" for i in range(len(frames))]
    assert cv2.imread(str(video_cache / "bear" / "00000.jpg")).shape == (108, 192, 3)
    assert V.ensure_procedural() == video_cache  # cached: no regeneration
    source = V.resolve_videos()
    assert source.kind == "procedural" and "procedural backgrounds" in source.describe()


def test_cache_folder_without_manifest_is_refused(tmp_path):
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "x.txt").write_text("x")
    with pytest.raises(InputError, match="^videos: .* holds no bisimkit-procedural.json"):
        V.ensure_procedural(tmp_path / "junk")


def _davis_tree(root, names=("bear", "bmx-bumps")):
    frames = root / "DAVIS" / "JPEGImages" / "480p"
    for name in names:
        (frames / name).mkdir(parents=True)
        cv2.imwrite(str(frames / name / "00000.jpg"), np.full((48, 64, 3), 90, np.uint8))
    return frames


def test_davis_path_validation(tmp_path, monkeypatch):
    frames = _davis_tree(tmp_path)
    source = V.resolve_videos(tmp_path)  # the DAVIS root resolves to JPEGImages/480p
    assert source.root == frames and source.kind == "davis" and "DAVIS-2017" in source.describe()
    assert [p.name for p in source.videos("train")] == ["bear", "bmx-bumps"]
    with pytest.raises(InputError, match="^davis: video 'bike-packing' not found in"):
        source.videos("eval")
    with pytest.raises(InputError, match="^davis: video 'nope' not found in"):
        source.videos(["bear", "nope"])
    (frames / "empty").mkdir()
    with pytest.raises(InputError, match="^davis: video 'empty' in .* holds no .jpg frames"):
        source.videos(["empty"])
    with pytest.raises(InputError, match="^davis: .*missing does not exist"):
        V.resolve_videos(tmp_path / "missing")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(InputError, match="^davis: .* is not a folder"):
        V.resolve_videos(tmp_path / "file.txt")
    (tmp_path / "nothing").mkdir()
    with pytest.raises(InputError, match="^davis: no <video>/\\*.jpg folders under"):
        V.resolve_videos(tmp_path / "nothing")
    monkeypatch.setenv(V.DAVIS_ENV, str(tmp_path / "gone"))
    with pytest.raises(InputError, match="^BISIMKIT_DAVIS: .*gone does not exist"):
        V.resolve_videos()
    monkeypatch.setenv(V.DAVIS_ENV, str(tmp_path))
    assert V.resolve_videos().origin == "$BISIMKIT_DAVIS"
