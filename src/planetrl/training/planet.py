"""The PlaNet recipe: seed episodes, then train / collect / test phases, resumable at any moment."""

from __future__ import annotations

import json
import logging
import os
import platform
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

import planetrl
from planetrl import config as config_lib
from planetrl.agents.mpc import MPCAgent
from planetrl.agents.random import RandomAgent
from planetrl.data.episodes import EpisodeWriter, list_episodes, parse_name, read_episode
from planetrl.data.loader import Loader, postprocess_image, preprocess_image
from planetrl.data.replay import Replay
from planetrl.envs.batch import BatchEnv
from planetrl.envs.make import action_repeat, make_batch_env
from planetrl.metrics import MetricsLogger, StreamingMean, read_json_lines
from planetrl.models.world_model import WorldModel, count_parameters
from planetrl.planning.cem import CEMSettings
from planetrl.training.driver import Driver
from planetrl.training.schedule import Schedule
from planetrl.training.updater import WorldModelUpdater, build_world_model, resolve_device
from planetrl.viz import openloop_frames, tile, write_gif

log = logging.getLogger(__name__)
CHECKPOINT = "latest.pt"


# ------------------------------------------------------------------ run files


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """torch.save to a temporary file in the same directory, fsync, then os.replace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "wb") as handle:
        torch.save(state, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def load_checkpoint(path: Path, device: torch.device) -> dict[str, Any] | None:
    """Tensors and plain data only (weights_only=True): nothing in a run directory can run code."""
    if not path.exists():
        return None
    return torch.load(path, map_location=device, weights_only=True)


def machine_info() -> dict[str, Any]:
    """Package version, git commit when available, CPU/GPU and torch version."""
    commit = None
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                                cwd=Path(planetrl.__file__).parent).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "planetrl": planetrl.__version__, "git_commit": commit, "torch": torch.__version__,
        "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
        "processor": platform.processor(), "host": platform.node(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def prepare_run_dir(run_dir: Path, cfg: config_lib.Config, explicit: dict[str, Any]) -> config_lib.Config:
    """Write config.yaml for a new run; for an existing one, reload it and refuse conflicting flags.

    `explicit` holds the keys the user set on this command line (preset or flags).
    """
    path = run_dir / "config.yaml"
    if not path.exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        config_lib.save(cfg, path)
        (run_dir / "run_info.json").write_text(json.dumps(machine_info(), indent=2) + "\n")
        return cfg
    saved = config_lib.load(path)
    saved_flat = {f"{s}.{k}": v for s, values in config_lib.to_dict(saved).items() for k, v in values.items()}
    wanted = config_lib.to_dict(config_lib.set_values(saved, explicit))
    conflicts = [
        f"{key}: saved {saved_flat[key]!r}, requested {wanted[key.split('.')[0]][key.split('.')[1]]!r}"
        for key in explicit
        if saved_flat[key] != wanted[key.split(".")[0]][key.split(".")[1]]
    ]
    if conflicts:
        raise config_lib.ConfigError(
            f"{run_dir} was started with a different config; the saved config wins. Conflicting: "
            + "; ".join(conflicts) + ". Use a new --logdir to change them."
        )
    return saved


def _write_json(path: Path, data: Any) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(data) + "\n")
    os.replace(temporary, path)


def count_steps(directory: Path, repeat: int = 1) -> int:
    """Environment steps in all episode files of a directory: decisions (from the names) x action repeat.

    Published tables count environment steps, so a cheetah-run episode (250 decisions at repeat 4) is 1000.
    """
    return repeat * sum(parse_name(p)[1] for p in list_episodes(directory))


def read_tests(run_dir: Path) -> list[dict[str, Any]]:
    """The completed test phases, from tests.jsonl."""
    return read_json_lines(Path(run_dir) / "tests.jsonl")


def build_mpc_agent(cfg: config_lib.Config, model: WorldModel, env: BatchEnv, seed: int,
                    noise: float | None = None) -> MPCAgent:
    """The MPC agent the config describes, for every env of a batch; `noise` overrides the exploration noise."""
    p = cfg.planner
    settings = CEMSettings(p.horizon, p.iterations, p.candidates, min(p.elites, p.candidates), p.min_std)
    return MPCAgent(model, env.action_space, len(env), settings, cfg.data.image_bits,
                    p.exploration_noise if noise is None else noise, p.warm_start, seed, p.precision)


# ------------------------------------------------------------------ the loop


class PlanetRun:
    """One PlaNet run in one directory; `run()` starts or resumes it."""

    def __init__(self, run_dir: Path, cfg: config_lib.Config, progress: bool = True) -> None:
        self.run_dir = Path(run_dir)
        self.cfg = cfg
        self.progress = progress
        self.device = resolve_device(cfg.run.device)
        self.train_dir = self.run_dir / "train_episodes"
        self.test_dir = self.run_dir / "test_episodes"
        self.checkpoint_path = self.run_dir / "checkpoints" / CHECKPOINT
        self.video_dir = self.run_dir / "videos"
        self.schedule = Schedule(cfg.train.total_updates, cfg.train.collect_every, cfg.train.test_every)
        self.action_repeat = action_repeat(cfg.env)

    # -------------------------------------------------------------- pieces

    def _writer(self, directory: Path, env: BatchEnv) -> EpisodeWriter:
        discrete = getattr(env.action_space, "n", None)
        return EpisodeWriter(directory, num_actions=int(discrete) if discrete else None)

    def _seed_episodes(self, directory: Path, offset: int, need_chunk: bool = False) -> None:
        """Random episodes up to `seed_episodes`; with `need_chunk`, more until one holds a training chunk.

        On tasks where a random policy ends episodes early (crashes), the
        first episodes may all be shorter than a chunk; up to 10 x seed_episodes
        extra episodes are collected before giving up with a clear error.
        """
        cfg = self.cfg
        limit = cfg.train.seed_episodes * 11
        chunk = cfg.data.chunk_length

        def enough() -> bool:
            names = [parse_name(p) for p in list_episodes(directory)]
            if len(names) < cfg.train.seed_episodes:
                return False
            return not need_chunk or any(length + 1 >= chunk for _, length in names)

        if enough():
            return
        env = make_batch_env(cfg.env, max(cfg.env.processes, 1), seed=cfg.run.seed * 1000 + offset)
        try:
            while not enough():
                count = len(list_episodes(directory))
                if count >= limit:
                    raise RuntimeError(f"{count} random episodes in {directory} and none has the {chunk} steps a "
                                       f"training chunk needs; lower data.chunk_length")
                missing = max(cfg.train.seed_episodes - count, 1)
                seed = cfg.run.seed * 1000 + offset + count
                agent = RandomAgent(env.action_space, len(env), seed=seed)
                Driver(env, agent, [self._writer(directory, env)], seed=seed).run(missing)
        finally:
            env.close()
        log.info("%d random seed episodes in %s", len(list_episodes(directory)), directory)

    def _seeded(self) -> int:
        """Random seed episodes in the train directory, as recorded when seeding finished."""
        marker = self.run_dir / "seed_episodes.json"
        if not marker.exists():
            _write_json(marker, {"train": len(list_episodes(self.train_dir))})
        return int(json.loads(marker.read_text())["train"])

    def _collected(self) -> int:
        return max(len(list_episodes(self.train_dir)) - self._seeded(), 0)

    # -------------------------------------------------------------- run

    def run(self) -> dict[str, float]:
        """Run (or resume) until the schedule is done; returns the last test metrics."""
        from tqdm import tqdm

        cfg = self.cfg
        torch.manual_seed(cfg.run.seed)
        np.random.seed(cfg.run.seed % 2**32)
        self._seed_episodes(self.train_dir, 0, need_chunk=True)
        self._seeded()  # recorded once the train directory's seeding is complete
        self._seed_episodes(self.test_dir, 500)
        replay = Replay(self.train_dir, cfg.data.chunk_length, cfg.data.max_episodes, cfg.data.max_steps,
                        cfg.data.recent_fraction, cfg.data.recent_episodes)
        replay.refresh()
        loader = Loader(replay, cfg.data.batch_size, cfg.data.image_bits, self.device, cfg.data.prefetch,
                        seed=cfg.run.seed)
        collect_env = make_batch_env(cfg.env, 1, seed=cfg.run.seed * 1000 + 1)
        action_size = int(getattr(collect_env.action_space, "n", 0) or np.prod(collect_env.action_space.shape))
        model = build_world_model(cfg, action_size)
        updater = WorldModelUpdater(model, cfg, self.device)
        updates = 0
        checkpoint = load_checkpoint(self.checkpoint_path, self.device)
        if checkpoint is not None:
            updater.load_state_dict(checkpoint["updater"])
            updates = int(checkpoint["updates"])
            loader.load_state_dict(checkpoint["loader"])
            torch.set_rng_state(checkpoint["torch_rng"].cpu())
            log.info("resumed %s at update %d", self.run_dir, updates)
        logger = MetricsLogger(self.run_dir)
        if checkpoint is None:
            counts = count_parameters(model)
            log.info("parameters: %s", ", ".join(f"{k} {v:,}" for k, v in counts.items()))
            logger.scalars(0, {f"params/{k}": v for k, v in counts.items()})
        test_env = None
        stream = StreamingMean()
        # smoothing=0: the rate (and so the ETA) averages over the whole session, collect and test phases
        # included, instead of the burst speed of the update phases.
        bar = tqdm(total=cfg.train.total_updates, initial=updates, desc=self.run_dir.name, unit="update",
                   disable=not self.progress, dynamic_ncols=True, smoothing=0)
        last_test: dict[str, float] = {}
        try:
            while True:
                phase = self.schedule.next_phase(updates, self._collected(), len(read_tests(self.run_dir)))
                if phase.name == "done":
                    break
                if phase.name == "train":
                    start = time.perf_counter()
                    for batch in loader.take(phase.updates):
                        stream.add(updater.update(batch))
                        updates += 1
                        bar.update(1)
                        if updates % cfg.train.log_every == 0:
                            means = stream.flush()
                            means["updates_per_s"] = cfg.train.log_every / (time.perf_counter() - start)
                            start = time.perf_counter()
                            logger.scalars(updates, {f"train/{k}": v for k, v in means.items()})
                            bar.set_postfix(loss=f"{means['loss']:.1f}")
                    save_checkpoint(self.checkpoint_path, {
                        "updater": updater.state_dict(), "updates": updates, "loader": loader.state_dict(),
                        "action_size": action_size,
                        "torch_rng": torch.get_rng_state(), "config": config_lib.to_dict(cfg),
                    })
                elif phase.name == "collect":
                    index = self._collected()
                    agent = build_mpc_agent(cfg, model, collect_env, seed=cfg.run.seed * 100_003 + index)
                    start = time.perf_counter()
                    driver = Driver(collect_env, agent, [self._writer(self.train_dir, collect_env)],
                                    seed=cfg.run.seed * 100_003 + index)
                    [result] = driver.run(1, explore=True)
                    seconds = time.perf_counter() - start
                    replay.refresh()
                    logger.scalars(updates, {
                        "train/return": result.score, "train/length": result.length,
                        "train/episodes": len(list_episodes(self.train_dir)),
                        "train/env_steps": count_steps(self.train_dir, self.action_repeat),
                        "train/seconds_per_action": seconds / max(result.length, 1),
                        "replay/episodes": replay.stats.episodes, "replay/steps": replay.stats.steps,
                        "replay/megabytes": replay.stats.bytes / 2**20,
                    })
                else:
                    if test_env is None:
                        test_env = make_batch_env(replace(cfg.env, processes=max(cfg.env.processes, 1)),
                                                  cfg.train.test_episodes, seed=cfg.run.seed * 1000 + 2)
                    last_test = self.test_phase(model, test_env, updates, logger)
                    bar.set_postfix(test_return=f"{last_test['test/return']:.1f}")
        finally:
            bar.close()
            collect_env.close()
            if test_env is not None:
                test_env.close()
            logger.close()
        return last_test

    def test_phase(self, model: WorldModel, env: BatchEnv, updates: int, logger: MetricsLogger) -> dict[str, float]:
        """N episodes in parallel without exploration noise, plus open-loop and policy videos."""
        tests_done = len(read_tests(self.run_dir))
        agent = build_mpc_agent(self.cfg, model, env, seed=self.cfg.run.seed * 7_000_003 + tests_done)
        writer = self._writer(self.test_dir, env)
        start = time.perf_counter()
        results = Driver(env, agent, [writer], seed=self.cfg.run.seed * 7_000_003 + tests_done).run(
            self.cfg.train.test_episodes, explore=False)
        seconds = time.perf_counter() - start
        returns = np.array([r.score for r in results])
        metrics = {
            "test/return": float(returns.mean()), "test/return_std": float(returns.std()),
            "test/length": float(np.mean([r.length for r in results])),
            "test/seconds_per_action": seconds / max(sum(r.length for r in results) / len(env), 1),
            "test/train_episodes": len(list_episodes(self.train_dir)),
        }
        logger.scalars(updates, metrics)
        frames = open_loop_video(model, self.test_dir, self.cfg, self.device)
        if frames is not None:
            write_gif(frames, self.video_dir / f"openloop-{updates:07d}.gif", fps=10, scale=2)
            logger.image(updates, "openloop", tile(frames[:: max(len(frames) // 10, 1)], 10))
        episode = read_episode(writer.written[0])
        write_gif(episode["image"], self.video_dir / f"policy-{updates:07d}.gif", fps=20, scale=2)
        record = {"updates": updates, "returns": returns.tolist(), "time": time.time(),
                  "train_episodes": metrics["test/train_episodes"],
                  "env_steps": count_steps(self.train_dir, self.action_repeat)}
        with open(self.run_dir / "tests.jsonl", "a") as handle:
            handle.write(json.dumps(record) + "\n")
        return metrics


def open_loop_video(model: WorldModel, episode_dir: Path, cfg: config_lib.Config,
                    device: torch.device, index: int = -1) -> np.ndarray | None:
    """Truth / model / error frames of an open-loop prediction on one stored episode."""
    paths = list_episodes(episode_dir)
    if not paths:
        return None
    episode = read_episode(paths[index])
    length = min(cfg.train.openloop_length, len(episode["reward"]))
    context = min(cfg.train.openloop_context, length - 1)
    image = torch.as_tensor(episode["image"][None, :length], device=device)
    inputs = preprocess_image(image, cfg.data.image_bits, noise=False)
    action = torch.as_tensor(episode["action"][None, :length], device=device)
    is_first = torch.as_tensor(episode["is_first"][None, :length], device=device)
    model.eval()
    predicted = model.open_loop(inputs, action, is_first, context)
    truth = postprocess_image(inputs, cfg.data.image_bits)[0].cpu().numpy()
    guess = postprocess_image(predicted.clamp(-0.5, 0.5 - 1e-6), cfg.data.image_bits)[0].cpu().numpy()
    return openloop_frames(truth, guess, context)


def load_trained(run_dir: Path, device_name: str = "auto") -> tuple[config_lib.Config, WorldModel, int]:
    """Config, world model with the latest checkpoint's weights, and its update count."""
    cfg = config_lib.load(run_dir / "config.yaml")
    device = resolve_device(device_name)
    checkpoint = load_checkpoint(run_dir / "checkpoints" / CHECKPOINT, device)
    if checkpoint is None:
        raise FileNotFoundError(f"{run_dir} has no checkpoint yet ({run_dir / 'checkpoints' / CHECKPOINT})")
    model = build_world_model(cfg, int(checkpoint["action_size"]))
    model.load_state_dict(checkpoint["updater"]["model"])
    return cfg, model.to(device).eval(), int(checkpoint["updates"])
