"""bisimkit: exact bisimulation metrics on finite MDPs, and the losses that learn them.

Quick use::

    from bisimkit import example, solve
    sol = solve(example("mirrored-rooms"), "bisim")
    sol.distances, sol.certified_error
"""

from .couplings import entangled_coupling, independent_coupling, optimal_coupling
from .errors import InputError
from .examples import EXAMPLES, example
from .mdp import FiniteMDP, load_mdp, mdp_from_dict, save_mdp
from .operators import METRIC_NAMES, OPERATORS, apply_operator
from .pseudometric import check_pseudometric
from .relations import relation_blocks, relation_labels
from .solvers import Solution, solve

__version__ = "0.1.0"

__all__ = [
    "EXAMPLES", "FiniteMDP", "InputError", "METRIC_NAMES", "OPERATORS", "Solution",
    "apply_operator", "check_pseudometric", "entangled_coupling", "example",
    "independent_coupling", "load_mdp", "mdp_from_dict", "optimal_coupling",
    "relation_blocks", "relation_labels", "save_mdp", "solve",
]
