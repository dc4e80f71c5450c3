"""The two-MDP problems of ``benchmarks.bench_startup`` (the timing itself is the benchmark's, not a test's)."""

import json

import numpy as np
import pytest

from benchmarks.bench_startup import SVI_PAIR, main, write_pairs
from bisimkit.mdp import load_mdp


def _support(mdp) -> int:
    return int(np.max(np.count_nonzero(mdp.transitions, axis=-1)))


def test_stand_ins_have_the_shape_and_supports_of_svis_smallest_pair(tmp_path):
    pairs = write_pairs(tmp_path, None)
    a, b = (load_mdp(path) for path in pairs["two_mdp_solve"])
    assert (a.n_states, b.n_states, a.n_actions, b.n_actions) == (6, 18, 1, 1)
    assert a.discount == b.discount == 0.95
    assert (_support(a), _support(b)) == (2, 3)  # miconic p01's and p02's largest supports
    dense = [load_mdp(path) for path in pairs["dense_two_mdp_solve"]]
    assert [(m.n_states, _support(m)) for m in dense] == [(6, 5), (18, 17)]
    assert "svi_pair" not in pairs


@pytest.mark.slow  # reading SVI's files goes through benchmarks.bench_between, which imports POT (seconds)
def test_svi_pair_is_read_from_a_checkout(tmp_path):
    chains = {SVI_PAIR[0]: [[0, 1, 0], [0, 0, 2], [1, 0, 0]], SVI_PAIR[1]: [[0, 1], [1, 1]]}
    for rel, P in chains.items():
        path = tmp_path / "SVI" / "benchmarks" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        n = len(P)
        path.write_text(
            json.dumps({"transition_function": P, "reward": [0] * (n - 1) + [1], "nu_0": [1] + [0] * (n - 1)})
        )
    folder = tmp_path / "out"
    folder.mkdir()
    a, b = (load_mdp(path) for path in write_pairs(folder, tmp_path / "SVI")["svi_pair"])
    assert (a.n_states, b.n_states, a.discount, a.initial_state) == (3, 2, 0.95, 0)
    np.testing.assert_allclose(b.transitions[:, 0, :], [[0, 1], [0.5, 0.5]])  # rows normalised as SVI does


def test_a_folder_without_svis_pair_is_refused(tmp_path, capsys):
    assert main(["--svi-repo", str(tmp_path), "--rounds", "1"]) == 2
    assert capsys.readouterr().err.startswith("--svi-repo: ")
