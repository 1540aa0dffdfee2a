"""Every `planetrl` command the README and the Makefile show is one the command line accepts.

The commands themselves run in the tests of their parts (train, eval, sweep, ...); this catches a renamed
flag, a preset or PPO config that no longer exists, or a subcommand that moved, in the text a user copies.
"""

import re
import shlex
from pathlib import Path

import pytest

from planetrl.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def _shell_blocks(text: str) -> list[str]:
    """The fenced code blocks that are not Python (shell, or no language named)."""
    blocks, language, lines = [], None, []
    for line in text.splitlines():
        if line.strip().startswith("```"):
            if language is None:
                language = line.strip()[3:] or "sh"
            else:
                if language != "python":
                    blocks.append("\n".join(lines))
                language, lines = None, []
        elif language is not None:
            lines.append(line)
    return blocks


def _planetrl_argv(line: str) -> list[str] | None:
    """The arguments after `planetrl` on a shell line, or None if the line does not run planetrl."""
    words = shlex.split(line, comments=True)
    for index, word in enumerate(words):
        if word == "planetrl" or word.endswith("/planetrl"):
            return words[index + 1:]
    return None


def readme_commands() -> list[list[str]]:
    commands = []
    for block in _shell_blocks((ROOT / "README.md").read_text()):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            argv = _planetrl_argv(line)
            if argv is not None:
                commands.append(argv)
    return commands


def makefile_commands() -> list[list[str]]:
    lines = (ROOT / "Makefile").read_text().splitlines()
    found = [_planetrl_argv(line.replace("$(BIN)/", "").replace("$(LOGDIR)", "runs/x")) for line in lines]
    return [argv for argv in found if argv is not None]


def test_the_readme_shows_the_commands_a_user_needs():
    shown = {tuple(argv[:2]) if argv[0] in ("ppo", "results") else (argv[0],) for argv in readme_commands()}
    for command in [("tasks",), ("train",), ("eval",), ("visualize",), ("collect",), ("config",), ("sweep",),
                    ("status",), ("report",), ("ppo", "train"), ("ppo", "visualize"), ("results", "export"),
                    ("results", "table")]:
        assert command in shown, f"the README shows no `planetrl {' '.join(command)}`"
    assert makefile_commands(), "the Makefile's run target runs no planetrl command"


@pytest.mark.parametrize("argv", readme_commands() + makefile_commands(), ids=lambda argv: " ".join(argv)[:60])
def test_each_shown_command_parses(argv):
    parser = build_parser()
    try:
        parser.parse_args(argv)
    except SystemExit as error:  # argparse's way of refusing a flag, a choice or a subcommand
        pytest.fail(f"`planetrl {shlex.join(argv)}` is refused by the command line (exit {error.code})")
