"""Experiments as a whole: sweep, status, report, results, config."""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
from pathlib import Path

from planetrl import config as config_lib
from planetrl.cli.common import (
    IMPORTS,
    add_config_options,
    at_least,
    config_epilog,
    config_from,
    describe_keys,
    output_dir,
    output_file,
    overrides_parent,
    path_arg,
    ppo_block,
    resolve_config,
)
from planetrl.config_values import did_you_mean
from planetrl.programs import program


def cmd_sweep(args: argparse.Namespace) -> int:
    from planetrl.training.sweep import missing_runs, run_local, run_ray, sweep_units, threads_per_run

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    if not tasks or args.seeds < 1:
        raise config_lib.ConfigError(f"--tasks needs at least one task and --seeds at least 1, got "
                                     f"{args.tasks!r} and {args.seeds}")
    from planetrl.training.runner import check_planet_config, check_task

    for task in tasks:
        check_task(task)  # unknown or uninstallable tasks fail here, before anything starts
    cfg = resolve_config(args, {})
    for task in tasks:  # as each run's `train` would, before the first starts (a --set env.task included)
        check_planet_config(resolve_config(args, {"env.task": task}))
    train_args = ([f"--preset={args.preset}"] if args.preset else []) + \
        [f"--set={item}" for item in args.overrides] + ([f"--seed={args.seed}"] if args.seed is not None else [])
    if args.device:
        train_args.append(f"--device={args.device}")
    train_args += [f"--import={module}" for module in IMPORTS]
    logdir = Path(args.logdir)
    units = missing_runs(logdir, sweep_units(tasks, args.seeds), cfg.run.stale_seconds)
    how = args.backend
    if args.backend == "local":
        threads = threads_per_run(args.parallel)
        how += f", {args.parallel} at a time, " + (f"{threads} torch thread{'s' * (threads > 1)} each" if threads else
                                                   f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} each")
    print(f"sweep: {len(tasks)} task{'s' * (len(tasks) != 1)} x {args.seeds} seed{'s' * (args.seeds != 1)}, "
          f"{len(units)} run{'s' * (len(units) != 1)} to do ({how})", flush=True)
    if args.backend == "ray":
        results = run_ray(units, logdir, train_args, args.address, args.cpus_per_run, args.gpus_per_run,
                          cfg.run.stale_seconds)
    else:
        results = run_local(units, logdir, train_args, args.parallel, cfg.run.stale_seconds)
    if not units:
        print(f"sweep: every run is already done; see `{status_command(logdir)}`")
        return 0
    states = list(results.values())
    print(f"sweep: {states.count('done')} done, {states.count('failed')} failed, "
          f"{len(states) - states.count('done') - states.count('failed')} unfinished; "
          f"see `{status_command(logdir)}`")
    return 0 if all(s == "done" for s in states) else 1


def status_command(logdir: Path) -> str:
    """The status command for `logdir`, as pasted from here."""
    return f"{program('planetrl')} status --logdir {shlex.quote(str(logdir))}"


def cmd_status(args: argparse.Namespace) -> int:
    from planetrl.training.sweep import format_status, no_runs_found, status_rows

    rows = status_rows(Path(args.logdir), args.stale_seconds)
    if not rows:
        print(f"planetrl status: error: {no_runs_found(args.logdir)}", file=sys.stderr)
        return 1
    print(format_status(rows))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from planetrl.training.report import write_report
    from planetrl.training.sweep import no_runs_found, status_rows

    out = output_dir(args.out, "--out")
    rows = status_rows(Path(args.logdir))
    if not rows:
        hint = ""
        if any(Path(args.logdir).glob("*/seed-*/tests.jsonl")):  # exported records, e.g. results/cpu
            table_command = f"{program('planetrl')} results table --dir {shlex.quote(str(args.logdir))}"
            hint = f"; {args.logdir} holds run records (TASK/seed-N), which `{table_command}` turns into its README.md"
        print(f"planetrl report: error: {no_runs_found(args.logdir)}{hint}", file=sys.stderr)
        return 1
    written = write_report(rows, out)
    print((out / "report.md").read_text())
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def cmd_results_export(args: argparse.Namespace) -> int:
    from planetrl.training.results import export_record
    from planetrl.training.rundir import require_run_dir

    out = export_record(require_run_dir(Path(args.run)), output_dir(args.out, "--out"))
    print(f"wrote the record of {args.run} to {out}/")
    return 0


def cmd_results_table(args: argparse.Namespace) -> int:
    from planetrl.training.results import write_results

    written = write_results(Path(args.dir))
    print(written[0].read_text())
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


FIGURE_FORMATS = (".png", ".pdf", ".svg")


def cmd_results_curves(args: argparse.Namespace) -> int:
    from planetrl.training.results import plot_curves

    if Path(args.out).suffix.lower() not in FIGURE_FORMATS:
        raise ValueError(f"--out {args.out}: a figure file ends in {', '.join(FIGURE_FORMATS)}")
    out = output_file(args.out, "--out")
    labelled = []
    for spec in args.record:
        directory, _, label = spec.partition("=")
        if not directory:
            raise ValueError(f"--record {spec}: names no directory; give DIR or DIR=LABEL")
        if not (Path(directory) / "tests.jsonl").is_file():
            raise FileNotFoundError(f"--record {spec}: {directory} is not a record (no tests.jsonl); "
                                    "make one with `planetrl results export`")
        labelled.append((label or Path(directory).name, Path(directory)))
    print(f"wrote {plot_curves(labelled, out, args.title)}")
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    import yaml

    if args.keys is not None:
        known = list(dict.fromkeys(f.name for kind in config_lib.KINDS for f in dataclasses.fields(kind)))
        keys = [key for key, _, _ in config_lib.describe()]
        for name in args.keys:
            if name not in known and name not in keys:
                raise config_lib.ConfigError(
                    f"--keys {name} is neither a config section nor a key.{did_you_mean(name, known + keys)} "
                    f"Sections: {', '.join(known)}; a key is SECTION.KEY")
        print(describe_keys(args.keys))
        return 0
    from planetrl.envs.make import action_repeat, decisions_per_episode, episode_steps
    from planetrl.envs.registry import resolve

    cfg: config_lib.AnyConfig
    if args.ppo is None:
        cfg = resolve_config(args, {"env.task": args.task})
    elif args.preset is not None:
        raise config_lib.ConfigError(f"--preset {args.preset} and --ppo {args.ppo}: a preset configures PlaNet, "
                                     "a PPO config PPO; give one")
    else:
        cfg = config_from(ppo_block(args.ppo), args.overrides, {"env.task": args.task, "run.seed": args.seed},
                          kind=config_lib.PPORunConfig)[0]
    spec = resolve(cfg.env.task)  # a config printed to train from later names a task that exists
    print(yaml.safe_dump(config_lib.to_dict(cfg), sort_keys=False), end="")
    # The 0s that mean "the task's default" stay 0 in the YAML (so it trains the same on any task); say what they
    # come to for this task.
    steps = episode_steps(cfg.env, spec)
    print(f"# for task {cfg.env.task}: action_repeat {action_repeat(cfg.env, spec)}, "
          f"episode_steps {steps or 'unlimited'}"
          + (f" ({decisions_per_episode(cfg.env, spec)} decisions)" if steps else ""))
    return 0


def add_results_commands(commands: argparse._SubParsersAction) -> None:
    """`results export`, `results table` and `results curves`."""
    results = commands.add_parser("results", help="published results: run records and their Table-1 README",
                                  description="Compact run records under results/PRESET/TASK/seed-N/ (config.yaml, "
                                              "run_info.json, metrics.jsonl, tests.jsonl, random.json) and "
                                              "the README table and plots made from them.")
    results_commands = results.add_subparsers(dest="results_command", required=True, metavar="RESULTS_COMMAND",
                                              help="export, table or curves")
    export = results_commands.add_parser("export", help="copy a run's compact record (no checkpoints, no episodes)")
    export.add_argument("--run", required=True, type=path_arg, help="run directory (LOGDIR/run-NN)")
    export.add_argument("--out", required=True, type=path_arg,
                        help="record directory, e.g. results/cpu/cheetah-run/seed-0; "
                             "the same run's record is refreshed, another run's refused")
    export.set_defaults(func=cmd_results_export)
    results_table = results_commands.add_parser("table", help="README.md and a PNG per task from the records")
    results_table.add_argument("--dir", required=True, type=path_arg,
                               help="folder of TASK/seed-N records, e.g. results/cpu")
    results_table.set_defaults(func=cmd_results_table)
    curves = results_commands.add_parser("curves", help="one PNG comparing records of one task (a variant on/off)")
    curves.add_argument("--record", action="append", required=True, type=path_arg, metavar="DIR[=LABEL]",
                        help="a record directory and its legend label; give one per line to draw")
    curves.add_argument("--out", required=True, type=path_arg, help="figure path: .png, .pdf or .svg")
    curves.add_argument("--title", default="", help="figure title")
    curves.set_defaults(func=cmd_results_curves)


def add_experiment_commands(commands: argparse._SubParsersAction) -> None:
    """`sweep`, `status`, `report` and `config`."""
    sweep = commands.add_parser(
        "sweep", parents=[overrides_parent()], help="train every task x seed, locally or on a Ray cluster",
        description="One experiment per task (LOGDIR/<task>/run-NN, one run per seed). Runs already done are "
                    "skipped, so the same command finishes what is missing; a run whose process dies is retried "
                    "and resumes from its checkpoint. With Ray, LOGDIR must be on storage every node sees.",
        epilog=config_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    sweep.add_argument("--tasks", required=True, help="comma-separated task names")
    sweep.add_argument("--seeds", type=int, default=5, help="runs (seeds) per task (default 5)")
    sweep.add_argument("--logdir", required=True, type=path_arg, help="sweep directory")
    sweep.add_argument("--backend", choices=("local", "ray"), default="local",
                       help="local processes, or Ray tasks (needs the ray extra)")
    sweep.add_argument("--address", help="Ray cluster address (default: start a local Ray instance)")
    sweep.add_argument("--parallel", type=at_least(1), default=1, help="local backend: runs at a time (default 1)")
    sweep.add_argument("--cpus-per-run", type=at_least(0.0, float), default=1.0,
                       help="Ray backend: CPUs each run needs")
    sweep.add_argument("--gpus-per-run", type=at_least(0.0, float), default=0.0,
                       help="Ray backend: GPUs each run needs")
    sweep.add_argument("--device", choices=("auto", "cpu", "cuda"), help="torch device for every run")
    add_config_options(sweep)
    sweep.set_defaults(func=cmd_sweep, works_without_console=True)

    status = commands.add_parser("status", help="table of the runs under a logdir",
                                 description="Task, seed, state (running/done/failed/stale), episodes, updates, "
                                             "latest test return and wall-clock of every run; safe while runs go on.")
    status.add_argument("--logdir", required=True, type=path_arg, help="experiment, sweep or run directory")
    status.add_argument("--stale-seconds", type=at_least(0.01, float), default=600.0,
                        help="a heartbeat older than this marks a run stale (default 600)")
    status.set_defaults(func=cmd_status)

    report = commands.add_parser("report", help="results table and learning-curve plots of a sweep",
                                 description="report.md: final test return per task, mean and std over seeds, "
                                             "episodes, wall-clock and hardware (Table 1 layout); a PNG per task "
                                             "of test return against episodes. Only seeds of one experiment are "
                                             "averaged: runs of a task that differ in config (other than seed and "
                                             "bookkeeping) get a column each, named by the keys they differ in.")
    report.add_argument("--logdir", required=True, type=path_arg, help="sweep directory")
    report.add_argument("--out", required=True, type=path_arg, help="directory for report.md and the plots")
    report.set_defaults(func=cmd_report)

    show = commands.add_parser("config", parents=[overrides_parent()],
                               help="print the resolved configuration as YAML",
                               description="Print the configuration that a preset (or, with --ppo, a PPO "
                                           "config) and overrides resolve to.",
                               epilog=config_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_options(show)
    show.add_argument("--ppo", metavar="CONFIG", help="a PPO config instead of a preset: what `planetrl ppo train "
                                                      "--config CONFIG` runs")
    show.add_argument("--task", help="task name (env.task); see `planetrl tasks`")
    show.add_argument("--keys", nargs="*", metavar="SECTION",
                      help="list every key (of these sections, or these SECTION.KEY keys) with its default and "
                           "meaning, instead of the YAML")
    show.set_defaults(func=cmd_config)
