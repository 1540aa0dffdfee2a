"""What a run shows on the console: a progress bar, or (for logs and clusters) a periodic line.

Both show the loss terms that move: the image term as nats above the Gaussian
constant (the bulk of the total loss, which hides every change), the reward
term and the KL, plus the last test return, the update rate and the ETA.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol

log = logging.getLogger(__name__)


def image_constant(image_size: int) -> float:
    """0.5 log(2 pi) per pixel and channel: the image NLL of a perfect prediction with unit variance."""
    return 0.5 * math.log(2 * math.pi) * image_size * image_size * 3


def duration(seconds: float) -> str:
    """`25m10s`, `1h37m`, or `?` for a time that is not finite."""
    if not math.isfinite(seconds):
        return "?"
    minutes = int(seconds // 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m{int(seconds % 60):02d}s"


class RunProgress:
    """A tqdm bar when `bar`, otherwise one line on stdout every `every_s` seconds (and at each test)."""

    def __init__(self, name: str, total: int, initial: int, bar: bool, constant: float,
                 every_s: float = 60.0, test_return: float | None = None) -> None:
        """`test_return`: the last recorded test phase's mean, shown until the next one (a resumed run has one)."""
        self.name, self.total, self.done, self.constant, self.every_s = name, total, initial, constant, every_s
        self._start_done, self._start = initial, time.monotonic()
        self._last_line = self._start
        self.terms: dict[str, float] = {}
        self.test_return = test_return
        self._bar: Any = None
        if bar:
            from tqdm import tqdm

            # smoothing=0: the rate (and so the ETA) averages over the whole session, collect and test
            # phases included, instead of the burst speed of the update phases.
            self._bar = tqdm(total=total, initial=initial, desc=name, unit="update", dynamic_ncols=True,
                             smoothing=0)

    def advance(self) -> None:
        """One more update."""
        self.done += 1
        if self._bar is not None:
            self._bar.update(1)
        elif time.monotonic() - self._last_line >= self.every_s:
            self.line()

    def train(self, means: dict[str, float]) -> None:
        """The latest averaged training terms."""
        self.terms = {"image": means["image_nll"] - self.constant, "reward": means["reward_nll"]}
        if "kl" in means:
            self.terms["kl"] = means["kl"]
        self._show()

    def test(self, mean_return: float) -> None:
        self.test_return = mean_return
        self._show()
        if self._bar is None:
            self.line()

    def _show(self) -> None:
        if self._bar is not None:
            shown = {k: f"{v:.2f}" if abs(v) < 100 else f"{v:.0f}" for k, v in self.terms.items()}
            if self.test_return is not None:
                shown["test"] = f"{self.test_return:.1f}"
            self._bar.set_postfix(shown)

    def line(self) -> None:
        """`run-00 update 1200/7000 | image 8.1 reward 0.91 kl 3.02 | test 265.7 | 3.90 upd/s | ETA 25m10s`."""
        self._last_line = time.monotonic()
        elapsed = self._last_line - self._start
        rate = (self.done - self._start_done) / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        terms = " ".join(f"{k} {v:.2f}" for k, v in self.terms.items()) or "no loss logged yet"
        test = f"{self.test_return:.1f}" if self.test_return is not None else "-"
        print(f"{self.name} update {self.done}/{self.total} | {terms} | test {test} | {rate:.2f} upd/s | "
              f"ETA {duration(eta)}", file=sys.stdout, flush=True)

    def phase(self, what: str, episodes: int, decisions_each: int) -> PhaseMeter:
        """A driver callback that shows a collect or test phase going, which can take many minutes."""
        return PhaseMeter(self, what, episodes, decisions_each)

    def show_phase(self, what: str, describe: Callable[[], str]) -> None:
        """The phase's state in the bar's postfix (at most each second) or as a line (each `every_s`)."""
        now = time.monotonic()
        if now - self._last_line < (1.0 if self._bar is not None else self.every_s):
            return
        self._last_line = now
        if self._bar is not None:
            self._bar.set_postfix_str(f"{what}: {describe()}")
        else:
            print(f"{self.name} {what} at update {self.done} | {describe()}", file=sys.stdout, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class PhaseView(Protocol):
    """Where a `PhaseMeter` shows its count: a run's progress, or an eval's own."""

    def show_phase(self, what: str, describe: Callable[[], str]) -> None: ...


class PhaseMeter:
    """Counts a phase's decisions and finished episodes; shows them each `every_s` (bar: each second).

    `run-00 test at update 500 | 1230/2500 decisions, 2/5 episodes | 1.05 decisions/s | ETA at most 20m30s`.
    The decision bound is episodes x decisions per episode (0: no limit known); episodes that end early
    (a crash) make it an upper bound, so the ETA is one too.
    """

    def __init__(self, run: PhaseView, what: str, episodes: int, decisions_each: int) -> None:
        self.run, self.what, self.episodes = run, what, episodes
        self.bound = episodes * decisions_each
        self.decisions = self.finished = 0
        self._start = time.monotonic()

    def __call__(self, index: int, step: dict[str, Any]) -> None:
        if step["is_first"]:  # the reset observation, not a decision
            return
        self.decisions += 1
        self.finished += bool(step["is_last"])
        self.run.show_phase(self.what, self.describe)

    def describe(self) -> str:
        elapsed = time.monotonic() - self._start
        rate = self.decisions / elapsed if elapsed > 0 else 0.0
        done = f"{self.decisions}/{self.bound}" if self.bound else str(self.decisions)
        text = f"{done} decisions, {self.finished}/{self.episodes} episodes | {rate:.2f} decisions/s"
        if self.bound and rate > 0 and self.decisions < self.bound:
            text += f" | ETA at most {duration(max(self.bound - self.decisions, 0) / rate)}"
        return text


class PolicyProgress:
    """Progress of policy episodes outside a run (eval, visualize), which take up to an hour on a CPU.

    A bar over decisions, or (`bar=False`, for logs) a line on stderr each `every_s` seconds and one at the
    end; stderr, so that stdout keeps only the results. `meter` is the driver callback that counts.
    """

    def __init__(self, what: str, episodes: int, decisions_each: int, bar: bool, every_s: float = 60.0) -> None:
        self.what, self.every_s = what, every_s
        self.meter = PhaseMeter(self, what, episodes, decisions_each)
        self._last_line = time.monotonic()
        self._bar: Any = None
        if bar:
            from tqdm import tqdm

            self._bar = tqdm(total=self.meter.bound or None, desc=what, unit="decision", dynamic_ncols=True)

    def show_phase(self, what: str, describe: Callable[[], str]) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(f"{self.meter.finished}/{self.meter.episodes} episodes", refresh=False)
            self._bar.update(self.meter.decisions - self._bar.n)
        elif time.monotonic() - self._last_line >= self.every_s:
            self._last_line = time.monotonic()
            print(f"{what} | {describe()}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        else:
            print(f"{self.what} | {self.meter.describe()}", file=sys.stderr, flush=True)


class EpisodeCounter:
    """Progress of episode collection: a bar, or one log line per finished episode."""

    def __init__(self, what: str, done: int, total: int, bar: bool) -> None:
        self.what, self.done, self.total = what, done, total
        self._bar: Any = None
        if bar:
            from tqdm import tqdm

            self._bar = tqdm(total=total, initial=done, desc=what, unit="episode", dynamic_ncols=True)

    def update(self, count: int = 1) -> None:
        self.done += count
        if self._bar is not None:
            self._bar.update(count)
        else:
            log.info("%s: %d/%d", self.what, self.done, self.total)

    def __enter__(self) -> EpisodeCounter:
        return self

    def __exit__(self, *args: object) -> None:
        if self._bar is not None:
            self._bar.close()
