"""The run directory: config.yaml and run_info.json, atomic checkpoints, machine info; shared by every recipe.

Layout: `config.yaml` (the resolved config, reloaded on resume), `run_info.json` (code version and machine;
under `resumes`, the same for each session that resumed the run), `checkpoints/latest.pt` (and `previous.pt`,
the one before it), `metrics.jsonl`,
`events/`, `videos/`, episode folders, and the claim files of experiment.py.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any, Protocol

import torch

import planetrl
from planetrl import config as config_lib
from planetrl.atomic import write_atomic
from planetrl.models.world_model import native_bf16
from planetrl.training.runfiles import require_directory

CHECKPOINT = "latest.pt"
PREVIOUS_CHECKPOINT = "previous.pt"
MODEL_SNAPSHOT = "model-{updates:07d}.pt"

log = logging.getLogger(__name__)


def latest_checkpoint(run_dir: Path) -> Path:
    """Where a run keeps its latest checkpoint (which may not exist yet)."""
    return Path(run_dir) / "checkpoints" / CHECKPOINT


def previous_of(path: Path) -> Path:
    """Where the checkpoint before `path` is kept: `previous.pt` beside `latest.pt`, `NAME.previous.pt` otherwise."""
    path = Path(path)
    return path.with_name(PREVIOUS_CHECKPOINT if path.name == CHECKPOINT else f"{path.stem}.previous{path.suffix}")


def save_checkpoint(path: Path, state: dict[str, Any], keep_previous: bool = False) -> None:
    """torch.save, atomically (a crash or a full disk leaves the previous checkpoint and no temporary file).

    With `keep_previous`, the file it replaces stays as `previous_of(path)`, for `load_latest` to fall back on
    when the new one is later damaged from outside.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda handle: torch.save(state, handle), previous=previous_of(path) if keep_previous else None)


class NotACheckpoint(ValueError):
    """A file where a checkpoint should be that torch cannot load as tensors and plain data."""


def _first_sentence(error: BaseException, limit: int = 200) -> str:
    """The loader's own words up to their first full stop: torch's zip errors go on with advice for its users."""
    text = str(error).strip()
    if not text:
        return "unreadable"
    sentence = text.splitlines()[0].split(". ")[0].rstrip(".")
    return sentence if len(sentence) <= limit else sentence[:limit].rsplit(" ", 1)[0] + " ..."


def load_checkpoint(path: Path, device: torch.device, needs: str | None = None) -> dict[str, Any] | None:
    """Tensors and plain data only (weights_only=True): nothing in a run directory can run code.

    A file that does not load, or lacks the `needs` entry (`updater` for PlaNet, `agent` for PPO),
    raises NotACheckpoint naming the file.
    """
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except Exception as error:
        raise NotACheckpoint(f"{path} is not a planetrl checkpoint "
                             f"({type(error).__name__}: {_first_sentence(error)})") from error
    if not isinstance(state, dict) or (needs is not None and needs not in state):
        kind = {"updater": "PlaNet", "agent": "PPO"}.get(needs or "", "planetrl")
        other = " (it looks like a PPO run: use `planetrl ppo ...`)" if isinstance(state, dict) and "agent" in state \
            else " (it looks like a PlaNet run: use `planetrl eval/visualize`)" if isinstance(state, dict) \
            and "updater" in state else ""
        raise NotACheckpoint(f"{path} is not a {kind} checkpoint{other}")
    return state


def load_latest(path: Path, device: torch.device, needs: str | None = None) -> tuple[dict[str, Any] | None, Path]:
    """The checkpoint at `path`, or the one before it when `path` is missing or damaged; and the file it came from.

    Falling back is logged as a warning naming both files. Raises NotACheckpoint when neither loads, naming each;
    returns (None, path) when there is neither.
    """
    path = Path(path)
    previous = previous_of(path)
    try:
        state = load_checkpoint(path, device, needs)
    except NotACheckpoint as damaged:
        if not previous.exists():
            raise
        try:
            state = load_checkpoint(previous, device, needs)
        except NotACheckpoint as also:
            raise NotACheckpoint(f"{damaged}; the one before it, {also}") from damaged
        log.warning("%s; using the checkpoint before it, %s (updates %s)", damaged, previous, state.get("updates"))
        return state, previous
    if state is not None or not previous.exists():
        return state, path
    # Only a stop between the two renames of a save leaves the previous checkpoint without a latest one.
    state = load_checkpoint(previous, device, needs)
    log.warning("%s is missing; using the checkpoint before it, %s (updates %s)", path, previous, state.get("updates"))
    return state, previous


class Stateful(Protocol):
    """Anything a checkpoint can hold: a module, an optimizer, a loader, an agent."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> Any: ...


class TorchRNG:
    """torch's global generator as a checkpoint part."""

    def state_dict(self) -> dict[str, Any]:
        return {"state": torch.get_rng_state()}

    def load_state_dict(self, state: dict[str, Any] | torch.Tensor) -> None:
        torch.set_rng_state((state["state"] if isinstance(state, dict) else state).cpu())


class Checkpoint:
    """A run's state in one object: name its parts once, then `save(**values)` or `restore()` them all.

    Parts are saved under their names with `state_dict()`; plain values (counters, the config) beside
    them. `needs` names the part that tells this recipe's checkpoints from another's. Each save keeps the
    one before it, so a checkpoint damaged from outside costs one save's progress, not the run.
    """

    def __init__(self, path: Path, device: torch.device, parts: dict[str, Stateful], needs: str) -> None:
        self.path, self.device, self.parts, self.needs = Path(path), device, parts, needs
        self._latest_damaged = False
        self.fell_back = False
        """Whether `restore` read the checkpoint before the latest (missing or damaged): the run's logs reach
        past the state it resumes from."""

    def save(self, **values: Any) -> None:
        """Write every part; the file replaced becomes the previous one, unless it was found damaged."""
        state = {**{name: part.state_dict() for name, part in self.parts.items()}, **values}
        save_checkpoint(self.path, state, keep_previous=not self._latest_damaged)
        self._latest_damaged = False

    def restore(self) -> dict[str, Any] | None:
        """Load every part from the file (or the one before it) and return the plain values; None when there is
        no checkpoint yet."""
        state, source = load_latest(self.path, self.device, needs=self.needs)
        self.fell_back = source != self.path
        self._latest_damaged = self.fell_back and self.path.exists()
        if state is None:
            return None
        for name, part in self.parts.items():
            part.load_state_dict(state[name])
        return {key: value for key, value in state.items() if key not in self.parts}


def require_run_dir(run_dir: Path) -> Path:
    """Fail with one line unless `run_dir` is a run directory (it holds config.yaml)."""
    require_directory(run_dir, "run directory")
    if not (run_dir / "config.yaml").is_file():
        runs = sorted(p.parent.name for p in run_dir.glob("*/config.yaml"))
        hint = f"; it holds the runs {', '.join(runs)}: pass one of them, like {run_dir / runs[0]}" if runs else ""
        raise FileNotFoundError(f"{run_dir} is not a run directory (no config.yaml){hint}")
    return run_dir


def machine_info() -> dict[str, Any]:
    """Package version, git commit when available, CPU (and whether its bf16 is native), torch's CPU threads, GPU
    and torch version."""
    commit = None
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                                cwd=Path(planetrl.__file__).parent).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "planetrl": planetrl.__version__, "git_commit": commit, "torch": torch.__version__,
        "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "processor": platform.processor(), "host": platform.node(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_bf16_native": native_bf16(torch.device("cpu")),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def prepare_run_dir(run_dir: Path, cfg: config_lib.AnyConfig, explicit: dict[str, Any]) -> config_lib.AnyConfig:
    """Write config.yaml for a new run; for an existing one, reload it and refuse conflicting flags.

    `explicit` holds the keys the user set on this command line (preset or flags).
    """
    path = run_dir / "config.yaml"
    if not path.exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        config_lib.save(cfg, path)
        write_atomic(run_dir / "run_info.json", json.dumps(machine_info(), indent=2) + "\n")
        return cfg
    saved = config_lib.load(path, kind=type(cfg))
    conflicts = config_conflicts(saved, explicit)
    if conflicts:
        raise config_lib.ConfigError(
            f"{run_dir} was started with a different config; the saved config wins. Conflicting: "
            + "; ".join(conflicts) + ". Use a new --logdir to change them."
        )
    note_resume(run_dir)
    return saved


def note_resume(run_dir: Path) -> None:
    """Add this session's machine to run_info.json's `resumes`, so that a run resumed on another host (another
    precision where bf16 is not native, other threads) or at another commit says so, where run_info.json's own
    fields name only the machine that started it. A run_info.json that cannot be read is left as it is."""
    path = run_dir / "run_info.json"
    try:
        info = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError) as error:
        log.warning("%s cannot be read (%s); this session's machine is not added to it", path, error)
        return
    if not isinstance(info, dict) or not isinstance(info.get("resumes", []), list):
        log.warning("%s is not a run_info object; this session's machine is not added to it", path)
        return
    info.setdefault("resumes", []).append({"time": round(time.time(), 1), **machine_info()})
    write_atomic(path, json.dumps(info, indent=2) + "\n")


def config_conflicts(saved: config_lib.AnyConfig, explicit: dict[str, Any]) -> list[str]:
    """'key: saved X, requested Y' for each key set on this command line that differs from a run's config."""
    saved_flat = {f"{s}.{k}": v for s, values in config_lib.to_dict(saved).items() for k, v in values.items()}
    wanted = config_lib.to_dict(config_lib.set_values(saved, explicit))
    return [
        f"{key}: saved {saved_flat[key]!r}, requested {wanted[key.split('.')[0]][key.split('.')[1]]!r}"
        for key in explicit
        if saved_flat[key] != wanted[key.split(".")[0]][key.split(".")[1]]
    ]


def refuse_changes_to_a_finished_run(run_dir: Path, kind: type, explicit: dict[str, Any]) -> None:
    """A finished run is skipped, so flags that differ from its config would do nothing: say so instead.

    A config.yaml that does not load is left to `status` to report, so one damaged run does not stop a sweep.
    """
    try:
        saved = config_lib.load(run_dir / "config.yaml", kind=kind)
    except config_lib.OtherKindError as error:  # not damage: this --logdir holds the other kind's runs
        raise config_lib.ConfigError(f"{error}; use a new --logdir for this command's runs") from error
    except (config_lib.ConfigError, OSError):
        return
    conflicts = config_conflicts(saved, explicit)
    if conflicts:
        raise config_lib.ConfigError(
            f"{run_dir} is finished, and a finished run is neither extended nor changed; its config differs "
            f"from this command's: " + "; ".join(conflicts) + ". Use a new --logdir to run with them."
        )


