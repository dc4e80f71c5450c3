"""Tabular Gymnasium environments as FiniteMDPs (``bisimkit.from_gymnasium``, ``gym:ID``)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bisimkit import InputError, from_gymnasium, relation_blocks
from bisimkit_cli.core import load_mdp_or_example, main

gymnasium = pytest.importorskip("gymnasium", reason="the 'gym' extra (gymnasium) is not installed")
ROOT = Path(__file__).resolve().parents[1]


def frozen_lake():
    return gymnasium.make("FrozenLake-v1", map_name="4x4", is_slippery=True)


def test_frozen_lake_model():
    env = frozen_lake()
    mdp = from_gymnasium(env)
    P = env.unwrapped.P
    assert (mdp.n_states, mdp.n_actions, mdp.state_shape) == (16, 4, (4, 4))
    assert np.allclose(mdp.transitions.sum(axis=2), 1.0)
    assert np.allclose(mdp.policy, 0.25)
    desc = env.unwrapped.desc.ravel()
    terminal = {s for s in range(16) if desc[s] in (b"H", b"G")}
    for s in range(16):
        for a in range(4):
            if s in terminal:  # absorbing, reward 0
                assert mdp.transitions[s, a, s] == 1.0 and mdp.rewards[s, a] == 0.0
                continue
            law = np.zeros(16)
            for p, t, _, _ in P[s][a]:
                law[t] += p
            assert np.allclose(mdp.transitions[s, a], law)
            assert mdp.rewards[s, a] == pytest.approx(sum(p * r for p, _, r, _ in P[s][a]))
    assert mdp.rewards[14, 2] == pytest.approx(1 / 3)  # right of 14 slips into the goal with 1/3


def test_pi_relation_matches_stormpy():
    """E_pi of the uniform policy: a bisimulation of the policy-averaged chain, with as many
    blocks as Storm's (coarsest) strong bisimulation quotient, hence the coarsest one."""
    pytest.importorskip("stormpy", reason="stormpy (the 'test' extra) is not installed")
    from stormpy_check import stormpy_pi_block_count

    mdp = from_gymnasium(frozen_lake())
    blocks = relation_blocks(mdp, "pi")
    label = np.empty(mdp.n_states, int)
    for k, b in enumerate(blocks):
        label[b] = k
    mass = np.stack([mdp.transition_pi[:, label == k].sum(axis=1) for k in range(len(blocks))], axis=1)
    for b in blocks:  # equal rewards and equal class masses within each block
        assert np.ptp(mdp.reward_pi[b]) < 1e-12 and np.ptp(mass[b], axis=0).max() < 1e-12
    assert len(blocks) == stormpy_pi_block_count(mdp)
    assert len(blocks) < mdp.n_states  # the four absorbing holes at reward 0 are merged, at least


def test_cliff_walking_and_taxi():
    cliff = from_gymnasium("CliffWalking-v1")
    assert cliff.state_shape == (4, 12) and cliff.rewards.min() == -100
    assert cliff.transitions[47, :, 47].min() == 1.0 and not cliff.rewards[47].any()  # the goal
    taxi = from_gymnasium(gymnasium.make("Taxi-v4"), policy=None, discount=0.95)
    assert taxi.n_states == 500 and taxi.state_shape is None and taxi.policy is None


def test_policies(tmp_path):
    q = np.zeros((16, 4))
    q[:, 2] = 1.0
    q[0, 1] = 1.0  # a tie at state 0
    np.save(tmp_path / "q.npy", q)
    greedy = from_gymnasium("FrozenLake-v1", q=tmp_path / "q.npy")
    assert greedy.policy[0].tolist() == [0, 0.5, 0.5, 0] and greedy.policy[3].tolist() == [0, 0, 1, 0]
    table = np.tile([0.1, 0.2, 0.3, 0.4], (16, 1))
    (tmp_path / "pi.json").write_text(json.dumps(table.tolist()))
    assert np.allclose(from_gymnasium("FrozenLake-v1", policy=tmp_path / "pi.json").policy, table)
    spec = f"gym:FrozenLake-v1?map_name=8x8&is_slippery=false&discount=0.5&policy=greedy:{tmp_path / 'q8.npy'}"
    np.save(tmp_path / "q8.npy", np.eye(64, 4))
    mdp = load_mdp_or_example(spec)
    assert mdp.state_shape == (8, 8) and mdp.discount == 0.5 and mdp.transitions.max(axis=2).min() == 1.0
    with pytest.raises(InputError, match=r"policy: expected shape \(n, m\) = \(16, 4\)"):
        from_gymnasium("FrozenLake-v1", policy=np.ones((3, 4)) / 4)


class NoModel(gymnasium.Env):
    observation_space = gymnasium.spaces.Discrete(3)
    action_space = gymnasium.spaces.Discrete(2)


def test_bad_environments():
    with pytest.raises(InputError, match="exposes no model"):
        from_gymnasium(NoModel())
    with pytest.raises(InputError, match="observation space Box.* is not Discrete"):
        from_gymnasium("MountainCar-v0")
    with pytest.raises(InputError, match="cannot make the environment"):
        from_gymnasium("NoSuchEnv-v0")


@pytest.mark.parametrize("command", [["info"], ["relation", "--kind", "pi"], ["solve", "--metric", "pi", "--quiet"]])
def test_cli_accepts_gym_ids(capsys, command):
    assert main([command[0], "gym:FrozenLake-v1", *command[1:]]) == 0
    assert capsys.readouterr().out


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("gym:MountainCar-v0", "is not Discrete"),
        ("gym:FrozenLake-v1?map_name", "is not KEY=VALUE"),
        ("gym:", "no environment id"),
    ],
)
def test_cli_bad_gym_ids(capsys, spec, expected):
    assert main(["info", spec]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err


def test_without_gymnasium_the_message_names_the_extra(tmp_path):
    from test_extras import HIDE

    proc = subprocess.run(
        [sys.executable, "-c", HIDE, "bisimkit", "gymnasium", "info", "gym:FrozenLake-v1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "gymnasium is not installed" in lines[0] and "pip install -e '.[gym]'" in lines[0]
