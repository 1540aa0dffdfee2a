"""The results table of a sweep (the PlaNet paper's Table 1 layout, docs/PAPER.md) and plots of test return
against episodes."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from planetrl import config as config_lib
from planetrl.atomic import write_atomic

# Keys that change how a run is carried out or logged, not what it measures: runs that differ only in these
# (and in run.seed) are seeds of one experiment.
RUN_ONLY_KEYS = frozenset({
    "env.processes", "env.start_method", "env.carla_host", "env.carla_port", "env.max_restarts",
    "env.restart_window", "env.answer_timeout", "data.prefetch", "train.log_every", "train.openloop_context",
    "train.openloop_length", "train.keep_models"})
LABEL_KEYS = 3  # differing keys named in a column's label; more are summed up as "..."


Setting = tuple[tuple[str, str], ...]  # (key, value as JSON), sorted: hashable and comparable


def _setting(row: dict[str, Any]) -> Setting:
    """What a run measures: its flattened config without the run section and the RUN_ONLY_KEYS. Read as a
    config of its kind first, so that a key an older run's config lacks counts at the value it ran with."""
    config = row.get("config") or {}
    try:
        kind = config_lib.PPORunConfig if "ppo" in config else config_lib.Config
        config = config_lib.to_dict(config_lib.from_dict(config, kind))
    except (config_lib.ConfigError, TypeError, AttributeError):
        pass  # compared as saved
    flat = {f"{section}.{key}": value for section, values in config.items()
            if section != "run" and isinstance(values, dict) for key, value in values.items()}
    return tuple(sorted((key, json.dumps(value, sort_keys=True)) for key, value in flat.items()
                        if key not in RUN_ONLY_KEYS))


def _kind(setting: Setting) -> str:
    return "PPO" if any(key.startswith("ppo.") for key, _ in setting) else "PlaNet"


def _label(task: str, setting: Setting, others: list[Setting]) -> str:
    """The task's name, with what tells this experiment from the task's others (if any): the kind of run
    where kinds differ, then the keys whose values differ from those of the others of its kind."""
    if not others:
        return task
    mine, kind = dict(setting), _kind(setting)
    same_kind = [dict(other) for other in others if _kind(other) == kind]
    differing = [f"{key}={json.loads(value)}" for key, value in mine.items()
                 if any(other.get(key) != value for other in same_kind)]
    parts = ([kind] if len(same_kind) < len(others) else []) + differing[:LABEL_KEYS]
    return f"{task} ({', '.join(parts + ['...'] * bool(differing[LABEL_KEYS:]))})"


def final_returns(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Runs that have a test return, grouped into experiments: by task and by what they measure (PPO apart
    from PlaNet, a preset apart from another), so that only seeds of one experiment are averaged. Each group
    is keyed by its column label, the task's name with the keys it differs in where a task has several."""
    groups: dict[tuple[str, Setting], list[dict[str, Any]]] = {}
    for row in rows:
        if row["test_return"] is None:
            continue
        groups.setdefault((row["task"], _setting(row)), []).append(row)
    labelled = {}
    for (task, setting), runs in groups.items():
        others = [other for (name, other) in groups if name == task and other != setting]
        label = _label(task, setting, others)
        copies = sum(1 for name in labelled if name == label or name.startswith(f"{label} #"))
        labelled[f"{label} #{copies + 1}" if copies else label] = runs  # alike in the keys the label names
    return labelled


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Experiments as columns (as in Table 1); rows: mean, std over seeds, seeds, finished runs, episodes,
    wall-clock, hardware."""
    by_task = final_returns(rows)
    tasks = sorted(by_task)
    if not tasks:
        return "No run has finished a test phase yet.\n"

    def cell(task: str, what: str) -> str:
        runs = by_task[task]
        values = [r["test_return"] for r in runs]
        if what == "mean":
            return f"{statistics.fmean(values):.1f}"
        if what == "std":
            return f"{statistics.pstdev(values):.1f}" if len(values) > 1 else "-"
        if what == "seeds":
            return str(len(runs))
        if what == "finished":  # the others' latest test return stands in for a final one
            return f"{sum(r['state'] == 'done' for r in runs)} of {len(runs)}"
        if what == "episodes":
            counts = [r["episodes"] for r in runs if r["episodes"] is not None]  # PPO runs keep none
            return f"{statistics.fmean(counts):.0f}" if counts else "-"
        if what == "wall":
            walls = [r["wall_seconds"] for r in runs if r["wall_seconds"] is not None]
            return f"{statistics.fmean(walls) / 3600:.2f} h" if walls else "-"
        return ", ".join(sorted({r["hardware"] for r in runs}))

    lines = ["| | " + " | ".join(tasks) + " |", "|---|" + "---:|" * len(tasks)]
    labels = [("mean final test return", "mean"), ("std over seeds", "std"), ("seeds", "seeds"),
              ("finished runs", "finished"), ("episodes per run", "episodes"), ("wall-clock per run", "wall"),
              ("hardware", "hardware")]
    for label, what in labels:
        lines.append(f"| {label} | " + " | ".join(cell(t, what) for t in tasks) + " |")
    return "\n".join(lines) + "\n"


def plot_task(task: str, runs: list[dict[str, Any]], path: Path) -> Path:
    """Test return against training episodes (PlaNet) or environment steps (PPO): mean over seeds and
    min-max spread, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axis = plt.subplots(figsize=(5, 3.5), dpi=100)
    curves = []
    for run in runs:
        points = [(x, float(y)) for x, y in run["curve"]]
        if points:
            x, y = zip(*points, strict=True)
            axis.plot(x, y, color="tab:blue", alpha=0.25, linewidth=1)
            curves.append(dict(points))
    if curves:
        grid = sorted(set().union(*curves))
        stacked = np.array([[np.interp(g, sorted(c), [c[k] for k in sorted(c)]) for g in grid] for c in curves])
        label = "mean" if len(curves) == 1 else f"mean of {len(curves)} seeds"
        axis.plot(grid, stacked.mean(0), color="tab:blue", linewidth=2, label=label)
        axis.fill_between(grid, stacked.min(0), stacked.max(0), color="tab:blue", alpha=0.15, label="min-max")
        axis.legend(loc="lower right", fontsize=8)
    axis.set_title(task)
    axis.set_xlabel(runs[0]["curve_x"] if runs else "training episodes")
    axis.xaxis.get_major_locator().set_params(integer=True)
    axis.set_ylabel("test return")
    axis.grid(alpha=0.3)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda handle: figure.savefig(handle, format="png"), fsync=False)
    plt.close(figure)
    return path


def file_stem(label: str) -> str:
    """A column label as a file name: `gym:Pendulum-v1 (PPO)` -> `gym-Pendulum-v1-PPO`."""
    return re.sub(r"[^A-Za-z0-9._=+-]+", "-", label).strip("-")


def write_report(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """report.md (the table) and one PNG per column (a task, or one experiment of a task) under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    table = markdown_table(rows)
    write_atomic(out / "report.md", "# Results\n\nFinal test return per task (mean and standard deviation over "
                 "seeds), in the layout of the PlaNet paper's Table 1; runs of a task whose configs differ are "
                 "columns of their own, named by the keys they differ in.\n\n" + table)
    written = [out / "report.md"]
    for task, runs in sorted(final_returns(rows).items()):
        written.append(plot_task(task, runs, out / f"{file_stem(task)}.png"))
    return written
