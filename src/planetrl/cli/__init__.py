"""The `planetrl` command line: parsing, dispatch, and one-line errors (`-v` anywhere shows the traceback)."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import logging
import signal
import sys
import threading
from collections.abc import Iterator, Sequence

import planetrl
from planetrl import config as config_lib
from planetrl.cli import console
from planetrl.cli.common import take_imports
from planetrl.cli.experiment_commands import add_experiment_commands, add_results_commands
from planetrl.cli.planet_commands import add_collection_commands, add_training_commands
from planetrl.cli.ppo_commands import add_ppo_commands

__all__ = ["build_parser", "main"]


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""`kill PID`, and the hang-up a closing terminal sends: each stops a command as Ctrl-C does."""


class Terminated(KeyboardInterrupt):
    """A stop signal, taken as Ctrl-C is: the run lets go of its claim and closes its environments."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def _stop_signals_stop_cleanly() -> Iterator[None]:
    """Without this, SIGTERM or SIGHUP ended the process at once: no message, its claim (PING) left behind.
    Only the main thread can take signals, so elsewhere (a test calling `main`) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, _terminate) for signum in STOP_SIGNALS
                if signal.getsignal(signum) is not signal.SIG_IGN}  # `nohup` ignores SIGHUP: so does the run
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def build_parser() -> argparse.ArgumentParser:
    """Every command and option, each with its help."""
    parser = argparse.ArgumentParser(
        prog="planetrl", description="Model-based RL from pixels: PlaNet world models and CEM planning.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages and show tracebacks")
    parser.add_argument("--import", dest="imports_help", metavar="MODULE", action="append",
                        help="import a module that registers tasks (anywhere on the command line; repeatable; "
                             "saved with the run)")
    parser.add_argument("--version", action="version", version=f"planetrl {planetrl.__version__}",
                        help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help="what to do")

    add_collection_commands(commands)
    add_training_commands(commands)
    add_ppo_commands(commands)
    add_results_commands(commands)
    add_experiment_commands(commands)
    return parser


def _command_name(args: argparse.Namespace) -> str:
    """The command as typed, its subcommand included (`ppo train`, `results table`)."""
    sub = getattr(args, f"{args.command}_command", None)
    return f"{args.command} {sub}" if sub else args.command


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command as typed (`ppo train`'s, not the top level's)."""
    for name in (args.command, getattr(args, f"{args.command}_command", None)):
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if name is None or not subparsers or name not in subparsers[0].choices:
            break
        parser = subparsers[0].choices[name]
    return parser


def _refuse_unknown(parser: argparse.ArgumentParser, args: argparse.Namespace, unknown: list[str]) -> None:
    """argparse's 'unrecognized arguments', said by the command's own parser with the options close to a typo."""
    command = _command_parser(parser, args)
    options = [flag for action in command._actions for flag in action.option_strings]
    hints = [f"{arg.split('=', 1)[0]}: did you mean {', '.join(close)}?" for arg in unknown if arg.startswith("--")
             for close in [difflib.get_close_matches(arg.split("=", 1)[0], options, n=2, cutoff=0.6)] if close]
    command.error(f"unrecognized arguments: {' '.join(unknown)}" + ("; " + "; ".join(hints) if hints else ""))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = any(a in ("-v", "--verbose") for a in argv)  # -v works anywhere on the command line
    try:
        argv = take_imports(argv)
    except (config_lib.ConfigError, ValueError) as error:
        if verbose:
            raise
        print(f"planetrl: error: {error} (run with -v for the traceback)", file=sys.stderr)
        return 2
    args, unknown = parser.parse_known_args([a for a in argv if a not in ("-v", "--verbose")])
    if unknown:
        _refuse_unknown(parser, args, unknown)
    args.verbose = verbose
    with console.kept_alive(getattr(args, "works_without_console", False)):
        return _dispatch(args)


def _dispatch(args: argparse.Namespace) -> int:
    """Run the parsed command; its errors become one line (a traceback with -v)."""
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:  # third-party INFO lines (rendering back ends) would land inside tables
        for noisy in ("absl", "OpenGL", "matplotlib"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        with _stop_signals_stop_cleanly():
            return args.func(args)
    except (config_lib.ConfigError, ValueError, OSError, RuntimeError, ImportError) as error:
        if isinstance(error, BrokenPipeError) and console.stdout_is_closed():
            console.quiet_stdout()  # as `head` and `grep -q` expect of a command: stop quietly when nobody reads
            return 128 + signal.SIGPIPE
        if args.verbose:
            raise
        message = " ".join(str(error).split()) or type(error).__name__
        print(f"planetrl {_command_name(args)}: error: {message} (run with -v for the traceback)", file=sys.stderr)
        return 2
    except Terminated as stop:
        resumes = args.command in ("train", "sweep") or getattr(args, "ppo_command", None) == "train"
        name = signal.Signals(stop.signum).name
        print(f"stopped by {name}" + ("; the same command resumes" if resumes else ""), file=sys.stderr)
        return 128 + stop.signum
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
