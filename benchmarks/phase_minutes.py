"""Each test phase of run records priced at idle rates: the minutes an idle machine would have taken.

Runs that shared the machine ran slower than they would alone. This prices each phase as `planetrl
results table` does (the seed episodes, then the phase's updates, training decisions and test phases)
at the rates `benchmarks/hour_budget.py` measured on an idle machine, read from its output lines. Prints
one JSON line per record: each phase's updates, minutes, mean test return and mean test length (decisions),
and the mean return and mean length of the phases within `--within` minutes.

    python benchmarks/phase_minutes.py RECORD_DIR [RECORD_DIR ...] (--hour-budget FILE | --rates rates.json)
        [--within 60] [--update-scale 1.877]

`--update-scale` prices the updates at that multiple of the measured rate: a batch size the hour budget was
not measured at, timed against the measured one back to back (`loop_update.py --set data.batch_size=B`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from hour_budget import rates_of
from planetrl.metrics import read_json_lines
from planetrl.training.results import load_record, phase_lengths, phases, read_rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", type=Path, nargs="+")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--hour-budget", type=Path, help="hour_budget.py's output (JSON lines)")
    source.add_argument("--rates", type=Path, help="a results folder's rates.json ({task: rates})")
    parser.add_argument("--within", type=float, default=60.0, help="minutes")
    parser.add_argument("--update-scale", type=float, default=1.0, help="multiply each task's seconds per update")
    args = parser.parse_args()
    if args.update_scale <= 0:
        parser.error(f"--update-scale must be above 0, got {args.update_scale}")
    if args.rates:
        if not args.rates.is_file():
            parser.error(f"--rates {args.rates}: no such file")
        try:
            rates = read_rates(args.rates)
        except ValueError as error:
            parser.error(f"--rates {error}")
    else:
        rates = {line["task"]: rates_of(line) for line in read_json_lines(args.hour_budget)}
    for rate in rates.values():
        rate["update_s"] *= args.update_scale
    for path in args.records:
        record = load_record(path)
        if record["task"] not in rates:
            raise SystemExit(f"{args.rates or args.hour_budget} has no rates for task {record['task']!r} of {path}; "
                             f"it has: {', '.join(sorted(rates)) or 'none'}")
        timed = [{"updates": p["updates"], "minutes": round(p["minutes"], 1), "mean": round(p["mean"], 1),
                  "length": None if length is None else round(length, 1)}
                 for p, length in zip(phases(record, rates), phase_lengths(record), strict=True)]
        within = [p for p in timed if p["minutes"] <= args.within]
        lengths = [p["length"] for p in within if p["length"] is not None]
        print(json.dumps({"record": str(path), "phases": timed,
                          f"mean_within_{args.within:g}_min": _mean([p["mean"] for p in within]),
                          f"length_within_{args.within:g}_min": _mean(lengths) if len(lengths) == len(within) else None,
                          "phases_within": len(within)}))


def _mean(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 1) if values else None


if __name__ == "__main__":
    main()
