"""The nearest-neighbour search of the agents' latents: distances to every observation, neighbours from other
episodes."""

import numpy as np
import pytest

from bisimkit.errors import InputError

pytest.importorskip("torch")


def test_neighbour_distance_without_a_head_is_l1_between_latents():
    import torch

    from agents.neighbours import distance_to_all, find_neighbours

    class NoHead:
        """What SAC and DrQ agents look like to the figure: no distance head."""

        distance = None

    latents = torch.tensor([[0.0, 0.0], [1.0, -1.0], [0.7, 0.2], [3.0, 3.0], [0.1, 0.1]])
    assert distance_to_all(NoHead(), latents, 0).tolist() == pytest.approx([0.0, 2.0, 0.9, 6.0, 0.2])
    episode = np.array([0, 0, 1, 1, 2])
    matches = find_neighbours(NoHead(), latents, episode, queries=5, neighbours=2, rng=np.random.default_rng(0))
    by_query = {m["query"]: m for m in matches}
    assert by_query[0]["neighbours"] == [4, 2] and by_query[0]["distances"] == pytest.approx([0.2, 0.9])
    assert by_query[2]["neighbours"] == [4, 0]  # observation 3 is in the same episode: excluded
    with pytest.raises(InputError, match="^neighbours: 4 exceeds"):
        find_neighbours(NoHead(), latents, episode, queries=1, neighbours=4, rng=np.random.default_rng(0))
