"""Each test phase of run records priced at idle rates: the minutes an idle machine would have taken.

Runs that shared the machine ran slower than they would alone. This prices each phase as `planetrl
results table` does (the seed episodes, then the phase's updates, training decisions and test phases)
at the rates `benchmarks/hour_budget.py` measured on an idle machine, read from its output lines. Prints
one JSON line per record: each phase's updates, minutes and mean test return, and the mean return of the
phases within `--within` minutes.

    python benchmarks/phase_minutes.py RECORD_DIR [RECORD_DIR ...] --hour-budget FILE [--within 60]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from hour_budget import rates_of
from planetrl.metrics import read_json_lines
from planetrl.training.results import load_record, phases


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
        timed = phases(record, rates)
        within = [phase["mean"] for phase in timed if phase["minutes"] <= args.within]
        print(json.dumps({"record": str(path), "phases": [
            {"updates": p["updates"], "minutes": round(p["minutes"], 1), "mean": round(p["mean"], 1)} for p in timed],
            f"mean_within_{args.within:g}_min": round(float(np.mean(within)), 1) if within else None,
            "phases_within": len(within)}))


if __name__ == "__main__":
    main()
