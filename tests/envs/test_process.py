import functools
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from planetrl.config import EnvConfig
from planetrl.envs import process
from planetrl.envs.make import make_robust_env
from planetrl.envs.mock import MockEnv
from planetrl.envs.process import ExternalProcess, RemoteError
from planetrl.envs.wrappers import EnvCrashed, RestartOnException


def test_constructor_error_is_reraised_with_remote_traceback():
    with pytest.raises(RemoteError) as info:
        ExternalProcess(functools.partial(MockEnv, durations=(0,)))
    message = str(info.value)
    assert "ValueError: durations must be positive" in message
    assert "traceback in the environment process" in message
    assert "mock.py" in message


def test_step_error_is_reraised_with_remote_traceback():
    env = ExternalProcess(functools.partial(MockEnv, crash_every=2))
    try:
        env.reset()
        env.step(np.zeros(2, np.float32))
        with pytest.raises(RemoteError) as info:
            env.step(np.zeros(2, np.float32))
        assert "SimulatorCrash: mock simulator failed at step 2" in str(info.value)
        assert "_maybe_crash" in str(info.value)
        # The worker survives a Python exception and keeps answering.
        assert env.reset()[0]["image"].shape == (16, 16, 3)
    finally:
        env.close()


def test_results_match_an_in_process_env():
    remote = ExternalProcess(functools.partial(MockEnv, durations=(4,)))
    local = MockEnv(durations=(4,))
    try:
        a, _ = remote.reset(seed=3)
        b, _ = local.reset(seed=3)
        np.testing.assert_array_equal(a["image"], b["image"])
        action = np.array([0.3, -0.2], np.float32)
        ra, rb = remote.step(action), local.step(action)
        assert ra[1:4] == rb[1:4]
        assert remote.action_space == local.action_space
    finally:
        remote.close()


def test_close_is_idempotent_after_init_and_after_step():
    env = ExternalProcess(MockEnv)
    env.close()
    env.close()
    env = ExternalProcess(MockEnv)
    env.reset()
    env.step(np.zeros(2, np.float32))
    pid = env.pid
    env.close()
    env.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_killed_child_is_reported_as_a_crash_and_closes():
    env = ExternalProcess(MockEnv)
    env.reset()
    os.kill(env.pid, signal.SIGKILL)
    with pytest.raises(EnvCrashed, match=r"died \(exit code -9\)"):
        env.step(np.zeros(2, np.float32))
    env.close()


def test_restart_on_exception_survives_a_dying_process():
    constructor = functools.partial(
        ExternalProcess, functools.partial(MockEnv, durations=(5,), crash_every=7, crash_mode="exit")
    )
    env = RestartOnException(constructor, max_restarts=5)
    lengths = []
    try:
        for _ in range(4):
            env.reset()
            length, done = 0, False
            while not done:
                _, _, terminated, truncated, _ = env.step(np.zeros(2, np.float32))
                length += 1
                done = terminated or truncated
            lengths.append(length)
    finally:
        env.close()
    assert lengths == [5, 2, 5, 2]
    assert env.restarts == 2


def test_a_paused_child_is_reported_as_hung_and_close_still_ends_it():
    env = ExternalProcess(MockEnv, timeout=0.5)
    env.reset()
    pid = env.pid
    os.kill(pid, signal.SIGSTOP)
    with pytest.raises(EnvCrashed, match=r"did not answer within 0.5 s \(hung or paused\)"):
        env.step(np.zeros(2, np.float32))
    env.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_building_may_take_longer_than_one_answer_but_not_longer_than_the_start_allowance(monkeypatch):
    """The answer timeout bounded the build too: a 0.5 s timeout failed the start of any process that took longer
    to import its simulator, as on a loaded machine."""
    from helpers.slow_build import slow_mock

    env = ExternalProcess(functools.partial(slow_mock, 1.5), timeout=0.3)
    env.reset()
    os.kill(env.pid, signal.SIGSTOP)
    with pytest.raises(EnvCrashed, match=r"did not answer within 0.3 s"):  # a step still may not
        env.step(np.zeros(2, np.float32))
    env.close()
    monkeypatch.setattr(process, "START_ALLOWANCE_S", 0.5)
    with pytest.raises(EnvCrashed, match=r"did not answer within 0.5 s"):
        ExternalProcess(functools.partial(slow_mock, 30.0), timeout=0.3)


def test_a_training_env_whose_process_is_paused_is_restarted_and_the_episode_ends_truncated():
    cfg = EnvConfig(task="mock", processes=1, answer_timeout=0.5)
    env = make_robust_env(cfg)
    try:
        env.reset()
        paused = env._env.pid
        env.step(np.zeros(2, np.float32))
        os.kill(paused, signal.SIGSTOP)
        _, reward, terminated, truncated, info = env.step(np.zeros(2, np.float32))
        assert (reward, terminated, truncated, info.get("env_restarted")) == (0.0, False, True, True)
        assert env.restarts == 1 and env._env.pid != paused
        with pytest.raises(ProcessLookupError):
            os.kill(paused, 0)
        env.reset()
        assert env.step(np.zeros(2, np.float32))[3] is False
    finally:
        env.close()


_PARENT_THAT_DIES = """
import functools, os
import numpy as np
from planetrl.config import EnvConfig
from planetrl.envs import process
from planetrl.envs.make import make_robust_env
from planetrl.envs.mock import MockEnv
from planetrl.envs.process import _CALL, ExternalProcess

env = ExternalProcess(functools.partial(MockEnv, durations=(50,)))
env.reset()
print(env.pid, flush=True)
# Ask without reading the answer, then die as SIGTERM or SIGKILL would leave it: no close, no atexit.
for _ in range(2):
    env._conn.send((_CALL, ("step", (np.zeros(2, np.float32),), {})))
os._exit(0)
"""


def test_worker_whose_parent_dies_exits_quietly():
    """A killed training process leaves its env workers to notice alone: they close, with no traceback."""
    result = subprocess.run(
        [sys.executable, "-c", _PARENT_THAT_DIES], capture_output=True, text=True, check=True
    )
    # run() returns once the worker, which shares the stderr pipe, has exited too.
    assert "Traceback" not in result.stderr, result.stderr
    assert _state(int(result.stdout.split()[0])) in ("gone", "Z", "X")  # exited (a zombie until init reaps it)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"
