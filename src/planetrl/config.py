"""Typed, frozen configuration: sections, presets, dotted overrides, YAML.

Every field carries a one-line help text and optional bounds or choices, so a
bad value fails with a message naming the key, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from planetrl.atomic import write_atomic
from planetrl.config_values import ConfigError, check_range, coerce, did_you_mean, option
from planetrl.presets import PAPER, PPO_CONFIGS, PRESETS

__all__ = ["PAPER", "PPO_CONFIGS", "PRESETS", "AnyConfig", "Config", "ConfigError", "OtherKindError", "PPORunConfig",
           "build", "load", "option", "save", "set_values"]


@dataclass(frozen=True)
class EnvConfig:
    """Which task to run and how its observations are produced."""

    task: str = option("cartpole-swingup", "Registered task name (see `planetrl tasks`).")
    image_size: int = option(PAPER["env.image_size"],
                             "Height and width of image observations in pixels; PlaNet trains on 64 or 128 "
                             "(collect takes any).", low=16, high=512)
    action_repeat: int = option(PAPER["env.action_repeat"],
                                "Environment steps per decision; 0 takes the task's default.", low=0)
    episode_steps: int = option(0, "Environment steps per episode; 0 takes the task's default.", low=0)
    fast_render: bool = option(PAPER["env.fast_render"],
                               "DMC: shadows and multisampling off (about 5x faster rendering).")
    pixels: bool = option(True, "Observe rendered images; false observes only the state (no rendering).")
    processes: int = option(1, "Environment processes for collection; 0 runs the env in-process.", low=0)
    start_method: str = option("spawn", "multiprocessing start method for env processes.",
                               choices=("spawn", "forkserver", "fork"))
    view_meters: float = option(40.0, "highway: meters of road the frame spans across (smaller is closer, with "
                                "larger cars and less road ahead in view).", low=5.0, high=200.0)
    carla_host: str = option("localhost", "CARLA server host for carla:TOWN tasks.")
    carla_port: int = option(2000, "CARLA server RPC port.", low=1, high=65535)
    max_restarts: int = option(5, "Simulator crashes tolerated within restart_window seconds.", low=0)
    restart_window: float = option(600.0, "Seconds over which simulator crashes are counted.", low=0.0)
    answer_timeout: float = option(600.0, "Seconds an environment process may take to answer one call (reset, "
                                   "step; building the env gets at least 120) before it counts as hung and is "
                                   "restarted like a crash; the clock stops while the training process itself "
                                   "is paused; 0 waits forever.",
                                   low=0.0)


@dataclass(frozen=True)
class DataConfig:
    """Replay bounds, chunking and batching of the episodes the model learns from."""

    batch_size: int = option(PAPER["data.batch_size"], "Sequences per training batch.", low=1)
    chunk_length: int = option(PAPER["data.chunk_length"], "Steps per training sequence.", low=2)
    image_bits: int = option(PAPER["data.image_bits"],
                             "Bit depth images are reduced to before training.", low=1, high=8)
    max_episodes: int = option(0, "Most episodes held in memory; 0 = no bound.", low=0)
    max_steps: int = option(0, "Most steps held in memory; 0 = no bound.", low=0)
    recent_fraction: float = option(0.0, "Fraction of chunks drawn from the newest episodes.", low=0.0, high=1.0)
    recent_episodes: int = option(5, "How many newest episodes the recency mix draws from.", low=1)
    prefetch: int = option(2, "Batches prepared ahead by a background thread; 0 = inline (faster with the model on a "
                               "2-core CPU, where the thread competes with the update).", low=0)
    cross_episodes: bool = option(False, "Let a chunk run on into the next episode (state reset at its start), "
                                  "so episodes shorter than a chunk are learned from (driving).")


@dataclass(frozen=True)
class ModelConfig:
    """The world model's architecture (the paper's sizes by default, docs/PAPER.md)."""

    variant: str = option(PAPER["model.variant"],
                          "Latent dynamics: rssm, ssm (purely stochastic) or deterministic (GRU only).",
                          choices=("rssm", "ssm", "deterministic"))
    belief_size: int = option(PAPER["model.belief_size"], "Units of the deterministic GRU belief.", low=1)
    state_size: int = option(PAPER["model.state_size"], "Dimensions of the stochastic Gaussian state.", low=1)
    hidden_size: int = option(PAPER["model.hidden_size"], "Units of the dense layers inside the dynamics.", low=1)
    min_std: float = option(PAPER["model.min_std"], "Lower bound of the state's standard deviation.", low=0.0)
    depth: int = option(PAPER["model.depth"], "Channels of the first conv layer (doubling per layer).", low=1)
    reward_layers: int = option(PAPER["model.reward_layers"],
                                "Hidden layers of the reward head (paper: 2; the public code: 3).", low=1)
    reward_units: int = option(PAPER["model.reward_units"],
                               "Units per hidden layer of the reward head (paper: 200; the public code: 300).",
                               low=1)
    continuation: bool = option(PAPER["model.continuation"],
                                "Learn p(episode continues) from is_terminal and plan with it (not in "
                                       "PlaNet; on in the driving presets, where crashes end episodes).")
    filter_mean: bool = option(False, "Filter with the posterior's mean instead of a sample of it, in "
                                      "training and when acting (PlaNet: false), so neither the belief nor "
                                      "the decoder sees the sample's noise; the KL still trains the prior, "
                                      "and the planner imagines with the prior's mean. A driving probe "
                                      "(BENCHMARKS.md).")
    init: str = option(PAPER["model.init"],
                       "Weight initialization: tf (the original code: Glorot-uniform, zero bias, TF's GRU "
                             "block cell) or torch (PyTorch defaults and nn.GRUCell).", choices=("tf", "torch"))


@dataclass(frozen=True)
class LossConfig:
    """Weights of the objective's terms."""

    free_nats: float = option(PAPER["loss.free_nats"],
                              "KL allowance per step: the KL term is the mean over (batch, time) of "
                                   "max(KL, free_nats).", low=0.0)
    kl_scale: float = option(PAPER["loss.kl_scale"], "Scale of the KL term.", low=0.0)
    reward_scale: float = option(PAPER["loss.reward_scale"], "Scale of the reward log-likelihood term.", low=0.0)
    image_scale: float = option(1.0, "Scale of the image log-likelihood term; s is a Gaussian of standard "
                                     "deviation 1/sqrt(s) (PlaNet: 1). Larger makes small objects worth more "
                                     "against the KL and the reward.", low=0.0)
    overshooting: int = option(PAPER["loss.overshooting"], "Latent overshooting distance D; 0 or 1 = off; at most "
                                                                "data.chunk_length - 1.", low=0)
    continuation_scale: float = option(1.0, "Scale of the continuation head's log-likelihood term.", low=0.0)
    terminal_reward: float = option(0.0, "Added to the reward target of terminal steps (a crash, not a time "
                                         "limit): a collision penalty the planner sees when negative. Returns "
                                         "stay the task's own.")
    overshooting_scale: float = option(1.0, "Weight of the mean overshooting KL over distances 2..D, added to "
                                            "the one-step KL at full weight (as in the original code).", low=0.0)
    continuation_open_loop: int = option(0, "K > 0: the continuation head also learns from the prior's states "
                                            "imagined 1..K steps ahead with the actions taken, as the planner "
                                            "reads it; 0 = from the filtered (posterior) states only; at "
                                            "most data.chunk_length - 1.", low=0)
    decode_mean: bool = option(False, "Decode the image term from the posterior's mean instead of its sample "
                                      "(PlaNet: false). The KL still prices the sample, and the reward and "
                                      "continuation heads still read it. On highway it kept none of the other "
                                      "cars, as the sample does; model.filter_mean did (BENCHMARKS.md).")


@dataclass(frozen=True)
class OptimConfig:
    """Optimizer, precision and compilation of the world-model update."""

    lr: float = option(PAPER["optim.lr"], "Adam learning rate.", low=0.0)
    eps: float = option(PAPER["optim.eps"], "Adam epsilon.", low=0.0)
    grad_clip: float = option(PAPER["optim.grad_clip"], "Gradient-norm clipping threshold.", low=0.0)
    precision: str = option(PAPER["optim.precision"],
                            "fp32, bf16 autocast, or auto = bf16 on a CPU with native bf16, else fp32.",
                            choices=("auto", "fp32", "bf16"))
    channels_last: bool = option(True, "channels_last memory format for the convolutions.")
    compile: bool = option(False, "torch.compile the encoder and decoder.")
    average: float = option(
        0.0, "Decay of an exponential moving average of the world model's weights that the agent plans with "
        "(collecting, testing, kept models): 0.99 averages about the last 100 updates, after a warm-up of "
        "min(decay, (1 + n) / (10 + n)) at update n; 0 = the trained weights, as in PlaNet.", low=0.0, high=0.999)


@dataclass(frozen=True)
class PlannerConfig:
    """CEM planning in latent space and the MPC agent's exploration."""

    horizon: int = option(PAPER["planner.horizon"], "Planning horizon in decisions.", low=1)
    iterations: int = option(PAPER["planner.iterations"],
                             "CEM iterations per decision (1 with elites=1 is random shooting).", low=1)
    candidates: int = option(PAPER["planner.candidates"], "Action sequences sampled per iteration.", low=1)
    elites: int = option(PAPER["planner.elites"], "Best sequences the sampling distribution is refit to.", low=1)
    min_std: float = option(PAPER["planner.min_std"],
                            "Stop early once every sampling std is below this; 0 = never.", low=0.0)
    warm_start: bool = option(PAPER["planner.warm_start"], "Start from the previous plan shifted by one step.")
    exploration_noise: float = option(PAPER["planner.exploration_noise"],
                                      "Std of Normal action noise while collecting (probability for discrete).",
                                      low=0.0)
    exploration_correlation: float = option(
        PAPER["planner.exploration_correlation"],
        "Correlation of the continuous exploration noise from one decision to the next (AR(1), stationary "
        "std exploration_noise); 0 = PlaNet's independent noise. Sparse rewards such as finger-spin's are "
        "found more often by noise that pushes one way for several decisions.", low=0.0, high=0.99)
    precision: str = option(PAPER["planner.precision"],
                            "Precision of the planning rollouts; auto = bf16 on a CPU with native bf16, else fp32.",
                            choices=("auto", "fp32", "bf16"))
    discount: float = option(PAPER["planner.discount"],
                             "Discount of imagined rewards (1 = PlaNet's plain sum).", low=0.0, high=1.0)
    tail: bool = option(False, "Add the return past the horizon, as if the last imagined step (its reward and "
                        "continuation) repeated forever, discounted; needs planner.discount < 1. Prices "
                        "staying alive beyond the horizon, which a continuation head alone cannot.")
    mixed_noise: float = option(0.0, "Std of the AR(1) noise that every mixed_every-th collection episode explores "
                                "with instead of exploration_noise; 0 = off. Finds sparse rewards (finger-spin's) "
                                "while the other episodes stay near the plan.", low=0.0)
    mixed_correlation: float = option(0.9, "Correlation from one decision to the next of the mixed_noise.",
                                      low=0.0, high=0.99)
    mixed_every: int = option(2, "Which collection episodes use mixed_noise: the 1st, then every this many.", low=1)


@dataclass(frozen=True)
class TrainConfig:
    """The PlaNet loop: seed episodes, then train / collect / test phases."""

    seed_episodes: int = option(PAPER["train.seed_episodes"],
                                "Random episodes collected into train and test directories first.", low=1)
    total_updates: int = option(PAPER["train.total_updates"],
                                "World-model updates of the whole run (1000 episodes x 100).", low=1)
    collect_every: int = option(PAPER["train.collect_every"], "Updates between two collected episodes.", low=1)
    test_every: int = option(10_000, "Updates between two test phases.", low=1)
    test_episodes: int = option(5, "Episodes per test phase, run in parallel.", low=1)
    log_every: int = option(50, "Updates between two logged averages of the training metrics.", low=1)
    openloop_context: int = option(5, "Observed frames before the open-loop prediction.", low=1)
    openloop_length: int = option(50, "Frames of an open-loop prediction video, context included.", low=2)
    keep_models: bool = option(False, "Also keep the world model of every test phase as "
                                      "checkpoints/model-UPDATES.pt (weights only), so `planetrl eval "
                                      "--checkpoint UPDATES` can test it again later.")


@dataclass(frozen=True)
class PPOConfig:
    """Batched PPO (batch-ppo's defaults and form; see agents/ppo.py)."""

    num_envs: int = option(30, "Environments stepped in parallel.", low=1)
    update_every: int = option(30, "Finished episodes between two updates.", low=1)
    epochs: int = option(25, "Passes over the batch per update.", low=1)
    chunk_length: int = option(0, "Split episodes into sequences of this many steps for the update; 0 = whole "
                                  "episodes.", low=0)
    batch_size: int = option(0, "Sequences per gradient step; 0 = as many as episodes, in order.", low=0)
    shuffle: str = option("buffer", "Minibatch order: buffer = tf.data's shuffle buffer of half the episodes over "
                                    "the epochs' stream (batch-ppo); epoch = a fresh permutation each epoch.",
                          choices=("buffer", "epoch"))
    lr: float = option(1e-4, "Adam learning rate.", low=0.0)
    discount: float = option(0.995, "Discount factor.", low=0.0, high=1.0)
    advantage: str = option("return", "return: discounted Monte-Carlo return minus value, no bootstrap "
                                      "(batch-ppo); gae: GAE(gae_lambda) with bootstrap at time limits.",
                            choices=("return", "gae"))
    value_target: str = option("chunk", "With ppo.advantage=return, the value loss's target: the discounted return "
                                        "to the end of each update sequence, a chunk or a whole episode "
                                        "(batch-ppo); episode: to the episode's end.", choices=("chunk", "episode"))
    gae_lambda: float = option(0.95, "GAE lambda (with ppo.advantage=gae).", low=0.0, high=1.0)
    objective: str = option("kl_penalty", "Adaptive KL penalty, or the clipped objective.",
                            choices=("kl_penalty", "clip"))
    kl_target: float = option(0.01, "Target KL per update for the adaptive penalty.", low=0.0)
    kl_cutoff_factor: float = option(2.0, "KL above factor x target is penalized quadratically.", low=0.0)
    kl_cutoff_coef: float = option(1000.0, "Coefficient of the quadratic KL cutoff penalty.", low=0.0)
    kl_init_penalty: float = option(1.0, "Initial KL penalty coefficient.", low=0.0)
    clip: float = option(0.2, "Ratio clipping range of the clipped objective.", low=0.0)
    init_std: float = option(0.35, "Initial std of the Gaussian policy.", low=0.0)
    policy_layers: tuple[int, ...] = option((200, 100), "Hidden units of the policy MLP, per layer.", low=1)
    value_layers: tuple[int, ...] = option((200, 100), "Hidden units of the value MLP, per layer.", low=1)
    activation: str = option("relu", "Hidden activation of both MLPs (batch-ppo: relu).", choices=("relu", "tanh"))
    squash_mean: bool = option(True, "tanh on the policy mean (batch-ppo); false leaves it linear.")
    obs_clip: float = option(5.0, "Normalized observations are clipped to +-this.", low=0.0)
    reward_clip: float = option(10.0, "Normalized rewards are clipped to +-this.", low=0.0)
    normalize_rewards: bool = option(True, "Scale rewards by their running std.")
    total_steps: int = option(1_000_000, "Environment steps of the whole run.", low=1)
    eval_every: int = option(10, "Updates between two evaluation phases.", low=1)
    eval_episodes: int = option(30, "Episodes per evaluation phase (mean action, no noise).", low=1)


@dataclass(frozen=True)
class RunConfig:
    """Seed, device and bookkeeping that every command shares."""

    seed: int = option(0, "Seed from which every source of randomness derives.", low=0)
    stale_seconds: float = option(600.0, "A run whose heartbeat is older than this is taken over.", low=0.01)
    device: str = option("auto", "Torch device: auto picks cuda when available.", choices=("auto", "cpu", "cuda"))
    wandb_project: str = option("", "Also log to this Weights & Biases project (needs planetrl[wandb]; "
                                    "WANDB_MODE=offline keeps it local); empty = off.")
    imports: tuple[str, ...] = option((), "Python modules imported before the task is resolved (they register "
                                          "tasks); saved with the run, so eval, visualize and sweeps import them too.")


@dataclass(frozen=True)
class Config:
    """A PlaNet run's configuration."""

    env: EnvConfig = field(default_factory=EnvConfig)
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    run: RunConfig = field(default_factory=RunConfig)


@dataclass(frozen=True)
class PPORunConfig:
    """A PPO run's configuration: the environment and run sections are PlaNet's."""

    env: EnvConfig = field(default_factory=EnvConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    run: RunConfig = field(default_factory=RunConfig)


AnyConfig = Config | PPORunConfig
KINDS: tuple[type, ...] = (Config, PPORunConfig)


# ---------------------------------------------------------------- validation


def _section_fields(cfg: Any) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in fields(cfg)}


class OtherKindError(ConfigError):
    """A saved config of the other kind of run: PPO where PlaNet was asked for, or the reverse."""


def _unknown_key(key: str, valid: list[str]) -> ConfigError:
    hint = did_you_mean(key, valid) or f" Valid keys: {', '.join(sorted(valid))}."
    return ConfigError(f"Unknown config key '{key}'.{hint}")


def all_keys(cfg: AnyConfig | None = None) -> list[str]:
    """Every dotted key `section.name` of the configuration."""
    cfg = cfg or Config()
    return [f"{s.name}.{f.name}" for s in fields(cfg) for f in fields(getattr(cfg, s.name))]


def describe(cfg: AnyConfig | None = None) -> list[tuple[str, Any, str]]:
    """(key, value, help) for every field of `cfg` (of both kinds, shared sections once, by default)."""
    if cfg is None:
        rows = describe(Config())
        return rows + [row for row in describe(PPORunConfig()) if row[0].split(".")[0] == "ppo"]
    rows = []
    for s in fields(cfg):
        section = getattr(cfg, s.name)
        for f in fields(section):
            rows.append((f"{s.name}.{f.name}", getattr(section, f.name), f.metadata.get("help", "")))
    return rows


def set_values(cfg: AnyConfig, overrides: typing.Mapping[str, Any]) -> AnyConfig:
    """Return a copy of `cfg` with dotted keys replaced, each one validated."""
    valid = all_keys(cfg)
    sections: dict[str, dict[str, Any]] = {}
    for key, raw in overrides.items():
        if key not in valid:
            raise _unknown_key(key, valid)
        section_name, name = key.split(".", 1)
        section = getattr(cfg, section_name)
        f = _section_fields(section)[name]
        hints = typing.get_type_hints(type(section))
        value = coerce(key, raw, hints[name])
        check_range(key, value, f.metadata)
        sections.setdefault(section_name, {})[name] = value
    for section_name, values in sections.items():
        cfg = replace(cfg, **{section_name: replace(getattr(cfg, section_name), **values)})
    _check_together(cfg)
    return cfg


def _check_together(cfg: AnyConfig) -> None:
    """Values that contradict each other are an error, never silently adjusted."""
    if isinstance(cfg, Config) and not cfg.env.pixels:
        raise ConfigError("env.pixels false observes no images, and PlaNet learns from images (its episodes, "
                          "written by train and collect, hold them); it is for PPO from state (planetrl ppo "
                          "train); leave env.pixels true")
    if isinstance(cfg, Config) and cfg.planner.elites > cfg.planner.candidates:
        raise ConfigError(f"planner.elites ({cfg.planner.elites}) must be at most planner.candidates "
                          f"({cfg.planner.candidates}); set both, e.g. --set planner.elites=30")
    if isinstance(cfg, Config) and cfg.planner.tail and not cfg.planner.discount < 1.0:
        raise ConfigError(f"planner.tail sums the return past the horizon, which needs planner.discount below 1 "
                          f"(it is {cfg.planner.discount}); add e.g. --set planner.discount=0.99")
    if isinstance(cfg, Config) and cfg.loss.continuation_open_loop and not cfg.model.continuation:
        raise ConfigError(f"loss.continuation_open_loop ({cfg.loss.continuation_open_loop}) trains the continuation "
                          "head, which is off; add --set model.continuation=true or leave it at 0")
    if isinstance(cfg, Config):
        longest = cfg.data.chunk_length - 1  # an open-loop prior d steps ahead needs a posterior d steps later
        for key, distance in (("loss.overshooting", cfg.loss.overshooting),
                              ("loss.continuation_open_loop", cfg.loss.continuation_open_loop)):
            if distance > longest:
                raise ConfigError(f"{key} ({distance}) reaches past a training sequence of data.chunk_length "
                                  f"({cfg.data.chunk_length}) steps, where no distance beyond {longest} has a "
                                  f"target; set it to at most {longest} or raise data.chunk_length")


def parse_assignments(items: typing.Iterable[str]) -> dict[str, Any]:
    """Parse `key=value` strings; values are read as YAML scalars."""
    result = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"Override '{item}' is not of the form section.key=value.")
        key, text = item.split("=", 1)
        key, value = key.strip(), yaml.safe_load(text) if text.strip() else ""
        if key in result and result[key] != value:
            raise ConfigError(f"{key} is set twice, to {result[key]!r} and to {value!r}; give it once.")
        result[key] = value
    return result


def resolve(block: typing.Mapping[str, Any], assignments: typing.Iterable[str] = (),
            flags: typing.Mapping[str, Any] | None = None,
            base: AnyConfig | None = None) -> tuple[AnyConfig, dict[str, Any]]:
    """The one path to a config: defaults, a named block, `key=value` assignments, then flags (None = unset).

    Also returns the keys set explicitly, which a resumed run's saved config must agree with.
    """
    base = base or Config()
    assigned = parse_assignments(assignments)
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    for key in given.keys() & assigned.keys():
        by_set, by_flag = (_dotted(set_values(base, {key: v}), key) for v in (assigned[key], given[key]))
        if by_set != by_flag:
            raise ConfigError(f"{key} is given twice: --set {key}={assigned[key]} and {given[key]!r} by its own "
                              "option; give it once.")
    explicit = {**block, **assigned, **given}
    return set_values(base, explicit), explicit


def _dotted(cfg: AnyConfig, key: str) -> Any:
    section, name = key.split(".", 1)
    return getattr(getattr(cfg, section), name)


def build(preset: str | None = None, overrides: typing.Iterable[str] = (), base: Config | None = None) -> Config:
    """Defaults, then the named preset, then `section.key=value` overrides."""
    if preset and preset not in PRESETS:
        raise ConfigError(f"Unknown preset '{preset}'; allowed: {', '.join(sorted(PRESETS))}.")
    return resolve(PRESETS[preset] if preset else {}, overrides, base=base)[0]


# ---------------------------------------------------------------- YAML


def to_dict(cfg: AnyConfig) -> dict[str, dict[str, Any]]:
    """Nested plain dict (tuples become lists) for YAML."""
    out: dict[str, dict[str, Any]] = {}
    for s in fields(cfg):
        section = getattr(cfg, s.name)
        out[s.name] = {
            f.name: list(v) if isinstance(v := getattr(section, f.name), tuple) else v for f in fields(section)
        }
    return out


# Keys added after runs were already saved, with the value that reproduces those runs' behaviour.
LEGACY_DEFAULTS = {"model.init": "torch"}
# Keys that saved configs may hold but that no longer exist (ignored on load).
RETIRED_KEYS = {"ppo.minibatches"}
# Keys that moved: saved configs are read at the new place.
RENAMED_KEYS = {"train.stale_seconds": "run.stale_seconds"}


def from_dict(data: typing.Mapping[str, Any], kind: type = Config) -> AnyConfig:
    """Inverse of `to_dict` for a config of `kind`; unknown keys are errors.

    Configs saved before the split held every section: the other kind's sections are then dropped.
    A key missing from a saved config takes its legacy value, and renamed keys are read at their new place.
    """
    target = kind()
    own = {f.name for f in fields(target)}
    every = {f.name for k in KINDS for f in fields(k)}
    foreign = set(data) - own
    if foreign and foreign & every and not every <= set(data):
        other = next((k for k in KINDS if foreign <= {f.name for f in fields(k)} | own), None)
        name = {PPORunConfig: "a PPO run's", Config: "a PlaNet run's"}.get(other, "not a planetrl")
        raise OtherKindError(f"this is {name} config (sections {', '.join(sorted(foreign))})")
    flat = {k: v for k, v in LEGACY_DEFAULTS.items() if k.split(".")[0] in own}
    for section, values in data.items():
        if not isinstance(values, dict):
            raise ConfigError(f"Config section '{section}' must be a mapping, got {values!r}.")
        if section in every - own:
            continue
        for key, value in values.items():
            dotted = RENAMED_KEYS.get(f"{section}.{key}", f"{section}.{key}")
            if dotted not in RETIRED_KEYS:
                flat[dotted] = value
    return set_values(target, flat)


def save(cfg: AnyConfig, path: str | Path) -> None:
    """Write the config as YAML, atomically."""
    write_atomic(path, yaml.safe_dump(to_dict(cfg), sort_keys=False))


def load(path: str | Path, kind: type = Config) -> AnyConfig:
    """Read a config written by `save`, with a safe YAML loader; anything else is a ConfigError naming the file."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path} is not a planetrl config: {str(error).splitlines()[0]}") from error
    if data is None:  # `save` never writes an empty file: this one was emptied or cut short
        raise ConfigError(f"{path} is not a planetrl config: the file is empty")
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is not a planetrl config: a mapping of sections was expected")
    try:
        return from_dict(data, kind)
    except ConfigError as error:
        raise type(error)(f"{path}: {error}") from error


def differences(old: AnyConfig, new: AnyConfig) -> list[tuple[str, Any, Any]]:
    """(key, old, new) for every field whose value differs."""
    a, b = to_dict(old), to_dict(new)
    return [
        (f"{s}.{k}", a[s][k], b[s][k]) for s in a for k in a[s] if a[s][k] != b[s][k]
    ]
