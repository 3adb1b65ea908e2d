"""Word lists of the anonymizer: the filler vocabulary and the sensitive terms kept out of it.

``filler_vocabulary()`` is the fixed set of one-token words fillers and path words are drawn
from; ``collect_sensitive_terms()`` reads the logs' owners' names (home directories, e-mail
addresses, hosts, branches) so that no filler word or pseudonym can spell one by chance.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from functools import lru_cache

import re2

from replay.ingest.tokens import count_many

# --- filler vocabulary ------------------------------------------------------------------

# English words of all lengths (written here) plus syllable words; only those that are
# one o200k token with a leading space are used, so a filler of n words is n tokens.
_ENGLISH = """a b c d e f g h i j k l m n o p q r s t u v w x y z
able about above access account across action active actual address advance after again against
allow almost alone along already also always amount analysis another answer anything apply approach
area around article artist assume attention author available average award balance based basic
battery beautiful because become before begin behavior behind believe benefit better between beyond
billion board body border bottom break bring brother budget building business button camera campaign
cancel capital capture career carry catch category cause center central century certain chance change
chapter character charge check child choice choose citizen claim class clear close coach
collection college color combine comfort command comment common community company compare complete
computer concern condition conference consider consumer contain content context continue contract
control corner correct country couple course court cover create credit culture current 
daughter debate decade decide decision defense degree deliver demand depend describe design detail
determine develop difference different difficult dinner direction director discover discuss 
display distance document double doubt dream drive during early economy edition editor education
effect effort eight either election element employee energy engine enjoy enough enter entire
environment equal escape especially establish evening every evidence exactly example exist expect
experience expert explain express factor family father feature federal feeling figure final
finally finance finger finish first floor flower follow force foreign forget former forward freedom
friend front function future garden general generation gentle government great ground growth guess
happen happy hardware health heart heavy height history holder hospital hotel house however human
hundred husband idea image impact important improve include increase indeed industry inside instead
interest interview island itself kitchen knowledge language large later launch lawyer leader learn
least leave legal length letter light listen little machine magazine major manage market matter maybe
measure media medical member memory mention method middle might million minute mission
modern moment money month morning mother motion mountain movement music myself nation natural nature
nearly necessary never news night normal north nothing notice object obvious offer office officer
often option organization other outside owner paper parent particular partner party pattern people
percent perform perhaps period person phone physical picture piece place planet plant player please
police policy popular position positive possible power practice prepare present president
pressure pretty prevent price print private problem produce product professor program property
protect prove provide public purpose quality question quickly quite radio range rather reach reader
ready reality reason receive recent reduce region relate remember represent require research resource
respond return reveal right river round rule safety scene school science screen season second
security select sense series serious seven several shadow shake share short should shoulder signal
silence simple simply since single sister situation skill small social society somebody
someone something sometimes south space speak special speech spend sport spring staff standard
statement station still story strategy street strong structure student study style subject success
sudden suffer suggest summer surface table teacher technology television temperature theory thing
thought thousand through throughout together tonight total toward town trade traditional
training travel treatment trial trouble truth under understand union until upon usually various video
village visit voice wait walk wall watch water weather week weight western whatever
whether which while white whole window winter within without woman wonder world worry write writer
wrong yard year young yourself""".split()


# Words a filler or a path pseudonym may never be (exact, lower case) or contain (roots):
# slurs, profanity, sexual and violent terms, in English and in the languages whose words
# the syllable generator happens to spell (it makes real words: "puta", "culo", "nazi").
# Checked on every candidate word (``filler_vocabulary``) and on every composed path word
# (``paths.PathNamer``); tests/test_anonymize.py holds an independent deny list.
_OFFENSIVE_WORDS = frozenset("""
anal anus arse ass bum butt boob boobs bomb bombs bitch cock coon crap culo cum cums cunt
dago dagos damn dead death dick die dies dildo dyke fag fags fuck fuk gay gook gun guns hell hoe
hoes homo homos hore hores jap japs jew jews kafir kike kill kills kkk lesbo molest moron nazi nazis
negro nigga nude nudes orgy paki pedo pene penes penis pimp piss poop porn puta putas puto putos
rape raped raper rapes sex sexy semen shit slut sperm spic tit tits titi twat vagina vulva wank
whore wop
""".split())
_OFFENSIVE_ROOTS = ("nazi", "rapist", "pedo", "porn", "fuck", "shit", "cunt", "nigg", "kike", "slut",
                    "whore", "dildo", "penis", "vagin", "pussy", "bitch", "hitler", "molest", "incest",
                    "jihad", "fagg", "retard", "sperm", "orgasm", "erotic", "hentai", "wank", "jizz",
                    "twat", "bastard", "nutsack", "scrot", "testic", "semen", "puta", "kafir")
_OFFENSIVE_RX = re.compile("|".join(_OFFENSIVE_ROOTS))


def is_offensive(word: str) -> bool:
    """Is ``word`` (any case, leading space ignored) or does it contain a denied term?"""
    w = word.strip().lower()
    return w in _OFFENSIVE_WORDS or bool(_OFFENSIVE_RX.search(w))


@lru_cache(maxsize=1)
def filler_vocabulary() -> tuple[dict[int, tuple[str, ...]], tuple[int, ...]]:
    """Words that are one o200k token with a leading space, by byte length (space included),
    and the lengths of space runs that are one token before such a word.

    Deterministic: a fixed candidate list (English words and seeded syllable words) filtered
    by the tokenizer the trace uses.
    """
    consonants, vowels, finals = "bcdfghjklmnprstvwz", "aeiou", "lnrst"
    cv = [c + v for c in consonants for v in vowels]
    cvc = [c + v + f for c in consonants for v in vowels for f in finals]
    cands = set(_ENGLISH) | set(cv) | set(cvc)
    for a in cv:
        for b in cv + cvc:
            cands.add(a + b)
    rng = random.Random(20260101)
    for _ in range(60000):
        n = rng.choice((3, 3, 4))
        cands.add("".join(rng.choice(cv if i < n - 1 else cv + cvc) for i in range(n)))
    words = sorted(" " + w for w in cands if not is_offensive(w))
    counts = count_many(words)
    by_len: dict[int, list[str]] = {}
    for w, c in zip(words, counts):
        if c == 1:
            by_len.setdefault(len(w), []).append(w)
    runs = [k for k, c in zip(range(1, 100), count_many(["x" + " " * k + " the" for k in range(1, 100)])) if c == 3]
    contiguous = []
    for k in runs:
        if k != len(contiguous) + 1:
            break
        contiguous.append(k)
    return {k: tuple(v) for k, v in sorted(by_len.items())}, tuple(contiguous)


# --- sensitive terms (defence for the filler and pseudonym alphabets) --------------------

_HOME_RX = re2.compile(rb"(?:/Users/|/home/|[A-Za-z]:(?:\\\\|\\)Users(?:\\\\|\\))([A-Za-z0-9._-]{2,64})")
_EMAIL_RX = re2.compile(rb"([A-Za-z0-9._%+-]{2,64})@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)")
_HOST_RX = re2.compile(rb"\b(?:https?|wss?|ssh|git|ftp|sftp)://(?:[^\s/@\"'<>]*@)?([A-Za-z0-9.-]{2,253})")
_BRANCH_RX = re2.compile(rb'"gitBranch"\s*:\s*"([^"\\]{1,200})"')


def collect_sensitive_terms(data: Iterable[bytes], min_len: int = 4) -> set[str]:
    """Words that identify the logs' owners: home-directory user names, e-mail local parts and
    domain labels, URL host labels, git branch names and their parts (lower case).

    The filler vocabulary drops words that contain one, and identifier pseudonyms that would
    contain one are re-drawn, so they cannot appear in the output by chance.
    """
    terms: set[str] = set()

    def add(raw: bytes | str, split: bool = False) -> None:
        s = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        s = s.lower()
        if len(s) >= min_len:
            terms.add(s)
        if split:
            for part in re.split(r"[/._\-@:+]", s):
                if len(part) >= min_len and not part.isdigit():
                    terms.add(part)

    for blob in data:
        for m in _HOME_RX.finditer(blob):
            add(m.group(1), split=True)
        for m in _EMAIL_RX.finditer(blob):
            add(m.group(1), split=True)
            add(m.group(2), split=True)
        for m in _HOST_RX.finditer(blob):
            add(m.group(1), split=True)
        for m in _BRANCH_RX.finditer(blob):
            add(m.group(1), split=True)
    return terms


def deny_pattern(terms: Iterable[str]) -> re2._Regexp | None:
    """One case-insensitive pattern matching any sensitive term (None when there are none)."""
    deny_l = sorted({d.lower() for d in terms if len(d) >= 3})
    return re2.compile("(?i)" + "|".join(re2.escape(d) for d in deny_l)) if deny_l else None
