"""The results table of a sweep (the PlaNet paper's Table 1 layout, docs/PAPER.md) and plots of test return
against episodes."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import numpy as np

from planetrl.atomic import write_atomic


def final_returns(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Runs grouped by task, each with its final test return (mean over the last test phase's episodes)."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["test_return"] is None:
            continue
        by_task.setdefault(row["task"], []).append(row)
    return by_task


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Tasks as columns (as in Table 1); rows: mean, std over seeds, seeds, episodes, wall-clock, hardware."""
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
        if what == "episodes":
            counts = [r["episodes"] for r in runs if r["episodes"] is not None]  # PPO runs keep none
            return f"{statistics.fmean(counts):.0f}" if counts else "-"
        if what == "wall":
            walls = [r["wall_seconds"] for r in runs if r["wall_seconds"] is not None]
            return f"{statistics.fmean(walls) / 3600:.2f} h" if walls else "-"
        return ", ".join(sorted({r["hardware"] for r in runs}))

    lines = ["| | " + " | ".join(tasks) + " |", "|---|" + "---:|" * len(tasks)]
    labels = [("mean final test return", "mean"), ("std over seeds", "std"), ("seeds", "seeds"),
              ("episodes per run", "episodes"), ("wall-clock per run", "wall"), ("hardware", "hardware")]
    for label, what in labels:
        lines.append(f"| {label} | " + " | ".join(cell(t, what) for t in tasks) + " |")
    return "\n".join(lines) + "\n"


def plot_task(task: str, runs: list[dict[str, Any]], path: Path) -> Path:
    """Test return against training episodes: mean over seeds and min-max spread, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axis = plt.subplots(figsize=(5, 3.5), dpi=100)
    curves = []
    for run in runs:
        points = [(t["train_episodes"], float(np.mean(t["returns"]))) for t in run["tests"]]
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
    axis.set_xlabel("training episodes")
    axis.xaxis.get_major_locator().set_params(integer=True)
    axis.set_ylabel("test return")
    axis.grid(alpha=0.3)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda handle: figure.savefig(handle, format="png"), fsync=False)
    plt.close(figure)
    return path


def write_report(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """report.md (the table) and one PNG per task under `out`."""
    from planetrl.training.sweep import task_dirname

    out.mkdir(parents=True, exist_ok=True)
    table = markdown_table(rows)
    write_atomic(out / "report.md", "# Results\n\nFinal test return per task (mean and standard deviation over "
                 "seeds), in the layout of the PlaNet paper's Table 1.\n\n" + table)
    written = [out / "report.md"]
    for task, runs in sorted(final_returns(rows).items()):
        written.append(plot_task(task, runs, out / f"{task_dirname(task)}.png"))
    return written
