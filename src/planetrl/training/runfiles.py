"""Reading a run's small bookkeeping files when something outside may have damaged them.

planetrl writes these files atomically, so only an outside hand (an editor, a bad copy, a disk error) leaves
one unreadable. Each reader says which file and what it does instead: a test record that makes no sense is
skipped, a lost seed-episode count is recovered from the metrics, machine info is left out.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import yaml

from planetrl.metrics import finite_number, read_json_lines

log = logging.getLogger(__name__)

SEED_MARKER = "seed_episodes.json"
TESTS = "tests.jsonl"

_warned: set[tuple[str, int]] = set()  # (file, record) already reported, so a run's every phase does not repeat it


def _valid_test(record: Any) -> bool:
    if not isinstance(record, dict) or not isinstance(record.get("returns"), list) or not record["returns"]:
        return False
    updates = record.get("updates")
    return isinstance(updates, int) and not isinstance(updates, bool) and updates >= 0 and all(
        finite_number(r) for r in record["returns"])


def read_tests(run_dir: Path) -> list[dict[str, Any]]:
    """The completed test phases, from tests.jsonl; a record without whole `updates` and finite `returns` is
    skipped with a warning (once per process) naming the file and the record."""
    path = Path(run_dir) / TESTS
    records = read_json_lines(path)
    valid = [r for r in records if _valid_test(r)]
    for number, record in enumerate(records, 1):
        if not _valid_test(record) and (str(path), number) not in _warned:
            _warned.add((str(path), number))
            log.warning("%s: record %d is not a test phase (it needs whole 'updates' and a list of finite "
                        "'returns'); skipped: %.80s", path, number, json.dumps(record))
    return valid


def read_seeded(run_dir: Path, episodes_now: int | None = None) -> int | None:
    """Random seed episodes in train_episodes, as seed_episodes.json recorded when seeding finished; None before.

    A damaged file is recovered, with a warning: from metrics.jsonl (the episode count logged at the first
    collection, less that episode), or, before any collection was logged, from `episodes_now`. Raises
    ValueError naming the file when neither is known.
    """
    path = Path(run_dir) / SEED_MARKER
    if not path.exists():
        return None
    try:
        count = json.loads(path.read_text())["train"]
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            return count
        problem = f"'train' is {count!r}, not a count"
    except (OSError, ValueError, KeyError, TypeError) as error:
        problem = f"{type(error).__name__}: {error}"
    collections = [r["train/episodes"] for r in read_json_lines(Path(run_dir) / "metrics.jsonl")
                   if isinstance(r.get("train/episodes"), int | float)]
    if collections:
        recovered, source = int(collections[0]) - 1, "the first collection in metrics.jsonl"
    elif episodes_now is not None:
        recovered, source = episodes_now, "the train episodes, as no collection is logged yet"
    else:
        raise ValueError(f"{path} cannot be read ({problem}) and no collection is logged to recover it from: "
                         "write {\"train\": N} into it, N the number of random seed episodes")
    log.warning("%s cannot be read (%s); %d seed episodes, from %s", path, problem, recovered, source)
    return recovered


def read_json_file(path: Path) -> dict[str, Any]:
    """A JSON object from a file; {} when it is missing, and with a warning naming it when it does not parse
    or is not an object."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        log.warning("%s cannot be read (%s: %s); left out", path, type(error).__name__, error)
        return {}
    if not isinstance(data, dict):
        log.warning("%s is not a JSON object; left out", path)
        return {}
    return data


def read_run_config(path: Path) -> dict[str, Any]:
    """A run's config.yaml as a plain mapping, for readers of either kind of run (PlaNet or PPO) that need its
    task and seed; a ValueError naming the file when it cannot be read or lacks env.task or run.seed."""
    try:
        config = yaml.safe_load(Path(path).read_text())
    except (OSError, ValueError, yaml.YAMLError) as error:
        detail = (str(error).strip().splitlines() or [""])[0]
        raise ValueError(f"{path} is not a run's config ({type(error).__name__}: {detail})") from error
    env, run = (config.get(section) if isinstance(config, dict) else None for section in ("env", "run"))
    if not (isinstance(env, dict) and "task" in env and isinstance(run, dict) and "seed" in run):
        raise ValueError(f"{path} is not a run's config (no env.task or run.seed)")
    return config


def require_directory(path: Path, what: str) -> Path:
    """Fail with one line unless `path` is an existing directory; `what` names it ("logdir", "run directory")."""
    if not path.exists():
        raise FileNotFoundError(f"no {what} at {path}")
    if not path.is_dir():
        raise NotADirectoryError(f"{path} is a file, not a {what}")
    return path
