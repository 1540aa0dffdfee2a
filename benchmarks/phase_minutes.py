"""Each test phase of run records priced at idle rates: the minutes an idle machine would have taken.

Runs that shared the machine ran slower than they would alone. This prices each phase as `planetrl
results table` does (the seed episodes, then the phase's updates, training decisions and test phases)
at the rates `benchmarks/hour_budget.py` measured on an idle machine, read from its output lines. Prints
one JSON line per record: each phase's updates, minutes, mean test return and mean test length (decisions),
and the mean return and mean length of the phases within `--within` minutes.

    python benchmarks/phase_minutes.py RECORD_DIR [RECORD_DIR ...] --hour-budget FILE [--within 60]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from hour_budget import rates_of
from planetrl.metrics import read_json_lines
from planetrl.training.results import load_record, phase_lengths, phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", type=Path, nargs="+")
    parser.add_argument("--hour-budget", type=Path, required=True, help="hour_budget.py's output (JSON lines)")
    parser.add_argument("--within", type=float, default=60.0, help="minutes")
    args = parser.parse_args()
    rates = {line["task"]: rates_of(line) for line in read_json_lines(args.hour_budget)}
    for path in args.records:
        record = load_record(path)
        if record["task"] not in rates:
            raise SystemExit(f"{args.hour_budget} has no rates for task {record['task']!r} of {path}; "
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
