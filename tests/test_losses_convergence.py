"""Each loss, trained on a tabular distance from samples, converges to the exact fixed point
of its operator (docs/losses.md). Seeded CPU runs of about a second each (limit 30 s)."""

import numpy as np
import pytest

pytest.importorskip("torch")

from bisimkit.generators import random_mdp  # noqa: E402
from validation.learning import (  # noqa: E402
    LOSSES,
    QUICK_CONFIG,
    RELATIVE_TOLERANCE,
    TABULAR_LOSSES,
    exact_fixed_point,
    random_embedding,
    train_tabular,
)


def small_mdp():
    return random_mdp(4, 2, np.random.default_rng(7), discount=0.8, max_support=2)


@pytest.mark.parametrize("loss", TABULAR_LOSSES)
def test_tabular_training_converges_to_the_exact_fixed_point(loss):
    mdp = small_mdp()
    curve = train_tabular(mdp, loss, QUICK_CONFIG)
    # Within 1% of the largest exact distance, over all pairs and the diagonal, in under 30 s.
    assert curve.final_error <= RELATIVE_TOLERANCE * curve.scale, curve.final_error
    assert curve.final_error < 0.05 * curve.error[0]
    assert curve.seconds < 30
    if LOSSES[loss].metric == "eps-bar":
        assert curve.exact_diagonal == 0 and curve.learned_diagonal <= curve.tolerance
    else:  # the sampled operators' positive self-distances are learned too
        assert curve.exact_diagonal > 0.2 and curve.learned_diagonal > 0.2


def test_entangled_loss_converges_on_embedded_states():
    mdp = small_mdp()
    curve = train_tabular(mdp, "entangled-reward", QUICK_CONFIG, embedding=random_embedding(4, 3, seed=1))
    assert curve.final_error <= RELATIVE_TOLERANCE * curve.scale


def test_the_tolerance_tells_the_fixed_points_apart():
    """Learning the wrong operator could not pass: the fixed points differ by far more than 1%."""
    mdp = small_mdp()
    fixed = {loss: exact_fixed_point(mdp, loss) for loss in LOSSES}
    for a in LOSSES:
        for b in LOSSES:
            if LOSSES[a].metric != LOSSES[b].metric or LOSSES[a].ground != LOSSES[b].ground:
                gap = np.max(np.abs(fixed[a] - fixed[b]))
                assert gap > 5 * RELATIVE_TOLERANCE * max(np.abs(fixed[a]).max(), np.abs(fixed[b]).max()), (a, b)
