"""The PlaNet recipe: seed episodes, then train / collect / test phases, resumable at any moment."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import yaml

from planetrl import config as config_lib
from planetrl.agents.mpc import MPCAgent
from planetrl.agents.random import RandomAgent
from planetrl.atomic import clean_temporaries, write_atomic
from planetrl.data.catalog import EpisodeCatalog, EpisodeSpec
from planetrl.data.episodes import EpisodeWriter
from planetrl.data.loader import Loader, postprocess_image, preprocess_image
from planetrl.data.replay import Replay
from planetrl.envs.batch import BatchEnv
from planetrl.envs.make import action_repeat, decisions_per_episode, make_batch_env
from planetrl.envs.registry import import_task_modules
from planetrl.envs.spaces import action_size, discrete_choices
from planetrl.metrics import MetricsLogger, StreamingMean, append_json_line
from planetrl.models.world_model import WorldModel, count_parameters, resolve_precision
from planetrl.planning.cem import CEMSettings
from planetrl.seeds import derive
from planetrl.training.driver import Driver
from planetrl.training.progress import EpisodeCounter, RunProgress, image_constant
from planetrl.training.rundir import (
    MODEL_SNAPSHOT,
    Checkpoint,
    TorchRNG,
    latest_checkpoint,
    load_checkpoint,
    load_latest,
    prepare_run_dir,
    require_run_dir,
    save_checkpoint,
)
from planetrl.training.runfiles import SEED_MARKER, TESTS, read_seeded, read_tests
from planetrl.training.schedule import Schedule
from planetrl.training.updater import WorldModelUpdater, build_world_model, resolve_device
from planetrl.viz import encode_gif, label_openloop, openloop_frames

__all__ = ["PlanetRun", "kept_models", "load_trained", "open_loop_video", "prepare_run_dir", "read_tests"]

log = logging.getLogger(__name__)


# ------------------------------------------------------------------ run files


def _write_json(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data) + "\n")


def explores_mixed(planner: config_lib.PlannerConfig, collected: int) -> bool:
    """Whether the collection episode after `collected` others explores with `planner.mixed_noise`."""
    return bool(planner.mixed_noise) and collected % planner.mixed_every == 0


def exploration_of(planner: config_lib.PlannerConfig, collected: int) -> tuple[float, float]:
    """(std, correlation) of the exploration noise of the collection episode after `collected` others."""
    if explores_mixed(planner, collected):
        return planner.mixed_noise, planner.mixed_correlation
    return planner.exploration_noise, planner.exploration_correlation


def build_mpc_agent(cfg: config_lib.Config, model: WorldModel, env: BatchEnv, seed: int,
                    noise: float | None = None, correlation: float | None = None) -> MPCAgent:
    """The MPC agent the config describes, for every env of a batch; `noise` and `correlation` override the
    exploration noise's."""
    p = cfg.planner
    settings = CEMSettings(horizon=p.horizon, iterations=p.iterations, candidates=p.candidates, elites=p.elites,
                           min_std=p.min_std, discrete=isinstance(env.action_space, gym.spaces.Discrete))
    return MPCAgent(model, env.action_space, len(env), settings, bits=cfg.data.image_bits,
                    noise=p.exploration_noise if noise is None else noise, warm_start=p.warm_start, seed=seed,
                    precision=p.precision, discount=p.discount,
                    correlation=p.exploration_correlation if correlation is None else correlation,
                    tail=p.tail)


# ------------------------------------------------------------------ the loop


class PlanetRun:
    """One PlaNet run in one directory; `run()` starts or resumes it."""

    def __init__(self, run_dir: Path, cfg: config_lib.Config, progress: bool = True,
                 fence: Callable[[], None] = lambda: None) -> None:
        """`fence()` raises when this worker no longer holds the run; it is called before every write."""
        import_task_modules(cfg.run.imports)
        self.run_dir = Path(run_dir)
        self.fence = fence
        self.cfg = cfg
        self.progress = progress
        self.device = resolve_device(cfg.run.device)
        self.train_dir = self.run_dir / "train_episodes"
        self.test_dir = self.run_dir / "test_episodes"
        self.checkpoint_path = latest_checkpoint(self.run_dir)
        self.video_dir = self.run_dir / "videos"
        self.schedule = Schedule(cfg.train.total_updates, cfg.train.collect_every, cfg.train.test_every)
        self.action_repeat = action_repeat(cfg.env)
        self.collect_env: BatchEnv | None = None
        self.test_env: BatchEnv | None = None
        self.logger: MetricsLogger | None = None
        self.progress_view: RunProgress | None = None
        self._seed_count: int | None = None

    # -------------------------------------------------------------- pieces

    def _writer(self, directory: Path, env: BatchEnv) -> EpisodeWriter:
        return EpisodeWriter(directory, num_actions=discrete_choices(env.action_space))

    def _callbacks(self, directory: Path, env: BatchEnv,
                   phase: tuple[str, int] | None = None) -> tuple[list[Callable[..., Any]], EpisodeWriter]:
        """Driver callbacks: the fence before the episode writer, so a lost claim writes no episode.

        `phase` (what, episodes) adds a meter that shows the phase's progress.
        """
        writer = self._writer(directory, env)

        def fence(index: int, step: dict[str, Any]) -> None:
            if step["is_last"]:
                self.fence()

        callbacks: list[Callable[..., Any]] = [fence, writer]
        if phase is not None and self.progress_view is not None:
            callbacks.append(self.progress_view.phase(*phase, decisions_per_episode(self.cfg.env)))
        return callbacks, writer

    def _seed_episodes(self, catalog: EpisodeCatalog, offset: int, need_chunk: bool = False) -> None:
        """Random episodes up to `seed_episodes`; with `need_chunk`, more until one holds a training chunk.

        On tasks where a random policy ends episodes early (crashes), the
        first episodes may all be shorter than a chunk; up to 10 x seed_episodes
        extra episodes are collected before giving up with a clear error.
        """
        cfg = self.cfg
        limit = cfg.train.seed_episodes * 11
        chunk = cfg.data.chunk_length

        directory = catalog.directory

        def enough() -> bool:
            valid = catalog.scan()
            if len(valid) < cfg.train.seed_episodes:
                return False
            if not need_chunk:
                return True
            if cfg.data.cross_episodes:
                return sum(catalog.lengths[p.name] + 1 for p in valid) >= chunk
            return any(catalog.lengths[p.name] + 1 >= chunk for p in valid)

        if enough():
            return
        env = make_batch_env(cfg.env, max(cfg.env.processes, 1), seed=derive(cfg.run.seed, "envs", offset))
        try:
            while not enough():
                count = catalog.count()
                if count >= limit:
                    raise RuntimeError(f"{count} random episodes in {directory} and none has the {chunk} steps a "
                                       f"training chunk needs; lower data.chunk_length")
                missing = max(cfg.train.seed_episodes - count, 1)
                seed = derive(cfg.run.seed, "envs", offset + count)
                agent = RandomAgent(env.action_space, len(env), seed=seed)
                with EpisodeCounter(f"random seed episodes into {directory.name}", count, count + missing,
                                     self.progress) as counter:
                    Driver(env, agent, self._callbacks(directory, env)[0], seed=seed).run(missing, progress=counter)
        finally:
            env.close()
        log.info("%d random seed episodes in %s", catalog.count(), directory)

    def _seeded(self) -> int:
        """Random seed episodes in the train directory, as recorded when seeding finished; read (and written,
        or rewritten when it had to be recovered) at the first call after seeding, as it never changes after."""
        if self._seed_count is None:
            marker, now = self.run_dir / SEED_MARKER, self.train_catalog.count()
            count = read_seeded(self.run_dir, episodes_now=now)
            count = now if count is None else count
            if not marker.exists() or marker.read_bytes() != (json.dumps({"train": count}) + "\n").encode():
                _write_json(marker, {"train": count})
            self._seed_count = count
        return self._seed_count

    def _collected(self) -> int:
        """Episodes collected by the agent: valid train episodes beyond the random seed ones."""
        return max(self.train_catalog.count() - self._seeded(), 0)

    def _last_test(self) -> int:
        """Updates at the last recorded test phase, 0 before the first."""
        return max((int(t["updates"]) for t in read_tests(self.run_dir)), default=0)

    def _env_steps(self) -> int:
        """Environment steps of the valid train episodes: decisions x action repeat, as published tables count."""
        return self.train_catalog.decisions() * self.action_repeat

    def _open_catalogs(self, action_size: int) -> None:
        """Check every episode file against the run's image size, action size and episode length."""
        decisions = decisions_per_episode(self.cfg.env)
        spec = EpisodeSpec(self.cfg.env.image_size, action_size, max_steps=decisions + 1 if decisions else 100_000)
        quarantine = self.run_dir / "quarantine"
        self.train_catalog = EpisodeCatalog(self.train_dir, spec, quarantine / self.train_dir.name)
        self.test_catalog = EpisodeCatalog(self.test_dir, spec, quarantine / self.test_dir.name)

    def _quarantined(self) -> int:
        return self.train_catalog.quarantined + self.test_catalog.quarantined

    # -------------------------------------------------------------- run

    def run(self) -> dict[str, float]:
        """Run (or resume) until the schedule is done; returns the last test metrics."""
        last_test: dict[str, float] = {}
        try:
            self._setup()
            while True:
                phase = self.schedule.next_phase(self.updates, self._collected(), self._last_test())
                if phase.name == "done":
                    break
                self.fence()
                if phase.name == "train":
                    self._train_phase(phase.updates)
                elif phase.name == "collect":
                    self._collect_phase()
                else:
                    if self.cfg.train.keep_models:
                        self._keep_model()
                    last_test = self.test_phase(self.updater.acting, self._test_env(), self.updates, self.logger)
                    self.progress_view.test(last_test["test/return"])
        finally:
            self._teardown()
        return last_test

    def _setup(self) -> None:
        """Seed episodes, replay, loader, model and optimizer, restored from the checkpoint when there is one."""
        cfg = self.cfg
        if not (self.run_dir / "config.yaml").exists():  # a run started from Python: eval and load need it
            prepare_run_dir(self.run_dir, cfg, {})
        for orphan in clean_temporaries(self.run_dir):
            log.info("removed %s, left by an interrupted write", orphan)
        torch.manual_seed(cfg.run.seed)
        np.random.seed(cfg.run.seed % 2**32)
        self.collect_env = make_batch_env(cfg.env, 1, seed=derive(cfg.run.seed, "envs", 1))
        space = self.collect_env.action_space
        for key in ("exploration_correlation", "mixed_noise"):
            if getattr(cfg.planner, key) and isinstance(space, gym.spaces.Discrete):
                raise config_lib.ConfigError(
                    f"planner.{key}={getattr(cfg.planner, key)} needs continuous actions; "
                    f"task {cfg.env.task!r} has discrete ones, so use 0")
        self.action_size = action_size(space)
        self._open_catalogs(self.action_size)
        self._seed_episodes(self.train_catalog, 0, need_chunk=True)
        self._seeded()  # recorded once the train directory's seeding is complete
        self._seed_episodes(self.test_catalog, 500)
        self.replay = Replay(self.train_dir, cfg.data.chunk_length, cfg.data.max_episodes, cfg.data.max_steps,
                             cfg.data.recent_fraction, cfg.data.recent_episodes, reader=self.train_catalog.read,
                             cross_episodes=cfg.data.cross_episodes)
        self.replay.refresh()
        self.loader = Loader(self.replay, cfg.data.batch_size, cfg.data.image_bits, self.device, cfg.data.prefetch,
                             seed=cfg.run.seed)
        self.model = build_world_model(cfg, self.action_size)
        self.updater = WorldModelUpdater(self.model, cfg, self.device)
        log.info("precision: update %s, planning %s", self.updater.precision,
                 resolve_precision(cfg.planner.precision, self.device))
        self.updates = 0
        self.checkpoint = Checkpoint(self.checkpoint_path, self.device, needs="updater", parts={
            "updater": self.updater, "loader": self.loader, "torch_rng": TorchRNG()})
        checkpoint = self.checkpoint.restore()
        if checkpoint is not None:
            self.updates = int(checkpoint["updates"])
            log.info("resumed %s at update %d", self.run_dir, self.updates)
        self.logger = MetricsLogger(self.run_dir, keep_through=self.updates if checkpoint is not None else -1,
                                    keep_all=self.checkpoint.fell_back,
                                    wandb_project=cfg.run.wandb_project, config=config_lib.to_dict(cfg))
        if checkpoint is None:
            counts = count_parameters(self.model)
            log.info("parameters: %s", ", ".join(f"{k} {v:,}" for k, v in counts.items()))
            self.logger.scalars(0, {f"params/{k}": v for k, v in counts.items()})
            self.logger.text("config", "```\n" + yaml.safe_dump(config_lib.to_dict(cfg), sort_keys=False) + "```")
        self.stream = StreamingMean()
        tests = read_tests(self.run_dir)
        self.progress_view = RunProgress(self.run_dir.name, cfg.train.total_updates, self.updates, self.progress,
                                         image_constant(cfg.env.image_size),
                                         test_return=float(np.mean(tests[-1]["returns"])) if tests else None)

    def _train_phase(self, count: int) -> None:
        """`count` updates, logging averaged metrics every `log_every`, then a checkpoint."""
        every = self.cfg.train.log_every
        start = time.perf_counter()
        for batch in self.loader.take(count):
            self.stream.add(self.updater.update(batch))
            self.updates += 1
            self.progress_view.advance()
            if self.updates % every == 0:
                means = self.stream.flush()
                means["updates_per_s"] = every / (time.perf_counter() - start)
                start = time.perf_counter()
                self.fence()
                self.logger.scalars(self.updates, {f"train/{k}": v for k, v in means.items()})
                self.progress_view.train(means)
        self.fence()
        self.checkpoint.save(updates=self.updates, action_size=self.action_size, config=config_lib.to_dict(self.cfg))

    def _keep_model(self) -> None:
        """The weights the test phase is about to use, in a file of their own (rewritten on a resumed phase)."""
        self.fence()
        save_checkpoint(self.checkpoint_path.parent / MODEL_SNAPSHOT.format(updates=self.updates), {
            "updater": {"model": self.updater.acting.state_dict()}, "updates": self.updates,
            "action_size": self.action_size, "config": config_lib.to_dict(self.cfg)})

    def _collect_phase(self) -> None:
        """One episode with the MPC agent and exploration noise into the train directory."""
        cfg, env = self.cfg, self.collect_env
        index = self._collected()
        seed = derive(cfg.run.seed, "collect", index)
        noise, correlation = exploration_of(cfg.planner, index)
        agent = build_mpc_agent(cfg, self.updater.acting, env, seed=seed, noise=noise, correlation=correlation)
        start = time.perf_counter()
        driver = Driver(env, agent, self._callbacks(self.train_dir, env, phase=("collecting", 1))[0], seed=seed)
        [result] = driver.run(1, explore=True)
        seconds = time.perf_counter() - start
        self.replay.refresh()
        stats = self.replay.stats
        self.logger.scalars(self.updates, {
            "train/return": result.score, "train/length": result.length, "train/exploration_noise": noise,
            "train/episodes": self.train_catalog.count(), "train/env_steps": self._env_steps(),
            "replay/quarantined": self._quarantined(), "train/seconds_per_action": seconds / max(result.length, 1),
            "replay/episodes": stats.episodes, "replay/steps": stats.steps, "replay/megabytes": stats.bytes / 2**20,
        })

    def _test_env(self) -> BatchEnv:
        if self.test_env is None:
            self.test_env = make_batch_env(replace(self.cfg.env, processes=max(self.cfg.env.processes, 1)),
                                           self.cfg.train.test_episodes, seed=derive(self.cfg.run.seed, "envs", 2))
        return self.test_env

    def _teardown(self) -> None:
        """Close whatever `_setup` got to open."""
        for part in (self.progress_view, self.collect_env, self.test_env, self.logger):
            if part is not None:
                part.close()

    def test_phase(self, model: WorldModel, env: BatchEnv, updates: int, logger: MetricsLogger) -> dict[str, float]:
        """N episodes in parallel without exploration noise, plus open-loop and policy videos.

        The phase's episodes are staged in `test_episodes/.phase/` and move into `test_episodes/` only
        once tests.jsonl records the phase, so a killed phase leaves no episode that nothing counts.
        """
        tests_done = len(read_tests(self.run_dir))
        self.test_catalog.scan()  # files dropped into test_episodes/ are checked (and moved aside) here
        staging = self.test_dir / ".phase"
        if staging.exists():
            leftovers = [p for p in staging.iterdir() if p.is_file() or p.is_symlink()]
            for path in leftovers:
                path.unlink()
            if leftovers:  # the folder stays between phases; only files in it mean a phase was cut off
                log.info("removed %d episodes of an interrupted test phase", len(leftovers))
        agent = build_mpc_agent(self.cfg, model, env, seed=derive(self.cfg.run.seed, "test", tests_done))
        callbacks, writer = self._callbacks(staging, env, phase=("test", self.cfg.train.test_episodes))
        start = time.perf_counter()
        results = Driver(env, agent, callbacks, seed=derive(self.cfg.run.seed, "test", tests_done)).run(
            self.cfg.train.test_episodes, explore=False)
        seconds = time.perf_counter() - start
        returns = np.array([r.score for r in results])
        metrics = {
            "test/return": float(returns.mean()), "test/return_std": float(returns.std()),
            "test/length": float(np.mean([r.length for r in results])),
            "test/seconds_per_action": seconds / max(sum(r.length for r in results) / len(env), 1),
            "test/train_episodes": self.train_catalog.count(),
            "replay/quarantined": self._quarantined(),
        }
        logger.scalars(updates, metrics)
        episode = self.test_catalog.read(writer.written[-1])
        if episode is not None:
            frames = open_loop_video(model, episode, self.cfg, self.device)
            self.video_dir.mkdir(parents=True, exist_ok=True)
            openloop = encode_gif(frames, fps=10)
            write_atomic(self.video_dir / f"openloop-{updates:07d}.gif", openloop, fsync=False)
            logger.gif(updates, "openloop", openloop, *frames.shape[1:3])  # plays in TensorBoard's image panel
            policy = encode_gif(episode["image"], fps=20, scale=2)
            write_atomic(self.video_dir / f"policy-{updates:07d}.gif", policy, fsync=False)
            logger.gif(updates, "policy", policy, 2 * episode["image"].shape[1], 2 * episode["image"].shape[2])
        record = {"updates": updates, "returns": returns.tolist(), "lengths": [r.length for r in results],
                  "time": time.time(),
                  "train_episodes": metrics["test/train_episodes"], "env_steps": self._env_steps()}
        self.fence()
        append_json_line(self.run_dir / TESTS, record)
        for path in writer.written:
            os.replace(path, self.test_dir / path.name)
        return metrics


def open_loop_video(model: WorldModel, episode: dict[str, np.ndarray], cfg: config_lib.Config,
                    device: torch.device) -> np.ndarray:
    """Labeled truth / model / error frames (upscaled 2x) of an open-loop prediction on one episode."""
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
    return label_openloop(openloop_frames(truth, guess, context), context)


def kept_models(run_dir: Path) -> list[int]:
    """The update counts of the test-phase models a run kept (train.keep_models), in order."""
    updates = []
    for path in (Path(run_dir) / "checkpoints").glob("model-*.pt"):
        digits = path.stem.removeprefix("model-")
        if digits.isdigit():
            updates.append(int(digits))
    return sorted(updates)


def load_trained(run_dir: Path, device_name: str = "auto",
                 updates: int | None = None) -> tuple[config_lib.Config, WorldModel, int]:
    """Config, world model with the latest checkpoint's weights (or the kept model at `updates`), and its update
    count; the weights are those the agent plans with, the running average where `optim.average` is on."""
    run_dir = Path(run_dir)
    cfg = config_lib.load(require_run_dir(run_dir) / "config.yaml")
    import_task_modules(cfg.run.imports)
    device = resolve_device(device_name)
    if updates is None:
        path = latest_checkpoint(run_dir)
    else:
        path = run_dir / "checkpoints" / MODEL_SNAPSHOT.format(updates=updates)
        if not path.exists():
            kept = kept_models(run_dir)
            listed = f"it kept the models at updates {', '.join(map(str, kept))}" if kept else \
                "it kept none (train with --set train.keep_models=true to keep them)"
            raise FileNotFoundError(f"{run_dir} has no model kept at update {updates}; {listed}")
    checkpoint = load_checkpoint(path, device, needs="updater") if updates is not None else \
        load_latest(path, device, needs="updater")[0]
    if checkpoint is None:
        raise FileNotFoundError(f"{run_dir} has no checkpoint yet ({path})")
    model = build_world_model(cfg, int(checkpoint["action_size"]))
    weights = checkpoint["updater"]
    model.load_state_dict(weights.get("average", weights["model"]))  # the agent's weights (optim.average)
    return cfg, model.to(device).eval(), int(checkpoint["updates"])
