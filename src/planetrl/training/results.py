"""Published results from compact run records: `results/<preset>/<task>/seed-<n>/` and a Table-1 README.

A record holds what backs a number and nothing heavy: config.yaml, run_info.json,
metrics.jsonl, tests.jsonl, and random.json (the returns of the run's random
seed episodes and when the run started). `export_record` makes one from a run
directory; `write_results` turns a folder of records into README.md (tasks as
columns, as in the paper's Table 1) and one PNG per task. Where `random-policy.jsonl` (many episodes of
the random policy per task, from benchmarks/random_policy.py) sits beside the records, a task's 2x-random
goal reads it instead of each run's few seed episodes.

Minutes: where `rates.json` (idle seconds per update and per decision for each
task, from benchmarks/hour_budget.py) sits beside the records, a run's minutes
are estimated from its updates and decisions at those idle rates, because runs
that shared the machine ran slower than they would alone; otherwise they are
its measured wall-clock. The README says which.
"""

from __future__ import annotations

import json
import math
import shlex
import time
from pathlib import Path
from typing import Any

import numpy as np

from planetrl import config as configs
from planetrl.atomic import write_atomic
from planetrl.data.episodes import list_episodes, read_episode
from planetrl.metrics import finite_number, read_json_lines
from planetrl.training.runfiles import SEED_MARKER, read_json_file, read_run_config, read_seeded, read_tests

RECORD_FILES = ("config.yaml", "run_info.json", "metrics.jsonl", "tests.jsonl")
PAPER_TASKS = ("cartpole-swingup", "reacher-easy", "cheetah-run", "finger-spin", "cup-catch", "walker-walk")

# CURL (Laskin et al. 2020), Table 1, "100K step scores"; PlaNet (Hafner et al. 2019), Table 1, 1000 episodes.
PUBLISHED: dict[str, dict[str, float]] = {
    "cartpole-swingup": {"planet_100k": 297, "dreamer_100k": 326, "planet_paper": 821},
    "reacher-easy": {"planet_100k": 20, "dreamer_100k": 314, "planet_paper": 832},
    "cheetah-run": {"planet_100k": 138, "dreamer_100k": 238, "planet_paper": 662},
    "finger-spin": {"planet_100k": 136, "dreamer_100k": 341, "planet_paper": 700},
    "cup-catch": {"planet_100k": 0, "dreamer_100k": 246, "planet_paper": 930},
    "walker-walk": {"planet_100k": 224, "dreamer_100k": 277, "planet_paper": 951},
}

# Issue 13's goal for the mean of the last three test phases; None: at least twice the random policy's return.
GOALS: dict[str, float | None] = {"cartpole-swingup": 300, "cheetah-run": 140, "walker-walk": 225,
                                  "finger-spin": 140, "reacher-easy": None, "cup-catch": None}
GOAL_EPISODES = 5
"""The goal counts only phases of at least this many test episodes: fewer make a phase one checkpoint's luck."""
HOUR_MINUTES = 60.0
HOUR_FACTOR = 2.0
"""Issue 13's hour: the last test phase within HOUR_MINUTES must return at least HOUR_FACTOR x the random
policy's, on every task."""
HOUR_CAUSE = "/60-min"
"""Suffix of a record's key in `causes.json` for why it is under HOUR_FACTOR x random within the hour."""
CODE_ONLY_VARIANTS = ("before-fixes", "fp32-avx2")
"""Variant names that rerun a preset with older code or on another machine, not a lever; their config
differences are bookkeeping, and they are no other record's base."""


def export_record(run_dir: Path, out: Path) -> Path:
    """Copy a run's compact record to `out` and add random.json (seed-episode returns, start time).

    Exporting a run again refreshes its record (and keeps any other files beside it); a record of another
    run at `out` is refused, so a wrong --out cannot overwrite a published record.
    """
    run_dir, out = Path(run_dir), Path(out)
    if (run_dir / "config.yaml").is_file() and "ppo" in read_run_config(run_dir / "config.yaml"):
        raise ValueError(f"{run_dir} is a PPO run; a record holds a PlaNet run's test phases, and a PPO run's "
                         f"evaluations are in its metrics.jsonl")
    missing = [name for name in RECORD_FILES if not (run_dir / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{run_dir} lacks {', '.join(missing)}; is it a PlaNet run with a test phase?")
    if out.exists() and out.resolve() == run_dir.resolve():
        raise ValueError(f"--out {out} is the run directory itself; a record goes elsewhere, e.g. "
                         f"results/cpu/TASK/seed-N")
    seeded = read_seeded(run_dir)
    claims = read_json_lines(run_dir / "claims.jsonl")
    if seeded is None or not claims:
        raise FileNotFoundError(f"{run_dir} has no {SEED_MARKER}: its random seed episodes were never completed")
    earlier = read_json_file(out / "random.json").get("start_time")
    if earlier is not None and earlier != claims[0]["time"]:
        raise FileExistsError(f"{out} holds the record of another run (started {_utc(earlier)}, where {run_dir} "
                              f"started {_utc(claims[0]['time'])}); export to a new directory, or remove that one "
                              f"first")
    out.mkdir(parents=True, exist_ok=True)
    for name in RECORD_FILES:
        write_atomic(out / name, (run_dir / name).read_bytes())
    returns = [float(read_episode(p)["reward"].sum()) for p in list_episodes(run_dir / "train_episodes")[:seeded]]
    write_atomic(out / "random.json", json.dumps({"returns": returns, "start_time": claims[0]["time"],
                                                  "claims": claims}, indent=1) + "\n")
    return out


class RecordError(ValueError):
    """A record that cannot back its numbers: a file missing, unreadable, or cut short."""


def _damaged(path: Path, problem: str) -> RecordError:
    return RecordError(f"{problem}; export the record again with `planetrl results export --run RUN_DIR "
                       f"--out {shlex.quote(str(path))}`")


def load_record(path: Path) -> dict[str, Any]:
    """A record's config, random returns, tests and metrics, with its training decisions per update.

    Raises RecordError for a damaged record, so that a table is never built from half a run's log.
    """
    try:
        config = read_run_config(path / "config.yaml")
    except ValueError as error:
        raise _damaged(path, str(error)) from error
    random = read_json_file(path / "random.json")
    if not isinstance(random.get("returns"), list):
        raise _damaged(path, f"{path / 'random.json'} lacks the seed episodes' returns")
    metrics = read_json_lines(path / "metrics.jsonl")
    tests = read_tests(path)
    logged = max((record["step"] for record in metrics if isinstance(record.get("step"), int)), default=-1)
    if tests and logged < tests[-1]["updates"]:
        raise _damaged(path, f"{path / 'metrics.jsonl'} ends at update {logged} where tests.jsonl reaches "
                             f"{tests[-1]['updates']}: it is cut short")
    decisions_at: list[tuple[int, float]] = []  # (update, train decisions so far)
    decisions = 0.0
    for record in metrics:
        if "train/length" in record:
            decisions += record["train/length"]
            decisions_at.append((record["step"], decisions))
    return {"path": path, "task": config["env"]["task"], "seed": config["run"]["seed"], "config": config,
            "random": random, "tests": tests, "metrics": metrics,
            "decisions_at": decisions_at}


RATE_KEYS = ("seed_s", "update_s", "decision_s", "test_phase_s")


def read_rates(path: Path) -> dict[str, dict[str, Any]]:
    """A results folder's rates.json ({task: idle seconds of RATE_KEYS}); {} when it is missing, and a
    ValueError naming the file when it does not parse or a task lacks a rate, since every minute in the table
    would rest on it."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        rates = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} cannot be read ({type(error).__name__}: {error}); write it again with "
                         f"benchmarks/hour_budget.py --rates") from None
    if not isinstance(rates, dict):
        raise ValueError(f"{path} must map each task to {{{', '.join(RATE_KEYS)}}}, got {type(rates).__name__}")
    for task, rate in rates.items():
        if not isinstance(rate, dict) or not all(finite_number(rate.get(key)) and rate[key] >= 0
                                                 for key in RATE_KEYS):
            raise ValueError(f"{path}: {task!r} must hold {', '.join(RATE_KEYS)} as seconds (numbers of at "
                             f"least 0), got {rate!r}")
    return rates


def _minutes(record: dict[str, Any], test: dict[str, Any], index: int,
             rates: dict[str, dict[str, float]]) -> float:
    """Minutes to reach a test phase: at idle rates when known, else the measured wall-clock."""
    rate = rates.get(record["task"])
    if rate is None:
        return active_seconds(record, test["time"]) / 60
    train_decisions = max((d for u, d in record["decisions_at"] if u <= test["updates"]), default=0.0)
    seconds = (rate["seed_s"] + test["updates"] * rate["update_s"] + train_decisions * rate["decision_s"]
               + (index + 1) * rate["test_phase_s"])
    return seconds / 60


def active_seconds(record: dict[str, Any], until: float) -> float:
    """Wall-clock from the run's start to `until`, less the time it was not running.

    Each claim after the first is a resume; the time between the last thing the run logged before it and
    the resume (a session that ended, a crash) is left out, so a resumed run's minutes are its own.
    """
    activity = sorted([row["time"] for row in record["metrics"] if "time" in row]
                      + [test["time"] for test in record["tests"]])
    starts = sorted(claim["time"] for claim in record["random"].get("claims", []))
    start = record["random"]["start_time"]
    idle = 0.0
    for resume in starts[1:]:
        if resume > until:
            break
        before = [t for t in activity if t < resume]
        idle += max(resume - max(before[-1] if before else start, start), 0.0)
    return until - start - idle


def phases(record: dict[str, Any], rates: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """Each test phase with its mean return and its minutes (at idle `rates` where the task has them)."""
    return [{**test, "minutes": _minutes(record, test, index, rates), "mean": float(np.mean(test["returns"]))}
            for index, test in enumerate(record["tests"])]


def _at(record: dict[str, Any], minutes: float | None, rates: dict[str, dict[str, float]]) -> dict[str, Any] | None:
    """The last test phase within `minutes` (the last one of all for None), with its minutes."""
    within = [phase for phase in phases(record, rates) if minutes is None or phase["minutes"] <= minutes]
    return within[-1] if within else None


def _cell(point: dict[str, Any] | None) -> str:
    if point is None:
        return "-"
    return (f"{point['mean']:.0f} ({point['updates']} upd, {point['train_episodes']} ep, "
            f"{point['env_steps'] / 1000:.0f}k steps, {point['minutes']:.0f} min)")


def standard_error(values: list[float]) -> float:
    """The standard error of the mean of `values` (at least two): their sample deviation over sqrt(n)."""
    return float(np.std(values, ddof=1) / np.sqrt(len(values)))


RANDOM_POLICY_FILE = "random-policy.jsonl"
"""A results folder's measurement of the random policy per task (benchmarks/random_policy.py's output)."""


def load_random_policy(directory: Path) -> dict[str, dict[str, Any]]:
    """`random-policy.jsonl` of a results folder by task ({} without one), each with its mean recomputed from
    its returns, so that a hand-edited mean cannot move a goal.

    Strict where metrics are lenient: a torn or incomplete line would silently hand a task's goal back to
    its runs' few seed episodes, so it fails and names the line.
    """
    path = Path(directory) / RANDOM_POLICY_FILE
    if not path.exists():
        return {}
    measured: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line.decode())
        except ValueError as error:  # not JSON, or not UTF-8
            raise ValueError(f"{path}, line {number}, is not valid JSON ({error}); measure it again with "
                             f"benchmarks/random_policy.py") from None
        returns = row.get("returns") if isinstance(row, dict) else None
        if (not isinstance(row, dict) or not isinstance(row.get("task"), str) or not isinstance(returns, list)
                or len(returns) < 2 or not all(finite_number(r) for r in returns)):
            raise ValueError(f"{path}, line {number}: must hold a task and the finite returns of at least 2 "
                             f"episodes, as benchmarks/random_policy.py writes them")
        if row["task"] in measured:
            raise ValueError(f"{path}, line {number}: {row['task']!r} is measured twice; keep one line per task")
        measured[row["task"]] = {"task": row["task"], "episodes": len(returns), "mean": float(np.mean(returns)),
                                 "sem": standard_error(returns)}
    return measured


def _with_random_policy(records: list[dict[str, Any]], directory: Path) -> list[dict[str, Any]]:
    """The records, each given its task's measured random policy from the folder (None where unmeasured)."""
    measured = load_random_policy(directory)
    for record in records:
        record["random_policy"] = measured.get(record["task"])
    return records


def random_return(record: dict[str, Any]) -> tuple[float, str]:
    """The random policy's mean return on the record's task, and what it is the mean of.

    The folder's many-episode measurement where it has one; else the run's own random seed episodes, a
    sample of 5 that on reacher-easy gave 33 for one seed and 144 for another.
    """
    measured = record.get("random_policy")
    if measured:
        return measured["mean"], f"{measured['episodes']} episodes"
    return float(np.mean(record["random"]["returns"])), "its seed episodes"


def goal(record: dict[str, Any]) -> float | None:
    """The return the mean of the last three phases must reach on this record's task (None: no goal)."""
    if record["task"] not in GOALS:
        return None
    fixed = GOALS[record["task"]]
    return fixed if fixed is not None else 2 * random_return(record)[0]


def _last_three_mean(record: dict[str, Any]) -> float:
    """The mean of the last three test phases' mean returns (the goal's measure when they count)."""
    return float(np.mean([np.mean(x["returns"]) for x in record["tests"][-3:]]))


def _verdict(record: dict[str, Any]) -> str | None:
    """How the record stands against its goal, as the table says it; None where the task has no goal."""
    last = record["tests"][-3:]
    target, total = goal(record), record["config"]["train"]["total_updates"]
    if target is None:
        return None
    if not finished(record):
        return f"unfinished at {last[-1]['updates'] if last else 0} of {total} updates: not the goal's measure"
    if len(last) < 3 or min(len(x["returns"]) for x in last) < GOAL_EPISODES:
        return f"a phase has fewer than {GOAL_EPISODES}: not the goal's measure"
    return "goal met" if _last_three_mean(record) >= target else "goal not met"


def last_three_figure(record: dict[str, Any]) -> str:
    """The mean of the last three phases as the tables print it; to 0.01 where rounding would meet the goal."""
    if not record["tests"]:
        return "-"
    mean, target = _last_three_mean(record), goal(record)
    return f"{mean:.2f}" if target is not None and mean < target <= round(mean) else f"{mean:.0f}"  # no "300 < 300"


def largest_fall(record: dict[str, Any]) -> float | None:
    """How far a phase's mean return fell below the best phase before it, at most: the gains it did not hold.

    Zero for a run that never fell back; None before two phases. Issue 13's stability question in one number.
    """
    means = np.array([np.mean(test["returns"]) for test in record["tests"]])
    if len(means) < 2:
        return None
    return float(np.max(np.maximum.accumulate(means) - means))


def _fall(record: dict[str, Any] | None) -> str:
    fall = largest_fall(record) if record else None
    return "-" if fall is None else f"{fall:.0f}"


def _last_three(record: dict[str, Any]) -> str:
    """The mean of the last three phases, its episodes, and whether it meets the goal by the goal's measure."""
    last = record["tests"][-3:]
    if not last:
        return "-"
    verdict = _verdict(record)
    return (f"{last_three_figure(record)} ({sum(len(x['returns']) for x in last)} episodes"
            + (f"; {verdict}" if verdict else "") + ")")


def seeds_mean(records: list[dict[str, Any]]) -> str:
    """The goal's measure averaged over a task's seeds, with its standard error across them, and how it stands
    against the goal: the published figures are means over seeds, so this is the figure to read beside them.

    Only runs measured by the goal's measure count (finished, three phases of enough episodes); the per-seed
    verdicts stay the goal's.
    """
    means, shared = end_standing(records)
    if not means:
        return "-"
    counted = [r for r in records if _verdict(r) in ("goal met", "goal not met")]
    mean, target = float(np.mean(means)), goal(counted[0])
    figure = f"{mean:.2f}" if target is not None and mean < target <= round(mean, 1) else f"{mean:.1f}"
    if len(means) > 1:
        figure += f" +- {standard_error(means):.1f}"
    met = sum(_verdict(r) == "goal met" for r in counted)
    text = f"{figure} ({met} of {len(means)} seed{'s' if len(means) > 1 else ''} at the goal"
    if shared is not None:
        text += f"; the mean {'meets' if mean >= shared else 'misses'} {shared:.0f}"
    return text + ")"


def end_standing(records: list[dict[str, Any]]) -> tuple[list[float], float | None]:
    """The goal's measure of each of a task's seeds that it counts (finished, phases of enough episodes), and
    the goal their mean is held to (None where the counted seeds' goals differ, or none counts)."""
    counted = [r for r in records if _verdict(r) in ("goal met", "goal not met")]
    targets = {goal(r) for r in counted}
    return [_last_three_mean(r) for r in counted], (targets.pop() if len(targets) == 1 else None)


def hour_standing(records: list[dict[str, Any]],
                  rates: dict[str, dict[str, float]]) -> tuple[list[float], float | None]:
    """The last test within the hour of each of a task's seeds that has one, and the HOUR_FACTOR x random
    their mean is held to (None where the seeds' targets differ, or where a seed has no test within the hour
    and so misses the bar)."""
    points = [_at(r, HOUR_MINUTES, rates) for r in records]
    means = [p["mean"] for p in points if p is not None]
    targets = {round(hour_target(r), 6) for r in records}
    return means, (targets.pop() if len(targets) == 1 and means and len(means) == len(records) else None)


CAUSE_PARTS = ("model", "planner", "schedule")
"""Where a shortfall lies, as issue 13 asks it to be named: the world model, the planner, or the schedule."""


def cause_key(record: dict[str, Any]) -> str:
    """A record's key in `causes.json`: TASK/seed-N for the preset's, TASK/VARIANT/seed-N for a variant's."""
    folder = variant_name(record)  # a preset record's folder is its task's
    return f"{record['task']}/" + ("" if folder == record["task"] else f"{folder}/") + f"seed-{record['seed']}"


def hour_target(record: dict[str, Any]) -> float:
    """The return the last test phase within the hour must reach: HOUR_FACTOR x the random policy's."""
    return HOUR_FACTOR * random_return(record)[0]


def hour_short(record: dict[str, Any], rates: dict[str, dict[str, float]]) -> bool:
    """Whether the record falls short of the hour's goal: no test phase within HOUR_MINUTES, or the last one
    under `hour_target`."""
    point = _at(record, HOUR_MINUTES, rates)
    return point is None or point["mean"] < hour_target(record)


def load_causes(directory: Path, records: list[dict[str, Any]], variants: list[dict[str, Any]] = (),
                rates: dict[str, dict[str, float]] | None = None) -> dict[str, dict[str, str]]:
    """`causes.json` of a results folder: {"TASK/seed-N" or "TASK/VARIANT/seed-N": {"part": one of
    CAUSE_PARTS, "why": text}}, and "TASK/seed-N/60-min" for why a preset record is under the hour's goal.

    Each key must name a record of the folder (the preset's or a variant's: a record that was the preset's
    keeps its cause when the preset moves on; an hour's cause only a preset record, as only the table shows
    the hour) and each part one of CAUSE_PARTS, so a typo fails loudly instead of leaving a shortfall
    unexplained in the table; a cause for a goal met, at the end or within the hour (at `rates`), is stale.
    """
    path = Path(directory) / "causes.json"
    if not path.exists():
        return {}
    try:
        causes = json.loads(path.read_text())
    except ValueError as error:  # not JSON, or not UTF-8
        raise ValueError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(causes, dict):
        raise ValueError(f"{path} must hold an object keyed by TASK/seed-N, got {type(causes).__name__}")
    known = {cause_key(r): r for r in [*records, *variants]}
    known.update({cause_key(r) + HOUR_CAUSE: r for r in records})
    for key, cause in causes.items():
        if key not in known:
            raise ValueError(f"{path}: {key!r} names no record here; records: {', '.join(sorted(known))}")
        if not isinstance(cause, dict) or cause.get("part") not in CAUSE_PARTS or not cause.get("why"):
            raise ValueError(f"{path}: {key!r} must be {{\"part\": one of {', '.join(CAUSE_PARTS)}, "
                             f"\"why\": text}}, got {cause!r}")
        if key.endswith(HOUR_CAUSE):
            if not hour_short(known[key], rates or {}):
                raise ValueError(f"{path}: {key!r} tests at least {HOUR_FACTOR:g}x random within "
                                 f"{HOUR_MINUTES:g} minutes; remove its cause")
        elif _verdict(known[key]) == "goal met":  # a rerun that met its goal leaves a stale cause behind
            raise ValueError(f"{path}: {key!r} meets its goal; remove its cause")
    return causes


def _cause_cell(record: dict[str, Any], causes: dict[str, dict[str, str]]) -> str:
    """Where a record falls short of its goal and why; "-" where it meets it or has no goal."""
    cause = causes.get(cause_key(record))
    if cause:
        return f"{cause['part']}: {cause['why']}"
    return "not yet found" if _verdict(record) not in (None, "goal met") else "-"


def _hour_cause_cell(record: dict[str, Any], causes: dict[str, dict[str, str]],
                     rates: dict[str, dict[str, float]]) -> str:
    """Where a record is under the hour's goal and why; "-" where it is not."""
    if not hour_short(record, rates):
        return "-"
    cause = causes.get(cause_key(record) + HOUR_CAUSE)
    return f"{cause['part']}: {cause['why']}" if cause else "not yet found"


def hour_mean(records: list[dict[str, Any]], rates: dict[str, dict[str, float]]) -> str:
    """A task's test return within the hour, averaged over its seeds, against HOUR_FACTOR x random: issue
    13's bar for every task. A seed with no test phase within the hour counts as short and adds no return."""
    means, target = hour_standing(records, rates)
    if not means:
        return "-"
    mean = float(np.mean(means))
    figure = f"{mean:.1f}" + (f" +- {standard_error(means):.1f}" if len(means) > 1 else "")
    at = sum(not hour_short(r, rates) for r in records)
    text = f"{figure} ({at} of {len(records)} seed{'s' if len(records) > 1 else ''} at {HOUR_FACTOR:g}x random"
    if target is not None:
        text += f"; the mean {'meets' if mean >= target else 'misses'} {target:.1f}"
    return text + ")"


def variant_causes(variants: list[dict[str, Any]], causes: dict[str, dict[str, str]]) -> str:
    """Markdown list: the causes written for variant records (records the preset has moved on from)."""
    lines = [f"- **{cause_key(v)}**, last three phases {_last_three(v)}. {_cause_cell(v, causes)}"
             for v in variants if cause_key(v) in causes]
    return "\n".join(lines) + "\n" if lines else ""


def _goal_cell(record: dict[str, Any]) -> str:
    target = goal(record)
    if target is None:
        return "-"
    return f"{target:.0f}" + (f" (2x random, {random_return(record)[1]})" if GOALS[record["task"]] is None else "")


def _measured_cell(record: dict[str, Any]) -> str:
    """One decimal: a task's many-episode mean can be near 0 (finger-spin's 1.5 +- 0.3 would read "2 +- 0")."""
    measured = record.get("random_policy")
    return f"{measured['mean']:.1f} +- {measured['sem']:.1f} ({measured['episodes']} episodes)" if measured else "-"


def table(records: list[dict[str, Any]], rates: dict[str, dict[str, float]],
          causes: dict[str, dict[str, str]] | None = None) -> str:
    """Markdown: tasks as columns; one line per quantity, the cause of each shortfall the last."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_task.setdefault(record["task"], []).append(record)
    tasks = [t for t in PAPER_TASKS if t in by_task] + sorted(t for t in by_task if t not in PAPER_TASKS)
    rows: list[tuple[str, list[str]]] = []

    def per_task(label: str, value: Any) -> None:
        rows.append((label, [value(t) for t in tasks]))

    def seeds(task: str) -> list[dict[str, Any]]:
        return sorted(by_task[task], key=lambda r: r["seed"])

    def joined(task: str, make: Any) -> str:
        return "; ".join(make(r) for r in seeds(task))

    per_task("seeds", lambda t: ", ".join(str(r["seed"]) for r in seeds(t)))
    per_task("random policy (seed episodes)", lambda t: joined(
        t, lambda r: f"{np.mean(r['random']['returns']):.0f} +- {np.std(r['random']['returns']):.0f}"))
    per_task(f"random policy (more episodes: benchmarks/random_policy.py, {RANDOM_POLICY_FILE})",
             lambda t: _measured_cell(by_task[t][0]))
    per_task("test return at 30 min", lambda t: joined(t, lambda r: _cell(_at(r, 30, rates))))
    per_task(f"test return at {HOUR_MINUTES:g} min", lambda t: joined(t, lambda r: _cell(_at(r, HOUR_MINUTES, rates))))
    per_task(f"mean over seeds at {HOUR_MINUTES:g} min (standard error across seeds), against {HOUR_FACTOR:g}x "
             f"random", lambda t: hour_mean(seeds(t), rates))
    per_task(f"where it is under {HOUR_FACTOR:g}x random at {HOUR_MINUTES:g} min, and why",
             lambda t: joined(t, lambda r: _hour_cause_cell(r, causes or {}, rates)))
    per_task("test return at the end", lambda t: joined(t, lambda r: _cell(_at(r, None, rates))))
    per_task("mean of the last 3 test phases", lambda t: joined(t, _last_three))
    per_task("mean over seeds of that mean (standard error across seeds)", lambda t: seeds_mean(seeds(t)))
    per_task("largest fall below an earlier phase", lambda t: joined(t, _fall))
    per_task(f"goal for that mean (phases of at least {GOAL_EPISODES} episodes)", lambda t: joined(t, _goal_cell))
    per_task("where it falls short, and why (the model, the planner or the schedule)",
             lambda t: joined(t, lambda r: _cause_cell(r, causes or {})))
    per_task("PlaNet at 100k steps (CURL, Table 1)", lambda t: str(PUBLISHED.get(t, {}).get("planet_100k", "-")))
    per_task("Dreamer at 100k steps (CURL, Table 1)", lambda t: str(PUBLISHED.get(t, {}).get("dreamer_100k", "-")))
    per_task("PlaNet paper, 1000 episodes (Table 1)", lambda t: str(PUBLISHED.get(t, {}).get("planet_paper", "-")))
    lines = ["| | " + " | ".join(tasks) + " |", "|---|" + "---|" * len(tasks)]
    lines += [f"| {label} | " + " | ".join(values) + " |" for label, values in rows]
    return "\n".join(lines) + "\n"


def _saved_config(record: dict[str, Any]) -> configs.Config:
    """A record's config as planetrl reads saved ones, built once per record from the mapping `load_record`
    already parsed."""
    if "_loaded_config" not in record:
        try:
            record["_loaded_config"] = configs.from_dict(record["config"])
        except configs.ConfigError as error:
            raise _damaged(Path(record["path"]), f"{Path(record['path']) / 'config.yaml'}: {error}") from error
    return record["_loaded_config"]


def variant_changes(variant: dict[str, Any], base: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(key, the base's value, the variant's) for each config key the variant run changed, `run.*` aside.

    Configs are read as planetrl reads saved ones, so a key a record's code did not have yet counts at the
    value that code ran with, and only what the two runs really did differently is listed.
    """
    changed = configs.differences(_saved_config(base), _saved_config(variant))
    return [(key, old, new) for key, old, new in changed if not key.startswith("run.")]


def variant_name(record: dict[str, Any]) -> str:
    """A variant record's name: its VARIANT folder in `TASK/VARIANT/seed-N/`."""
    return Path(record["path"]).parent.name


def base_of(variant: dict[str, Any], records: list[dict[str, Any]],
            variants: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The record a variant's lever was tried against: the preset's record of its task and seed, or another
    variant of that seed whose config is nearer to it.

    Of those candidates no farther from the preset than the variant itself (counted in config keys against
    the preset's record of the task), the one whose config differs from the variant's in the fewest keys; on
    a tie the one nearer the preset (the preset's own record first), then the one that ran first, so that a
    new run one lever away from an old variant does not take its base's place and change what the old run's
    row measures. So when the preset takes a lever (say, a batch size), its old records become a variant and
    a lever measured on the old setting is still read against the old setting's record, not against the new
    preset. Code-only variants are no one's base; a task the preset has no record of gives none.
    """
    of_task = sorted((r for r in records if r["task"] == variant["task"]), key=lambda r: r["seed"])
    preset = next((r for r in of_task if r["seed"] == variant["seed"]), None)
    reference = preset or (of_task[0] if of_task else None)
    if reference is None:
        return None
    depth = len(variant_changes(variant, reference))
    candidates = [(depth, 0, _started(preset), "", preset)] if preset else []
    for other in variants:
        if other is variant or (other["task"], other["seed"]) != (variant["task"], variant["seed"]) \
                or variant_name(other) in CODE_ONLY_VARIANTS:
            continue
        other_depth = len(variant_changes(other, reference))
        if other_depth <= depth:
            candidates.append((len(variant_changes(variant, other)), other_depth, _started(other),
                               variant_name(other), other))
    return min(candidates, key=lambda candidate: candidate[:4])[4] if candidates else None


def _started(record: dict[str, Any]) -> float:
    """When a record's run tested first (its tests.jsonl's first `time`); infinity when it does not say."""
    time = record["tests"][0].get("time") if record["tests"] else None
    return float(time) if isinstance(time, (int, float)) and math.isfinite(time) else math.inf


def _base_label(base: dict[str, Any] | None, records: list[dict[str, Any]]) -> str:
    """'the preset' for the preset's own record, else the base variant's name."""
    if base is None:
        return "-"
    return "the preset" if any(base is record for record in records) else variant_name(base)


def _commit(record: dict[str, Any]) -> str:
    commit = read_json_file(Path(record["path"]) / "run_info.json").get("git_commit")
    return commit[:7] if isinstance(commit, str) and commit else "?"


def load_variants(directory: Path) -> list[dict[str, Any]]:
    """The variant records below `directory` (`TASK/VARIANT/seed-N/`), in path order; each is a lever tried
    against the preset or against another variant (`base_of`), named by its VARIANT folder."""
    return _with_random_policy([load_record(p.parent) for p in sorted(Path(directory).glob("*/*/seed-*/tests.jsonl"))],
                               directory)


def variants_table(variants: list[dict[str, Any]], records: list[dict[str, Any]]) -> str:
    """Markdown: each variant record beside its base (`base_of`): the preset's record of its task and seed,
    or the variant it adds one lever to.

    The row names its base, what its config changed against it, both runs' commits (the code may differ as
    well), its phase means, and both last-three means. Empty without variants.
    """
    if not variants:
        return ""
    lines = ["| task | variant | seed | beside | what it changes against that record | commit (variant; beside) "
             "| test phase means | mean of the last 3 phases | the record beside it, same seed | largest fall "
             "below an earlier phase (variant; beside) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for variant in variants:
        base = base_of(variant, records, variants)
        changes = ", ".join(f"`{key}` {old} -> {new}" for key, old, new in variant_changes(variant, base)) \
            if base else "-"
        phase_means = ", ".join(f"{np.mean(t['returns']):.0f}" for t in variant["tests"]) or "-"
        lines.append(f"| {variant['task']} | {variant_name(variant)} | {variant['seed']} | "
                     f"{_base_label(base, records)} | {changes or 'nothing'} | "
                     f"{_commit(variant)}; {_commit(base) if base else '-'} | {phase_means} | "
                     f"{_last_three(variant)} | {_last_three(base) if base else '-'} | "
                     f"{_fall(variant)}; {_fall(base)} |")
    return "\n".join(lines) + "\n"


def finished(record: dict[str, Any]) -> bool:
    """Whether the run tested at its config's last update, so that its last three phases are its end."""
    tests = record["tests"]
    return bool(tests) and tests[-1]["updates"] >= record["config"]["train"]["total_updates"]


def _lever_figure(record: dict[str, Any], digits: int = 0) -> str:
    """The mean of the last three phases, bold where it meets the goal; how far an unfinished run got."""
    if not finished(record):
        reached = record["tests"][-1]["updates"] if record["tests"] else 0
        return f"unfinished ({reached} of {record['config']['train']['total_updates']})"
    figure = f"{_last_three_mean(record):.{digits}f}" if digits else last_three_figure(record)
    return f"**{figure}**" if _verdict(record) == "goal met" else figure


def _lever_pair(variant: dict[str, Any], base: dict[str, Any] | None) -> str:
    """'lever vs base', to one decimal where whole numbers would show two different means as one."""
    if base is None:
        return f"{_lever_figure(variant)} vs no preset record"
    figures = (_lever_figure(variant), _lever_figure(base))
    if figures[0] == figures[1] and finished(variant) and _last_three_mean(variant) != _last_three_mean(base):
        figures = (_lever_figure(variant, 1), _lever_figure(base, 1))
    return f"{figures[0]} vs {figures[1]}"


def levers_table(variants: list[dict[str, Any]], records: list[dict[str, Any]]) -> str:
    """Markdown: each lever (a variant's name) in one row, against its base on every task and seed it ran.

    Issue 13 asks for one preset for all tasks, so a lever is judged on all of them at once: per task, each
    seed's mean of the last three phases beside its base's (`base_of`: the preset's record of that seed, or
    the variant the lever was added to), and over the runs that reached their base's end, how many end above
    it and how many meet the goal (the lever's; the base's). Variants of other code (CODE_ONLY_VARIANTS, or
    no config key changed) are not levers; a seed the preset has no record of is shown and not counted.
    Empty without levers.
    """
    levers: dict[str, list[tuple[dict[str, Any], dict[str, Any] | None]]] = {}
    changes: dict[str, dict[str, str]] = {}  # lever -> {what it changes: the base it changes that against}
    beside: dict[str, set[str]] = {}
    for variant in variants:
        name = variant_name(variant)
        base = base_of(variant, records, variants)
        changed = variant_changes(variant, base) if base else []
        if (base and not changed) or name in CODE_ONLY_VARIANTS:
            continue
        levers.setdefault(name, []).append((variant, base))
        if base:
            beside.setdefault(name, set()).add(_base_label(base, records))
        if changed:
            changes.setdefault(name, {}).setdefault(", ".join(f"`{key}` {old} -> {new}" for key, old, new in changed),
                                                    _base_label(base, records))
    if not levers:
        return ""
    ran = {v["task"] for pairs in levers.values() for v, _ in pairs}
    tasks = [t for t in PAPER_TASKS if t in ran] + sorted(ran - set(PAPER_TASKS))
    lines = ["| lever | beside | what it changes | " + " | ".join(tasks) + " | ends above the record beside it | "
             "goals met (lever; beside) |", "|---|---|---|" + "---|" * len(tasks) + "---|---|"]
    for lever, pairs in sorted(levers.items()):
        cells = ["; ".join(f"s{v['seed']}: {_lever_pair(v, b)}"
                           for v, b in sorted(pairs, key=lambda pair: pair[0]["seed"]) if v["task"] == task) or "-"
                 for task in tasks]
        done = [(v, b) for v, b in pairs if b is not None and finished(v) and finished(b)]
        above = sum(_last_three_mean(v) > _last_three_mean(b) for v, b in done)
        met = [sum(_verdict(r) == "goal met" for r in side) for side in zip(*done, strict=True)] if done else [0, 0]
        bases = ", ".join(sorted(beside.get(lever, {"-"})))
        lines.append(f"| {lever} | {bases} | {_changes_cell(changes.get(lever))} | "
                     + " | ".join(cells) + f" | {above} of {len(done)} | {met[0]} of {len(done)}; "
                     f"{met[1]} of {len(done)} |")
    return "\n".join(lines) + "\n"


def _changes_cell(changes: dict[str, str] | None) -> str:
    """A lever's config changes; where its seeds stand beside different records (a seed the preset has not run
    is read beside an old variant), what it changes against each, so no pair is described by another's keys."""
    if not changes:
        return "-"
    if len(changes) == 1:
        return next(iter(changes))
    return "; ".join(f"against {base}: {changed}" for changed, base in changes.items())


def _draw_returns(axis: Any, xs: list[float], record: dict[str, Any], color: str, label: str) -> None:
    """Every test episode's return as a dot at its phase's x, and the phase means as a line."""
    for x, test in zip(xs, record["tests"], strict=True):
        axis.scatter([x] * len(test["returns"]), test["returns"], color=color, s=10, alpha=0.5)
    axis.plot(xs, [np.mean(t["returns"]) for t in record["tests"]], color=color, marker="o",
              label=f"{label} (phase mean; dots: episodes)")


def _draw_random(axis: Any, records: list[dict[str, Any]]) -> None:
    """The random policy's return as a reference line: the folder's measurement of the task where it has
    one, else the mean of the records' random seed episodes."""
    measured = records[0].get("random_policy")
    random = measured["mean"] if measured else np.mean([r for record in records for r in record["random"]["returns"]])
    axis.axhline(float(random), color="gray", linestyle=":", label="random policy")


def plot(task: str, records: list[dict[str, Any]], path: Path) -> Path:
    """Every test episode's return per phase against environment steps, their mean, and reference lines."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 3.8), dpi=100)
    ordered = sorted(records, key=lambda r: r["seed"])
    for number, record in enumerate(ordered):
        _draw_returns(axis, [t["env_steps"] / 1000 for t in record["tests"]], record, f"C{number}",
                      f"planetrl seed {record['seed']}")
    _draw_random(axis, ordered)
    published = PUBLISHED.get(task, {})
    if "planet_100k" in published:
        axis.axhline(published["planet_100k"], color="black", linestyle="--", label="PlaNet at 100k (CURL)")
        axis.axhline(published["dreamer_100k"], color="black", linestyle="-.", label="Dreamer at 100k (CURL)")
    axis.set_title(task)
    axis.set_xlabel("environment steps (thousands)")
    axis.set_ylabel("test return")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7, loc="best", framealpha=0.8)
    figure.tight_layout()
    write_atomic(path, lambda handle: figure.savefig(handle, format="png"), fsync=False)
    plt.close(figure)
    return path


def phase_lengths(record: dict[str, Any]) -> list[float | None]:
    """Each test phase's mean episode length in decisions (tests.jsonl, else metrics.jsonl's test/length)."""
    logged = {row["step"]: row["test/length"] for row in record["metrics"] if "test/length" in row}
    return [float(np.mean(t["lengths"])) if t.get("lengths") else logged.get(t["updates"]) for t in record["tests"]]


def plot_curves(labelled: list[tuple[str, Path]], path: Path, title: str = "") -> Path:
    """Test return and mean test length per phase against updates, one line per record, on one figure.

    For comparing variants of one task (a config key on and off, same seed), which the per-task table
    plots cannot tell apart. The random policy's return is each record's seed-episode mean.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    records = [(label, load_record(Path(directory))) for label, directory in labelled]
    tasks = sorted({record["task"] for _, record in records})
    if len(tasks) > 1:  # one random-policy line and one return scale would mislead
        raise ValueError(f"the records are of {len(tasks)} tasks ({', '.join(tasks)}); curves compares records of "
                         f"one task: `planetrl results table` plots each task")
    figure, (returns_axis, length_axis) = plt.subplots(1, 2, figsize=(10, 3.8), dpi=100)
    for number, (label, record) in enumerate(records):
        updates = [t["updates"] for t in record["tests"]]
        _draw_returns(returns_axis, updates, record, f"C{number}", label)
        lengths = [(u, n) for u, n in zip(updates, phase_lengths(record), strict=True) if n is not None]
        if lengths:
            length_axis.plot(*zip(*lengths, strict=True), color=f"C{number}", marker="o", label=label)
    _draw_random(returns_axis, [record for _, record in records])
    for axis, ylabel in ((returns_axis, "test return"), (length_axis, "mean test episode length (decisions)")):
        axis.set_xlabel("updates")
        axis.set_ylabel(ylabel)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7, loc="best", framealpha=0.8)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda handle: figure.savefig(handle, format=path.suffix.lstrip(".").lower()), fsync=False)
    plt.close(figure)
    return path


def _rates_machine(rates: dict[str, dict[str, Any]]) -> str:
    """Which kind of CPU the idle rates were measured on, as a clause; empty when they do not say."""
    kinds = {rate.get("cpu_bf16_native") for rate in rates.values()}
    if kinds == {True}:
        return ("; the rates were measured on a 2-core CPU with native bf16, and on an AVX2 CPU without it, which "
                "trains and plans in fp32, a run takes about 1.9x as long (BENCHMARKS.md)")
    if kinds == {False}:
        return "; the rates were measured on a 2-core CPU without native bf16 (fp32)"
    return ""


def load_records(directory: Path) -> list[dict[str, Any]]:
    """The preset's records below `directory` (TASK/seed-N), by task and seed; variants are not among them."""
    paths = sorted(p.parent for p in Path(directory).glob("*/seed-*/tests.jsonl"))
    if not paths:
        raise FileNotFoundError(f"no records (TASK/seed-N/tests.jsonl) under {directory}")
    return _with_random_policy(sorted((load_record(p) for p in paths), key=lambda r: (r["task"], r["seed"])),
                               directory)


def write_results(directory: Path) -> list[Path]:
    """README.md and `<task>.png` from every record below `directory`."""
    directory = Path(directory)
    records = load_records(directory)
    variants = load_variants(directory)
    rates = read_rates(directory / "rates.json")
    causes = load_causes(directory, records, variants, rates)
    minutes = (f"Minutes are estimated from each run's updates and decisions at the idle rates in rates.json, "
               f"since the runs shared the machine{_rates_machine(rates)}." if rates else
               "Minutes are measured wall-clock.")
    written = []
    by_task: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_task.setdefault(record["task"], []).append(record)
    for task, task_records in by_task.items():
        written.append(plot(task, task_records, directory / f"{task}.png"))
    preset = directory.name
    text = (f"# planetrl, `{preset}` preset: test returns on the paper's tasks\n\n"
            f"Each cell: mean test return of one phase (updates, training episodes, environment steps = "
            f"decisions x action repeat, minutes). {minutes} Regenerate with "
            f"`planetrl results table --dir {shlex.quote(str(directory))}`.\n\n" + table(records, rates, causes) + "\n"
            + "".join(f"![{task}]({task}.png)\n" for task in by_task))
    levers = levers_table(variants, records)
    if levers:
        text += ("\n## Levers, at a glance\n\n"
                 "Each cell: the seed, then the lever's mean of the last three test phases against the record "
                 "it was tried beside (the preset's record of that seed, or the variant it adds one lever to); "
                 "a bold figure meets the goal. The last two columns count only runs that reached their last "
                 "update.\n\n" + levers)
    variant_rows = variants_table(variants, records)
    if variant_rows:
        text += ("\n## Variants: one lever each, beside the record it changes\n\n"
                 "Records under `TASK/VARIANT/seed-N/`, each run with `--set` on top of the preset of its day "
                 "(its config.yaml holds what it ran); each is read beside the preset's record of its seed or, "
                 "where that is nearer in config, the variant it adds one lever to. The notes say how each ran "
                 "and what it shows.\n\n" + variant_rows)
    shortfalls = variant_causes(variants, causes)
    if shortfalls:
        text += ("\n### Where variant records fall short, and why\n\n"
                 "Causes found while these records were the preset's, or since.\n\n" + shortfalls)
    notes = directory / "NOTES.md"
    if notes.exists():  # what the numbers cannot say themselves: unfinished runs, shared machines, causes
        text += "\n## Notes\n\n" + notes.read_text()
    write_atomic(directory / "README.md", text)
    written.insert(0, directory / "README.md")
    return written


def _utc(seconds: float) -> str:
    """A start time as people read it, to the millisecond (two runs may start within a second):
    '2026-12-06 20:51:05.916 UTC'."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1000):03d} UTC"
