"""Two `planetrl eval --json` re-tests on the same start states, compared start by start.

`planetrl eval` seeds its i-th environment the same way for any model of a run, so two re-tests with the
same episode count play the same start states (say, a run's trained weights from `trained_weights.py` and the
average it planned with). Prints one JSON line: each side's mean, the paired difference B minus A with its
standard error, on how many starts B is higher, and on how many each side returns under `--stuck` (an
episode that never got going).

    python benchmarks/paired_retest.py A.json B.json [--stuck 20]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def compare(a: list[float], b: list[float], stuck: float) -> dict[str, float | int]:
    """B against A, start by start; the standard error is the paired differences' sample sd over sqrt(n)."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(f"paired re-tests need the same number of starts, at least 2 (got {len(a)} and {len(b)})")
    first, second = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = second - first
    return {"starts": len(diff), "mean_a": round(float(first.mean()), 1), "mean_b": round(float(second.mean()), 1),
            "b_minus_a": round(float(diff.mean()), 1),
            "standard_error": round(float(diff.std(ddof=1) / np.sqrt(len(diff))), 1),
            "b_higher": int(np.sum(diff > 0)), "stuck_a": int(np.sum(first < stuck)),
            "stuck_b": int(np.sum(second < stuck))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", type=Path, help="first eval JSON (e.g. the average)")
    parser.add_argument("b", type=Path, help="second eval JSON on the same starts (e.g. the trained weights)")
    parser.add_argument("--stuck", type=float, default=20.0, help="a return under this counts as stuck")
    args = parser.parse_args()
    returns = [json.loads(path.read_text())["returns"] for path in (args.a, args.b)]
    print(json.dumps({"a": str(args.a), "b": str(args.b), **compare(*returns, args.stuck)}))


if __name__ == "__main__":
    main()
