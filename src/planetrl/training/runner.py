"""Doing an experiment's runs: check, claim, run, and mark each DONE or FAIL; shared by both recipes.

`make_run(run_dir, cfg, fence)` builds a recipe's run (PlaNet or PPO) whose `run()` does the work and
calls `fence()` before every write, so a worker that lost its claim stops.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planetrl import config as config_lib
from planetrl.envs.make import action_repeat, decisions_per_episode, episode_steps
from planetrl.envs.registry import check_requirements, resolve
from planetrl.programs import program
from planetrl.training.experiment import FAIL, Claim, ClaimLost, claimable_runs, run_dirs, run_state
from planetrl.training.rundir import (
    NotACheckpoint,
    latest_checkpoint,
    prepare_run_dir,
    refuse_changes_to_a_finished_run,
)
from planetrl.training.updater import resolve_device

MakeRun = Callable[[Path, config_lib.AnyConfig, Callable[[], None]], Any]


def check_task(name: str) -> None:
    """ConfigError unless the task is known and the modules it needs are installed."""
    try:
        check_requirements(resolve(name))
    except ImportError as error:
        raise config_lib.ConfigError(str(error)) from error


def check_chunk_fits(cfg: config_lib.Config) -> None:
    """ConfigError when the task's time limit ends every episode before it holds one training chunk, which
    would otherwise surface only after the seed episodes were collected in vain."""
    decisions = decisions_per_episode(cfg.env)
    if decisions and decisions + 1 < cfg.data.chunk_length and not cfg.data.cross_episodes:
        repeat = action_repeat(cfg.env)
        raise config_lib.ConfigError(
            f"task {cfg.env.task!r} ends its episodes after {decisions} decisions (env.episode_steps "
            f"{episode_steps(cfg.env)} at action repeat {repeat}), so none holds the {cfg.data.chunk_length} "
            f"images of a training chunk (data.chunk_length); lower data.chunk_length to at most "
            f"{decisions + 1} or raise env.episode_steps to at least {(cfg.data.chunk_length - 1) * repeat}")


def check_image_size(cfg: config_lib.Config) -> None:
    """ConfigError when the world model cannot be built for env.image_size, which would otherwise surface
    only after the seed episodes were collected (`planetrl collect` takes any size; the model does not)."""
    from planetrl.models.networks import IMAGE_SIZES

    if cfg.env.image_size not in IMAGE_SIZES:
        allowed = " or ".join(map(str, IMAGE_SIZES))
        raise config_lib.ConfigError(f"env.image_size {cfg.env.image_size} has no encoder and decoder; PlaNet "
                                     f"trains on {allowed} pixel images (e.g. --set env.image_size=64)")


def check_planet_config(cfg: config_lib.Config) -> None:
    """What a PlaNet run needs of its config that the keys' own ranges cannot say: chunks fit, the model builds."""
    check_chunk_fits(cfg)
    check_image_size(cfg)


def check_before_creating(logdir: Path, cfg: config_lib.AnyConfig) -> None:
    """The task, the device and the logdir are checked before any directory is made or marked."""
    check_task(cfg.env.task)
    if isinstance(cfg, config_lib.Config):
        check_planet_config(cfg)
    try:
        resolve_device(cfg.run.device)
    except RuntimeError as error:
        raise config_lib.ConfigError(str(error)) from error
    if logdir.exists() and not logdir.is_dir():
        raise NotADirectoryError(f"--logdir {logdir} is a file, not a directory")
    try:
        logdir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OSError(f"cannot create --logdir {logdir}: {error.strerror or error}") from error
    if not os.access(logdir, os.W_OK):
        raise PermissionError(f"--logdir {logdir} is not writable")


def failure_reason(run_dir: Path) -> str:
    """The last line of a run's FAIL file (the error and its message)."""
    lines = [line for line in (run_dir / FAIL).read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no reason recorded"


def _has_checkpoint(run_dir: Path) -> bool:
    return latest_checkpoint(run_dir).is_file()


def _episodes_kept(run_dir: Path) -> str:
    """'; its episodes on disk are kept' where the run stores episodes (PlaNet does, PPO does not)."""
    stored = any(any((run_dir / name).glob("*.npz")) for name in ("train_episodes", "test_episodes"))
    return "; its episodes on disk are kept" if stored else ""


def _what_a_retry_resumes(run_dir: Path) -> str:
    return ("from its checkpoint" if _has_checkpoint(run_dir)
            else f"from its start (no checkpoint was saved{_episodes_kept(run_dir)})")


def _earlier_failures(logdir: Path, runs: int, only: int | None, retry: bool) -> int:
    """Report runs that failed before (or clear their FAIL to retry them); returns how many were reported."""
    reported = 0
    for index, run_dir in enumerate(run_dirs(logdir, runs)):
        if not (run_dir / FAIL).exists() or (only is not None and index != only):
            continue
        if retry:
            os.replace(run_dir / FAIL, run_dir / f"{FAIL}.{int(time.time())}")
        else:
            reported += 1
            print(f"run {run_dir} failed earlier: {failure_reason(run_dir)}\n"
                  f"  rerun with --retry-failed to try again {_what_a_retry_resumes(run_dir)}", file=sys.stderr)
    return reported


def _record_failure(run_dir: Path, claim: Claim, error: Exception) -> None:
    try:
        claim.fail(traceback.format_exc())
        where = f"traceback in {run_dir / FAIL}"
    except (OSError, ClaimLost) as unrecorded:
        claim.abandon()
        where = f"FAIL could not be written ({unrecorded})"
    kept = ("the checkpoint itself cannot be read: restore it from a copy, or start again in a new --logdir"
            if isinstance(error, NotACheckpoint)
            else "the last good checkpoint is kept" if _has_checkpoint(run_dir)
            else f"no checkpoint was saved yet{_episodes_kept(run_dir)}")
    print(f"run {run_dir} FAILED: {type(error).__name__}: {error}\n  {where}; {kept}", file=sys.stderr)


def _run_one(run_dir: Path, claim: Claim, cfg: config_lib.AnyConfig, explicit: dict[str, object],
             make_run: MakeRun) -> bool:
    """One claimed run to its verdict; returns whether it finished."""
    try:
        cfg = prepare_run_dir(run_dir, cfg, explicit)
        print(f"run {run_dir}: task {cfg.env.task}, seed {cfg.run.seed}", flush=True)
        result = make_run(run_dir, cfg, claim.check).run()
    except ClaimLost as lost:
        claim.abandon()
        print(f"run {run_dir} stopped: {lost}", file=sys.stderr)
        return False
    except (KeyboardInterrupt, config_lib.ConfigError):
        claim.abandon()
        raise
    except Exception as error:  # noqa: BLE001 - recorded in FAIL with its traceback
        _record_failure(run_dir, claim, error)
        return False
    claim.done()
    summary = ", ".join(f"{k} {v:.1f}" for k, v in result.items() if "return" in k)
    videos = f"{run_dir / 'videos'}/" if isinstance(cfg, config_lib.Config) else \
        f"{program('planetrl')} ppo visualize --run {shlex.quote(str(run_dir))} --out DIR"  # PPO writes none itself
    print(f"run {run_dir} done{': ' + summary if summary else ''}\n"
          f"  logs: {run_dir / 'metrics.jsonl'} and TensorBoard: {program('tensorboard')} --logdir "
          f"{shlex.quote(str(run_dir / 'events'))}\n  videos: {videos}", flush=True)
    return True


def run_experiment(logdir: Path, runs: int, cfg: config_lib.AnyConfig, explicit: dict[str, object],
                   make_run: MakeRun, only: int | None = None, wait: bool = False,
                   retry_failed: bool = False) -> int:
    """Claim the experiment's runs one by one and do each; exit status 1 if any failed, now or before."""
    if runs < 1:
        raise config_lib.ConfigError(f"--runs must be at least 1, got {runs}")
    if only is not None and not 0 <= only < runs:
        raise config_lib.ConfigError(f"--index must be within 0..{runs - 1}, got {only}")
    check_before_creating(logdir, cfg)

    def seeded(index: int) -> tuple[config_lib.AnyConfig, dict[str, object]]:
        run_cfg = config_lib.set_values(cfg, {"run.seed": cfg.run.seed + index})
        return run_cfg, ({**explicit, "run.seed": run_cfg.run.seed} if "run.seed" in explicit else explicit)

    for index, run_dir in enumerate(run_dirs(logdir, runs)):
        if (only is None or index == only) and run_state(run_dir, cfg.run.stale_seconds) == "done":
            refuse_changes_to_a_finished_run(run_dir, type(cfg), seeded(index)[1])
    failures = _earlier_failures(logdir, runs, only, retry_failed)
    with contextlib.closing(claimable_runs(logdir, runs, cfg.run.stale_seconds, only, wait)) as claimed:
        for index, run_dir, claim in claimed:
            failures += not _run_one(run_dir, claim, *seeded(index), make_run)
    states = [run_state(d, cfg.run.stale_seconds) for d in run_dirs(logdir, runs)]
    print(f"{logdir}: " + ", ".join(f"{states.count(s)} {s}" for s in sorted(set(states))))
    return 1 if failures else 0
