"""Shared pieces of the command line: configuration from flags, --import, and the config key listing."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

from planetrl import config as config_lib
from planetrl.config_values import did_you_mean

PLANET_SECTIONS = ("env", "data", "model", "loss", "optim", "planner", "train", "run")
PPO_SECTIONS = ("env", "ppo", "run")
NO_PROGRESS_HELP = "no progress bar; a line on stderr each minute and at the end (for logs)"
PARALLEL_EPISODES = 20
"""Environments eval and visualize run side by side at most: a walker-walk env process holds about 150 MB of
its own (benchmarks/env_process_memory.py), so `eval --episodes 100` with one per episode asked for 15 GB; more
episodes run on the same environments."""


def config_epilog(sections: Sequence[str] = PLANET_SECTIONS) -> str:
    """A pointer to the keys instead of all of them, so that --help fits on one screen; PPO commands take
    a PPO config where PlaNet commands take a preset, so each is pointed to its own."""
    named = ("The config a PPO config and --set resolve to: planetrl config --ppo CONFIG [--set ...]"
             if "ppo" in sections else f"presets: {', '.join(sorted(config_lib.PRESETS))}")
    return (f"configuration: --set SECTION.KEY=VALUE; sections {', '.join(sections)}.\n"
            f"Every key, its default and meaning: planetrl config --keys {' '.join(sections[:2])} ...\n"
            + named)


def ppo_block(name: str) -> dict[str, object]:
    """The named PPO config's block of overrides; an unknown name is refused with the close ones."""
    if name not in config_lib.PPO_CONFIGS:
        raise config_lib.ConfigError(f"unknown PPO config '{name}'.{did_you_mean(name, config_lib.PPO_CONFIGS)} "
                                     f"Allowed: {', '.join(sorted(config_lib.PPO_CONFIGS))}")
    return dict(config_lib.PPO_CONFIGS[name])


def describe_keys(sections: Sequence[str]) -> str:
    """Every key of the given sections (or the given SECTION.KEY keys) with its default and help, by section."""
    lines: list[str] = []
    for key, value, help_text in config_lib.describe():
        section = key.split(".", 1)[0]
        if sections and section not in sections and key not in sections:
            continue
        if not any(line == f"[{section}]" for line in lines):
            lines.append(f"[{section}]")
        lines.append(f"  {key} = {value!r}")
        lines.extend(textwrap.wrap(help_text, 72, initial_indent="      ", subsequent_indent="      "))
    return "\n".join(lines)


def at_least(minimum: float, kind: type[int] | type[float] = int) -> Callable[[str], float]:
    """An argparse type: a `kind` number no smaller than `minimum`, where 0 episodes or 0 frames a second
    would fail later, after the env processes started, or with a bare ZeroDivisionError."""
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, "
                                             f"got {text!r}") from None
        if not value >= minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text}")
        return value
    return parse


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """--preset; --set and --seed come from `overrides_parent`."""
    parser.add_argument("--preset", choices=sorted(config_lib.PRESETS),
                        help="named block of config overrides, applied before --set")


def path_arg(value: str) -> str:
    """A path option's value: an empty one (say, an unset shell variable) would mean the current directory."""
    if not value:
        raise argparse.ArgumentTypeError("an empty path (it would mean the current directory); name one")
    return value


def overrides_parent(example: str = "env.image_size=64") -> argparse.ArgumentParser:
    """--set and --seed, shared by every command that builds a configuration; `example` is a key it takes."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help=f"override one config value, e.g. --set {example} (repeatable)")
    parent.add_argument("--seed", type=int, help="seed for every source of randomness (run.seed)")
    return parent


def experiment_parent() -> argparse.ArgumentParser:
    """The options of a training command (train, ppo train): where, how many runs, device, output, retries."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--logdir", required=True, type=path_arg, help="experiment directory; runs go to LOGDIR/run-NN")
    parent.add_argument("--runs", type=int, default=1, help="number of runs (seeds seed, seed+1, ...); default 1")
    parent.add_argument("--device", choices=("auto", "cpu", "cuda"), help="torch device (run.device)")
    parent.add_argument("--no-progress", action="store_true", help="no progress bar; a line a minute (for logs)")
    parent.add_argument("--retry-failed", action="store_true", help="try failed runs again from their checkpoint")
    return parent


def config_from(block: dict[str, object], overrides: Sequence[str], flags: dict[str, object],
                kind: type = config_lib.Config) -> tuple[config_lib.AnyConfig, dict[str, object]]:
    """A named block (preset or PPO config), then --set, then dedicated flags (None = not given).

    Returns the config and the keys this command line sets explicitly, which
    must agree with a resumed run's saved config.
    """
    from planetrl.envs.registry import import_task_modules

    imports = {"run.imports": tuple(IMPORTS)} if IMPORTS else {}
    cfg, explicit = config_lib.resolve(block, overrides, {**flags, **imports}, base=kind())
    import_task_modules(cfg.run.imports)  # `--set run.imports=[...]` as --import: its tasks exist from here on
    return cfg, explicit


IMPORTS: list[str] = []  # --import MODULE, anywhere on the command line


def take_imports(argv: list[str]) -> list[str]:
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
    IMPORTS[:] = modules
    return rest


def resolve_args(args: argparse.Namespace, extra: dict[str, object]) -> tuple[config_lib.Config, dict[str, object]]:
    """Config and explicit keys from --preset, --set, --seed and the command's own flags."""
    block = dict(config_lib.PRESETS[args.preset]) if args.preset else {}
    return config_from(block, args.overrides, {**extra, "run.seed": getattr(args, "seed", None)})


def resolve_config(args: argparse.Namespace, extra: dict[str, object]) -> config_lib.Config:
    return resolve_args(args, extra)[0]


def _file_in_the_way(path: Path) -> Path | None:
    """The nearest existing path at or above `path` when it is not a directory (a directory cannot go there)."""
    for place in (path, *path.parents):
        if place.exists():
            return None if place.is_dir() else place
    return None


def output_dir(value: str, flag: str) -> Path:
    """A directory the command will write into, refused before any work when a file stands in its place or
    in the place of a directory above it."""
    path = Path(value)
    blocker = _file_in_the_way(path)
    if blocker == path:
        raise NotADirectoryError(f"{flag} {path} is a file, not a directory")
    if blocker is not None:
        raise NotADirectoryError(f"{flag} {path}: {blocker} is a file, not a directory")
    return path


def output_file(value: str, flag: str) -> Path:
    """A file the command will write at the end, checked before the work: not a directory, and its
    directory (made here when missing) not blocked by a file."""
    path = Path(value)
    if path.is_dir():
        raise IsADirectoryError(f"{flag} {path} is a directory; name the file to write")
    blocker = _file_in_the_way(path.parent)
    if blocker is not None:
        raise NotADirectoryError(f"{flag} {path}: {blocker} is a file, not a directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
