"""The `planetrl` command line."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import planetrl
from planetrl import config as config_lib

PLANET_SECTIONS = ("env", "data", "model", "loss", "optim", "planner", "train", "run")
PPO_SECTIONS = ("env", "ppo", "run")


def _config_epilog(sections: Sequence[str] = PLANET_SECTIONS) -> str:
    """A pointer to the keys instead of all of them, so that --help fits on one screen."""
    return (f"configuration: --set SECTION.KEY=VALUE; sections {', '.join(sections)}.\n"
            f"Every key, its default and meaning: planetrl config --keys {' '.join(sections[:2])} ...\n"
            f"presets: {', '.join(sorted(config_lib.PRESETS))}")


def _describe_keys(sections: Sequence[str]) -> str:
    """Every key of the given sections with its default and help, by section."""
    lines: list[str] = []
    for key, value, help_text in config_lib.describe():
        section = key.split(".", 1)[0]
        if sections and section not in sections:
            continue
        if not any(line == f"[{section}]" for line in lines):
            lines.append(f"[{section}]")
        lines.append(f"  {key} = {value!r}")
        lines.extend(textwrap.wrap(help_text, 72, initial_indent="      ", subsequent_indent="      "))
    return "\n".join(lines)


def _add_config_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", choices=sorted(config_lib.PRESETS),
                        help="named block of config overrides, applied before --set")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override one config value, e.g. --set env.image_size=64 (repeatable)")
    parser.add_argument("--seed", type=int, help="seed for every source of randomness (run.seed)")


def _config_from(block: dict[str, object], overrides: Sequence[str],
                 flags: dict[str, object]) -> tuple[config_lib.Config, dict[str, object]]:
    """A named block (preset or PPO config), then --set, then dedicated flags (None = not given).

    Returns the config and the keys this command line sets explicitly, which
    must agree with a resumed run's saved config.
    """
    explicit = {**block, **config_lib.parse_assignments(overrides),
                **{k: v for k, v in flags.items() if v is not None}}
    if _IMPORTS:
        explicit["run.imports"] = tuple(_IMPORTS)
    return config_lib.set_values(config_lib.Config(), explicit), explicit


_IMPORTS: list[str] = []  # --import MODULE, anywhere on the command line


def _take_imports(argv: list[str]) -> list[str]:
    """Remove every `--import MODULE` / `--import=MODULE` from argv, import the modules, return the rest."""
    from planetrl.envs.registry import import_task_modules

    rest, modules = [], []
    items = iter(argv)
    for item in items:
        if item == "--import":
            modules.append(next(items, ""))
        elif item.startswith("--import="):
            modules.append(item.split("=", 1)[1])
        else:
            rest.append(item)
    if any(not m for m in modules):
        raise config_lib.ConfigError("--import needs a module name, like --import my_tasks")
    import_task_modules(modules)
    _IMPORTS[:] = modules
    return rest


def _resolve(args: argparse.Namespace, extra: dict[str, object]) -> tuple[config_lib.Config, dict[str, object]]:
    """Config and explicit keys from --preset, --set, --seed and the command's own flags."""
    block = dict(config_lib.PRESETS[args.preset]) if args.preset else {}
    return _config_from(block, args.overrides, {**extra, "run.seed": getattr(args, "seed", None)})


def _resolve_config(args: argparse.Namespace, extra: dict[str, object]) -> config_lib.Config:
    return _resolve(args, extra)[0]


# ---------------------------------------------------------------- tasks


def cmd_tasks(args: argparse.Namespace) -> int:
    from planetrl.config import EnvConfig
    from planetrl.envs.make import decisions_per_episode, make_env
    from planetrl.envs.registry import resolve, task_names

    names = args.names or task_names()
    print(f"{'task':<20} {'repeat':>6} {'env steps':>9} {'decisions':>9} {'image':>7}  observation / action")
    for name in names:
        spec = resolve(name)
        cfg = EnvConfig(task=name, image_size=spec.image_size)
        line = f"{name:<20} {spec.action_repeat:>6} {spec.episode_steps or '-':>9} " \
               f"{decisions_per_episode(cfg, spec) or '-':>9} {spec.image_size:>4}px"
        if args.no_spaces:
            print(line)
            continue
        env = make_env(cfg, spec=spec)
        try:
            obs = ", ".join(f"{k} {s.shape} {s.dtype}" for k, s in env.observation_space.spaces.items())
            print(f"{line}  {obs} / {env.action_space}")
        finally:
            env.close()
    print("\nalso: gym:<Gymnasium id> (pixels from render()), dmc:<domain>-<task> (any DMC suite task)")
    return 0


# ---------------------------------------------------------------- collect


def cmd_collect(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from planetrl.agents.random import RandomAgent
    from planetrl.data.episodes import EpisodeWriter, read_episode
    from planetrl.envs.make import make_batch_env
    from planetrl.training.driver import Driver
    from planetrl.viz import write_gif

    if args.episodes < 1:
        raise config_lib.ConfigError(f"--episodes must be at least 1, got {args.episodes}")
    cfg = _resolve_config(args, {"env.task": args.task, "env.processes": args.processes})
    count = max(cfg.env.processes, 1)
    outdir = Path(args.outdir)
    start = time.time()
    env = make_batch_env(cfg.env, count, seed=cfg.run.seed)
    try:
        discrete = getattr(env.action_space, "n", None)
        writer = EpisodeWriter(outdir, num_actions=int(discrete) if discrete else None)
        agent = RandomAgent(env.action_space, len(env), seed=cfg.run.seed)
        driver = Driver(env, agent, [writer], seed=cfg.run.seed)
        with tqdm(total=args.episodes, desc=f"collect {cfg.env.task}", unit="episode") as bar:
            results = driver.run(args.episodes, progress=bar)
    finally:
        env.close()
    elapsed = time.time() - start
    scores = np.array([r.score for r in results])
    steps = sum(r.length for r in results)
    print(f"wrote {len(writer.written)} episodes to {outdir}/ "
          f"(return {scores.mean():.1f} +- {scores.std():.1f}, {steps} decisions, {steps / elapsed:.1f}/s)")
    if args.gif:
        episode = read_episode(writer.written[0])
        path = write_gif(episode["image"], outdir / "episode.gif", fps=args.fps, scale=args.gif_scale)
        print(f"GIF of one episode: {path}")
    return 0


# ---------------------------------------------------------------- train / eval / visualize


def _check_before_creating(logdir: Path, cfg: config_lib.Config) -> None:
    """The task, the device and the logdir are checked before any directory is made or marked."""
    from planetrl.envs.registry import resolve
    from planetrl.training.updater import resolve_device

    resolve(cfg.env.task)
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


def _failure_reason(run_dir: Path) -> str:
    """The last line of a run's FAIL file (the error and its message)."""
    lines = [line for line in (run_dir / "FAIL").read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no reason recorded"


def _run_experiment(logdir: Path, runs: int, cfg: config_lib.Config, explicit: dict[str, object],
                    make_run: Callable[..., Any], only: int | None = None,
                    wait: bool = False, retry_failed: bool = False) -> int:
    """Claim runs of the experiment one by one, run each, and mark it DONE or FAIL.

    A run that failed before is reported with its reason (exit status 1) unless `retry_failed`.
    """
    import traceback

    from planetrl.training.experiment import FAIL, ClaimLost, claimable_runs, run_dirs, run_state
    from planetrl.training.rundir import prepare_run_dir

    if runs < 1:
        raise config_lib.ConfigError(f"--runs must be at least 1, got {runs}")
    failures = 0
    if only is not None and not 0 <= only < runs:
        raise config_lib.ConfigError(f"--index must be within 0..{runs - 1}, got {only}")
    _check_before_creating(logdir, cfg)
    for index, run_dir in enumerate(run_dirs(logdir, runs)):
        if (run_dir / FAIL).exists() and (only is None or index == only):
            if retry_failed:
                os.replace(run_dir / FAIL, run_dir / f"{FAIL}.{int(time.time())}")
            else:
                failures += 1
                print(f"run {run_dir} failed earlier: {_failure_reason(run_dir)}\n"
                      f"  rerun with --retry-failed to try again from its checkpoint", file=sys.stderr)
    for index, run_dir, claim in claimable_runs(logdir, runs, cfg.train.stale_seconds, only, wait):
        run_cfg = config_lib.set_values(cfg, {"run.seed": cfg.run.seed + index})
        run_explicit = {**explicit, "run.seed": run_cfg.run.seed} if "run.seed" in explicit else explicit
        try:
            run_cfg = prepare_run_dir(run_dir, run_cfg, run_explicit)
            print(f"run {run_dir}: task {run_cfg.env.task}, seed {run_cfg.run.seed}", flush=True)
            result = make_run(run_dir, run_cfg, claim.check).run()
        except ClaimLost as lost:
            claim.abandon()
            print(f"run {run_dir} stopped: {lost}", file=sys.stderr)
            failures += 1
            continue
        except (KeyboardInterrupt, config_lib.ConfigError):
            claim.abandon()
            raise
        except Exception as error:  # noqa: BLE001 - recorded in FAIL with its traceback
            failures += 1
            try:
                claim.fail(traceback.format_exc())
                where = f"traceback in {run_dir / 'FAIL'}"
            except (OSError, ClaimLost) as unrecorded:
                claim.abandon()
                where = f"FAIL could not be written ({unrecorded})"
            print(f"run {run_dir} FAILED: {type(error).__name__}: {error}\n"
                  f"  {where}; the last good checkpoint is kept", file=sys.stderr)
            continue
        claim.done()
        summary = ", ".join(f"{k} {v:.1f}" for k, v in result.items() if "return" in k)
        print(f"run {run_dir} done{': ' + summary if summary else ''}\n"
              f"  logs: {run_dir / 'metrics.jsonl'} and TensorBoard: "
              f".venv/bin/tensorboard --logdir {run_dir / 'events'}\n"
              f"  videos: {run_dir / 'videos'}/", flush=True)
    states = [run_state(d, cfg.train.stale_seconds) for d in run_dirs(logdir, runs)]
    print(f"{logdir}: " + ", ".join(f"{states.count(s)} {s}" for s in sorted(set(states))))
    return 1 if failures else 0


def cmd_train(args: argparse.Namespace) -> int:
    from planetrl.training.planet import PlanetRun

    cfg, explicit = _resolve(args, {"env.task": args.task, "run.device": args.device})
    return _run_experiment(Path(args.logdir), args.runs, cfg, explicit,
                           lambda run_dir, run_cfg, fence: PlanetRun(run_dir, run_cfg, not args.no_progress, fence),
                           args.index, args.wait, args.retry_failed)


def cmd_ppo_train(args: argparse.Namespace) -> int:
    from planetrl.training.ppo import PPORun

    if args.config not in config_lib.PPO_CONFIGS:
        raise config_lib.ConfigError(f"unknown PPO config '{args.config}'; allowed: "
                                     f"{', '.join(sorted(config_lib.PPO_CONFIGS))}")
    cfg, explicit = _config_from(config_lib.PPO_CONFIGS[args.config], args.overrides,
                                 {"run.device": args.device, "run.seed": args.seed})
    return _run_experiment(Path(args.logdir), args.runs, cfg, explicit,
                           lambda run_dir, run_cfg, fence: PPORun(run_dir, run_cfg, not args.no_progress, fence),
                           retry_failed=args.retry_failed)


def _ppo_episodes(run_dir: Path, episodes: int, pixels: bool, outdir: Path | None) -> tuple[list[float], list[Path]]:
    """Episodes of a trained PPO agent's mean action; with `outdir`, rendered and kept there."""
    from planetrl.data.episodes import EpisodeWriter
    from planetrl.envs.make import make_batch_env
    from planetrl.envs.registry import import_task_modules
    from planetrl.training.driver import Driver
    from planetrl.training.ppo import load_trained_ppo
    from planetrl.training.rundir import require_run_dir

    cfg = config_lib.load(require_run_dir(run_dir) / "config.yaml")
    import_task_modules(cfg.run.imports)
    env_cfg = config_lib.set_values(cfg, {"env.pixels": pixels, "env.processes": 0}).env
    env = make_batch_env(env_cfg, episodes, seed=cfg.run.seed + 17)
    callbacks: list[Any] = []
    try:
        agent = load_trained_ppo(run_dir, cfg, env)
        if outdir is not None:
            discrete = getattr(env.action_space, "n", None)
            callbacks.append(EpisodeWriter(outdir / "episodes", num_actions=int(discrete) if discrete else None))
        results = Driver(env, agent, callbacks, seed=cfg.run.seed + 17).run(episodes, explore=False)
    finally:
        env.close()
    return [r.score for r in results], (callbacks[0].written if callbacks else [])


def cmd_ppo_eval(args: argparse.Namespace) -> int:
    import json

    returns, _ = _ppo_episodes(Path(args.run), args.episodes, pixels=False, outdir=None)
    mean, std = float(np.mean(returns)), float(np.std(returns))
    print(f"return {mean:.1f} +- {std:.1f} over {len(returns)} episodes")
    if args.json:
        Path(args.json).write_text(json.dumps({"returns": returns, "mean": mean, "std": std}) + "\n")
    return 0


def cmd_ppo_visualize(args: argparse.Namespace) -> int:
    from planetrl.data.episodes import read_episode
    from planetrl.viz import write_gif

    outdir = Path(args.out)
    scores, written = _ppo_episodes(Path(args.run), args.episodes, pixels=True, outdir=outdir)
    for number, path in enumerate(written):
        write_gif(read_episode(path)["image"], outdir / f"policy-{number:02d}.gif", fps=30, scale=2)
    print(f"wrote {len(written)} videos to {outdir}/ (returns: " + ", ".join(f"{r:.1f}" for r in scores) + ")")
    return 0


def _policy_episodes(run_dir: Path, episodes: int, device: str,
                     outdir: Path | None) -> tuple[list[float], list[Path]]:
    """Run the latest checkpoint's MPC agent without exploration; with `outdir`, keep episodes and GIFs."""
    from planetrl.data.episodes import EpisodeWriter, read_episode
    from planetrl.envs.make import make_batch_env
    from planetrl.training.driver import Driver
    from planetrl.training.planet import build_mpc_agent, load_trained
    from planetrl.viz import write_gif

    cfg, model, updates = load_trained(run_dir, device)
    env_cfg = config_lib.set_values(cfg, {"env.processes": max(cfg.env.processes, 1)}).env
    env = make_batch_env(env_cfg, episodes, seed=cfg.run.seed * 1000 + 3)
    written = []
    try:
        agent = build_mpc_agent(cfg, model, env, seed=cfg.run.seed, noise=0.0)
        callbacks = []
        if outdir is not None:
            discrete = getattr(env.action_space, "n", None)
            writer = EpisodeWriter(outdir / "episodes", num_actions=int(discrete) if discrete else None)
            callbacks.append(writer)
            written = writer.written
        results = Driver(env, agent, callbacks, seed=cfg.run.seed + 99).run(episodes, explore=False)
    finally:
        env.close()
    if outdir is not None:
        for number, path in enumerate(written):
            write_gif(read_episode(path)["image"], outdir / f"policy-{number:02d}.gif", fps=20, scale=2)
    print(f"{run_dir}: checkpoint at update {updates}")
    return [r.score for r in results], list(written)


def cmd_eval(args: argparse.Namespace) -> int:
    import json

    from planetrl.atomic import write_atomic

    returns, _ = _policy_episodes(Path(args.run), args.episodes, args.device, None)
    mean, std = float(np.mean(returns)), float(np.std(returns))
    print("returns: " + ", ".join(f"{r:.1f}" for r in returns))
    print(f"return {mean:.1f} +- {std:.1f} over {len(returns)} episodes")
    result = json.dumps({"returns": returns, "mean": mean, "std": std}) + "\n"
    write_atomic(Path(args.run) / "eval.json", result)
    if args.json:
        write_atomic(Path(args.json), result)
    return 0


def cmd_visualize(args: argparse.Namespace) -> int:
    from planetrl.data.episodes import read_episode
    from planetrl.training.planet import load_trained, open_loop_video
    from planetrl.training.updater import resolve_device
    from planetrl.viz import write_gif

    run_dir, outdir = Path(args.run), Path(args.out)
    returns, episodes = _policy_episodes(run_dir, args.episodes, args.device, outdir)
    cfg, model, _ = load_trained(run_dir, args.device)
    written = []
    for number, path in enumerate(episodes):
        frames = open_loop_video(model, read_episode(path), cfg, resolve_device(args.device))
        written.append(write_gif(frames, outdir / f"openloop-{number:02d}.gif", fps=10))
    print(f"wrote {len(returns)} policy videos and {len(written)} open-loop videos to {outdir}/ "
          f"(returns: {', '.join(f'{r:.1f}' for r in returns)})")
    return 0


# ---------------------------------------------------------------- sweep / status / report


def cmd_sweep(args: argparse.Namespace) -> int:
    from planetrl.training.sweep import missing_runs, run_local, run_ray, sweep_units

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    if not tasks or args.seeds < 1:
        raise config_lib.ConfigError(f"--tasks needs at least one task and --seeds at least 1, got "
                                     f"{args.tasks!r} and {args.seeds}")
    from planetrl.envs.registry import resolve

    for task in tasks:
        resolve(task)  # unknown names fail here, before anything starts
    cfg = _resolve_config(args, {})
    train_args = ([f"--preset={args.preset}"] if args.preset else []) + \
        [f"--set={item}" for item in args.overrides] + ([f"--seed={args.seed}"] if args.seed is not None else [])
    if args.device:
        train_args.append(f"--device={args.device}")
    train_args += [f"--import={module}" for module in _IMPORTS]
    logdir = Path(args.logdir)
    units = missing_runs(logdir, sweep_units(tasks, args.seeds), cfg.train.stale_seconds)
    print(f"sweep: {len(tasks)} tasks x {args.seeds} seeds, {len(units)} runs to do ({args.backend})", flush=True)
    if args.backend == "ray":
        results = run_ray(units, logdir, train_args, args.address, args.cpus_per_run, args.gpus_per_run,
                          cfg.train.stale_seconds)
    else:
        results = run_local(units, logdir, train_args, args.parallel, cfg.train.stale_seconds)
    if not units:
        print(f"sweep: every run is already done; see `planetrl status --logdir {logdir}`")
        return 0
    states = list(results.values())
    print(f"sweep: {states.count('done')} done, {states.count('failed')} failed, "
          f"{len(states) - states.count('done') - states.count('failed')} unfinished; "
          f"see `planetrl status --logdir {logdir}`")
    return 0 if all(s == "done" for s in states) else 1


def cmd_status(args: argparse.Namespace) -> int:
    from planetrl.training.sweep import format_status, status_rows

    rows = status_rows(Path(args.logdir), args.stale_seconds)
    if not rows:
        print(f"no runs under {args.logdir}")
        return 1
    print(format_status(rows))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from planetrl.training.report import write_report
    from planetrl.training.sweep import status_rows

    rows = status_rows(Path(args.logdir))
    if not rows:
        print(f"planetrl report: error: no runs under {args.logdir}", file=sys.stderr)
        return 1
    written = write_report(rows, Path(args.out))
    print((Path(args.out) / "report.md").read_text())
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def cmd_results_export(args: argparse.Namespace) -> int:
    from planetrl.training.results import export_record
    from planetrl.training.rundir import require_run_dir

    out = export_record(require_run_dir(Path(args.run)), Path(args.out))
    print(f"wrote the record of {args.run} to {out}/")
    return 0


def cmd_results_table(args: argparse.Namespace) -> int:
    from planetrl.training.results import write_results

    written = write_results(Path(args.dir))
    print(written[0].read_text())
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


# ---------------------------------------------------------------- config


def cmd_config(args: argparse.Namespace) -> int:
    import yaml

    if args.keys is not None:
        known = [f.name for f in dataclasses.fields(config_lib.Config)]
        unknown = [s for s in args.keys if s not in known]
        if unknown:
            raise config_lib.ConfigError(f"unknown config section(s) {', '.join(unknown)}; allowed: {', '.join(known)}")
        print(_describe_keys(args.keys))
        return 0
    cfg = _resolve_config(args, {})
    print(yaml.safe_dump(config_lib.to_dict(cfg), sort_keys=False), end="")
    return 0


# ---------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="planetrl", description="Model-based RL from pixels: PlaNet world models and CEM planning.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages and show tracebacks")
    parser.add_argument("--import", dest="imports_help", metavar="MODULE", action="append",
                        help="import a module that registers tasks (anywhere on the command line; repeatable; "
                             "saved with the run)")
    parser.add_argument("--version", action="version", version=f"planetrl {planetrl.__version__}",
                        help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help="what to do")

    tasks = commands.add_parser("tasks", help="list registered tasks, their defaults and spaces",
                                description="List every registered task with its action repeat, episode "
                                            "length, image size, observation and action spaces.")
    tasks.add_argument("names", nargs="*", help="tasks to show (default: all registered tasks)")
    tasks.add_argument("--no-spaces", action="store_true",
                       help="skip building each env, so the spaces are not shown (faster)")
    tasks.set_defaults(func=cmd_tasks)

    collect = commands.add_parser(
        "collect", help="collect random-agent episodes to .npz files",
        description="Run the uniform random agent and write one .npz file per finished episode "
                    "(the format the training loop reads).",
        epilog=_config_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    collect.add_argument("--task", help="task name (env.task); see `planetrl tasks`")
    collect.add_argument("--episodes", type=int, default=5, help="number of episodes to write (default 5)")
    collect.add_argument("--outdir", required=True, help="directory for the episode files")
    collect.add_argument("--processes", type=int,
                         help="envs stepped in parallel, each in its own process; 0 = one env in-process "
                              "(env.processes)")
    collect.add_argument("--gif", action="store_true", help="also write OUTDIR/episode.gif of the first episode")
    collect.add_argument("--gif-scale", type=int, default=2, help="integer upscaling of the GIF frames (default 2)")
    collect.add_argument("--fps", type=float, default=20.0, help="GIF frame rate (default 20)")
    _add_config_options(collect)
    collect.set_defaults(func=cmd_collect)

    train = commands.add_parser(
        "train", help="train PlaNet (starts, or resumes what is already in --logdir)",
        description="Train PlaNet: random seed episodes, then world-model updates, MPC collection and test "
                    "phases. Running the same command again resumes. Several workers may share a logdir.",
        epilog=_config_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    train.add_argument("--task", help="task name (env.task); see `planetrl tasks`")
    train.add_argument("--logdir", required=True, help="experiment directory; runs go to LOGDIR/run-NN")
    train.add_argument("--runs", type=int, default=1, help="number of runs (seeds seed, seed+1, ...); default 1")
    train.add_argument("--device", choices=("auto", "cpu", "cuda"), help="torch device (run.device)")
    train.add_argument("--no-progress", action="store_true", help="no progress bar (for logs and CI)")
    train.add_argument("--index", type=int, help="do only run INDEX of the --runs (sweeps use this)")
    train.add_argument("--retry-failed", action="store_true", help="try failed runs again from their checkpoint")
    train.add_argument("--wait", action="store_true",
                       help="wait for runs held by another worker until they are done or stale, then take over")
    _add_config_options(train)
    train.set_defaults(func=cmd_train)

    evaluate = commands.add_parser("eval", help="mean and std of the return of a run's latest checkpoint",
                                   description="Run test episodes (no exploration noise) with the latest "
                                               "checkpoint of a run and print the mean and std of the return.")
    evaluate.add_argument("--run", required=True, help="run directory (LOGDIR/run-NN)")
    evaluate.add_argument("--episodes", type=int, default=10, help="episodes, run in parallel (default 10)")
    evaluate.add_argument("--json", help="also write the returns, mean and std to this JSON file")
    evaluate.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="torch device")
    evaluate.set_defaults(func=cmd_eval)

    visualize = commands.add_parser("visualize", help="videos of a trained agent and its open-loop predictions",
                                    description="Write GIFs of policy episodes of the latest checkpoint and of "
                                                "the model's open-loop predictions on them (truth/model/error).")
    visualize.add_argument("--run", required=True, help="run directory (LOGDIR/run-NN)")
    visualize.add_argument("--out", required=True, help="directory for the videos")
    visualize.add_argument("--episodes", type=int, default=2, help="policy episodes (default 2)")
    visualize.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="torch device")
    visualize.set_defaults(func=cmd_visualize)

    ppo = commands.add_parser("ppo", help="the batched PPO baseline: train and visualize",
                              description="Batched PPO from state on the same environment layer (the agents "
                                          "library's train and visualize scripts).")
    ppo_commands = ppo.add_subparsers(dest="ppo_command", required=True, metavar="PPO_COMMAND",
                                      help="train or visualize")
    ppo_train = ppo_commands.add_parser(
        "train", help="train PPO (resumes what is already in --logdir)",
        description="Train batched PPO; running the same command again resumes.",
        epilog=_config_epilog(PPO_SECTIONS),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ppo_train.add_argument("--config", required=True, help="PPO config: " + ", ".join(
        f"{name} ({block['env.task']})" for name, block in sorted(config_lib.PPO_CONFIGS.items())))
    ppo_train.add_argument("--logdir", required=True, help="experiment directory; runs go to LOGDIR/run-NN")
    ppo_train.add_argument("--runs", type=int, default=1, help="number of runs (seeds seed, seed+1, ...)")
    ppo_train.add_argument("--device", choices=("auto", "cpu", "cuda"), help="torch device (run.device)")
    ppo_train.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                           help="override one config value, e.g. --set ppo.lr=3e-4 (repeatable)")
    ppo_train.add_argument("--seed", type=int, help="seed for every source of randomness (run.seed)")
    ppo_train.add_argument("--no-progress", action="store_true", help="no progress bar (for logs and CI)")
    ppo_train.add_argument("--retry-failed", action="store_true", help="try failed runs again from their checkpoint")
    ppo_train.set_defaults(func=cmd_ppo_train)
    ppo_visualize = ppo_commands.add_parser("visualize", help="videos of a trained PPO agent's episodes",
                                            description="Render episodes of the latest checkpoint as GIFs.")
    ppo_visualize.add_argument("--run", required=True, help="run directory (LOGDIR/run-NN)")
    ppo_visualize.add_argument("--out", required=True, help="directory for the videos")
    ppo_visualize.add_argument("--episodes", type=int, default=2, help="episodes to render (default 2)")
    ppo_visualize.set_defaults(func=cmd_ppo_visualize)
    ppo_eval = ppo_commands.add_parser("eval", help="mean and std of a trained PPO agent's return",
                                       description="Run the latest checkpoint's mean action for N episodes.")
    ppo_eval.add_argument("--run", required=True, help="run directory (LOGDIR/run-NN)")
    ppo_eval.add_argument("--episodes", type=int, default=30, help="episodes (default 30, as batch-ppo)")
    ppo_eval.add_argument("--json", help="also write the returns, mean and std to this JSON file")
    ppo_eval.set_defaults(func=cmd_ppo_eval)

    results = commands.add_parser("results", help="published results: run records and their Table-1 README",
                                  description="Compact run records under results/PRESET/TASK/seed-N/ (config.yaml, "
                                              "run_info.json, metrics.jsonl, tests.jsonl, random.json) and "
                                              "the README table and plots made from them.")
    results_commands = results.add_subparsers(dest="results_command", required=True, metavar="RESULTS_COMMAND",
                                              help="export or table")
    export = results_commands.add_parser("export", help="copy a run's compact record (no checkpoints, no episodes)")
    export.add_argument("--run", required=True, help="run directory (LOGDIR/run-NN)")
    export.add_argument("--out", required=True, help="record directory, e.g. results/cpu/cheetah-run/seed-0")
    export.set_defaults(func=cmd_results_export)
    results_table = results_commands.add_parser("table", help="README.md and a PNG per task from the records")
    results_table.add_argument("--dir", required=True, help="folder of TASK/seed-N records, e.g. results/cpu")
    results_table.set_defaults(func=cmd_results_table)

    sweep = commands.add_parser(
        "sweep", help="train every task x seed, locally or on a Ray cluster",
        description="One experiment per task (LOGDIR/<task>/run-NN, one run per seed). Runs already done are "
                    "skipped, so the same command finishes what is missing; a run whose process dies is retried "
                    "and resumes from its checkpoint. With Ray, LOGDIR must be on storage every node sees.",
        epilog=_config_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    sweep.add_argument("--tasks", required=True, help="comma-separated task names")
    sweep.add_argument("--seeds", type=int, default=5, help="runs (seeds) per task (default 5)")
    sweep.add_argument("--logdir", required=True, help="sweep directory")
    sweep.add_argument("--backend", choices=("local", "ray"), default="local",
                       help="local processes, or Ray tasks (needs the ray extra)")
    sweep.add_argument("--address", help="Ray cluster address (default: start a local Ray instance)")
    sweep.add_argument("--parallel", type=int, default=1, help="local backend: runs at a time (default 1)")
    sweep.add_argument("--cpus-per-run", type=float, default=1.0, help="Ray backend: CPUs each run needs")
    sweep.add_argument("--gpus-per-run", type=float, default=0.0, help="Ray backend: GPUs each run needs")
    sweep.add_argument("--device", choices=("auto", "cpu", "cuda"), help="torch device for every run")
    _add_config_options(sweep)
    sweep.set_defaults(func=cmd_sweep)

    status = commands.add_parser("status", help="table of the runs under a logdir",
                                 description="Task, seed, state (running/done/failed/stale), episodes, updates, "
                                             "latest test return and wall-clock of every run; safe while runs go on.")
    status.add_argument("--logdir", required=True, help="experiment or sweep directory")
    status.add_argument("--stale-seconds", type=float, default=600.0,
                        help="a heartbeat older than this marks a run stale (default 600)")
    status.set_defaults(func=cmd_status)

    report = commands.add_parser("report", help="results table and learning-curve plots of a sweep",
                                 description="report.md: final test return per task, mean and std over seeds, "
                                             "episodes, wall-clock and hardware (Table 1 layout); a PNG per task "
                                             "of test return against episodes.")
    report.add_argument("--logdir", required=True, help="sweep directory")
    report.add_argument("--out", required=True, help="directory for report.md and the plots")
    report.set_defaults(func=cmd_report)

    show = commands.add_parser("config", help="print the resolved configuration as YAML",
                               description="Print the configuration that a preset and overrides resolve to.",
                               epilog=_config_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_config_options(show)
    show.add_argument("--keys", nargs="*", metavar="SECTION",
                      help="list every key (of these sections) with its default and meaning, instead of the YAML")
    show.set_defaults(func=cmd_config)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = any(a in ("-v", "--verbose") for a in argv)  # -v works anywhere on the command line
    try:
        argv = _take_imports(argv)
    except (config_lib.ConfigError, ValueError) as error:
        if verbose:
            raise
        print(f"planetrl: error: {error}", file=sys.stderr)
        return 2
    args = parser.parse_args([a for a in argv if a not in ("-v", "--verbose")])
    args.verbose = verbose
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:  # third-party INFO lines (rendering back ends) would land inside tables
        for noisy in ("absl", "OpenGL"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return args.func(args)
    except (config_lib.ConfigError, ValueError, OSError, RuntimeError) as error:
        if args.verbose:
            raise
        message = " ".join(str(error).split()) or type(error).__name__
        print(f"planetrl {args.command}: error: {message} (run with -v for the traceback)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
