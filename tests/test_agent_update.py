"""The agent's update rule: DrQ's update reproduced exactly (drq preset), the fast path agreeing with the
plain one, and bisimulation losses that start on the critic loss's scale for every method."""

import copy
import os

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from agents.agent import Agent  # noqa: E402
from agents.config import METHODS, make_config  # noqa: E402
from agents.encoder import conv_output_side  # noqa: E402

from drq_reference import DrQ, load_from_agent  # noqa: E402

SIDE, ACTIONS, ROWS = 32, 2, 8


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def random_batch(rows: int, side: int = SIDE, actions: int = ACTIONS, seed: int = 0) -> dict:
    """A replay-like batch: random pixels, the next stack sharing two frames, rewards in [0, 8]."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, 256, (rows, 9, side, side), generator=g, dtype=torch.uint8)
    new = torch.randint(0, 256, (rows, 3, side, side), generator=g, dtype=torch.uint8)
    rng = np.random.default_rng(seed)
    return {"obs": obs, "next_obs": torch.cat([obs[:, 3:], new], dim=1),
            "action": rng.uniform(-1, 1, (rows, actions)).astype(np.float32),
            "reward": rng.uniform(0, 8, rows).astype(np.float32), "discount": np.ones(rows, np.float32)}


def drq_agent(**changes) -> Agent:
    torch.manual_seed(0)
    cfg = make_config("drq", capacity="low", image_size=SIDE, batch_size=ROWS, device="cpu", fast=False, **changes)
    return Agent((9, SIDE, SIDE), ACTIONS, cfg, "cpu")


def test_drq_preset_update_equals_drqs_own_update():
    """Four updates (two with an actor step, two target updates) from the same weights and the same
    draws: the critic and actor losses and every weight agree with the transcription of drq.py."""
    agent = drq_agent()
    assert agent.config.views == (2, 2) and agent.actor_head is not None and agent.encoder_target is not None
    ref = DrQ(9, conv_output_side(SIDE), ACTIONS, hidden=200)
    load_from_agent(ref, agent)
    for step in range(4):
        batch = random_batch(ROWS, seed=step)
        torch.manual_seed(100 + step)
        stats = agent.update(batch)
        torch.manual_seed(100 + step)
        critic_loss, actor_loss = ref.update(batch, step)
        assert torch.allclose(stats["critic_loss"], critic_loss, rtol=1e-5), step
        if step % 2 == 0:
            assert torch.allclose(stats["actor_loss"], actor_loss, rtol=1e-5, atol=1e-6), step
        else:
            assert "actor_loss" not in stats
    # weights: within 5% of one Adam step. Adam's first steps move every weight by about lr = 1e-3
    # whatever its gradient's size, so a wrong or missing term shows as ~1e-3; float32 rounding in
    # the tiny gradients of some weights moves their normalised step by up to ~2e-5.
    mine = copy.deepcopy(ref)
    load_from_agent(mine, agent)  # the agent's weights, laid out as the reference's
    for name, (a, b) in {"critic": (mine.critic, ref.critic), "actor": (mine.actor, ref.actor),
                         "critic_target": (mine.critic_target, ref.critic_target)}.items():
        for (pname, p), q in zip(a.named_parameters(), b.parameters()):
            assert torch.allclose(p, q, rtol=0, atol=5e-5), (f"{name}.{pname}", (p - q).abs().max())
    assert torch.allclose(mine.log_alpha, ref.log_alpha)


# ------------------------------------------------------------------ fast path
def critic_losses(method: str, fast: bool, updates: int = 50) -> np.ndarray:
    """Critic losses of ``updates`` updates from seed 0, the same batches and draws, plain or fast."""
    torch.manual_seed(0)
    cfg = make_config("paper", method=method, capacity="low", image_size=SIDE, batch_size=16, device="cpu",
                      fast=fast)
    agent = Agent((9, SIDE, SIDE), ACTIONS, cfg, "cpu")
    assert agent.fast == fast
    out = []
    for i in range(updates):
        torch.manual_seed(1000 + i)
        out.append(float(agent.update(random_batch(16, seed=i))["critic_loss"]))
    return np.array(out)


@pytest.mark.parametrize("method", list(METHODS))
def test_fast_path_learns_what_the_plain_path_learns(method):
    """50 updates both ways (channels-last bf16 trunk and fused Adam, or float32): the critic losses agree
    within 3% on each of the first 10 updates and within 5% in median over all 50, and the mean of the
    last 25 within 10% (the bisimulation losses' noise makes the trajectories drift apart pointwise,
    e.g. drq+pse's by up to ~40% on single updates late on, while their level stays the same)."""
    plain, fast = critic_losses(method, False), critic_losses(method, True)
    rel = np.abs(fast - plain) / np.abs(plain)
    assert rel[:10].max() < 0.03, rel[:10]
    assert np.median(rel) < 0.05, rel
    assert abs(fast[25:].mean() - plain[25:].mean()) < 0.10 * plain[25:].mean()
    assert not np.array_equal(plain, fast)  # the fast path really ran in reduced precision


# ------------------------------------------------------------------ fair baselines
@pytest.fixture(scope="module")
def cartpole_batch():
    """64 transitions of cartpole-swingup under random actions, with both distractions (84 px)."""
    from agents.dcs import make_env
    from agents.replay import ReplayBuffer

    env = make_env("cartpole-swingup", background=True, camera=True, seed=0)
    rng = np.random.default_rng(0)
    buffer, obs = ReplayBuffer(256, env.observation_shape, 1), env.reset(seed=0)
    for t in range(150):
        action = rng.uniform(-1, 1, 1).astype(np.float32)
        nxt, reward, done, _ = env.step(action)
        buffer.add(obs, action, reward, 1.0, nxt)
        obs = env.reset(seed=t + 1) if done else nxt
    env.close()
    return buffer.sample(64, rng)


@pytest.mark.parametrize("preset, method", [("paper", m) for m in METHODS if METHODS[m].bisim] + [("dbc", "drq+dbc")])
def test_bisimulation_losses_start_on_the_critic_losss_scale(cartpole_batch, preset, method):
    """At initialisation, on real observations: bisimulation loss / critic loss in [0.01, 100] for every
    bisimulation method (DBC's transition init, sigma ~5, gave ~1e5 for drq+pse; a distance head of
    weight 1 on 150 coordinates ~150 for eps-r)."""
    torch.manual_seed(0)
    agent = Agent((9, 84, 84), 1, make_config(preset, method=method, device="cpu", fast=False), "cpu")
    with torch.no_grad():
        _, stats, _ = agent.critic_losses(cartpole_batch)
    ratio = float(stats["bisim_loss"]) / float(stats["critic_loss"])
    assert 0.01 <= ratio <= 100, (ratio, {k: float(v) for k, v in stats.items()})


def test_dbc_transition_init_and_unit_head_are_outside_the_band(cartpole_batch):
    """The check above can fail: the previous defaults (sigma from DBC's midpoint, head weight 1)."""
    torch.manual_seed(0)
    cfg = make_config("paper", method="drq+pse", device="cpu", fast=False, transition_sigma_init=5.0,
                      distance_scale=1.0)
    with torch.no_grad():
        _, stats, _ = Agent((9, 84, 84), 1, cfg, "cpu").critic_losses(cartpole_batch)
    assert float(stats["bisim_loss"]) / float(stats["critic_loss"]) > 1000
