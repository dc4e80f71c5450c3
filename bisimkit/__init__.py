"""bisimkit: exact bisimulation metrics on finite MDPs, and the losses that learn them.

Quick use::

    from bisimkit import compare, example, from_gymnasium, solve
    sol = solve(example("mirrored-rooms"), "bisim")
    sol.distances, sol.certified_error
    cmp = compare(example("mirrored-rooms-policy"), "pi,eps-bar,mico")   # arrays + summary
    mdp = from_gymnasium("FrozenLake-v1", policy="uniform")             # the 'gym' extra
"""

from .comparison import Comparison, compare
from .couplings import entangled_coupling, independent_coupling, optimal_coupling
from .errors import InputError
from .examples import EXAMPLES, example
from .gym import from_gymnasium
from .mdp import FiniteMDP, load_mdp, mdp_from_dict, save_mdp
from .operators import METRIC_NAMES, OPERATORS, apply_operator
from .pseudometric import check_pseudometric
from .relations import relation_blocks, relation_labels
from .solvers import Solution, solve

__version__ = "0.1.0"

__all__ = [
    "Comparison", "EXAMPLES", "FiniteMDP", "InputError", "METRIC_NAMES", "OPERATORS", "Solution",
    "apply_operator", "check_pseudometric", "compare", "entangled_coupling", "example", "from_gymnasium",
    "independent_coupling", "load_mdp", "mdp_from_dict", "optimal_coupling",
    "relation_blocks", "relation_labels", "save_mdp", "solve",
]
