"""ExternalProcess: an environment living in its own process.

The parent sends commands over a pipe; the child builds the env from a
picklable constructor and answers. A worker's exception is re-raised in the
parent with the remote traceback; a child that dies, or that does not
answer within `timeout` seconds (hung, or paused), is reported as
`EnvCrashed`, which `RestartOnException` handles. `close()` is idempotent,
registered at exit, and never hangs.
"""

from __future__ import annotations

import atexit
import multiprocessing as mp
import signal
import traceback
import weakref
from collections.abc import Callable
from typing import Any

from planetrl.envs.wrappers import EnvCrashed

_CALL, _GETATTR, _CLOSE = "call", "getattr", "close"
_RESULT, _ERROR, _READY = "result", "error", "ready"
START_ALLOWANCE_S = 120.0
"""Seconds an env process may take to build its env at least, whatever the timeout of one answer."""


class RemoteError(RuntimeError):
    """An exception raised inside the env process, with its traceback."""


def _worker(constructor: Callable[[], Any], conn: Any) -> None:
    # The parent owns Ctrl-C: it closes the children in order.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        env = constructor()
    except BaseException as error:  # noqa: BLE001 - every failure goes back to the parent
        conn.send((_ERROR, (type(error).__name__, str(error), traceback.format_exc())))
        conn.close()
        return
    try:
        conn.send((_READY, None))
        while True:
            message, payload = conn.recv()
            if message == _CLOSE:
                break
            try:
                if message == _GETATTR:
                    result = getattr(env, payload)
                else:
                    name, args, kwargs = payload
                    result = getattr(env, name)(*args, **kwargs)
                conn.send((_RESULT, result))
            except ConnectionError:
                raise
            except Exception as error:  # noqa: BLE001 - an unpicklable result, too, goes back as an error
                conn.send((_ERROR, (type(error).__name__, str(error), traceback.format_exc())))
    except (EOFError, ConnectionError, KeyboardInterrupt):
        # The parent is gone (killed, or closed its end with replies unread): there is no one to tell.
        pass
    finally:
        try:
            env.close()
        except Exception:  # noqa: BLE001 - closing a broken simulator must not hide the real error
            pass
        conn.close()


class ExternalProcess:
    """Run `constructor()` in a child process and forward the env API to it.

    `timeout` bounds the seconds this process waits for one answer; it counts
    only time spent waiting, so pausing the whole process group (Ctrl-Z, SIGSTOP)
    does not make a healthy child look hung when it resumes. None waits forever.
    Building the env (a new interpreter importing a simulator, CARLA loading its
    map) waits at least START_ALLOWANCE_S, so a timeout set to catch a hung step
    quickly does not also fail every start on a loaded machine.
    """

    def __init__(
        self,
        constructor: Callable[[], Any],
        start_method: str = "spawn",
        timeout: float | None = None,
    ) -> None:
        context = mp.get_context(start_method)
        self._conn, child_conn = context.Pipe()
        self._process = context.Process(target=_worker, args=(constructor, child_conn), daemon=True)
        self._timeout = timeout
        self._closed = False
        self._ready = False
        self._start_method = start_method
        self._process.start()
        child_conn.close()
        # weakref keeps atexit from holding the object alive forever.
        ref = weakref.ref(self)
        self._atexit = lambda: (obj := ref()) is not None and obj.close()
        atexit.register(self._atexit)
        try:
            self._receive(expect=_READY, timeout=None if timeout is None else max(timeout, START_ALLOWANCE_S))
        except BaseException:
            self.close()
            raise
        self._ready = True
        self.observation_space = self._getattr("observation_space")
        self.action_space = self._getattr("action_space")

    @property
    def pid(self) -> int | None:
        """Process id of the env worker."""
        return self._process.pid

    def _send(self, message: str, payload: Any) -> None:
        if self._closed:
            raise RuntimeError("the environment process is closed")
        try:
            self._conn.send((message, payload))
        except (BrokenPipeError, ConnectionResetError, OSError) as error:
            raise EnvCrashed(self._death_message()) from error

    def _death_message(self) -> str:
        self._process.join(timeout=1.0)
        code = self._process.exitcode
        message = f"environment process {self._process.pid} died (exit code {code})"
        if not self._ready and self._start_method != "fork":
            message += (f" while starting. Environments run in child processes started with '{self._start_method}', "
                        "which import your main script again: if you started planetrl from a script, put its code "
                        "under `if __name__ == \"__main__\":`")
        return message

    def _receive(self, expect: str = _RESULT, timeout: float | None = None) -> Any:
        """The child's answer, waiting at most `timeout` seconds (None: forever)."""
        waited = 0.0
        while not self._conn.poll(0.1):
            waited += 0.1
            if not self._process.is_alive():
                raise EnvCrashed(self._death_message())
            if timeout is not None and waited >= timeout:
                raise EnvCrashed(f"environment process {self._process.pid} did not answer within "
                                 f"{timeout:g} s (hung or paused)")
        try:
            message, payload = self._conn.recv()
        except (EOFError, ConnectionResetError, OSError) as error:
            raise EnvCrashed(self._death_message()) from error
        if message == _ERROR:
            name, text, remote_tb = payload
            raise RemoteError(f"{name}: {text}\n--- traceback in the environment process ---\n{remote_tb}")
        if message != expect:
            raise RuntimeError(f"unexpected message {message!r} from the environment process")
        return payload

    def _getattr(self, name: str) -> Any:
        self._send(_GETATTR, name)
        return self._receive(timeout=self._timeout)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._getattr(name)

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call a method of the remote env and wait for its result."""
        self._send(_CALL, (name, args, kwargs))
        return self._receive(timeout=self._timeout)

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        return self.call("reset", **kwargs)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        return self.call("step", action)

    def step_async(self, action: Any) -> None:
        """Send a step without waiting; collect it with `step_wait`."""
        self._send(_CALL, ("step", (action,), {}))

    def step_wait(self) -> tuple[Any, float, bool, bool, dict]:
        """Wait for the result of the last `step_async`."""
        return self._receive(timeout=self._timeout)

    def render(self) -> Any:
        return self.call("render")

    def close(self) -> None:
        """Stop the child; safe to call many times, after a crash, or at exit."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self._atexit)
        try:
            self._conn.send((_CLOSE, None))
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass
        self._process.join(timeout=2.0)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(timeout=2.0)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(timeout=2.0)
        self._conn.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown may have torn down modules
            pass
