"""What a machine's own paths and ports become in a record another machine reads: a
command line, a log tail, a campaign's definition. A path names a file on the
recording machine (its home folder's cache, a checkout's virtual environment, a
temporary folder); on a public page, or copied onto another rig, only the file's
name means anything (a model is told apart by its sha256, shown beside it). A
loopback port was picked by the harness for that run and means nothing elsewhere.

Pure: no Django. The service renders every recorded command line and log through
``portable_text``; ``scripts/scrub_demo_paths.py`` stores the demo data with it."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

# The top folders a machine keeps its files under (an HTTP route such as
# /v1/chat/completions in a server log is not one of them).
_ROOTS = (
    "root", "home", "tmp", "work", "var", "opt", "usr", "mnt", "media", "srv", "data", "nix",
    "Users", "private", "run", "scratch", "workspace", "models", "app", "build", "content",
)  # fmt: skip
# An absolute POSIX path under one of them (or ~/…), or a Windows one, up to the next
# space, quote, comma, bracket or backslash escape: what the rig, its shell and its logs write.
_POSIX_PATH = re.compile(
    # (after a JSON escape such as "\n" too: a log tail as its document stores it)
    r"""(?:(?<![\w.:/~-])|(?<=\\[nt]))(?:~|/(?:""" + "|".join(_ROOTS) + r"""))(?:/[^\s"'`,;()\[\]{}<>\\|=]*)+"""
)
_WINDOWS_PATH = re.compile(r"""(?<![\w])[A-Za-z]:\\(?:[^\s"'`,;()\[\]{}<>|\\]+\\)*[^\s"'`,;()\[\]{}<>|\\]*""")
# A loopback address with the port the harness picked.
_LOOPBACK_PORT = re.compile(r"\b(127\.0\.0\.1|localhost|0\.0\.0\.0|\[::1\]):\d{2,5}\b")
_PORT_FLAG = re.compile(r"(--port[ =])\d{2,5}\b")
# What a port reads as once it is not this machine's.
PORT = "PORT"
# What the recommended command line listens on: llama-server's own default.
DEFAULT_PORT = 8080


def file_name(path: str) -> str:
    """Return the last part of ``path`` (``path`` itself when it has no folder)."""
    name = re.split(r"[\\/]", path.rstrip("/\\"))[-1]
    return name or path


def _path_name(match: re.Match[str]) -> str:
    # A URL's path (https://host/tmp/x) is not a machine path: the lookbehind keeps "//host/…" out.
    return file_name(match.group(0))


def portable_text(text: str, *, ports: bool = True) -> str:
    """Return ``text`` with every absolute path replaced by its file name and, with
    ``ports``, every loopback port (``127.0.0.1:41234``, ``--port 41234``) by ``PORT``."""
    if not text or not isinstance(text, str):
        return text
    text = _WINDOWS_PATH.sub(_path_name, text)
    text = _POSIX_PATH.sub(_path_name, text)
    if not ports:
        return text
    text = _LOOPBACK_PORT.sub(rf"\1:{PORT}", text)
    return _PORT_FLAG.sub(rf"\g<1>{PORT}", text)


def portable_argv(argv: Sequence[str]) -> list[str]:
    """Return a command line's arguments with the binary and every path argument by
    file name (``llama-server --model gemma.gguf``): what a reader types on their rig."""
    return [file_name(a) if _POSIX_PATH.fullmatch(a) or _WINDOWS_PATH.fullmatch(a) else a for a in argv]


def portable_command_line(argv: Sequence[str]) -> str:
    """Return ``argv`` as one shell-quoted line, portable (``portable_argv``)."""
    return shlex.join(portable_argv(argv))


def has_machine_path(text: str, *, ports: bool = True) -> bool:
    """Return whether ``text`` holds an absolute path or (with ``ports``) a loopback port."""
    if _POSIX_PATH.search(text) or _WINDOWS_PATH.search(text):
        return True
    return ports and bool(_LOOPBACK_PORT.search(text) or _PORT_FLAG.search(text))
