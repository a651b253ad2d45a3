"""Is a repetition's output the thing asked for? A fast but broken stack must not look like a winner.

The check is deliberately structural (markup + script, not degenerate): it
cannot tell a good game from a bad one, but it catches empty output, prose
instead of code, and the repetition loops a broken kernel or sampler produces.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

_MARKUP = re.compile(r"<!doctype html|<html[\s>]|<canvas[\s>]|<body[\s>]", re.IGNORECASE)
_SCRIPT = re.compile(r"<script[\s>]", re.IGNORECASE)
_WORD = re.compile(r"\S+")

# A shingle of this many words repeated this often, covering this share of the
# text, is a loop; ordinary code repeats short lines but not 12-word runs at that rate.
SHINGLE_WORDS = 12
MIN_REPEATS = 6
MIN_COVERAGE = 0.4


@dataclass(frozen=True)
class OutputCheck:
    ok: bool
    flags: list[str] = field(default_factory=list)


def check_output(text: str, *, expect_html: bool = True) -> OutputCheck:
    """Return ok=False with flags naming each problem: ``empty_output``,
    ``no_html_markup``, ``no_script``, ``repeated_ngram``, ``repeated_chars``."""
    flags: list[str] = []
    if not text.strip():
        return OutputCheck(ok=False, flags=["empty_output"])
    if expect_html:
        if not _MARKUP.search(text):
            flags.append("no_html_markup")
        if not _SCRIPT.search(text):
            flags.append("no_script")
    if is_repetitive(text):
        flags.append("repeated_ngram")
    elif has_char_loop(text):
        flags.append("repeated_chars")
    return OutputCheck(ok=not flags, flags=flags)


def is_repetitive(text: str, *, n: int = SHINGLE_WORDS) -> bool:
    """Return True when one ``n``-word shingle repeats MIN_REPEATS+ times and its
    repeats cover MIN_COVERAGE of the words."""
    words = _WORD.findall(text)
    if len(words) < n * MIN_REPEATS:
        return False
    counts = Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
    _, top = counts.most_common(1)[0]
    return top >= MIN_REPEATS and top * n >= MIN_COVERAGE * len(words)


def has_char_loop(text: str, *, tail: int = 2000, max_period: int = 64, min_repeats: int = 20) -> bool:
    """Return True when the text ends in one short substring repeated many times
    (loops with no spaces, which the word check cannot see)."""
    end = text[-tail:]
    for period in range(1, max_period + 1):
        if len(end) < period * min_repeats:
            break
        unit = end[-period:]
        if unit.strip() and end.endswith(unit * min_repeats):
            return True
    return False
