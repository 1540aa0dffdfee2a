"""PPO commands: ppo train, ppo eval, ppo visualize."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from planetrl import config as config_lib
from planetrl.cli.common import (
    NO_PROGRESS_HELP,
    PARALLEL_EPISODES,
    PPO_SECTIONS,
    at_least,
    config_epilog,
    config_from,
    experiment_parent,
    output_dir,
    output_file,
    overrides_parent,
    path_arg,
    ppo_block,
)


def cmd_ppo_train(args: argparse.Namespace) -> int:
    from planetrl.training.ppo import PPORun

    block = ppo_block(args.config)
    from planetrl.training.runner import run_experiment

    cfg, explicit = config_from(block, args.overrides,
                                {"run.device": args.device, "run.seed": args.seed}, kind=config_lib.PPORunConfig)
    return run_experiment(Path(args.logdir), args.runs, cfg, explicit,
                           lambda run_dir, run_cfg, fence: PPORun(run_dir, run_cfg, not args.no_progress, fence),
                           retry_failed=args.retry_failed)


def _ppo_episodes(run_dir: Path, episodes: int, pixels: bool, outdir: Path | None, bar: bool = True
                  ) -> tuple[list[float], list[Path]]:
    """Episodes of a trained PPO agent's mean action; with `outdir`, rendered and kept there. Progress shows
    as a bar over decisions, or with `bar=False` as a line on stderr each minute and at the end."""
    from planetrl.data.episodes import EpisodeWriter
    from planetrl.envs.make import decisions_per_episode, make_batch_env
    from planetrl.envs.registry import import_task_modules
    from planetrl.envs.spaces import discrete_choices
    from planetrl.training.driver import Driver
    from planetrl.training.ppo import load_trained_ppo
    from planetrl.training.progress import PolicyProgress
    from planetrl.training.rundir import require_run_dir

    cfg = config_lib.load(require_run_dir(run_dir) / "config.yaml", kind=config_lib.PPORunConfig)
    import_task_modules(cfg.run.imports)
    env_cfg = config_lib.set_values(cfg, {"env.pixels": pixels, "env.processes": 0}).env
    env = make_batch_env(env_cfg, min(episodes, PARALLEL_EPISODES), seed=cfg.run.seed + 17)
    writers: list[Any] = []
    try:
        agent = load_trained_ppo(run_dir, cfg, env)
        if outdir is not None:
            writers.append(EpisodeWriter(outdir / "episodes", num_actions=discrete_choices(env.action_space)))
        progress = PolicyProgress(run_dir.name, episodes, decisions_per_episode(env_cfg), bar)
        try:
            results = Driver(env, agent, [progress.meter, *writers], seed=cfg.run.seed + 17).run(episodes,
                                                                                              explore=False)
        finally:
            progress.close()
    finally:
        env.close()
    return [r.score for r in results], (writers[0].written if writers else [])


def cmd_ppo_eval(args: argparse.Namespace) -> int:
    import json

    from planetrl.atomic import write_atomic

    json_path = output_file(args.json, "--json") if args.json else None
    returns, _ = _ppo_episodes(Path(args.run), args.episodes, pixels=False, outdir=None, bar=not args.no_progress)
    mean, std = float(np.mean(returns)), float(np.std(returns))
    print(f"return {mean:.1f} +- {std:.1f} over {len(returns)} episodes")
    if json_path is not None:
        write_atomic(json_path, json.dumps({"returns": returns, "mean": mean, "std": std}) + "\n")
    return 0


def cmd_ppo_visualize(args: argparse.Namespace) -> int:
    from planetrl.data.episodes import read_episode
    from planetrl.viz import write_gif

    outdir = output_dir(args.out, "--out")
    scores, written = _ppo_episodes(Path(args.run), args.episodes, pixels=True, outdir=outdir,
                                    bar=not args.no_progress)
    for number, path in enumerate(written):
        write_gif(read_episode(path)["image"], outdir / f"policy-{number:02d}.gif", fps=30, scale=2)
    print(f"wrote {len(written)} video{'s' * (len(written) != 1)} to {outdir}/ (returns: "
          + ", ".join(f"{r:.1f}" for r in scores) + ")")
    return 0


def add_ppo_commands(commands: argparse._SubParsersAction) -> None:
    """`ppo train`, `ppo visualize` and `ppo eval`."""
    ppo = commands.add_parser("ppo", help="the batched PPO baseline: train, eval and visualize",
                              description="Batched PPO from state on the same environment layer (the agents "
                                          "library's train and visualize scripts).")
    ppo_commands = ppo.add_subparsers(dest="ppo_command", required=True, metavar="PPO_COMMAND",
                                      help="train, eval or visualize")
    ppo_train = ppo_commands.add_parser(
        "train", parents=[experiment_parent(), overrides_parent("ppo.lr=0.0003")],
        help="train PPO (resumes what is already in --logdir)",
        description="Train batched PPO; running the same command again resumes.",
        epilog=config_epilog(PPO_SECTIONS),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ppo_train.add_argument("--config", required=True, help="PPO config: " + ", ".join(
        f"{name} ({block['env.task']})" for name, block in sorted(config_lib.PPO_CONFIGS.items())))
    ppo_train.set_defaults(func=cmd_ppo_train, works_without_console=True)
    ppo_visualize = ppo_commands.add_parser("visualize", help="videos of a trained PPO agent's episodes",
                                            description="Render episodes of the latest checkpoint as GIFs.")
    ppo_visualize.add_argument("--run", required=True, type=path_arg, help="run directory (LOGDIR/run-NN)")
    ppo_visualize.add_argument("--out", required=True, type=path_arg, help="directory for the videos")
    ppo_visualize.add_argument("--episodes", type=at_least(1), default=2, help="episodes to render (default 2)")
    ppo_visualize.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    ppo_visualize.set_defaults(func=cmd_ppo_visualize, works_without_console=True)
    ppo_eval = ppo_commands.add_parser("eval", help="mean and std of a trained PPO agent's return",
                                       description="Run the latest checkpoint's mean action for N episodes.")
    ppo_eval.add_argument("--run", required=True, type=path_arg, help="run directory (LOGDIR/run-NN)")
    ppo_eval.add_argument("--episodes", type=at_least(1), default=30, help="episodes (default 30, as batch-ppo)")
    ppo_eval.add_argument("--json", type=path_arg, help="also write the returns, mean and std to this JSON file")
    ppo_eval.add_argument("--no-progress", action="store_true", help=NO_PROGRESS_HELP)
    ppo_eval.set_defaults(func=cmd_ppo_eval)
