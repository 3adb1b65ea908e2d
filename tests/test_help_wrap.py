"""Help texts wrap only between words (newcomer's hour, 2026-11-28): click's wrapper broke after
hyphens and inside long words, splitting what a reader copies (``docs/replay-`` / ``model.md``,
``~/.copilot/session-`` / ``state``, ``input/cache_wr`` / ``ite_5m``)."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from replay.cli import main

COMMANDS = sorted(main.commands)
# words worth keeping whole: paths, option-like and snake_case names, hyphenated words
_KEEP = re.compile(r"[\w.~$/-]*[-/_][\w.~$/-]*\w")


def _source_words(cmd: click.Command) -> set[str]:
    texts = [cmd.help or ""] + [p.help or "" for p in cmd.params if isinstance(p, click.Option)]
    return {w for t in texts for w in _KEEP.findall(t) if len(w) > 3}


@pytest.mark.parametrize("width", [40, 80])
@pytest.mark.parametrize("name", COMMANDS)
def test_help_never_splits_a_word(name, width):
    r = CliRunner().invoke(main, [name, "--help"], terminal_width=width)
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    cut = sorted(w for w in _source_words(main.commands[name]) if w not in flat)
    assert not cut, f"{name} --help at {width} columns splits {cut[:5]}"


def test_the_check_sees_a_split():
    """The wrapper as click ships it does split such words: the test above would see it."""
    from click import _textwrap

    base = _textwrap.TextWrapper.__mro__[1]  # click's own, under ctxreplay's
    assert base.__name__ == "TextWrapper" and base is not _textwrap.TextWrapper
    text = base(20).fill("see docs/replay-model.md for the rules")
    assert "docs/replay-model.md" not in " ".join(text.split())
    assert "docs/replay-model.md" in " ".join(_textwrap.TextWrapper(20).fill("see docs/replay-model.md for").split())
