"""User-supplied ground metrics are checked to be pseudometrics."""

import json

import numpy as np
import pytest

from bisimkit import InputError
from bisimkit.generators import random_mdp
from bisimkit.ground import load_ground, resolve_ground


def embedding_ground(nm, seed=0):
    x = np.random.default_rng(seed).normal(size=(nm, 2))
    return np.abs(x[:, None] - x[None]).sum(-1)


def test_accepts_pseudometric_in_both_shapes(tmp_path):
    mdp = random_mdp(3, 2, seed=0)
    G = embedding_ground(6)
    assert resolve_ground(mdp, G).shape == (6, 6)
    assert resolve_ground(mdp, G.reshape(3, 2, 3, 2)).shape == (6, 6)
    np.save(tmp_path / "g.npy", G)
    (tmp_path / "g.json").write_text(json.dumps({"ground": G.tolist()}))
    assert load_ground(tmp_path / "g.npy", mdp).shape == (6, 6)
    assert load_ground(tmp_path / "g.json", mdp).shape == (6, 6)


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (lambda G: G.__setitem__((2, 2), 0.5), "G(s=1, a=0),(s=1, a=0) = 0.5 is not 0"),
        (lambda G: G.__setitem__((0, 1), G[0, 1] + 1), "not symmetric at (s=0, a=0), (s=0, a=1)"),
        (lambda G: G.__setitem__((3, 4), -1.0), "is negative"),
        (lambda G: G.__setitem__((0, 5), np.nan), "G[s=0, a=0, t=2, b=1] is not finite"),
    ],
)
def test_rejects_non_pseudometrics(corrupt, message):
    mdp = random_mdp(3, 2, seed=0)
    G = embedding_ground(6)
    corrupt(G)
    with pytest.raises(InputError) as info:
        resolve_ground(mdp, G)
    assert message in str(info.value).replace("ground[", "G[")


def test_rejects_triangle_violation_and_wrong_shape():
    mdp = random_mdp(3, 1, seed=0)
    G = np.array([[0, 1, 5], [1, 0, 1], [5, 1, 0.0]])
    with pytest.raises(InputError, match="triangle inequality fails by 3"):
        resolve_ground(mdp, G)
    with pytest.raises(InputError, match=r"expected shape \(n\*m, n\*m\)"):
        resolve_ground(mdp, np.zeros((2, 2)))
    with pytest.raises(InputError, match="neither reward, policy nor an existing file"):
        resolve_ground(mdp, "rewards")
