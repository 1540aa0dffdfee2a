"""A lever against the preset, task by task, by issue 13's two goals: how many tasks each would meet.

For each task with finished runs of the variant VARIANT (records `TASK/VARIANT/seed-N/` under DIR), three
groups of runs: the lever's finished runs, the preset's records of the same seeds, and all the preset's
records of the task. For each group: the goal's measure (the mean of the last three test phases) averaged
over its seeds against the task's goal, and the last test within 60 idle minutes averaged over its seeds
against 2x the random policy, both as `planetrl results table` counts them. The lever's phases are priced
with its updates at `--update-scale` x the preset's rate (its own step time against the preset's, timed
back to back: BENCHMARKS.md), since the rates were measured for the preset. Prints one JSON line per task,
then one with the number of tasks at each goal per group.

    python benchmarks/lever_goals.py results/cpu overshooting-12 --update-scale 1.3125

The last line is what a preset change has to weigh: tasks gained at the end against tasks lost in the hour.
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import Any

import numpy as np

from planetrl.training.results import (
    end_standing,
    finished,
    hour_standing,
    load_records,
    load_variants,
    read_rates,
    variant_name,
)

GROUPS = ("lever", "preset_same_seeds", "preset")


def standing(records: list[dict[str, Any]], rates: dict[str, dict[str, float]]) -> dict[str, Any]:
    """One group's figures: seeds, the end's mean and goal and whether it meets it, the hour's likewise."""
    end, end_goal = end_standing(records)
    hour, hour_goal = hour_standing(records, rates)
    return {"seeds": sorted(r["seed"] for r in records),
            "end": _mean(end), "end_goal": end_goal,
            "end_met": bool(end) and end_goal is not None and float(np.mean(end)) >= end_goal,
            "hour": _mean(hour), "hour_goal": None if hour_goal is None else round(hour_goal, 1),
            "hour_met": bool(hour) and hour_goal is not None and float(np.mean(hour)) >= hour_goal}


def compare(directory: Path, variant: str, rates: dict[str, dict[str, float]],
            update_scale: float) -> list[dict[str, Any]]:
    """Per task, the three groups' standings (GROUPS); tasks without a finished run of the lever are left out."""
    records = load_records(directory)
    lever_rates = copy.deepcopy(rates)
    for rate in lever_rates.values():
        rate["update_s"] *= update_scale
    ended = [v for v in load_variants(directory) if variant_name(v) == variant and finished(v)]
    rows = []
    for task in sorted({v["task"] for v in ended}):
        lever = [v for v in ended if v["task"] == task]
        seeds = {v["seed"] for v in lever}
        preset = [r for r in records if r["task"] == task]
        rows.append({"task": task,
                     "lever": standing(lever, lever_rates),
                     "preset_same_seeds": standing([r for r in preset if r["seed"] in seeds], rates),
                     "preset": standing(preset, rates)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", type=Path, help="a results folder: TASK/seed-N/ and TASK/VARIANT/seed-N/")
    parser.add_argument("variant", help="the lever's VARIANT folder name")
    parser.add_argument("--rates", type=Path, help="idle rates ({task: rates}); default: DIR/rates.json")
    parser.add_argument("--update-scale", type=float, default=1.0, help="the lever's update against the preset's")
    args = parser.parse_args()
    if args.update_scale <= 0:
        parser.error(f"--update-scale must be above 0, got {args.update_scale}")
    rates_path = args.rates or args.directory / "rates.json"
    if not rates_path.is_file():
        parser.error(f"rates {rates_path}: no such file")
    try:
        rates = read_rates(rates_path)
    except ValueError as error:
        parser.error(f"rates {error}")
    rows = compare(args.directory, args.variant, rates, args.update_scale)
    if not rows:
        names = sorted({variant_name(v) for v in load_variants(args.directory)})
        parser.error(f"no finished run of variant {args.variant!r} under {args.directory}; "
                     f"its variants: {', '.join(names) or 'none'}")
    for row in rows:
        print(json.dumps(row))
    print(json.dumps({"tasks": len(rows), **{
        group: {"end_met": sum(row[group]["end_met"] for row in rows),
                "hour_met": sum(row[group]["hour_met"] for row in rows)} for group in GROUPS}}))


def _mean(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 1) if values else None


if __name__ == "__main__":
    main()
