"""Help texts wrap only at spaces.

Click's wrapper also breaks after a hyphen and inside a word longer than the line, which split
paths, setting names and commands a reader copies (``docs/replay-`` / ``model.md``,
``~/.copilot/session-`` / ``state``); here a word longer than the line overflows it whole.
Imported by `replay.cli.common`, so every command's help has it.
"""

from __future__ import annotations


def words_whole() -> None:
    """Give click a wrapper that keeps words whole. Click looks its wrapper up at each call (8.x);
    elsewhere this changes nothing."""
    try:
        from click import _textwrap
    except ImportError:  # pragma: no cover - another click layout: its own wrapping stays
        return
    base = getattr(_textwrap, "TextWrapper", None)
    if base is None or getattr(base, "ctxreplay_words_whole", False):
        return

    class WordsWhole(base):
        ctxreplay_words_whole = True

        def __init__(self, *args, **kwargs):
            kwargs.setdefault("break_on_hyphens", False)
            kwargs.setdefault("break_long_words", False)
            super().__init__(*args, **kwargs)

    _textwrap.TextWrapper = WordsWhole


words_whole()
