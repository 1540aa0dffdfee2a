"""A run's trained weights, not their running average, as kept models that `planetrl eval` can re-test.

With `optim.average` on, a run plans and keeps models with the average; only `latest.pt` and `previous.pt`
also hold the weights Adam trained. This copies the run's config.yaml and run_info.json to OUT (a run
directory of its own) and writes each checkpoint's trained weights as OUT/checkpoints/model-U.pt, so that
`planetrl eval --run OUT --checkpoint U` plans with them and compares, start state by start state, with the
average kept at the same update. It links the run's test_episodes there too, so that `model_drift.py` and
`plan_ranking.py` score the trained weights on the episodes the average's agent played. Prints one JSON line
per model written.

    python benchmarks/trained_weights.py RUN_DIR OUT
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import torch

from planetrl.training.rundir import CHECKPOINT, MODEL_SNAPSHOT, PREVIOUS_CHECKPOINT, load_checkpoint, save_checkpoint


def write_trained_weights(run: Path, out: Path) -> list[int]:
    """The update counts of the models written to `out` (a run directory that holds nothing else)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("config.yaml", "run_info.json"):
        shutil.copy2(run / name, out / name)
    episodes = out / "test_episodes"
    if (run / "test_episodes").is_dir() and not episodes.exists():
        episodes.symlink_to((run / "test_episodes").resolve())
    written = []
    for name in (PREVIOUS_CHECKPOINT, CHECKPOINT):
        state = load_checkpoint(run / "checkpoints" / name, torch.device("cpu"), needs="updater")
        if state is None:
            continue
        if "average" not in state["updater"]:
            raise ValueError(f"{run / 'checkpoints' / name} holds no average: the run planned with its trained "
                             "weights, which its kept models already are")
        updates = int(state["updates"])
        save_checkpoint(out / "checkpoints" / MODEL_SNAPSHOT.format(updates=updates), {
            "updater": {"model": state["updater"]["model"]}, "updates": updates,
            "action_size": state["action_size"], "config": state["config"]})
        written.append(updates)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    for updates in write_trained_weights(args.run, args.out):
        print(json.dumps({"run": str(args.run), "out": str(args.out), "updates": updates}), flush=True)


if __name__ == "__main__":
    main()
