"""The data behind the verify figures: the scatter's columns and their subsample, the slice's pairs, the loss
curves."""

import numpy as np

from bisimkit import example
from validation.claims import FixedPoints
from validation.families import Case
from validation.figure_data import loss_curves, scatter_columns, scatter_values, slice_pairs, subsample_scatter


def test_the_scatter_has_one_point_per_pair_s_below_t():
    mdp = example("chain")
    fp = FixedPoints(Case(mdp))
    cols = scatter_columns([("examples", fp), ("again", fp)])
    pairs = mdp.n_states * (mdp.n_states - 1) // 2
    assert len(cols["pi"]) == 2 * pairs and list(cols["family"][[0, pairs]]) == ["examples", "again"]
    assert np.array_equal(cols["eps-bar"][:pairs], fp.d("eps-bar")[np.triu_indices(mdp.n_states, 1)])
    assert len(scatter_values([("examples", fp)], max_points=3)["pi"]) == 3


def test_a_subsample_is_the_same_from_parts_or_whole():
    rng = np.random.default_rng(1)
    whole = {k: rng.random(50) for k in ("pi", "eps", "eps-bar")}
    whole["family"] = np.array(["a"] * 20 + ["b"] * 30, dtype=object)
    parts = [{k: v[:20] for k, v in whole.items()}, {k: v[20:] for k, v in whole.items()}]
    one, split = subsample_scatter([whole], max_points=10), subsample_scatter(parts, max_points=10)
    assert all(np.array_equal(one[k], split[k]) for k in whole) and len(one["pi"]) == 10
    assert set(one["pi"]) <= set(whole["pi"])
    assert len(subsample_scatter(parts, max_points=100)["pi"]) == 50
    assert len(subsample_scatter([], max_points=10)["pi"]) == 0


def test_the_slice_pairs_by_hand():
    t, z, z2 = slice_pairs(3, -1.0, 1.0)
    assert t.tolist() == [-1.0, 0.0, 1.0] and z.shape == z2.shape == (9, 2)
    assert z[:, 0].tolist() == [-1.0, 0.0, 1.0] * 3 and z2[:, 0].tolist() == [-1.0] * 3 + [0.0] * 3 + [1.0] * 3
    assert not z[:, 1].any() and not z2[:, 1].any()


def test_loss_curves_name_their_loss_and_family():
    run = {"loss": "psm", "family": "chain", "steps": [0]}
    assert loss_curves([run]) == [("psm", "chain", run)]
