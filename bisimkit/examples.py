"""Bundled example MDPs, usable by name wherever a file path is accepted.

``bisimkit examples`` lists them; ``bisimkit solve mirrored-rooms --metric bisim``
works without a file.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .mdp import FiniteMDP

# Castro (2020)'s mirrored rooms: '*' wall, 'g' goal (+1 on entering), and the
# fixed policy of the policy variant ('^', 'v', '<', '>'; the goals go down).
MIRRORED_ROOMS = [
    "*******",
    "*    g*",
    "*     *",
    "*     *",
    "*** ***",
    "*    g*",
    "*     *",
    "*     *",
    "*******",
]
MIRRORED_ROOMS_POLICY = [
    "*******",
    "*>>>>g*",
    "*^<<<^*",
    "*>>>>^*",
    "***^***",
    "*>>>>g*",
    "*^<<<^*",
    "*>>>>^*",
    "*******",
]
GRID_ACTIONS = ("up", "down", "left", "right")
_DELTAS = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
_ARROWS = {"^": "up", "v": "down", "<": "left", ">": "right", "g": "down"}


def grid_world(
    layout: list[str],
    discount: float = 0.99,
    goal_reward: float = 1.0,
    wall_penalty: float = -1.0,
    name: str = "grid-world",
) -> FiniteMDP:
    """A deterministic grid world from a text layout.

    Open cells are states, numbered row by row. Actions up, down, left, right
    move one cell; a move into a wall leaves the agent in place with reward
    ``wall_penalty``; entering a goal cell ('g') gives ``goal_reward``.
    Arrow characters define a deterministic policy (goal cells go down); with
    no arrows the MDP has no policy.
    """
    cells = [(r, c) for r, row in enumerate(layout) for c, ch in enumerate(row) if ch != "*"]
    index = {cell: k for k, cell in enumerate(cells)}
    n, m = len(cells), len(GRID_ACTIONS)
    P = np.zeros((n, m, n))
    R = np.zeros((n, m))
    for s, (r, c) in enumerate(cells):
        for a, action in enumerate(GRID_ACTIONS):
            dr, dc = _DELTAS[action]
            target = (r + dr, c + dc)
            if target in index:
                P[s, a, index[target]] = 1.0
                R[s, a] = goal_reward if layout[target[0]][target[1]] == "g" else 0.0
            else:
                P[s, a, s] = 1.0
                R[s, a] = wall_penalty
    has_policy = any(ch in "^v<>" for row in layout for ch in row)
    policy = None
    if has_policy:
        policy = np.zeros((n, m))
        for s, (r, c) in enumerate(cells):
            policy[s, GRID_ACTIONS.index(_ARROWS[layout[r][c]])] = 1.0
    return FiniteMDP(P, R, discount, policy, name=name)


def grid_cells(layout: list[str]) -> list[tuple[int, int]]:
    """(row, column) of each state of :func:`grid_world`, in state order."""
    return [(r, c) for r, row in enumerate(layout) for c, ch in enumerate(row) if ch != "*"]


def mirrored_rooms(policy: bool = False, discount: float = 0.99) -> FiniteMDP:
    """Castro's 31-state mirrored-rooms grid world, with or without its fixed policy."""
    layout = MIRRORED_ROOMS_POLICY if policy else MIRRORED_ROOMS
    return grid_world(layout, discount, name="mirrored-rooms-policy" if policy else "mirrored-rooms")


def four_state(discount: float = 0.9) -> FiniteMDP:
    """Castro's 4-state, 1-action example: 0 splits to the absorbing states 2
    (reward 0) and 3 (reward 1); 1 goes to 2. Its d_pi is known in closed form."""
    P = np.array([[0, 0, 0.5, 0.5], [0, 0, 1, 0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=float)[:, None, :]
    R = np.array([[0.0], [0.0], [0.0], [1.0]])
    return FiniteMDP(P, R, discount, np.ones((4, 1)), name="four-state")


def two_state_chain(discount: float = 0.9) -> FiniteMDP:
    """The 2-state chain P = [[.5, .5], [0, 1]], r = [1, 0] (MICo's U[0,1] = 1/(1 - c/2))."""
    P = np.array([[[0.5, 0.5]], [[0.0, 1.0]]])
    R = np.array([[1.0], [0.0]])
    return FiniteMDP(P, R, discount, np.ones((2, 1)), name="two-state-chain")


def chain(n: int = 6, slip: float = 0.2, discount: float = 0.9) -> FiniteMDP:
    """A line of ``n`` states; actions left / right move one step, or stay with
    probability ``slip``. Reward 1 for acting in the right end state. The
    policy goes right with probability rising from 0.5 (left end) to 0.9."""
    P = np.zeros((n, 2, n))
    for s in range(n):
        for a, step in enumerate((-1, 1)):
            t = min(max(s + step, 0), n - 1)
            P[s, a, t] += 1 - slip
            P[s, a, s] += slip
    R = np.zeros((n, 2))
    R[n - 1, :] = 1.0
    p_right = 0.5 + 0.4 * np.arange(n) / max(n - 1, 1)
    policy = np.column_stack([1 - p_right, p_right])
    return FiniteMDP(P, R, discount, policy, action_values=np.array([[-1.0], [1.0]]), name="chain")


def product_grid(
    shape: tuple[int, int] = (4, 4), discount: float = 0.9, success: float = 0.7, stay: float = 0.2
) -> FiniteMDP:
    """A 2-D grid with coordinate-independent moves (a product state space).

    Actions are the four compass moves and 'stay'. Each coordinate moves
    independently: by its intended step with probability ``success``, stays
    with probability ``stay``, and steps the opposite way otherwise (clipped at
    the border). Reward: 1 for acting in the far corner, minus 0.1 per moving
    action. The policy heads to the far corner, with some randomness.
    """
    h, w = shape
    moves = [(-1, 0), (1, 0), (0, -1), (0, 1), (0, 0)]
    n, m = h * w, len(moves)

    def coordinate_law(x: int, step: int, size: int) -> np.ndarray:
        law = np.zeros(size)
        if step == 0:
            law[x] = 1.0
            return law
        law[min(max(x + step, 0), size - 1)] += success
        law[x] += stay
        law[min(max(x - step, 0), size - 1)] += 1 - success - stay
        return law

    P = np.zeros((n, m, n))
    R = np.zeros((n, m))
    policy = np.zeros((n, m))
    for s in range(n):
        r, c = divmod(s, w)
        for a, (dr, dc) in enumerate(moves):
            P[s, a] = np.outer(coordinate_law(r, dr, h), coordinate_law(c, dc, w)).ravel()
            R[s, a] = (1.0 if s == n - 1 else 0.0) - (0.1 if (dr, dc) != (0, 0) else 0.0)
        prefs = np.array([0.5, 1.0 + (r < h - 1) * 2, 0.5, 1.0 + (c < w - 1) * 2, 0.5 + 3 * (s == n - 1)])
        policy[s] = prefs / prefs.sum()
    action_values = np.array(moves, dtype=float)
    return FiniteMDP(P, R, discount, policy, action_values=action_values, state_shape=shape, name="product-grid")


def coupling_order(discount: float = 0.9) -> FiniteMDP:
    """Six states, one action, where index order defeats the entangled coupling.

    States 1, 4 are reward-0 sinks and 2, 3 reward-1 sinks. State 0 moves to
    1 or 2 and state 5 to 3 or 4, each with probability 1/2, so 0 and 5 are
    bisimilar (equal mass on each class) and d_eps(0, 5) = 0. The entangled
    coupling pairs successors in index order, 1 with 3 and 2 with 4, which lie
    in different classes: d_eps-bar(0, 5) = c * 1/(1 - c) = 9 for c = 0.9.
    """
    P = np.zeros((6, 1, 6))
    P[0, 0, [1, 2]] = 0.5
    P[5, 0, [3, 4]] = 0.5
    for s in (1, 2, 3, 4):
        P[s, 0, s] = 1.0
    R = np.array([[0.0], [0.0], [1.0], [1.0], [0.0], [0.0]])
    return FiniteMDP(P, R, discount, np.ones((6, 1)), name="coupling-order")


EXAMPLES: dict[str, tuple[Callable[[], FiniteMDP], str]] = {
    "mirrored-rooms": (lambda: mirrored_rooms(False), "Castro's 31-state mirrored rooms, 4 actions, no policy"),
    "mirrored-rooms-policy": (lambda: mirrored_rooms(True), "the same grid with its fixed deterministic policy"),
    "four-state": (four_state, "Castro's 4-state example with known d_pi"),
    "two-state-chain": (two_state_chain, "2-state chain with known MICo distance"),
    "chain": (chain, "6-state slippery chain, stochastic policy"),
    "product-grid": (product_grid, "4x4 grid, coordinate-independent moves (state_shape)"),
    "coupling-order": (coupling_order, "6 states where d_eps-bar > 0 on an E_eps pair (index-order coupling)"),
}


def example(name: str) -> FiniteMDP:
    """Build the bundled example ``name``."""
    return EXAMPLES[name][0]()
