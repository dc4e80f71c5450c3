"""bisimkit: exact bisimulation metrics on finite MDPs, and the losses that learn them.

Quick use::

    from bisimkit import compare, example, from_gymnasium, solve
    sol = solve(example("mirrored-rooms"), "bisim")
    sol.distances, sol.certified_error
    cmp = compare(example("mirrored-rooms-policy"), "pi,eps-bar,mico")   # arrays + summary
    mdp = from_gymnasium("FrozenLake-v1", policy="uniform")             # the 'gym' extra
"""

from importlib import import_module

#: Each public name and the module that defines it. They are imported on first use (module
#: ``__getattr__``): numpy and scipy take most of a second to load, which ``import bisimkit``
#: and the command line's start-up do not pay for what they do not use (start-up cost).
_PUBLIC = {
    "Comparison": "comparison",
    "compare": "comparison",
    "entangled_coupling": "couplings",
    "independent_coupling": "couplings",
    "optimal_coupling": "couplings",
    "InputError": "errors",
    "EXAMPLES": "examples",
    "example": "examples",
    "from_gymnasium": "gym",
    "FiniteMDP": "mdp",
    "load_mdp": "mdp",
    "mdp_from_dict": "mdp",
    "save_mdp": "mdp",
    "read_model": "model_files",
    "from_stormpy": "mdp",
    "SolveOptions": "solvers",
    "METRIC_NAMES": "operators",
    "OPERATORS": "operators",
    "apply_operator": "operators",
    "check_pseudometric": "pseudometric",
    "relation_blocks": "relations",
    "relation_labels": "relations",
    "Solution": "solvers",
    "solve": "solvers",
    "BetweenSolution": "between",
    "solve_between": "between",
}

__version__ = "0.1.0"

__all__ = [
    "BetweenSolution",
    "Comparison",
    "EXAMPLES",
    "FiniteMDP",
    "InputError",
    "METRIC_NAMES",
    "OPERATORS",
    "Solution",
    "SolveOptions",
    "apply_operator",
    "check_pseudometric",
    "compare",
    "entangled_coupling",
    "example",
    "from_gymnasium",
    "from_stormpy",
    "independent_coupling",
    "load_mdp",
    "mdp_from_dict",
    "optimal_coupling",
    "read_model",
    "relation_blocks",
    "relation_labels",
    "save_mdp",
    "solve",
    "solve_between",
]


def lazy_attributes(package: str, namespace: dict, public: dict[str, str]):
    """The module ``__getattr__`` and ``__dir__`` of ``package`` (its globals ``namespace``) that import
    each name of ``public`` (name -> module of the package) on first use and keep it."""

    def __getattr__(name: str):
        if name not in public:
            raise AttributeError(f"module '{package}' has no attribute '{name}'")
        value = getattr(import_module(f".{public[name]}", package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _PUBLIC)
