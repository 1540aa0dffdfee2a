"""PlaNet commands: tasks, collect, train, eval, visualize."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from planetrl import config as config_lib
from planetrl.cli.common import (
    NO_PROGRESS_HELP,
    PARALLEL_EPISODES,
    add_config_options,
    at_least,
    config_epilog,
    experiment_parent,
    output_dir,
    output_file,
    overrides_parent,
    path_arg,
    resolve_args,
    resolve_config,
)
from planetrl.seeds import derive

if TYPE_CHECKING:
    from planetrl.models.world_model import WorldModel
    from planetrl.training.driver import EpisodeResult


def cmd_tasks(args: argparse.Namespace) -> int:
    from planetrl.config import EnvConfig
    from planetrl.envs.make import decisions_per_episode, make_env
    from planetrl.envs.registry import check_requirements, resolve, task_names

    names = args.names or task_names()
    print(f"{'task':<20} {'repeat':>6} {'env steps':>9} {'decisions':>9} {'image':>7}  observation / action")
    unbuilt = 0
    for name in names:
        spec = resolve(name)
        cfg = EnvConfig(task=name, image_size=spec.image_size)
        line = f"{name:<20} {spec.action_repeat:>6} {spec.episode_steps or '-':>9} " \
               f"{decisions_per_episode(cfg, spec) or '-':>9} {spec.image_size:>4}px"
        if args.no_spaces:
            print(line)
            continue
        try:  # the spaces need the env built: a missing extra or an absent server is this task's line, not the end
            check_requirements(spec)
            env = make_env(cfg, spec=spec)
        except Exception as error:  # noqa: BLE001 - any task's constructor, reported on its line
            unbuilt += 1
            print(f"{line}  cannot be built here: {' '.join(str(error).split()) or type(error).__name__}")
            continue
        try:
            obs = ", ".join(f"{k} {s.shape} {s.dtype}" for k, s in env.observation_space.spaces.items())
            print(f"{line}  {obs} / {env.action_space}")
        finally:
            env.close()
    print("\nalso: gym:<Gymnasium id> (pixels from render()), dmc:<domain>-<task> (any DMC suite task), "
          "carla:<town> (a running CARLA server's town, e.g. carla:Town01, with the carla extra)")
    return 1 if unbuilt else 0


def cmd_collect(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from planetrl.agents.random import RandomAgent
    from planetrl.data.episodes import EpisodeWriter, list_episodes, read_episode
    from planetrl.envs.make import make_batch_env
    from planetrl.envs.spaces import discrete_choices
    from planetrl.training.driver import Driver
    from planetrl.viz import write_gif

    outdir = output_dir(args.outdir, "--outdir")
    cfg = resolve_config(args, {"env.task": args.task, "env.processes": args.processes})
    count = max(cfg.env.processes, 1)
    held = len(list_episodes(outdir))
    start = time.time()
    env = make_batch_env(cfg.env, count, seed=cfg.run.seed)
    try:
        discrete = discrete_choices(env.action_space)
        writer = EpisodeWriter(outdir, num_actions=discrete)
        agent = RandomAgent(env.action_space, len(env), seed=cfg.run.seed)
        driver = Driver(env, agent, [writer], seed=cfg.run.seed)
        with tqdm(total=args.episodes, desc=f"collect {cfg.env.task}", unit="episode") as bar:
            results = driver.run(args.episodes, progress=bar)
    finally:
        env.close()
    elapsed = time.time() - start
    scores = np.array([r.score for r in results])
    steps = sum(r.length for r in results)
    print(f"wrote {len(writer.written)} episode{'s' * (len(writer.written) != 1)} to {outdir}/ "
          f"(return {scores.mean():.1f} +- {scores.std():.1f}, {steps} decisions, {steps / elapsed:.1f}/s)")
    if held:
        print(f"note: {outdir} already held {held} episode files; collect's episodes depend only on the task, the "
              f"config and --seed (here {cfg.run.seed}), so any collected before with these are now there twice")
    if args.gif:
        episode = read_episode(writer.written[0])
        path = write_gif(episode["image"], outdir / "episode.gif", fps=args.fps, scale=args.gif_scale)
        print(f"GIF of one episode: {path}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from planetrl.training.planet import PlanetRun
    from planetrl.training.runner import run_experiment

    cfg, explicit = resolve_args(args, {"env.task": args.task, "run.device": args.device})
    return run_experiment(Path(args.logdir), args.runs, cfg, explicit,
                           lambda run_dir, run_cfg, fence: PlanetRun(run_dir, run_cfg, not args.no_progress, fence),
                           args.index, args.wait, args.retry_failed)


def planner_overrides(items: list[str]) -> dict[str, object]:
    """`--set` for a trained run: only planner.* keys, since every other key must match the checkpoint."""
    values = config_lib.parse_assignments(items)
    fixed = [k for k in values if not k.startswith("planner.")]
    if fixed:
        raise config_lib.ConfigError(f"--set {fixed[0]}: only planner.* keys can change for a trained "
                                     f"run (the model, env and data keys must match its checkpoint)")
    return values


def _policy_episodes(run_dir: Path, trained: tuple[config_lib.Config, WorldModel, int], episodes: int,
                     outdir: Path | None, planner: dict[str, object] | None = None, bar: bool = True
                     ) -> tuple[list[EpisodeResult], list[Path]]:
    """Run a trained model's MPC agent (`load_trained`'s config, model and updates) without exploration; with
    `outdir`, keep episodes and GIFs. Returns each episode's score and length, and the episode files.

    `planner` overrides planner.* keys of the run's config (checked like any --set). Progress shows as a bar
    over decisions, or with `bar=False` as a line on stderr each minute and at the end.
    """
    from planetrl.data.episodes import EpisodeWriter, read_episode
    from planetrl.envs.make import decisions_per_episode, make_batch_env
    from planetrl.envs.spaces import discrete_choices
    from planetrl.training.driver import Driver, StepCallback
    from planetrl.training.planet import build_mpc_agent
    from planetrl.training.progress import PolicyProgress
    from planetrl.viz import write_gif

    cfg, model, updates = trained
    cfg = config_lib.set_values(cfg, planner or {})
    env_cfg = config_lib.set_values(cfg, {"env.processes": max(cfg.env.processes, 1)}).env
    env = make_batch_env(env_cfg, min(episodes, PARALLEL_EPISODES), seed=derive(cfg.run.seed, "envs", 3))
    written = []
    try:
        agent = build_mpc_agent(cfg, model, env, seed=cfg.run.seed, noise=0.0)
        progress = PolicyProgress(f"{run_dir.name} at update {updates}", episodes, decisions_per_episode(cfg.env),
                                  bar)
        callbacks: list[StepCallback] = [progress.meter]
        if outdir is not None:
            discrete = discrete_choices(env.action_space)
            writer = EpisodeWriter(outdir / "episodes", num_actions=discrete)
            callbacks.append(writer)
            written = writer.written
        try:
            results = Driver(env, agent, callbacks, seed=cfg.run.seed + 99).run(episodes, explore=False)
        finally:
            progress.close()
    finally:
        env.close()
    if outdir is not None:
        for number, path in enumerate(written):
            write_gif(read_episode(path)["image"], outdir / f"policy-{number:02d}.gif", fps=20, scale=2)
    print(f"{run_dir}: checkpoint at update {updates}")
    return results, list(written)


def cmd_eval(args: argparse.Namespace) -> int:
    import json

    from planetrl.atomic import write_atomic
    from planetrl.training.planet import load_trained

    planner = planner_overrides(args.overrides)
    json_path = output_file(args.json, "--json") if args.json else None
    trained = load_trained(Path(args.run), args.device, args.checkpoint)
    results, _ = _policy_episodes(Path(args.run), trained, args.episodes, None, planner, not args.no_progress)
    returns, lengths = [r.score for r in results], [r.length for r in results]
    mean, std = float(np.mean(returns)), float(np.std(returns))
    print("returns: " + ", ".join(f"{r:.1f}" for r in returns))
    print(f"return {mean:.1f} +- {std:.1f} over {len(returns)} episodes, {np.mean(lengths):.1f} decisions on average")
    result = json.dumps({"returns": returns, "mean": mean, "std": std, "lengths": lengths,
                         "mean_length": float(np.mean(lengths)), "planner": planner, "updates": trained[2]}) + "\n"
    name = "eval.json" if args.checkpoint is None else f"eval-{args.checkpoint:07d}.json"
    write_atomic(Path(args.run) / name, result)
    if json_path is not None:
        write_atomic(json_path, result)
    return 0


def cmd_visualize(args: argparse.Namespace) -> int:
    from planetrl.data.episodes import read_episode
    from planetrl.training.planet import load_trained, open_loop_video
    from planetrl.training.updater import resolve_device
    from planetrl.viz import write_gif

    run_dir, outdir = Path(args.run), output_dir(args.out, "--out")
    trained = load_trained(run_dir, args.device, args.checkpoint)
    results, episodes = _policy_episodes(run_dir, trained, args.episodes, outdir, planner_overrides(args.overrides),
                                         not args.no_progress)
    returns = [r.score for r in results]
    cfg, model, _ = trained
    written = []
    for number, path in enumerate(episodes):
        frames = open_loop_video(model, read_episode(path), cfg, resolve_device(args.device))
        written.append(write_gif(frames, outdir / f"openloop-{number:02d}.gif", fps=10))
    print(f"wrote {len(returns)} policy videos and {len(written)} open-loop videos to {outdir}/ "
          f"(returns: {', '.join(f'{r:.1f}' for r in returns)})")
    return 0


def add_collection_commands(commands: argparse._SubParsersAction) -> None:
    """`tasks` and `collect`."""
    tasks = commands.add_parser("tasks", help="list registered tasks, their defaults and spaces",
                                description="List every registered task with its action repeat, episode "
                                            "length, image size, observation and action spaces.")
    tasks.add_argument("names", nargs="*", help="tasks to show (default: all registered tasks)")
    tasks.add_argument("--no-spaces", action="store_true",
                       help="skip building each env, so the spaces are not shown (faster)")
    tasks.set_defaults(func=cmd_tasks)

    collect = commands.add_parser(
        "collect", parents=[overrides_parent()], help="collect random-agent episodes to .npz files",
        description="Run the uniform random agent and write one .npz file per finished episode "
                    "(the format the training loop reads).",
        epilog=config_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    collect.add_argument("--task", help="task name (env.task); see `planetrl tasks`")
    collect.add_argument("--episodes", type=at_least(1), default=5, help="number of episodes to write (default 5)")
    collect.add_argument("--outdir", required=True, type=path_arg, help="directory for the episode files")
    collect.add_argument("--processes", type=int,
                         help="envs stepped in parallel, each in its own process; 0 = one env in-process "
                              "(env.processes)")
    collect.add_argument("--gif", action="store_true", help="also write OUTDIR/episode.gif of the first episode")
    collect.add_argument("--gif-scale", type=at_least(1), default=2,
                         help="integer upscaling of the GIF frames (default 2)")
    collect.add_argument("--fps", type=at_least(0.1, float), default=20.0, help="GIF frame rate (default 20)")
    add_config_options(collect)
    collect.set_defaults(func=cmd_collect, works_without_console=True)


PLANNER_SET_HELP = ("plan differently from the run's config, e.g. --set planner.candidates=1000 (planner keys "
                    "only; repeatable)")


def add_training_commands(commands: argparse._SubParsersAction) -> None:
    """`train`, `eval` and `visualize`."""
    train = commands.add_parser(
        "train", parents=[experiment_parent(), overrides_parent()],
        help="train PlaNet (starts, or resumes what is already in --logdir)",
        description="Train PlaNet: random seed episodes, then world-model updates, MPC collection and test "
                    "phases. Running the same command again resumes. Several workers may share a logdir.",
        epilog=config_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    train.add_argument("--task", help="task name (env.task); see `planetrl tasks`")
    train.add_argument("--index", type=int, help="do only run INDEX of the --runs (sweeps use this)")
    train.add_argument("--wait", action="store_true",
                       help="wait for runs held by another worker until they are done or stale, then take over")
    add_config_options(train)
    train.set_defaults(func=cmd_train, works_without_console=True)

    evaluate = commands.add_parser("eval", help="mean and std of the return of a run's latest checkpoint",
                                   description="Run test episodes (no exploration noise) with the latest "
                                               "checkpoint of a run and print the mean and std of the return.")
    evaluate.add_argument("--run", required=True, type=path_arg, help="run directory (LOGDIR/run-NN)")
    evaluate.add_argument("--episodes", type=at_least(1), default=10,
                          help=f"episodes, up to {PARALLEL_EPISODES} at a time (default 10)")
    evaluate.add_argument("--json", type=path_arg, help="also write the returns, mean and std to this JSON file")
    evaluate.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="torch device")
    evaluate.add_argument("--set", dest="overrides", action="append", default=[], metavar="planner.KEY=VALUE",
                          help=PLANNER_SET_HELP)
    evaluate.add_argument("--checkpoint", type=int, metavar="UPDATES",
                          help="test the model kept at this update count (train.keep_models) instead of the "
                               "latest; writes eval-UPDATES.json")
    evaluate.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    evaluate.set_defaults(func=cmd_eval, works_without_console=True)

    visualize = commands.add_parser("visualize", help="videos of a trained agent and its open-loop predictions",
                                    description="Write GIFs of policy episodes of the latest checkpoint and of "
                                                "the model's open-loop predictions on them (truth/model/error).")
    visualize.add_argument("--run", required=True, type=path_arg, help="run directory (LOGDIR/run-NN)")
    visualize.add_argument("--out", required=True, type=path_arg, help="directory for the videos")
    visualize.add_argument("--episodes", type=at_least(1), default=2, help="policy episodes (default 2)")
    visualize.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="torch device")
    visualize.add_argument("--checkpoint", type=int, metavar="UPDATES",
                           help="the model kept at this update count (train.keep_models) instead of the latest")
    visualize.add_argument("--set", dest="overrides", action="append", default=[], metavar="planner.KEY=VALUE",
                           help=PLANNER_SET_HELP)
    visualize.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    visualize.set_defaults(func=cmd_visualize, works_without_console=True)
