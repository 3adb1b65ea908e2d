"""Path pseudonyms of the anonymizer, in two styles.

* ``"pseudonym"``: ``Keyring.path`` pseudonyms, resolved against the record's ``cwd`` as ingest
  resolves them, so they equal the ``resource`` column of a trace ingested with the same key;
* ``"words"``: each component becomes keyed vocabulary words with the same token count in
  the same context (after a slash, after punctuation), so every block keeps its token count.

Both keep equality and containment of paths: same component, same pseudonym.
"""

from __future__ import annotations

import random
import re
from typing import TYPE_CHECKING

from replay.ingest.identifiers import split_extension
from replay.ingest.keys import Keyring
from replay.ingest.tokens import count_many
from replay.privacy.fillers import Fillers
from replay.privacy.pseudonyms import Pseudonyms
from replay.privacy.vocabulary import is_offensive

if TYPE_CHECKING:
    from replay.privacy.summary import AnonymizeSummary

PATH_STYLES = ("pseudonym", "words")
_SEP_RX = re.compile(r"([/\\])")
_RUN_RX = re.compile(r"[^\W\d_]+|\d+|[\W_]+")  # letter runs, digit runs, punctuation runs


def _run_contexts(runs: list[str]) -> list[tuple[str, ...] | None]:
    """For each letter run, the prefixes its token count depends on (None: not a letter run).

    The first run is counted alone and after a slash; a later one after the single
    punctuation character before it (a tokenizer merges those), or alone.
    """
    ctxs: list[tuple[str, ...] | None] = []
    for i, r in enumerate(runs):
        if not r[0].isalpha():
            ctxs.append(None)
        elif i == 0:
            ctxs.append(("/", ""))
        else:
            prev = runs[i - 1]
            ctxs.append((prev,) if len(prev) == 1 and not prev.isdigit() else ("",))
    return ctxs


def _run_targets(runs: list[str], ctxs: list[tuple[str, ...] | None]) -> dict[tuple[int, int], int]:
    """Token count of run i after prefix j of its context, by (i, j), in one counting batch."""
    want = [(c[j] + r, (i, j)) for i, (r, c) in enumerate(zip(runs, ctxs)) if c for j in range(len(c))]
    return {ij: n for (_, ij), n in zip(want, count_many([w for w, _ in want]))}


class PathNamer:
    """Cached path pseudonyms of one run, in one style."""

    def __init__(self, keys: Keyring, style: str, pseudo: Pseudonyms, fillers: Fillers, summary: AnonymizeSummary):
        if style not in PATH_STYLES:
            raise ValueError(f"path_style must be one of {', '.join(PATH_STYLES)}, not {style!r}")
        self.style = style
        self.keys = keys
        self.prf = pseudo.prf
        self.fillers = fillers
        self.s = summary
        self.paths: dict[tuple[str, str | None], str] = {}
        self.comp_cache: dict[str, str] = {}
        self.comp_owner: dict[str, str] = {}  # pseudonym -> component: no two components share one
        self.word_tables: dict[tuple, dict[tuple[int, ...], list[str]]] = {}

    def path(self, v: str, cwd: str | None) -> str:
        # pseudonyms of relative paths depend on the cwd; word pseudonyms are per component
        key = (v, cwd) if self.style == "pseudonym" else (v, None)
        got = self.paths.get(key)
        if got is None:
            self.s.paths_replaced += 1
            if not v:
                got = ""
            elif self.style == "words":
                got = "".join(self.comp_words(c) if i % 2 == 0 else c for i, c in enumerate(_SEP_RX.split(v)))
            elif "\n" in v or len(v) > 4096:
                got = self.keyed_path(v.split("\n", 1)[0], cwd)
            elif not v.startswith(("/", "~", "\\")) and ".." not in _SEP_RX.split(v):
                # relative stays relative: per-component pseudonyms compose, so resolved
                # against the pseudonymized cwd it is the trace's pseudonym, and a path
                # written relative stays distinct from the same path written absolute
                got = self.keyed_path(v)
            else:
                got = self.keyed_path(v, cwd)
            self.paths[key] = got
        return got

    def keyed_path(self, v: str, cwd: str | None = None) -> str:
        """``Keyring.path``: the trace's pseudonym of the path."""
        return self.keys.path(v, cwd)

    def comp_words(self, comp: str) -> str:
        """Token-preserving keyed pseudonym of one path component (``path_style="words"``).

        Each letter run becomes a vocabulary word with the same case pattern and the same
        token count in the same context (after the slash or punctuation that precedes it),
        digit runs become random digits, punctuation and the extension stay. The candidate
        is checked as a whole, alone and after a slash. Same component, same pseudonym, so
        equality and containment of paths survive.
        """
        if comp in ("", ".", "..", "~"):
            return comp
        got = self.comp_cache.get(comp)
        if got is not None:
            return got
        stem, ext = split_extension(comp)
        target = tuple(count_many(["/" + comp, comp]))
        rng = random.Random(int.from_bytes(self.prf(b"pathword", comp.encode("utf-8", "surrogatepass"), 16), "big"))
        runs = [m.group(0) for m in _RUN_RX.finditer(stem)] if len(stem) <= 255 else []
        best = self._best_candidate(comp, runs, ext, target, rng)
        if best is None:
            best = self.keys.short("path", comp, 10) + ext
        self.comp_owner[best] = comp
        self.comp_cache[comp] = best
        return best

    def _best_candidate(self, comp: str, runs: list[str], ext: str, target: tuple[int, ...],
                        rng: random.Random) -> str | None:
        """Of up to 8 drawn candidates, the first with the component's token counts, else the
        closest; None when every candidate is the component itself or taken by another."""
        ctxs = _run_contexts(runs)
        run_targets = _run_targets(runs, ctxs)
        best, best_score = None, None
        for _attempt in range(8):
            cand = self._candidate(runs, ctxs, run_targets, rng) + ext
            owner = self.comp_owner.get(cand)
            if not runs or cand == comp or (owner is not None and owner != comp) or is_offensive(cand):
                continue
            got_counts = tuple(count_many(["/" + cand, cand]))
            score = abs(got_counts[0] - target[0]) + abs(got_counts[1] - target[1])
            if best is None or score < best_score:
                best, best_score = cand, score
            if score == 0:
                break
        return best

    def _candidate(self, runs: list[str], ctxs: list[tuple[str, ...] | None],
                   run_targets: dict[tuple[int, int], int], rng: random.Random) -> str:
        """One drawn stem: a word per letter run, random digits per digit run, punctuation kept."""
        out = []
        for i, r in enumerate(runs):
            c = ctxs[i]
            if c is None:
                out.append("".join(chr(48 + b % 10) for b in rng.randbytes(len(r))) if r[0].isdigit() else r)
                continue
            shape = "upper" if r.isupper() and len(r) > 1 else "cap" if r[0].isupper() else "lower"
            tgt = tuple(run_targets[(i, j)] for j in range(len(c)))
            out.append(self._run_word(c, shape, tgt, len(r), rng))
        return "".join(out)

    def _word_table(self, ctx: tuple[str, ...], shape: str) -> dict[tuple[int, ...], list[str]]:
        """Vocabulary words in a case shape, by their token counts after each prefix of ``ctx``."""
        key = (ctx, shape)
        table = self.word_tables.get(key)
        if table is None:
            f = self.fillers
            words = [w[1:] for L in f.lengths for w in f.vocab[L] if len(w) > 2]
            if shape == "upper":
                words = [w.upper() for w in words]
            elif shape == "cap":
                words = [w.capitalize() for w in words]
            cols = [count_many([q + w for w in words]) for q in ctx]
            table = {}
            for w, *cs in zip(words, *cols):
                table.setdefault(tuple(cs), []).append(w)
            self.word_tables[key] = table
        return table

    def _run_word(self, ctx: tuple[str, ...], shape: str, tgt: tuple[int, ...], nbytes: int, rng: random.Random) -> str:
        """A word (or CamelCase words) with the token counts ``tgt`` after the prefixes ``ctx``."""
        table = self._word_table(ctx, shape)
        for extra in range(0, 12):
            key = tuple(t - extra for t in tgt)
            cands = table.get(key)
            if cands:
                picks = [cands[rng.randrange(len(cands))] for _ in range(6)]
                head = min(picks, key=lambda w: abs(len(w) * (extra + 1) - nbytes))
                if not extra:
                    return head
                tail_table = self._word_table(("",), "cap")
                ones = tail_table.get((1,)) or [w for ws in tail_table.values() for w in ws]
                return head + "".join(ones[rng.randrange(len(ones))] for _ in range(extra))
        return self.fillers.pick([self.fillers.lmin + 2], rng)[0][1:]
