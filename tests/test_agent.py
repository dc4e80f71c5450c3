"""The agent's update rule: DrQ's and DBC's updates reproduced to float32's rounding (drq and dbc presets),
the fast path agreeing with the plain one, and bisimulation losses that start on the critic loss's scale for
every method of the paper preset."""

import contextlib
import os

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from agents.agent import Agent  # noqa: E402
from agents.config import METHODS, make_config  # noqa: E402
from benchmarks.tolerance_margins import (  # noqa: E402
    ACTIONS,
    ROWS,
    SIDE,
    DBCUpdates,
    DrQUpdates,
    dbc_agent,
    drq_agent,
    failed,
    random_batch,
    reference_checks,
)
from bisimkit.errors import InputError  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread (the cores are shared), or ``OMP_NUM_THREADS`` when it is set: the reference
    comparisons' tolerances hold for any thread count and instruction set (benchmarks.tolerance)."""
    threads = torch.get_num_threads()
    wanted = os.environ.get("OMP_NUM_THREADS", "1")
    torch.set_num_threads(int(wanted) if wanted.isdigit() and int(wanted) > 0 else 1)
    yield
    torch.set_num_threads(threads)


def test_drq_preset_update_equals_drqs_own_update():
    """Four updates (two with an actor step, two target updates) from the same weights and the same
    draws: the critic and actor losses and every weight agree with the transcription of drq.py, to the
    tolerances of float32 arithmetic (benchmarks.tolerance), which hold on any instruction set and
    thread count."""
    agent = drq_agent()
    assert agent.config.views == (2, 2) and agent.actor_head is not None and agent.encoder_target is not None
    checks = reference_checks(agent, DrQUpdates(agent))
    assert len(checks) > 40 and not failed(checks), failed(checks)


def test_dbc_preset_update_equals_dbcs_own_update():
    """Four ``--preset dbc`` updates (two with an actor step, two target updates) from the same weights and
    draws: the critic, transition, reward, bisimulation and actor losses and every weight (encoders,
    critics, targets, actor, transition and reward heads, temperature) agree with the transcription of
    deep_bisim4control's BisimAgent.update (benchmarks/dbc_reference.py). The encoder takes two Adam steps
    per update (DBC's critic and encoder optimisers): 8 in all."""
    agent = dbc_agent()
    cfg = agent.config
    assert cfg.update_rule == "dbc" and cfg.views == (1, 1) and agent.actor_head is not None
    assert (cfg.tau, cfg.encoder_tau, cfg.alpha_lr, cfg.alpha_beta1, cfg.beta, cfg.init_temperature) == (
        0.01,
        0.05,
        1e-4,
        0.5,
        0.5,
        0.1,
    )
    checks = reference_checks(agent, DBCUpdates(agent), adam_steps=8)
    assert len(checks) > 60 and not failed(checks), failed(checks)


def drop_reward_term(monkeypatch):
    import agents.agent as agent_module

    real = agent_module.dbc_coordinate_loss
    monkeypatch.setattr(
        agent_module, "dbc_coordinate_loss", lambda z, **kw: real(z, **{**kw, "reward": torch.zeros_like(kw["reward"])})
    )


def share_one_adam(agent):
    agent.encoder_opt = agent.model_opt


BROKEN = {
    "drq: the second view's critic term dropped": ("drq", dict(aug_m=1), None, None),
    "drq: the target encoder at DBC's tau": ("drq", dict(encoder_tau=0.05), None, None),
    "dbc: the reward term dropped from the bisimulation target": ("dbc", {}, drop_reward_term, None),
    "dbc: the encoder's two steps share one Adam state": ("dbc", {}, None, share_one_adam),
    "dbc: the bisimulation loss at half its weight": ("dbc", dict(beta=0.25), None, None),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_update_fails_the_reference_comparison(case, monkeypatch):
    """The tolerances keep the comparison's power: a missing loss term, a wrong constant or a shared
    optimiser state breaks it, by at least 10 times the tolerance on some loss or weight."""
    preset, changes, patch, after = BROKEN[case]
    if patch is not None:
        patch(monkeypatch)
    agent = (drq_agent if preset == "drq" else dbc_agent)(**changes)
    if after is not None:
        after(agent)
    reference = DrQUpdates(agent) if preset == "drq" else DBCUpdates(agent)
    checks = reference_checks(agent, reference, adam_steps=4 if preset == "drq" else 8)
    assert failed(checks), case
    assert max(c.ratio for c in checks) > 10, max(checks, key=lambda c: c.ratio)


# ------------------------------------------------------------------ fast path
def critic_losses(method: str, fast: bool, updates: int = 50) -> np.ndarray:
    """Critic losses of ``updates`` updates from seed 0, the same batches and draws, plain or fast."""
    torch.manual_seed(0)
    cfg = make_config("paper", method=method, capacity="low", image_size=SIDE, batch_size=16, device="cpu", fast=fast)
    agent = Agent((9, SIDE, SIDE), ACTIONS, cfg, "cpu")
    assert agent.fast == fast
    out = []
    for i in range(updates):
        torch.manual_seed(1000 + i)
        out.append(float(agent.update(random_batch(16, seed=i))["critic_loss"]))
    return np.array(out)


#: sac (the actor-critic) and eps-r (world model and bisimulation loss on top) in the default suite; the other
#: methods add no path of their own and run with -m slow.
@pytest.mark.parametrize(
    "method", [m if m in ("sac", "eps-r") else pytest.param(m, marks=pytest.mark.slow) for m in METHODS]
)
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
    weight 1 on 150 coordinates ~150 for eps-r). DBC's own agent (dbc preset: its init, its per-coordinate
    loss in a step of its own) is in the band too."""
    torch.manual_seed(0)
    agent = Agent((9, 84, 84), 1, make_config(preset, method=method, device="cpu", fast=False), "cpu")
    with torch.no_grad():
        _, stats, _ = agent.critic_losses(cartpole_batch)
        if agent.dbc_update:
            stats.update(agent.dbc_model_losses(agent._batch(cartpole_batch))[1])  # pylint: disable=protected-access
    ratio = float(stats["bisim_loss"]) / float(stats["critic_loss"])
    assert 0.01 <= ratio <= 100, (ratio, {k: float(v) for k, v in stats.items()})


def test_dbc_transition_init_and_unit_head_are_outside_the_band(cartpole_batch):
    """The check above can fail: the previous defaults (sigma from DBC's midpoint, head weight 1)."""
    torch.manual_seed(0)
    cfg = make_config(
        "paper", method="drq+pse", device="cpu", fast=False, transition_sigma_init=5.0, distance_scale=1.0
    )
    with torch.no_grad():
        _, stats, _ = Agent((9, 84, 84), 1, cfg, "cpu").critic_losses(cartpole_batch)
    assert float(stats["bisim_loss"]) / float(stats["critic_loss"]) > 1000


# ------------------------------------------------------------------ CUDA-graph readiness
#: Operations that make the host wait for the device (a value read back, a data-dependent shape) or
#: copy host data to it (a tensor built from Python numbers): each stalls a GPU's queue and none can
#: be captured in a CUDA graph.
HOST_SYNCS = {
    "_local_scalar_dense",
    "item",
    "is_nonzero",
    "nonzero",
    "equal",
    "masked_select",
    "unique",
    "_unique2",
    "unique_consecutive",
    "allclose",
    "repeat_interleave",
    "lift_fresh",
    "lift_fresh_copy",
}


class DispatchAudit(torch.utils._python_dispatch.TorchDispatchMode):  # pylint: disable=protected-access
    """Records the name of every ATen operation dispatched inside the block."""

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []
        self.paused = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.paused:
            self.ops.append(func._schema.name.split("::")[-1])  # pylint: disable=protected-access
        return func(*args, **(kwargs or {}))

    def skip(self, method):
        """``method`` with the audit paused while it runs."""

        def paused(*args, **kwargs):
            self.paused = True
            try:
                return method(*args, **kwargs)
            finally:
                self.paused = False

        return paused


def test_the_audit_sees_a_host_read():
    """The audit is not blind: reading a loss back or building a tensor from a number is caught."""
    with DispatchAudit() as audit:
        x = torch.ones(3) * 2
        float(x.sum())
        torch.tensor([1.0, 2.0])
    assert {"_local_scalar_dense", "lift_fresh"} <= set(audit.ops) & HOST_SYNCS, audit.ops


@pytest.mark.parametrize(
    "preset, method, fields",
    [("paper", m, {}) for m in METHODS]
    + [("drq", "drq", {}), ("dbc", "drq+dbc", {}), ("paper", "eps-r", {"spread_units": True})],
)
def test_the_update_never_waits_for_the_device(preset, method, fields):
    """An update on a staged batch (what UpdateGraphs captures) dispatches no host synchronisation and
    no host-to-device copy, for every method, actor step and target update included; the bisimulation
    losses' finiteness checks go to the deferred collector (as on a GPU) and are really made.

    The Adam steps are left out: a CPU Adam keeps its step count on the host and reads it, and the
    capturable Adam the graphs use (step counts on the device) runs only on a GPU."""
    from bisimkit.losses import DeferredChecks

    torch.manual_seed(0)
    cfg = make_config(preset, method=method, capacity="low", image_size=SIDE, batch_size=ROWS, device="cpu", **fields)
    agent = Agent((9, SIDE, SIDE), ACTIONS, cfg, "cpu")
    agent.checks = DeferredChecks()
    tensors = agent._batch(random_batch(ROWS))  # pylint: disable=protected-access
    audit = DispatchAudit()
    for opt in (agent.model_opt, agent.actor_opt, agent.alpha_opt, agent.encoder_opt, agent.world_opt):
        if opt is None:
            continue
        opt.step = audit.skip(opt.step)
    with audit:
        stats = agent.step(tensors, True, True)
        agent.step(tensors, False, False)
    found = sorted(set(audit.ops) & HOST_SYNCS)
    assert not found, f"{method}: host synchronisations in the update: {found}"
    assert len(audit.ops) > 200 and "actor_loss" in stats
    assert bool(agent.checks.flags) == (cfg.resolved().beta > 0 and METHODS[method].bisim is not None)
    agent.flush_checks()


class FakeGraph:
    """Stands in for torch.cuda.CUDAGraph on a CPU: counts captures and replays."""

    captures: list["FakeGraph"] = []
    fail: str | None = None

    def __init__(self):
        self.replays = 0

    def replay(self):
        self.replays += 1


class FakeCapture:
    def __init__(self, graph):
        self.graph = graph

    def __enter__(self):
        if FakeGraph.fail:
            raise RuntimeError(FakeGraph.fail)
        FakeGraph.captures.append(self.graph)

    def __exit__(self, *exc):
        return False


def test_update_graphs_warm_up_capture_once_per_pattern_and_replay(monkeypatch, capsys):
    """UpdateGraphs' bookkeeping (the CUDA calls faked on a CPU): each pattern of due steps (actor and
    target every 2 updates: two patterns) runs 3 eager warm-ups, is captured once and replayed after; the
    batch goes into the same input tensors each time; a new batch shape is one error; a failed capture
    is one warning line and eager updates from then on."""
    from agents.agent import UpdateGraphs

    monkeypatch.setattr(torch.cuda, "CUDAGraph", FakeGraph)
    monkeypatch.setattr(torch.cuda, "graph", FakeCapture)

    class FakeStream:
        def wait_stream(self, other):
            pass

    monkeypatch.setattr(torch.cuda, "Stream", lambda device=None: FakeStream())
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: FakeStream())
    monkeypatch.setattr(torch.cuda, "stream", lambda stream: contextlib.nullcontext())
    FakeGraph.captures, FakeGraph.fail = [], None
    agent = drq_agent()
    agent.captured = UpdateGraphs(agent)
    steps = []
    real_step = agent.step
    agent.step = lambda tensors, actor_due, target_due: (
        steps.append((actor_due, target_due)),
        real_step(tensors, actor_due, target_due),
    )[1]
    first = None
    for i in range(12):
        agent.update(random_batch(ROWS, seed=i))
        first = agent.captured.inputs[0] if first is None else first
        assert agent.captured.inputs[0] is first  # one input tensor, refilled
    assert torch.equal(first, random_batch(ROWS, seed=11)["obs"])
    graphs = agent.captured.graphs
    # one graph per pattern of due steps and of whether the bisimulation loss is on (always, for drq)
    assert set(graphs) == {(True, True, True), (False, False, True)} and len(FakeGraph.captures) == 2
    assert agent.captured.eager_runs == {(True, True, True): 3, (False, False, True): 3}
    # 12 updates: 6 per pattern = 3 warm-ups + the capture (replayed at once) + 2 replays
    assert [g.replays for g in graphs.values()] == [3, 3]
    assert len(steps) == 8 and agent.updates == 12
    with pytest.raises(ValueError, match="obs: CUDA graphs need a fixed batch"):
        agent.update(random_batch(ROWS + 1))

    FakeGraph.fail = "operation not permitted when stream is capturing"
    agent = drq_agent()
    agent.captured = UpdateGraphs(agent, warmup=1)
    for i in range(6):
        agent.update(random_batch(ROWS, seed=i))
    assert agent.captured.graphs == {} and sum(agent.captured.eager_runs.values()) == 6
    err = capsys.readouterr().err
    assert err.count("graphs: capturing the update failed (operation not permitted") == 1, err


@pytest.mark.parametrize("method, stacked", [("eps-r", False), ("drq+dbc", True)])
def test_reused_next_view_features_give_the_full_recomputations_loss(method, stacked):
    """World-model methods pass the first next view through the trunk with the gradient; the TD target
    reuses those features instead of running the trunk on that view again. The critic loss equals the
    one of the plain recomputation below (all K next views through the trunk), with the same draws."""
    from torch.nn import functional as F

    torch.manual_seed(0)
    cfg = make_config(
        "paper",
        method=method,
        capacity="low",
        image_size=SIDE,
        batch_size=ROWS,
        device="cpu",
        stacked_frames=stacked,
        beta=0.0,
    )
    agent = Agent((9, SIDE, SIDE), ACTIONS, cfg, "cpu")
    tensors = agent._batch(random_batch(ROWS))  # pylint: disable=protected-access
    torch.manual_seed(7)
    loss = agent._critic_losses(tensors)[1]["critic_loss"]  # pylint: disable=protected-access

    obs, next_obs, action, reward, discount = tensors
    k, m = agent.config.views
    torch.manual_seed(7)
    obs_views, next_views = agent._views(obs, m), agent._views(next_obs, k)  # pylint: disable=protected-access
    z_views = agent.encoder(torch.cat(obs_views))
    with torch.no_grad():
        next_all = torch.cat(next_views)
        features = agent.encoder.trunk(next_all)
        next_action, next_logp, _ = agent.actor.sample(agent.actor_latent(features, agent.encoder.head(features)))
        q1_t, q2_t = agent.critic_target(agent.encoder_target(next_all), next_action)
        value = torch.min(q1_t, q2_t) - agent.alpha * next_logp
        q_target = (reward.repeat(k) + discount.repeat(k) * 0.99 * value).reshape(k, ROWS).mean(0)
    q1, q2 = agent.critic(z_views, action.repeat(m, 1))
    expected = m * (F.mse_loss(q1, q_target.repeat(m)) + F.mse_loss(q2, q_target.repeat(m)))
    assert (k, m) == (2, 2) and agent.world_model
    assert torch.allclose(loss, expected, rtol=1e-5), (float(loss), float(expected))


@pytest.mark.parametrize("fast", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_compiled_trunk_learns_what_the_eager_one_learns(fast):
    """``compile``: torch.compile'd conv trunks (bias, ReLU and scaling fused), on the plain and on the fast
    path: 50 updates of eps-r from one seed, the same batches and draws, against the eager trunks. The first
    update's critic loss agrees to 1e-5 (float32; 1e-3 in bf16, where fusion may move the roundings); after
    that the runs drift apart by rounding, which Adam's normalised steps amplify in tiny gradients, and
    the fast path test's tolerances hold: each of the first 10 within 3%, the median within 5%, the means
    of the last 25 within 10% (measured in float32: 0.16%, 0.21%, 0.02%; on this CPU bf16 gave the same
    losses exactly: oneDNN fuses bias and ReLU in the eager convolution too)."""
    from torch._dynamo.utils import counters  # pylint: disable=import-outside-toplevel

    def losses(compile_trunk: bool) -> np.ndarray:
        torch.manual_seed(0)
        cfg = make_config(
            "paper",
            method="eps-r",
            capacity="low",
            image_size=SIDE,
            batch_size=ROWS,
            device="cpu",
            fast=fast,
            compile=compile_trunk,
        )
        agent = Agent((9, SIDE, SIDE), ACTIONS, cfg, "cpu")
        assert (agent.encoder.trunk.compiled is not None) == compile_trunk
        out = []
        for i in range(50):
            torch.manual_seed(1000 + i)
            out.append(float(agent.update(random_batch(ROWS, seed=i))["critic_loss"]))
        return np.array(out)

    eager, graphs_before = losses(False), counters["stats"]["unique_graphs"]
    compiled = losses(True)
    assert counters["stats"]["unique_graphs"] > graphs_before  # the compiled trunks really ran
    rel = np.abs(compiled - eager) / np.abs(eager)
    assert rel[0] < (1e-3 if fast else 1e-5), rel[:3]
    assert rel[:10].max() < 0.03 and np.median(rel) < 0.05, rel
    assert abs(compiled[25:].mean() - eager[25:].mean()) < 0.10 * eager[25:].mean()


def test_fast_and_graphs_are_on_by_default_with_cuda_and_off_on_a_cpu():
    """Unset, ``fast`` and ``graphs`` follow the device (a CUDA device string is enough: nothing is built);
    given, they are kept. A CPU agent with both unset runs the plain eager update."""
    from agents.agent import speed_defaults

    cfg = make_config("drq")
    assert (cfg.fast, cfg.graphs) == (None, None)
    assert speed_defaults(cfg, "cpu") == (False, False)
    assert speed_defaults(cfg, "cuda") == speed_defaults(cfg, torch.device("cuda:1")) == (True, True)
    assert speed_defaults(make_config("drq", graphs=False), "cuda") == (True, False)
    assert speed_defaults(make_config("drq", fast=False), "cuda") == (False, True)
    assert speed_defaults(make_config("drq", fast=True, graphs=False), "cpu") == (True, False)
    agent = Agent((9, SIDE, SIDE), ACTIONS, make_config("drq", capacity="low", image_size=SIDE, device="cpu"), "cpu")
    assert not agent.fast and not agent.graphs and agent.captured is None


def eps_r_agent(**changes) -> Agent:
    torch.manual_seed(0)
    cfg = make_config(
        "paper", method="eps-r", capacity="low", image_size=SIDE, batch_size=ROWS, device="cpu", fast=False, **changes
    )
    return Agent((9, SIDE, SIDE), ACTIONS, cfg, "cpu")


def test_bisim_warmup_trains_the_world_model_alone_first():
    """Before ``bisim_warmup`` updates the update is the one without the bisimulation loss (beta 0), to the
    bit; from then on the loss joins and the two agents part."""
    warm, plain = eps_r_agent(bisim_warmup=2), eps_r_agent(beta=0.0)
    batches = [random_batch(ROWS, seed=k) for k in range(3)]
    for k, batch in enumerate(batches):
        torch.manual_seed(100 + k)
        stats = warm.update(batch)
        torch.manual_seed(100 + k)
        plain.update(batch)
        same = all(torch.equal(a, b) for a, b in zip(warm.state_dict().values(), plain.state_dict().values()))
        assert same == (k < 2), k
        assert ("bisim_loss" in stats) == (k >= 2), k
    isolated, plain = eps_r_agent(bisim_warmup=1), eps_r_agent(beta=0.0)  # the scene check's step, warming up
    torch.manual_seed(7)
    loss, stats, _ = isolated.metric_losses(batches[0])
    torch.manual_seed(7)
    assert torch.equal(loss, plain.metric_losses(batches[0])[0]) and "bisim_loss" in stats


def test_bisim_warmup_must_be_a_count():
    with pytest.raises(InputError, match="bisim_warmup"):
        make_config("paper", method="eps-r", bisim_warmup=-1)


@pytest.mark.parametrize(
    "method, names",
    [
        ("drq", {"critic"}),
        ("eps-r", {"critic", "transition", "reward", "inverse", "bisim"}),
        ("eps-pi", {"critic", "transition", "reward", "inverse", "bisim"}),
        ("drq+pse", {"critic", "transition", "reward", "inverse", "bisim"}),
    ],
)
def test_loss_terms_add_up_to_the_loss_the_update_steps_on(method, names):
    torch.manual_seed(0)
    cfg = make_config(
        "paper", method=method, capacity="low", image_size=SIDE, batch_size=ROWS, device="cpu", fast=False
    )
    agent, batch = Agent((9, SIDE, SIDE), ACTIONS, cfg, "cpu"), random_batch(ROWS)
    torch.manual_seed(3)
    loss, stats, _ = agent.critic_losses(batch)
    torch.manual_seed(3)
    terms = agent.loss_terms(batch)
    assert set(terms) == names
    assert torch.allclose(sum(terms.values()), loss, rtol=1e-6, atol=0)
    assert torch.equal(terms["critic"].detach(), stats["critic_loss"])
    if "bisim" in terms:
        assert torch.equal(terms["bisim"].detach(), cfg.resolved().beta * stats["bisim_loss"])
    grads = torch.autograd.grad(terms["critic"], list(agent.encoder.parameters()))
    assert any(g.abs().sum() > 0 for g in grads)  # each term reaches the encoder


def test_loss_terms_refuse_dbcs_two_step_update():
    with pytest.raises(ValueError, match="update_rule"):
        dbc_agent().loss_terms(random_batch(ROWS))


@pytest.mark.parametrize("model_grad", [True, False])
def test_model_grad_decides_whether_the_world_model_trains_the_encoder(model_grad):
    agent, batch = eps_r_agent(model_grad=model_grad), random_batch(ROWS)
    terms = agent.loss_terms(batch)
    encoder, heads = list(agent.encoder.parameters()), list(agent.transition.parameters())
    for name in ("transition", "reward"):
        on_encoder = torch.autograd.grad(terms[name], encoder, retain_graph=True, allow_unused=True)
        reach = any(g is not None and g.abs().sum() > 0 for g in on_encoder)
        assert reach == model_grad, name
        on_heads = torch.autograd.grad(terms[name], heads, retain_graph=True, allow_unused=True)
        assert any(g is not None and g.abs().sum() > 0 for g in on_heads), name  # the heads learn either way
    for name in ("inverse", "bisim", "critic"):  # the others always reach it
        grads = torch.autograd.grad(terms[name], encoder, retain_graph=True, allow_unused=True)
        assert any(g is not None and g.abs().sum() > 0 for g in grads), name


def test_model_grad_off_needs_a_joint_world_model():
    with pytest.raises(InputError, match="model_grad: drq trains no transition"):
        make_config("drq", model_grad=False).validated()
    with pytest.raises(InputError, match="model_grad: update_rule dbc"):
        make_config("dbc", model_grad=False).validated()


def test_spread_units_reads_distances_in_units_of_the_batch_spread(monkeypatch):
    import agents.agent as module

    agent, seen, real = eps_r_agent(spread_units=True), [], module.entangled_loss

    def spy(z, *, distance, **kwargs):
        seen.append(distance)
        return real(z, distance=distance, **kwargs)

    monkeypatch.setattr(module, "entangled_loss", spy)
    z = torch.randn(ROWS, agent.latent_dim, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():  # no batch read yet: the head's distance
        torch.testing.assert_close(agent.latent_distance(z[:4], z[4:]), agent.distance(z[:4], z[4:]))
    for k in (1.0, 3.0):
        agent.bisimulation_loss(k * z)
    a, b, spread = z[:4], z[4:], z.std(0).mean()
    with torch.no_grad():
        expected = agent.distance(a, b) / spread
        torch.testing.assert_close(seen[0](a, b), expected)
        torch.testing.assert_close(seen[1](3 * a, 3 * b), expected)  # a latent three times wider reads the same
        w = Agent.SPREAD_MOMENTUM  # evaluations: the running mean of the spread
        running = ((1 - w) * w * spread + w * 3 * spread) / ((1 - w) * w + w)
        torch.testing.assert_close(agent.latent_distance(a, b), agent.distance(a, b) / running)
        plain = eps_r_agent()
        torch.testing.assert_close(plain.latent_distance(a, b), plain.distance(a, b))


def test_spread_units_needs_a_distance_head():
    with pytest.raises(InputError, match="spread_units: drq has no distance head"):
        make_config("drq", spread_units=True).validated()
    with pytest.raises(InputError, match="spread_units: drq\\+dbc under update_rule dbc"):
        make_config("dbc", spread_units=True).validated()
    with pytest.raises(InputError, match="spread_units: 1 is not true or false"):
        make_config("paper", method="eps-r", spread_units=1).validated()
