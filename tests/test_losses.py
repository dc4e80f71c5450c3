"""bisimkit.losses: targets, couplings, heads, input checks (torch, CPU, seeded)."""

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import bisimkit.losses as L  # noqa: E402
from bisimkit import entangled_coupling, example  # noqa: E402
from bisimkit.generators import product_grid_mdp, random_mdp  # noqa: E402
from bisimkit.operators import apply_operator  # noqa: E402

#: The losses are device-agnostic: the deep tests also run on a GPU when there is one.
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

LOSS_METRIC = {
    "entangled-reward": ("eps-bar", "reward"),
    "entangled-policy": ("eps-bar", "policy"),
    "psm": ("psm-sampled", None),
    "mico": ("mico", None),
    "dbc": ("dbc-sampled", None),
}


def all_pairs(model, like):
    n = model.n_states
    s, t = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    s, t = torch.as_tensor(s.ravel()), torch.as_tensor(t.ravel())
    return model.states(s, like), model.states(t, like), s.numpy(), t.numpy()


def random_table(model, rng, diagonal: bool):
    head = L.TabularDistance(model)
    n = model.n_states
    T = np.triu(rng.random((n, n)) * 2)
    if not diagonal:
        np.fill_diagonal(T, 0.0)
    with torch.no_grad():
        head.table.copy_(torch.as_tensor(T))
    return head


def targets(loss, model, head, z, z2, samples, generator, dbc_d=None):
    c = model.mdp.discount
    if loss == "dbc":
        return L.dbc_targets(
            z,
            z2,
            policy=model.policy,
            reward=model.reward,
            next_w2=model.next_w2(dbc_d),
            discount=c,
            samples=samples,
            generator=generator,
        )
    ground = {
        "entangled-reward": L.reward_ground(model.reward),
        "entangled-policy": L.policy_ground(model.mean_action),
        "psm": L.policy_ground(model.mean_action),
        "mico": L.state_reward_ground(model.mean_reward),
    }[loss]
    coupling = "entangled" if loss.startswith("entangled") else "independent"
    return L.bisimulation_targets(
        z,
        z2,
        policy=model.policy,
        transition=model.transition,
        ground=ground,
        distance=head,
        discount=c,
        coupling=coupling,
        samples=samples,
        generator=generator,
    )


# ------------------------------------------------------------ unbiasedness
@pytest.mark.parametrize("loss", list(LOSS_METRIC))
@pytest.mark.parametrize("where", ["random", "grid", "embedded"])
def test_expected_target_is_the_operator(loss, where):
    """The mean sampled target of every state pair equals the operator (docs/operators.md) applied to the
    table (within 5 standard errors of 20000 samples): the loss estimates what it claims."""
    rng = np.random.default_rng(1)
    if where == "grid":
        mdp = product_grid_mdp((2, 2), 2, rng, discount=0.8, max_support=3)
    else:
        mdp = random_mdp(4, 2, rng, discount=0.8, action_dim=2)
    embedding = rng.normal(size=(mdp.n_states, 3)) if where == "embedded" else None
    model = L.FiniteModel(mdp, embedding)
    head = random_table(model, rng, diagonal=True)
    D = head.matrix()
    metric, ground = LOSS_METRIC[loss]
    expected = apply_operator(mdp, metric, D, ground=ground or "reward")
    z, z2, s, t = all_pairs(model, torch.zeros((), dtype=torch.float64))
    K = 20_000
    T = targets(loss, model, head, z, z2, K, torch.Generator().manual_seed(2), dbc_d=D).numpy()
    mean, se = T.mean(axis=0), T.std(axis=0) / np.sqrt(K)
    assert np.all(np.abs(mean - expected[s, t]) <= 5 * se + 1e-12)


def test_the_unbiasedness_check_has_power():
    """Fault injection: independent noise in place of shared noise is caught by the check above."""
    rng = np.random.default_rng(1)
    mdp = random_mdp(4, 2, rng, discount=0.8)
    model = L.FiniteModel(mdp)
    head = random_table(model, rng, diagonal=False)
    expected = apply_operator(mdp, "eps-bar", head.matrix())
    z, z2, s, t = all_pairs(model, torch.zeros((), dtype=torch.float64))
    T = L.bisimulation_targets(
        z,
        z2,
        policy=model.policy,
        transition=model.transition,
        ground=L.reward_ground(model.reward),
        distance=head,
        discount=0.8,
        coupling="independent",
        samples=20_000,
        generator=torch.Generator().manual_seed(2),
    )
    T = T.numpy()
    assert np.any(np.abs(T.mean(axis=0) - expected[s, t]) > 5 * T.std(axis=0) / np.sqrt(20_000) + 1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_finite_model_on_any_device_and_dtype(device, dtype):
    """The finite samplers and the table run where the state vectors are, in their dtype."""
    mdp = random_mdp(4, 2, np.random.default_rng(6), discount=0.8)
    model = L.FiniteModel(mdp)
    head = L.TabularDistance(model).to(device)
    like = torch.zeros((), dtype=dtype, device=device)
    z = model.states(torch.arange(4).repeat(8), like)
    g = torch.Generator(device=device).manual_seed(0)
    value = L.entangled_loss(
        z,
        distance=head,
        policy=model.policy,
        transition=model.transition,
        ground=L.reward_ground(model.reward),
        discount=0.8,
        samples=2,
        generator=g,
    )
    assert value.dtype == dtype and value.device.type == device
    value.backward()
    assert head.table.grad.abs().sum() > 0


def test_shared_uniform_draws_the_north_west_corner_coupling():
    """Actions drawn with one shared uniform per pair follow the entangled coupling (docs/couplings.md) exactly
    (here on a fine midpoint grid of u: frequencies are exact up to the grid step)."""
    rng = np.random.default_rng(3)
    mdp = random_mdp(3, 4, rng, discount=0.5)
    model = L.FiniteModel(mdp)
    N = 100_000
    u = ((torch.arange(N, dtype=torch.float64) + 0.5) / N)[:, None]
    for s, t in [(0, 1), (1, 2), (2, 0)]:
        a = model.policy(model.states(torch.full((N,), s)), u).numpy()
        b = model.policy(model.states(torch.full((N,), t)), u).numpy()
        freq = np.zeros((4, 4))
        np.add.at(freq, (a, b), 1.0 / N)
        assert np.abs(freq - entangled_coupling(mdp.policy[s], mdp.policy[t])).max() <= 8 / N


# --------------------------------------------------------- self-similarity
@pytest.mark.parametrize("where", ["random", "grid", "embedded"])
def test_entangled_target_is_exactly_zero_on_identical_states(where):
    """Every entangled sample at (z, z) is exactly 0 (claim C6), for both grounds; every
    independent loss (PSM, MICo, DBC) has positive samples there on a stochastic MDP."""
    rng = np.random.default_rng(4)
    mdp = product_grid_mdp((2, 3), 2, rng, discount=0.9) if where == "grid" else random_mdp(5, 3, rng, discount=0.9)
    model = L.FiniteModel(mdp, rng.normal(size=(mdp.n_states, 4)) if where == "embedded" else None)
    head = random_table(model, rng, diagonal=False)
    like = torch.zeros((), dtype=torch.float64)
    z = model.states(torch.arange(mdp.n_states).repeat(10), like)
    g = torch.Generator().manual_seed(5)
    for loss in LOSS_METRIC:
        T = targets(loss, model, head, z, z, 50, g, dbc_d=head.matrix())
        if loss.startswith("entangled"):
            assert torch.count_nonzero(T) == 0, loss
        else:  # positive on average at every state
            assert bool((T.mean(dim=0) > 0).all()), loss


def _mlp(inp, out, dtype, seed, device):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(inp, 32), torch.nn.Tanh(), torch.nn.Linear(32, out))
    return net.to(device=device, dtype=dtype)


def deep_models(dtype, D=5, k=2, device="cpu"):
    """A squashed Gaussian MLP policy, a Gaussian MLP latent transition, an MLP reward."""
    pol, dyn, rew = (
        _mlp(D, 2 * k, dtype, 0, device),
        _mlp(D + k, 2 * D, dtype, 1, device),
        _mlp(D + k, 1, dtype, 2, device),
    )

    def policy_model(z):
        mu, log_std = pol(z).chunk(2, dim=1)
        return mu, log_std.exp()

    def transition_model(z, a):
        mu, log_std = dyn(torch.cat([z, a], dim=1)).chunk(2, dim=1)
        return mu, log_std.exp()

    def reward(z, a):
        return rew(torch.cat([z, a], dim=1))[:, 0]

    return (
        L.gaussian_policy(policy_model, k, squash=True),
        L.gaussian_transition(transition_model, D),
        transition_model,
        reward,
        lambda z: policy_model(z)[0].tanh(),
    )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_deep_entangled_target_is_exactly_zero_on_identical_latents(dtype, device):
    policy, transition, transition_model, reward, mean_action = deep_models(dtype, device=device)
    g = torch.Generator(device=device).manual_seed(0)
    z = torch.randn(64, 5, generator=g, dtype=dtype, device=device)
    for head in (L.SeparableDistance(5, powers=(1, 2)).to(device), L.L1Distance()):
        for ground in (L.reward_ground(reward), L.policy_ground(mean_action)):
            T = L.bisimulation_targets(
                z,
                z.clone(),
                policy=policy,
                transition=transition,
                ground=ground,
                distance=head,
                discount=0.9,
                samples=8,
                generator=g,
            )
            assert T.dtype == dtype and T.device.type == device and T.shape == (8, 64)
            assert torch.count_nonzero(T) == 0
            T = L.bisimulation_targets(
                z,
                z.clone(),
                policy=policy,
                transition=transition,
                ground=ground,
                distance=head,
                discount=0.9,
                samples=8,
                generator=g,
                coupling="independent",
            )
            assert bool((T > 0).all())
    T = L.dbc_targets(
        z,
        z.clone(),
        policy=policy,
        reward=reward,
        next_w2=L.gaussian_w2(transition_model),
        discount=0.9,
        samples=4,
        generator=g,
    )
    assert bool((T > 0).all())


# ----------------------------------------------------------- deep losses
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_deep_losses_run_in_the_input_dtype_and_train_the_head(dtype, device):
    policy, transition, transition_model, reward, mean_action = deep_models(dtype, device=device)
    g = torch.Generator(device=device).manual_seed(1)
    z = torch.randn(32, 5, generator=g, dtype=dtype, device=device, requires_grad=True)
    head = L.SeparableDistance(5, powers=(1, 2)).to(device)  # float32 parameters, cast to the input dtype
    common = dict(distance=head, policy=policy, discount=0.9, generator=g, samples=3)
    values = [
        L.entangled_loss(z, transition=transition, ground=L.reward_ground(reward), **common),
        L.entangled_loss(z, transition=transition, ground=L.policy_ground(mean_action), **common),
        L.psm_loss(z, transition=transition, mean_action=mean_action, **common),
        L.mico_loss(z, transition=transition, reward=lambda x: x.sum(dim=1), **common),
        L.dbc_loss(
            z,
            distance=L.LatentL1Distance().to(device),
            policy=policy,
            reward=reward,
            next_w2=L.gaussian_w2(transition_model),
            discount=0.9,
            generator=g,
        ),
    ]
    for value in values:
        assert value.dtype == dtype and value.device.type == device and value.dim() == 0 and torch.isfinite(value)
        head.raw.grad, z.grad = None, None
        value.backward()
        assert torch.isfinite(z.grad).all() and z.grad.abs().sum() > 0  # the encoder gets a gradient
    assert head.raw.grad is None  # the last one (DBC) does not use the separable head
    values[0] = L.entangled_loss(z, transition=transition, ground=L.reward_ground(reward), **common)
    values[0].backward()
    assert head.raw.grad.abs().sum() > 0 and head.raw.grad.dtype == torch.float32


def test_target_is_the_mean_of_shared_noise_samples():
    """With explicit noise, the loss regresses d(z, z') on the average of the K targets, each
    G + c d(z+, z'+) with the same noise for z and z'."""
    policy, transition, _, reward, _ = deep_models(torch.float64)
    g = torch.Generator().manual_seed(2)
    z = torch.randn(6, 5, generator=g, dtype=torch.float64)
    perm = torch.tensor([3, 0, 1, 5, 2, 4])
    xi = torch.randn(4, 6, 2, generator=g, dtype=torch.float64)
    eta = torch.randn(4, 6, 5, generator=g, dtype=torch.float64)
    head = L.L1Distance()
    value = L.entangled_loss(
        z,
        distance=head,
        policy=policy,
        transition=transition,
        ground=L.reward_ground(reward),
        discount=0.7,
        perm=perm,
        samples=4,
        action_noise=xi,
        state_noise=eta,
    )
    z2 = z[perm]
    manual = []
    for k in range(4):
        a, a2 = policy(z, xi[k]), policy(z2, xi[k])
        manual.append(
            (reward(z, a) - reward(z2, a2)).abs() + 0.7 * head(transition(z, a, eta[k]), transition(z2, a2, eta[k]))
        )
    expected = (head(z, z2) - torch.stack(manual).mean(dim=0)).pow(2).mean()
    assert torch.allclose(value, expected, rtol=1e-12, atol=1e-12)


def test_dbc_target_uses_the_closed_form_gaussian_w2():
    mu1, s1 = torch.tensor([[0.0, 1.0]]), torch.tensor([[1.0, 2.0]])
    mu2, s2 = torch.tensor([[3.0, 1.0]]), torch.tensor([[1.0, 6.0]])
    assert L.diagonal_gaussian_w2(mu1, s1, mu2, s2).item() == pytest.approx(5.0)  # sqrt(3^2 + 4^2)
    assert L.diagonal_gaussian_w2(mu1, s1, mu1, s1).item() == 0.0


def test_scalar_linear_gaussian_entangled_fit():
    """An API check on a 1-D linear-Gaussian MDP (z+ = alpha z + beta a + sigma eta,
    a = k z + s xi, G = |k z - k z'|): shared noise cancels, z+ - z'+ = m (z - z') with
    m = alpha + beta k, so d_eps-bar = |k| |z - z'| / (1 - c |m|), which the separable head
    (p = 1) can represent; the entangled loss must learn that weight."""
    from validation.learning import fit_head

    alpha, beta, k, sigma, s, c = 0.6, 0.5, -0.8, 0.3, 0.4, 0.9
    policy = L.gaussian_policy(lambda z: (k * z, torch.full_like(z, s)), 1)
    transition = L.gaussian_transition(lambda z, a: (alpha * z + beta * a, torch.full_like(z, sigma)), 1)
    exact = abs(k) / (1 - c * abs(alpha + beta * k))

    def loss(z, head, target, g):
        return L.entangled_loss(
            z,
            distance=head,
            target_distance=target,
            policy=policy,
            transition=transition,
            ground=L.policy_ground(lambda x: k * x),
            discount=c,
            generator=g,
        )

    head = L.SeparableDistance(1, powers=(1,), init=0.5)
    result = fit_head(
        head,
        loss,
        lambda g: torch.randn(256, 1, generator=g),
        steps=400,
        lr=0.05,
        error=lambda d: abs(d.weights.item() - exact),
        log_every=100,
    )
    assert result["error"][-1] <= 1e-3 * exact and result["error"][0] > result["error"][-1]


# ------------------------------------------------------------------ heads
def test_heads():
    z = torch.tensor([[0.0, 1.0, -2.0], [1.0, 1.0, 0.0]])
    z2 = torch.tensor([[1.0, 3.0, -2.0], [1.0, 1.0, 0.0]])
    sep = L.SeparableDistance(3, powers=(1, 2), init=1.0)
    assert bool((sep.weights > 0).all())
    assert sep(z, z2).tolist() == pytest.approx([1 + 1 + 2 + 4, 0.0])
    assert L.L1Distance()(z, z2).tolist() == [3.0, 0.0]
    assert L.LatentL1Distance(scale=0.5)(z, z2).tolist() == [1.5, 0.0]
    learn = L.LatentL1Distance(scale=2.0, learn_scale=True)
    learn(z, z2).sum().backward()
    assert learn.scale.grad.item() == 3.0
    with pytest.raises(ValueError, match="powers"):
        L.SeparableDistance(3, powers=(0.5,))
    with pytest.raises(ValueError, match="z: expected 3 columns"):
        sep(torch.zeros(2, 4), torch.zeros(2, 4))
    with pytest.raises(ValueError, match="z': expected shape"):
        L.L1Distance()(z, torch.zeros(2, 2))


# ------------------------------------------------------------------ errors
def test_bad_inputs_raise_value_errors_naming_the_tensor():
    policy, transition, _, reward, mean_action = deep_models(torch.float32)
    head = L.L1Distance()
    good = torch.randn(8, 5)
    kw = dict(distance=head, policy=policy, transition=transition, ground=L.reward_ground(reward), discount=0.9)

    def call(z=good, **extra):
        return L.entangled_loss(z, **{**kw, **extra})

    cases = [
        (dict(z=torch.randn(8)), r"z: expected shape \(B, D\), got \(8,\)"),
        (dict(z=torch.zeros(8, 5, dtype=torch.int64)), "z: expected a floating-point tensor"),
        (dict(z=good.clone().index_fill_(0, torch.tensor([3]), float("nan"))), r"z: not finite at index \(3, 0\)"),
        (dict(perm=torch.arange(7)), r"perm: expected shape \(8,\)"),
        (dict(perm=torch.zeros(8, dtype=torch.int64)), "perm: not a permutation"),
        (dict(action_noise=torch.zeros(1, 8, 3)), r"action_noise: expected shape \(K, B, noise_dim\)"),
        (dict(state_noise=torch.full((1, 8, 5), float("inf"))), "state_noise: not finite"),
        (dict(discount=1.0), "discount"),
        (dict(samples=0), "samples"),
        (dict(distance=lambda a, b: torch.zeros(len(a), 2)), r"distance\(z\+, z'\+\): expected shape"),
        (dict(ground=L.reward_ground(lambda z, a: torch.full((len(z),), float("nan")))), "target G"),
        (dict(ground=L.reward_ground(lambda z, a: torch.zeros(3))), r"reward\(z, a\): expected .* rows"),
        (dict(policy=lambda z, xi: z), "policy: needs an integer attribute noise_dim"),
    ]
    for extra, message in cases:
        with pytest.raises(ValueError, match=message):
            call(**extra)
    with pytest.raises(ValueError, match="coupling"):
        L.sampled_loss(good, coupling="optimal", **kw)
    with pytest.raises(ValueError, match=r"action_noise: expected shape \(K, 2, B, noise_dim\)"):
        L.psm_loss(
            good,
            distance=head,
            policy=policy,
            transition=transition,
            mean_action=mean_action,
            discount=0.9,
            action_noise=torch.zeros(1, 8, 2),
        )
    with pytest.raises(ValueError, match="mu2: expected shape"):
        L.diagonal_gaussian_w2(torch.zeros(2, 3), torch.ones(2, 3), torch.zeros(2, 2), torch.ones(2, 2))
    with pytest.raises(ValueError, match="noise_law"):
        L.Reparam(lambda z, u: z, 1, "cauchy")


def test_finite_model_rejects_bad_embeddings():
    mdp = example("chain")
    with pytest.raises(ValueError, match="embedding: expected shape"):
        L.FiniteModel(mdp, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="same vector"):
        L.FiniteModel(mdp, np.zeros((mdp.n_states, 2)))
    model = L.FiniteModel(mdp, np.random.default_rng(0).normal(size=(mdp.n_states, 3)))
    with pytest.raises(ValueError, match="z: expected 3 columns"):
        model.index(torch.zeros(2, 4))
    idx = torch.arange(mdp.n_states)
    assert torch.equal(model.index(model.states(idx, torch.zeros((), dtype=torch.float32))), idx)


def test_import_bisimkit_does_not_import_torch():
    code = "import sys, bisimkit, bisimkit_cli.core, validation.verify; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_deferred_checks_name_the_tensor_at_flush_not_before():
    from bisimkit.losses import DeferredChecks, check_finite

    checks = DeferredChecks()
    good, bad = torch.zeros(3, 2), torch.tensor([[0.0, float("nan")]])
    with checks.collecting():
        check_finite({"z": good})
        check_finite({"z": bad, "target": good})  # recorded, not raised
    with pytest.raises(ValueError, match=r"^z: not finite \(found by a deferred check since the last flush\)"):
        checks.flush()
    checks.flush()  # reset after a flush: nothing pending
    with pytest.raises(ValueError, match=r"^z: not finite at index \(0, 1\)"):
        check_finite({"z": bad})  # outside the block: immediate, as before


def test_deferred_checks_accumulate_every_record_since_the_last_flush():
    from bisimkit.losses import DeferredChecks

    checks = DeferredChecks()
    checks.record("z", torch.tensor(False))
    for _ in range(3):  # later clean records do not clear an earlier failure
        checks.record("z", torch.tensor(True))
        checks.record("target", torch.tensor(True))
    with pytest.raises(ValueError, match=r"^z: not finite"):
        checks.flush()


def test_deferred_checks_reset_in_place_at_flush():
    """The flag tensors persist across flushes (a captured CUDA graph writes them on every replay): a flush
    that raised resets them to true in place, and the collector's own copy is not the recorded tensor."""
    from bisimkit.losses import DeferredChecks, check_finite

    checks = DeferredChecks()
    ok = torch.tensor(True)
    checks.record("target", ok)
    checks.record("z", torch.tensor(False))
    checks.record("target", torch.tensor(False))
    assert checks.flags["target"] is not ok and ok.item() is True  # the caller's tensor is never written
    checks.record("target", torch.tensor(True))
    flags = dict(checks.flags)
    with pytest.raises(ValueError, match=r"^target: not finite"):  # the first failing name
        checks.flush()
    assert checks.flags.keys() == flags.keys() and all(checks.flags[n] is t for n, t in flags.items())
    assert all(bool(t) for t in checks.flags.values())
    with checks.collecting():  # a clean batch of the same names flushes without error
        check_finite({"z": torch.zeros(3), "target": torch.ones(2)})
    checks.flush()
    assert all(checks.flags[n] is t for n, t in flags.items())
    checks.record("target", torch.tensor(False))  # and the reset flags still accumulate
    checks.record("target", torch.tensor(True))
    with pytest.raises(ValueError, match=r"^target: not finite"):
        checks.flush()


def test_dbc_coordinate_loss_is_dbcs_per_coordinate_regression():
    """Two rows swapped by the pairing, hand-computed: smooth-L1 is x^2 / 2 below 1 and |x| - 1/2 above;
    the target of coordinate i is smoothL1(r - r') + c sqrt(dmu_i^2 + dsigma_i^2), the loss the mean of
    the squared residuals over rows and coordinates, and the gradient reaches z on both sides of a pair."""
    z = torch.tensor([[0.0, 2.0], [0.5, -1.0]], dtype=torch.float64, requires_grad=True)
    reward = torch.tensor([1.0, 3.0], dtype=torch.float64)
    mu = torch.tensor([[0.0, 0.0], [3.0, 0.0]], dtype=torch.float64)
    sigma = torch.tensor([[1.0, 1.0], [1.0, 5.0]], dtype=torch.float64)
    perm = torch.tensor([1, 0])
    value = L.dbc_coordinate_loss(z, reward=reward, next_mean=mu, next_sigma=sigma, discount=0.5, perm=perm)
    z_dist = [0.5 * 0.5**2, 3.0 - 0.5]  # |dz| = 0.5 and 3 in the two coordinates, either row
    target = [1.5 + 0.5 * 3.0, 1.5 + 0.5 * 4.0]  # smoothL1(2) = 1.5; sqrt(9 + 0) and sqrt(0 + 16)
    expected = sum((d - t) ** 2 for d, t in zip(z_dist, target)) / 2  # both rows give the same residuals
    assert float(value) == pytest.approx(expected, rel=1e-12)
    value.backward()
    assert torch.all(z.grad != 0)
    with pytest.raises(ValueError, match="^next_sigma: expected shape"):
        L.dbc_coordinate_loss(z, reward=reward, next_mean=mu, next_sigma=sigma[:, :1], discount=0.5)
    with pytest.raises(ValueError, match="^reward: expected 2 rows"):
        L.dbc_coordinate_loss(z, reward=reward[:1], next_mean=mu, next_sigma=sigma, discount=0.5)
