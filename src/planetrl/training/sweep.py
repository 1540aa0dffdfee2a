"""Sweeps over tasks and seeds, locally or as Ray tasks, and the status of their runs.

A sweep is one experiment per task, `LOGDIR/<task>/run-NN` with one run per
seed. Each run is a separate `planetrl train --index N` process: a crash
stays inside it, and because a run resumes from its directory, a retried run
(a killed process, a lost Ray worker or node) costs only the work since its
last checkpoint. Runs already DONE are never run again, so rerunning the
sweep command finishes what is missing. With Ray, LOGDIR must be on storage
every node sees.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ALL_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from planetrl.metrics import finite_number, read_json_lines, record_step
from planetrl.training.experiment import run_state
from planetrl.training.runfiles import read_json_file, read_run_config, read_tests, require_directory

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Unit:
    """One run of a sweep: a task and a run index (the seed offset)."""

    task: str
    index: int
    seeds: int

    def directory(self, logdir: Path) -> Path:
        return logdir / task_dirname(self.task) / f"run-{self.index:02d}"


def task_dirname(task: str) -> str:
    """A task name as a directory name (`gym:Pendulum-v1` -> `gym-Pendulum-v1`)."""
    return task.replace(":", "-").replace("/", "-")


def command(unit: Unit, logdir: Path, train_args: list[str]) -> list[str]:
    """The `planetrl train` command that does one run, waiting out a stale holder if needed."""
    return [sys.executable, "-m", "planetrl.cli", "train", "--task", unit.task,
            "--logdir", str(logdir / task_dirname(unit.task)), "--runs", str(unit.seeds),
            "--index", str(unit.index), "--wait", "--no-progress", *train_args]


class RunProcesses:
    """The `planetrl train` processes of a local sweep, so that a stop of the sweep reaches each of them.

    Each runs in its own process group: Ctrl-C or a hang-up at the terminal reaches the sweep alone, which
    passes one SIGTERM to each run (a run stops cleanly on it and resumes later). Without this, `kill` of the
    sweep left it waiting for its runs to finish, hours on a CPU.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()
        self.stopping = False

    def run(self, argv: list[str], **popen: Any) -> int | None:
        """The process's exit status; None when the sweep was already stopping and nothing was started."""
        with self._lock:
            if self.stopping:
                return None
            process = subprocess.Popen(argv, process_group=0, **popen)
            self._running.add(process)
        try:
            return process.wait()
        finally:
            with self._lock:
                self._running.discard(process)

    def stop(self) -> None:
        """SIGTERM to every run still going, then wait for each to let go of its run."""
        with self._lock:
            self.stopping = True
            running = list(self._running)
        for process in running:
            process.send_signal(signal.SIGTERM)
        for process in running:
            process.wait()


def run_unit(unit: Unit, logdir: Path, train_args: list[str], stale_seconds: float,
             threads: int | None = None, processes: RunProcesses | None = None) -> str:
    """Do one run in a child process; raise if it died, so the caller (or Ray) retries it.

    `threads`: the child's OMP_NUM_THREADS, torch's CPU threads (None: inherited). `processes`: where a
    local sweep keeps its children (a stopped sweep's runs are not retried).
    """
    run_dir = unit.directory(logdir)
    state = run_state(run_dir, stale_seconds)
    if state in ("done", "failed"):
        return state
    run_dir.mkdir(parents=True, exist_ok=True)
    log_path = run_dir / "train.log"  # the run's own output, kept (appended on every attempt)
    with open(log_path, "a") as output:
        env = None if threads is None else {**os.environ, "OMP_NUM_THREADS": str(threads)}
        popen: dict[str, Any] = dict(stdout=output, stderr=subprocess.STDOUT, env=env)
        argv = command(unit, logdir, train_args)
        returncode = processes.run(argv, **popen) if processes else subprocess.run(argv, **popen).returncode
    state = run_state(run_dir, stale_seconds)
    if state in ("done", "failed") or (processes and processes.stopping):
        return state
    tail = log_path.read_text(errors="replace")[-2000:]
    raise RuntimeError(f"run {unit.task} #{unit.index} ended with exit code {returncode} "
                       f"in state {state}; its output is in {log_path}: {tail}")


def threads_per_run(parallel: int) -> int | None:
    """Torch threads for each of `parallel` runs on this machine: its cores shared out (None where the user set
    OMP_NUM_THREADS). More threads than cores in all make torch's threads wait on each other: two updates side by
    side at two threads each on two cores took 5.2 s a step, at one thread each 1.0 s (BENCHMARKS.md)."""
    if "OMP_NUM_THREADS" in os.environ:
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cores // max(parallel, 1))


def run_local(units: list[Unit], logdir: Path, train_args: list[str], parallel: int, stale_seconds: float,
              retries: int = 2, table_every: float = 60.0) -> dict[Unit, str]:
    """Up to `parallel` runs at a time as child processes; a run whose process dies is retried.

    Each run's output goes to its `train.log`; every `table_every` seconds the status table is printed.
    Each run gets its share of the cores as torch threads, unless OMP_NUM_THREADS is set.
    """
    threads = threads_per_run(parallel)
    processes = RunProcesses()

    def attempt(unit: Unit) -> str:
        for trial in range(retries + 1):
            try:
                return run_unit(unit, logdir, train_args, stale_seconds, threads, processes)
            except RuntimeError as error:
                log.warning("%s (attempt %d of %d)", error, trial + 1, retries + 1)
        return run_state(unit.directory(logdir), stale_seconds)

    with ThreadPoolExecutor(max_workers=max(parallel, 1)) as pool:
        futures = [pool.submit(attempt, unit) for unit in units]
        try:
            while not all(f.done() for f in futures):
                wait(futures, timeout=table_every, return_when=ALL_COMPLETED)
                if table_every and not all(f.done() for f in futures):
                    print(format_status(status_rows(logdir, stale_seconds)), flush=True)  # a live table
        except KeyboardInterrupt:  # Ctrl-C, and SIGTERM or SIGHUP as the command line takes them
            processes.stop()
            raise
        return {unit: future.result() for unit, future in zip(units, futures, strict=True)}


def run_ray(units: list[Unit], logdir: Path, train_args: list[str], address: str | None, cpus: float,
            gpus: float, stale_seconds: float, retries: int = 3) -> dict[Unit, str]:
    """Each run is a Ray task with the declared resources; Ray retries a lost worker or node."""
    try:
        import ray
    except ImportError as error:
        raise ImportError("--backend ray needs Ray: pip install 'planetrl[ray]' (or pip install ray)") from error
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(num_cpus=cpus, num_gpus=gpus, max_retries=retries, retry_exceptions=True)(run_unit)
    try:
        futures = [remote.remote(unit, logdir.resolve(), train_args, stale_seconds) for unit in units]
        results = {}
        for unit, future in zip(units, futures, strict=True):
            try:
                results[unit] = ray.get(future)
            except Exception as error:  # noqa: BLE001 - reported per run; the others still count
                log.warning("run %s #%d gave up: %s", unit.task, unit.index, error)
                results[unit] = run_state(unit.directory(logdir), stale_seconds)
        return results
    finally:
        if started_here:
            ray.shutdown()


# ------------------------------------------------------------------ status


def experiment_dirs(logdir: Path) -> list[Path]:
    """Every run directory under a logdir (those with a config.yaml), sorted; a run directory is its own."""
    logdir = Path(logdir)
    if (logdir / "config.yaml").is_file():
        return [logdir]
    return sorted(p.parent for p in logdir.glob("**/run-*/config.yaml"))


def describe_run(run_dir: Path, stale_seconds: float = 600.0) -> dict[str, Any]:
    """Task, seed, state, episodes, updates, latest test return and wall-clock of one run (PlaNet or PPO)."""
    config = read_run_config(run_dir / "config.yaml")
    claims = read_json_lines(run_dir / "claims.jsonl")
    tests = read_tests(run_dir)
    metrics = read_json_lines(run_dir / "metrics.jsonl")
    if "ppo" in config:  # PPO stores no episodes and no tests.jsonl; its metrics count env steps
        episodes, (updates, test_return) = None, _ppo_progress(metrics)
        curve, curve_x = _ppo_evaluations(metrics), "environment steps"
    else:
        curve = [(test["train_episodes"], sum(test["returns"]) / len(test["returns"])) for test in tests
                 if finite_number(test.get("train_episodes"))]  # a hand-damaged record: no point, not no row
        curve_x = "training episodes"
        episodes = len(list((run_dir / "train_episodes").glob("*.npz")))
        updates = max((step for r in metrics if any(k.startswith("train/") for k in r)
                       and (step := record_step(r)) is not None), default=0)
        test_return = (sum(tests[-1]["returns"]) / len(tests[-1]["returns"])) if tests else None
    start = next((c["time"] for c in claims[:1] if finite_number(c.get("time"))), None)
    end = max((r["time"] for r in metrics if finite_number(r.get("time"))), default=start)
    state = run_state(run_dir, stale_seconds)
    if state == "new" and claims:  # claimed once, then let go (Ctrl-C, SIGTERM): not a run that never started
        state = "stopped"
    if (run_dir / "DONE").exists():
        done = read_json_file(run_dir / "DONE").get("time")
        end = done if finite_number(done) else end
    elif start is not None and state == "running":
        end = time.time()
    info = read_json_file(run_dir / "run_info.json")
    return {
        "run": str(run_dir), "task": config["env"]["task"], "seed": config["run"]["seed"],
        "state": state, "episodes": episodes, "updates": updates,
        "test_return": test_return,
        "wall_seconds": (end - start) if start is not None and end is not None else None,
        "hardware": info.get("gpu") or f"{info.get('cpus', '?')} CPUs {info.get('processor') or ''}".strip(),
        "config": config, "curve": curve, "curve_x": curve_x,
    }


def _ppo_evaluations(metrics: list[dict[str, Any]]) -> list[tuple[int, float]]:
    """A PPO run's evaluations as (environment steps, mean return), in order of steps."""
    return sorted((step, r["eval/return"]) for r in metrics
                  if finite_number(r.get("eval/return")) and (step := record_step(r)) is not None)


def _ppo_progress(metrics: list[dict[str, Any]]) -> tuple[int, float | None]:
    """A PPO run's updates and its latest evaluation's mean return, read from its metrics."""
    updates = max((int(value) for r in metrics if finite_number(value := r.get("train/updates"))), default=0)
    evaluations = _ppo_evaluations(metrics)
    return updates, evaluations[-1][1] if evaluations else None


def format_status(rows: list[dict[str, Any]]) -> str:
    """A fixed-width table of runs."""
    header = (f"{'task':<22} {'seed':>4} {'state':<8} {'episodes':>8} {'updates':>8} {'test return':>11} "
              f"{'wall':>9}  path")
    lines = [header, "-" * len(header)]
    for row in rows:
        ret = f"{row['test_return']:.1f}" if row["test_return"] is not None else "-"
        wall = f"{row['wall_seconds'] / 60:.1f} min" if row["wall_seconds"] is not None else "-"
        episodes = "-" if row["episodes"] is None else row["episodes"]  # PPO keeps none
        lines.append(f"{row['task']:<22} {row['seed']:>4} {row['state']:<8} {episodes:>8} "
                     f"{row['updates']:>8} {ret:>11} {wall:>9}  {row['run']}")
    return "\n".join(lines)


def status_rows(logdir: Path, stale_seconds: float = 600.0) -> list[dict[str, Any]]:
    """One row per run; a run whose files cannot be read is one warning, not the end of the table."""
    logdir = require_directory(Path(logdir), "logdir")
    rows = []
    for run_dir in experiment_dirs(logdir):
        try:
            rows.append(describe_run(run_dir, stale_seconds))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            log.warning("skipping %s: its files cannot be read (%s: %s)", run_dir, type(error).__name__, error)
    return rows


def no_runs_found(logdir: Path) -> str:
    """Why `status_rows` came back empty: no run directories at all, or only ones it had to skip."""
    skipped = len(list(experiment_dirs(Path(logdir))))
    if not skipped:
        return f"no runs under {logdir}"
    return (f"no readable runs under {logdir}: {skipped} run "
            f"{'directory' if skipped == 1 else 'directories'} could not be read (the warnings above say why)")


def sweep_units(tasks: list[str], seeds: int) -> list[Unit]:
    return [Unit(task, index, seeds) for task in tasks for index in range(seeds)]


def missing_runs(logdir: Path, units: list[Unit], stale_seconds: float) -> list[Unit]:
    """The units whose runs are not DONE (or FAILED) yet."""
    return [u for u in units if run_state(u.directory(logdir), stale_seconds) not in ("done", "failed")]

