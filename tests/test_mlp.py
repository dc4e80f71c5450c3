"""The agents' MLPs (paper appendix C): two hidden layers of the capacity's width."""

import pytest
import torch

from agents.mlp import HIDDEN, HIDDEN_LOW_CAPACITY, mlp


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_mlp_has_two_hidden_layers_of_the_paper_widths():
    assert (HIDDEN, HIDDEN_LOW_CAPACITY) == (1024, 200)
    net = mlp(10, 3, hidden=200)
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(10, 200), (200, 200), (200, 3)]
