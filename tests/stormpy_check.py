"""An independent count of pi-bisimulation classes with stormpy's strong bisimulation.

The policy-averaged chain Ppi is written as a DTMC in Storm's explicit DRN
format, each state labelled with the class of its reward Rpi; Storm's strong
bisimulation quotient preserving those labels has one state per E_pi block.
"""

import os
import tempfile

import numpy as np

from bisimkit.relations import cluster_values


def stormpy_pi_block_count(mdp) -> int:
    import stormpy
    import stormpy.transformations

    Ppi, labels = mdp.transition_pi, cluster_values(mdp.reward_pi, 1e-9)
    n = mdp.n_states
    lines = [
        "@type: DTMC",
        "@parameters",
        "",
        "@reward_models",
        "",
        "@nr_states",
        str(n),
        "@nr_choices",
        str(n),
        "@model",
    ]
    for s in range(n):
        lines += [f"state {s} init r{labels[s]}", "\taction 0"]
        lines += [f"\t\t{t} : {float(Ppi[s, t])!r}" for t in np.nonzero(Ppi[s])[0]]
    fd, path = tempfile.mkstemp(suffix=".drn")
    with os.fdopen(fd, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    try:
        model = stormpy.build_model_from_drn(path)
    finally:
        os.unlink(path)
    props = stormpy.parse_properties("; ".join(f'P=? [F "r{k}"]' for k in sorted(set(labels.tolist()))))
    return stormpy.transformations.perform_bisimulation(model, props).nr_states


def brp_chain(N: int, MAX: int):
    """stormpy's sparse DTMC of PRISM's bounded retransmission protocol (``brp.pm`` of stormpy's example files)."""
    from pathlib import Path

    import stormpy

    path = Path(stormpy.__file__).parent / "examples" / "files" / "dtmc" / "brp.pm"
    program, _ = stormpy.instantiate_constants(stormpy.parse_prism_program(str(path)), {"N": N, "MAX": MAX})
    return stormpy.build_model(program)


def storm_strong_blocks(model, label: str) -> int:
    """The states of Storm's strong bisimulation quotient of ``model`` preserving ``P=? [F label]``."""
    import stormpy
    import stormpy.transformations

    properties = stormpy.parse_properties(f'P=? [F "{label}"]')
    return stormpy.transformations.perform_bisimulation(model, properties).nr_states
