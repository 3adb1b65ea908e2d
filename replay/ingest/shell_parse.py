"""A small POSIX-ish shell tokenizer: a script -> pipelines of simple commands.

Quotes, escapes, ``$(...)``/``${...}``/backticks kept inside words, redirections separated
from argv (stdout targets kept), here-document bodies attached to their command. Used by
:mod:`replay.ingest.shell` to classify the shell commands agents run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_REDIRECT_OPS = ("&>>", "&>", "<<<", "<<-", "<<", ">>", ">|", ">&", "<&", "<>", ">", "<")
_STDOUT_OPS = (">", ">>", ">|", "&>", "&>>")
_FD = re.compile(r"\s*[0-9-]+")


@dataclass
class Stage:
    """One simple command: its argv, stdout redirection targets and here-document bodies."""

    argv: list[str] = field(default_factory=list)
    out: list[str] = field(default_factory=list)
    heredoc: list[str] = field(default_factory=list)


def parse_script(script: str) -> list[list[Stage]]:
    """Split a shell script into pipelines of simple commands (argv, stdout targets, heredocs)."""
    return _Tokenizer(script).run()


class _Tokenizer:
    def __init__(self, script: str):
        self.s = script
        self.n = len(script)
        self.i = 0
        self.pipelines: list[list[Stage]] = []
        self.stages: list[Stage] = []
        self.cur = Stage()
        self.word: list[str] | None = None
        self.redirect: tuple[str, str] | None = None  # (operator, fd) waiting for its target word
        self.heredocs: list[tuple[str, Stage, bool]] = []

    def run(self) -> list[list[Stage]]:
        s, special = self.s, self._SPECIAL
        while self.i < self.n:
            ch = s[self.i]
            handler = special.get(ch)
            if handler is None:
                self._add(ch)
                self.i += 1
            else:
                handler(self, ch)
        self._end_pipeline()
        return self.pipelines

    # --- words, stages, pipelines -----------------------------------------------------------
    def _add(self, text: str) -> None:
        if self.word is None:
            self.word = []
        self.word.append(text)

    def _end_word(self) -> None:
        if self.word is None:
            return
        w = "".join(self.word)
        self.word = None
        if self.redirect is None:
            self.cur.argv.append(w)
            return
        op, fd = self.redirect
        self.redirect = None
        if op in ("<<", "<<-"):
            self.heredocs.append((w, self.cur, op == "<<-"))
        elif op in _STDOUT_OPS and fd in ("", "1") and not w.startswith("&"):
            self.cur.out.append(w)

    def _end_stage(self) -> None:
        self._end_word()
        if self.cur.argv or self.cur.out or self.cur.heredoc:
            self.stages.append(self.cur)
        self.cur = Stage()

    def _end_pipeline(self) -> None:
        self._end_stage()
        if self.stages:
            self.pipelines.append(self.stages)
        self.stages = []

    def _read_heredocs(self, pos: int) -> int:
        """Consume each pending here-document body; ``pos`` is just after a newline."""
        s, n = self.s, self.n
        for delim, stage, strip_tabs in self.heredocs:
            body = []
            while pos < n:
                j = s.find("\n", pos)
                line = s[pos:] if j < 0 else s[pos:j]
                pos = n if j < 0 else j + 1
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    break
                body.append(line)
            stage.heredoc.append("\n".join(body))
        self.heredocs.clear()
        return pos

    # --- quoting ----------------------------------------------------------------------------
    def _backslash(self, ch: str) -> None:
        i = self.i
        if i + 1 >= self.n:
            self._add(ch)
            self.i += 1
        elif self.s[i + 1] == "\n":
            self.i += 2
        else:
            self._add(self.s[i + 1])
            self.i += 2

    def _single_quote(self, ch: str) -> None:
        j = self.s.find("'", self.i + 1)
        j = self.n if j < 0 else j
        self._add(self.s[self.i + 1 : j])
        self.i = j + 1

    def _double_quote(self, ch: str) -> None:
        s, n = self.s, self.n
        j = self.i + 1
        buf = []
        while j < n and s[j] != '"':
            if s[j] == "\\" and j + 1 < n and s[j + 1] in '"\\$`\n':
                buf.append(s[j + 1])
                j += 2
                continue
            buf.append(s[j])
            j += 1
        self._add("".join(buf))
        self.i = j + 1

    def _dollar(self, ch: str) -> None:
        s, n, i = self.s, self.n, self.i
        if not (i + 1 < n and s[i + 1] in "({"):
            self._add(ch)
            self.i += 1
            return
        opening = s[i + 1]
        close = ")" if opening == "(" else "}"
        depth, j = 0, i + 1
        while j < n:
            if s[j] == opening:
                depth += 1
            elif s[j] == close:
                depth -= 1
                if depth == 0:
                    break
            j += 1
        self._add(s[i : j + 1])
        self.i = j + 1

    def _backtick(self, ch: str) -> None:
        j = self.s.find("`", self.i + 1)
        j = self.n if j < 0 else j
        self._add(self.s[self.i : j + 1])
        self.i = j + 1

    def _hash(self, ch: str) -> None:
        if self.word is not None:
            self._add(ch)
            self.i += 1
            return
        j = self.s.find("\n", self.i)
        self.i = self.n if j < 0 else j

    # --- redirections and operators ------------------------------------------------------------
    def _redirection(self, ch: str) -> None:
        fd = ""
        if self.word is not None and "".join(self.word).isdigit():
            fd = "".join(self.word)
            self.word = None
        self._end_word()
        op = next(op for op in _REDIRECT_OPS if self.s.startswith(op, self.i))
        self.i += len(op)
        if op in (">&", "<&"):
            # fd duplication (2>&1): the target is a descriptor, not a file
            m = _FD.match(self.s, self.i)
            if m:
                self.i = m.end()
                return
            op = ">" if op == ">&" else "<"
        self.redirect = (op, fd)

    def _blank(self, ch: str) -> None:
        self._end_word()
        self.i += 1

    def _newline(self, ch: str) -> None:
        self._end_pipeline()
        self.i = self._read_heredocs(self.i + 1) if self.heredocs else self.i + 1

    def _pipe(self, ch: str) -> None:
        s, i = self.s, self.i
        if s.startswith("||", i):
            self._end_pipeline()
            self.i += 2
        else:
            self._end_stage()
            self.i += 2 if s.startswith("|&", i) else 1

    def _separator(self, ch: str) -> None:
        self._end_pipeline()
        self.i += 2 if self.s.startswith(";;", self.i) else 1

    def _ampersand(self, ch: str) -> None:
        if self.s.startswith("&>", self.i):
            self._redirection(ch)
            return
        self._end_pipeline()
        self.i += 2 if self.s.startswith("&&", self.i) else 1

    _SPECIAL = {
        "\\": _backslash, "'": _single_quote, '"': _double_quote, "$": _dollar, "`": _backtick, "#": _hash,
        "<": _redirection, ">": _redirection, " ": _blank, "\t": _blank, "\n": _newline, "|": _pipe,
        ";": _separator, "(": _separator, ")": _separator, "&": _ampersand,
    }
