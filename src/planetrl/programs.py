"""How to call this installation's programs (planetrl, tensorboard) in a command printed for pasting.

A command planetrl prints must run as pasted from the directory the user is in: a bare name only
works when the environment's bin folder is on PATH, and `.venv/bin/...` only from the repository.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path


def program(name: str) -> str:
    """`name` as the shell should be given it from the current directory, quoted where needed.

    The program beside this Python is meant (the one installed with planetrl): its bare name where
    PATH finds that one, its path relative to here where it lies below here, else its absolute path.
    """
    beside = Path(sys.executable).parent / name
    if not beside.is_file():
        return name
    found = shutil.which(name)
    if found is not None and os.path.samefile(found, beside):
        return name
    relative = os.path.relpath(beside)
    return shlex.quote(str(beside) if relative.startswith("..") else relative)
