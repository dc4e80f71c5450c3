"""A sweep's grid: read a TOML/JSON spec (and ``--grid`` / ``--set`` flags), expand it, name and validate its runs.

A spec file::

    name = "table1-distractions"      # optional; the default root is sweeps/NAME
    [config]                          # fixed TrainConfig fields of every run (preset included)
    preset = "paper"
    [grid]                            # lists: one run per combination
    task = ["cartpole-swingup", "walker-walk"]
    method = ["drq", "eps-r"]
    seed = [0, 1, 2, 3, 4]
    [conditions.low-capacity]         # optional named bundles of fields: one more axis of the grid
    capacity = "low"
    [slurm]                           # executor settings (command-line flags override them)
    partition = "gpu"
    gpus_per_run = 1
    [local]
    parallel = 2

Every grid key and condition field must be a :class:`~agents.config.TrainConfig`
field; every run's configuration goes through :func:`~agents.config.make_config`
and :meth:`~agents.config.TrainConfig.resolved` (the one validation) before
anything is written or submitted. A run's folder name is built from its grid
values only (task, method, condition, the other axes in name order, seed):
``cartpole-swingup__eps-r__capacity=low__seed0``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

from bisimkit.errors import InputError

from ..config import FIELDS, make_config

#: The grid axes that come first (in this order) in a run's name; ``seed`` comes last.
LEADING = ("task", "method")
#: The pseudo-axis of named field bundles (``[conditions.NAME]``).
CONDITION = "condition"
SECTIONS = {"name", "config", "grid", "conditions", "slurm", "local"}
SLURM_KEYS = {
    "partition": str,
    "gpus_per_run": int,
    "cpus_per_run": int,
    "time_min": int,
    "array_parallelism": int,
    "mem_gb": int,
    "sbatch": dict,
}
LOCAL_KEYS = {"parallel": int, "time_min": int}


@dataclass
class RunSpec:
    """One grid point: its folder name, the grid values that name it, and its resolved configuration."""

    name: str
    values: dict  # axis -> value (task, method, condition, other axes, seed)
    config: dict  # the resolved TrainConfig as a dict


@dataclass
class Spec:
    """A parsed sweep specification."""

    name: str | None = None
    config: dict = field(default_factory=dict)  # fixed fields
    grid: dict = field(default_factory=dict)  # field -> list of values
    conditions: dict = field(default_factory=dict)  # condition name -> fixed fields
    slurm: dict = field(default_factory=dict)
    local: dict = field(default_factory=dict)

    # -------------------------------------------------------------- grid
    def axes(self) -> list[str]:
        """The grid's axes in naming order (task, method, condition, the others sorted, seed)."""
        names = list(self.grid) + ([CONDITION] if self.conditions else [])
        lead = [a for a in (*LEADING, CONDITION) if a in names]
        rest = sorted(a for a in names if a not in lead and a != "seed")
        return lead + rest + (["seed"] if "seed" in names else [])

    def fingerprint(self) -> str:
        """A hash of what defines the runs (fixed fields, grid, conditions), not how they are submitted."""
        text = json.dumps({"config": self.config, "grid": self.grid, "conditions": self.conditions}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def grid_record(self) -> dict:
        """What ``sweep.json`` keeps of the grid."""
        return {
            "name": self.name,
            "config": self.config,
            "grid": self.grid,
            "conditions": self.conditions,
            "axes": self.axes(),
            "fingerprint": self.fingerprint(),
        }

    def runs(self) -> list[RunSpec]:
        """Every grid point, validated (:class:`InputError` naming the run and the field on the first bad one)."""
        self.check()
        axes = self.axes()
        choices = [list(self.conditions) if a == CONDITION else self.grid[a] for a in axes]
        runs, names = [], set()
        for combo in itertools.product(*choices):
            values = dict(zip(axes, combo))
            fields = dict(self.config)
            if CONDITION in values:
                fields.update(self.conditions[values[CONDITION]])
            fields.update({a: v for a, v in values.items() if a != CONDITION})
            name = run_name(values)
            if name in names:
                raise InputError(f"grid: two runs are named {name} (a value appears twice in an axis?)")
            names.add(name)
            preset = fields.pop("preset", "paper")
            try:
                cfg = make_config(preset, **fields).resolved()
            except (InputError, TypeError) as exc:
                raise InputError(f"grid: run {name}: {exc}") from None
            runs.append(RunSpec(name, values, cfg.to_dict()))
        return runs

    def check(self) -> None:
        """The spec's own shape: known fields, non-empty lists, no field both fixed and varied."""
        if not self.grid and not self.conditions:
            raise InputError("grid: empty grid (give [grid] lists or --grid FIELD=V1,V2)")
        for name, values in self.grid.items():
            _field(name, "grid")
            if not isinstance(values, list):
                raise InputError(f"grid: {name} must be a list of values, got {values!r}")
            if not values:
                raise InputError(f"grid: {name} has no values (empty grid)")
            if name in self.config:
                raise InputError(f"grid: {name} is both fixed in [config] and varied in [grid]")
        for name in self.config:
            _field(name, "config")
        for cond, fields in self.conditions.items():
            if not isinstance(fields, dict):
                raise InputError(f"conditions: {cond} must be a table of fields, got {fields!r}")
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", cond):
                raise InputError(f"conditions: {cond!r} is not a usable folder-name part (letters, digits, _.+-)")
            for name in fields:
                _field(name, f"conditions.{cond}")
                if name in self.grid:
                    raise InputError(f"conditions: {cond}.{name} is also varied in [grid]")
        if CONDITION in FIELDS:  # pragma: no cover (a TrainConfig field of that name would be ambiguous)
            raise InputError("conditions: 'condition' is a TrainConfig field")


def _field(name: str, where: str) -> None:
    if name not in FIELDS:
        raise InputError(
            f"{where}: unknown field {name!r} (not a TrainConfig field; see python -m agents.train --help)"
        )


def show_value(value) -> str:
    """A grid value as it appears in a run's name."""
    if value is None:
        return "auto"
    if isinstance(value, bool):
        return "true" if value else "false"
    return re.sub(r"[^A-Za-z0-9_.+=-]", "_", str(value))


def run_name(values: dict) -> str:
    """The folder name of a grid point: task, method and the condition as they are, ``field=value`` for the
    other axes, ``seedN`` last, joined by ``__``."""
    parts = []
    for axis, value in values.items():
        if axis in (*LEADING, CONDITION):
            parts.append(show_value(value))
        elif axis == "seed":
            parts.append(f"seed{value}")
        else:
            parts.append(f"{axis}={show_value(value)}")
    return "__".join(parts) or "run"


# ------------------------------------------------------------------ reading
def load_spec(path: str | Path) -> Spec:
    """Read a ``.toml`` or ``.json`` sweep spec (see the module doc)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"spec: {path} is not a file")
    try:
        if path.suffix == ".json":
            data = json.loads(path.read_text())
        else:
            data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"spec: cannot read {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise InputError(f"spec: {path} does not hold a table")
    unknown = sorted(set(data) - SECTIONS)
    if unknown:
        raise InputError(
            f"spec: unknown section(s) {', '.join(unknown)} in {path} (known: {', '.join(sorted(SECTIONS))})"
        )
    spec = Spec(name=data.get("name") or path.stem)
    for section in ("config", "grid", "conditions", "slurm", "local"):
        value = data.get(section, {})
        if not isinstance(value, dict):
            raise InputError(f"spec: [{section}] must be a table in {path}")
        setattr(spec, section, dict(value))
    _check_options(spec.slurm, SLURM_KEYS, "slurm")
    _check_options(spec.local, LOCAL_KEYS, "local")
    return spec


def _check_options(options: dict, known: dict, section: str) -> None:
    for key, value in options.items():
        if key not in known:
            raise InputError(f"{section}: unknown option {key!r} (known: {', '.join(sorted(known))})")
        if not isinstance(value, known[key]) or isinstance(value, bool):
            raise InputError(
                f"{section}: {key} must be {'a table' if known[key] is dict else known[key].__name__}, got {value!r}"
            )


def parse_value(name: str, text: str):
    """A command-line value of field ``name``, typed by the field's annotation ('auto' for a None default)."""
    _field(name, "grid")
    annotation = str(FIELDS[name].type)
    text = text.strip()
    if text.lower() == "auto" and FIELDS[name].default is None:
        return None
    try:
        if annotation.startswith("bool"):
            lowered = text.lower()
            if lowered in ("true", "on", "yes", "1"):
                return True
            if lowered in ("false", "off", "no", "0"):
                return False
            raise ValueError
        if annotation.startswith("int"):
            return int(text)
        if annotation.startswith("float"):
            return float(text)
    except ValueError:
        raise InputError(f"grid: {name}: {text!r} is not {annotation.split(' ')[0]}") from None
    return text


def apply_flags(spec: Spec, grid: list[str], fixed: list[str]) -> Spec:
    """``--grid FIELD=V1,V2`` (an axis, replacing the spec's) and ``--set FIELD=V`` (a fixed field)."""
    for item in grid:
        name, values = _split(item, "--grid")
        spec.grid[name] = [parse_value(name, v) for v in values.split(",") if v.strip()]
        spec.config.pop(name, None)
    for item in fixed:
        name, value = _split(item, "--set")
        spec.config[name] = parse_value(name, value)
        spec.grid.pop(name, None)
    return spec


def _split(item: str, flag: str) -> tuple[str, str]:
    if "=" not in item:
        raise InputError(f"{flag}: {item!r} is not FIELD=VALUE")
    name, value = item.split("=", 1)
    name = name.strip().replace("-", "_")
    _field(name, "grid" if flag == "--grid" else "config")
    return name, value
