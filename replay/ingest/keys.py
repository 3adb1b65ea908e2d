"""Keyed content hashes and per-component path pseudonyms.

Every hash in a trace is keyed with a per-dataset secret derived from a master key that
lives outside the dataset (default ``$XDG_CONFIG_HOME/ctxreplay/key``, else
``~/.config/ctxreplay/key``, created on first use, overridable with ``--key-file`` or
``CTXREPLAY_KEY_FILE``, which must name an existing file). Without a home folder ($HOME unset
and no passwd entry, or a relative $HOME) the default path is an error (`NoHomeError`), never
a literal ``~`` folder under the working directory.
Equal contents give equal hashes inside one dataset, so deduplication still works, but
nobody without the key can confirm a guess of a short content ("ok", "PASSED", a path).
Losing the key only means that new ingests no longer join old ones: existing traces stay
valid.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import posixpath
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from replay.ingest.extensions import split_extension

KEY_ENV = "CTXREPLAY_KEY_FILE"


MAX_KEY_FILE_BYTES = 1024  # a key file is 65 bytes (64 hex digits and a newline)


class KeyFileError(ValueError):
    """A key file that cannot be used: named but missing, not a regular file, implausible content."""


class NoHomeError(KeyFileError):
    """No home folder to resolve ``~`` or a default path under it."""


def home_dir(needed_for: str = "the master key",
             instead: str = "or name an existing key file with --key-file or $CTXREPLAY_KEY_FILE") -> Path:
    """The user's home folder: $HOME, else the password database's entry. `NoHomeError` naming
    what it was ``needed_for`` and what to set ``instead`` when there is none, or $HOME is relative
    (``os.path.expanduser`` would leave ``~`` as it is, and a path under it would be created in
    the working directory)."""
    home = os.environ.get("HOME")
    why = ""
    if not home:
        try:
            import pwd

            home = pwd.getpwuid(os.getuid()).pw_dir
        except (ImportError, KeyError, OSError, AttributeError):
            home = None
        why = f"$HOME is unset and user id {os.getuid() if hasattr(os, 'getuid') else '?'} has no home in the " \
              "password database"
    elif not os.path.isabs(home):
        why = f"$HOME ({home!r}) is not an absolute path"
        home = None
    if not home or not os.path.isabs(home):
        raise NoHomeError(f"no home folder for {needed_for}: {why or 'no home in the password database'}; "
                          f"set $HOME, {instead}")
    return Path(home)


def expand_user(path: str | os.PathLike, needed_for: str = "the key file") -> Path:
    """``path`` with a leading ``~`` expanded (`NoHomeError` when there is no home folder)."""
    text = os.fspath(path)
    if text == "~" or text.startswith("~/"):
        return home_dir(needed_for, "or give the path without ~") / text[2:]
    return Path(os.path.expanduser(text)) if text.startswith("~") else Path(text)


def default_key_path() -> Path:
    env = os.environ.get(KEY_ENV)
    if env:
        return expand_user(env, f"${KEY_ENV}")
    return _config_key_path()


def _config_key_path() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):  # the XDG spec ignores a relative value
        return Path(xdg) / "ctxreplay" / "key"
    return home_dir("the master key (~/.config/ctxreplay/key)",
                    "or $XDG_CONFIG_HOME, or name an existing key file with --key-file or $CTXREPLAY_KEY_FILE") \
        / ".config" / "ctxreplay" / "key"


def open_master_key(key_file: Path | None = None, warn: Callable[[str], None] | None = None) -> bytes:
    """The master key for a command: from ``key_file`` (``--key-file``), else ``$CTXREPLAY_KEY_FILE``,
    else the default path. Only the default path is created on first use: a key file that is
    named but missing is an error, since a new key would silently stop later outputs from
    joining earlier ones. ``warn`` is called with each of `key_warnings`.
    """
    if key_file is not None:
        path = expand_user(key_file, "--key-file")
        key = load_or_create_master_key(path, create=False, named_by="--key-file")
    elif os.environ.get(KEY_ENV):
        path = default_key_path()
        key = load_or_create_master_key(path, create=False, named_by=f"${KEY_ENV}")
    else:
        path = _config_key_path()
        key = load_or_create_master_key(path, create=True)
    if warn is not None:
        for message in key_warnings(path, key):
            warn(message)
    return key


def key_warnings(path: Path, key: bytes) -> list[str]:
    """What makes a usable key file weak: one repeated byte (all zeros: anyone can recompute
    every pseudonym and confirm guessed contents), or a file other users may read."""
    out = []
    if len(set(key)) == 1:
        out.append(f"key file {path} holds one byte value repeated ({key[:1].hex()}): anyone can recompute its "
                   "pseudonyms; create a random key (delete the file to have one made) before sharing outputs")
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return out
    if mode & 0o044:
        who = "every user" if mode & 0o004 else "its group"
        out.append(f"key file {path} can be read by {who} (mode {stat.S_IMODE(mode):o}); "
                   f"restrict it with chmod 600 {path}")
    return out


_KINDS = {stat.S_IFIFO: "a named pipe (FIFO)", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


def load_or_create_master_key(path: Path | None = None, *, create: bool = True, named_by: str = "") -> bytes:
    """Read the master key; create a random one (mode 0600) on first use if ``create``.

    Only regular files of at most ``MAX_KEY_FILE_BYTES`` are read (never a FIFO or /dev/zero).
    """
    path = path or default_key_path()
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if not create:
            raise KeyFileError(
                f"key file {path} (given by {named_by or 'the caller'}) does not exist; check the path, or copy the "
                "key you ingested with there (a new key would not join earlier datasets)"
            ) from None
        return _create_key(path)
    if not stat.S_ISREG(st.st_mode):
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise KeyFileError(f"key file {path} is {kind}, not a key file; give the path of the key file itself")
    if st.st_size > MAX_KEY_FILE_BYTES:
        raise KeyFileError(
            f"key file {path} holds {st.st_size:,} bytes, too many for a key (65 expected); check the path"
        )
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the stat
            raise KeyFileError(f"key file {path} is not a regular file; give the path of the key file itself")
        data = os.read(fd, MAX_KEY_FILE_BYTES + 1)
    finally:
        os.close(fd)
    try:
        key = bytes.fromhex(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError) as e:
        raise KeyFileError(f"key file {path} is not hex ({e}); restore the key file, or delete it to create a "
                           "new key") from e
    if len(key) < 16:
        raise KeyFileError(f"key file {path} holds {len(key)} bytes; at least 16 are needed")
    return key


def _create_key(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key.hex() + "\n")
    return key


# `Keyring.short`'s results per dataset key; a full memo starts again, so identifiers of
# any length and number cost bounded memory
_SHORT_MEMO: dict[bytes, dict[tuple[str, str, int], str]] = {}
_SHORT_MEMO_MAX = 200_000
_PATH_MEMO: dict[bytes, dict[tuple[str, str | None], str]] = {}  # `Keyring.path`'s, as bounded


@dataclass(frozen=True)
class Keyring:
    """The hashing functions of one dataset."""

    dataset_key: bytes

    @classmethod
    def for_dataset(cls, master: bytes, dataset: str) -> "Keyring":
        return cls(hmac.new(master, b"ctxreplay/dataset/" + dataset.encode(), hashlib.sha256).digest())

    @property
    def fingerprint(self) -> str:
        """Identifies the key without revealing it, so a changed key is detected on re-ingest."""
        return hmac.new(self.dataset_key, b"fingerprint", hashlib.sha256).hexdigest()[:16]

    def content_hash(self, data: bytes) -> str:
        """Keyed 128-bit content hash (blake2b), hex."""
        return hashlib.blake2b(data, digest_size=16, key=self.dataset_key[:64]).hexdigest()

    def text_hash(self, text: str) -> str:
        return self.content_hash(text.encode("utf-8", "surrogatepass"))

    def text_hash_size(self, text: str, chunk: int = 1 << 20) -> tuple[str, int]:
        """(``text_hash(text)``, its UTF-8 size), a long text encoded piece by piece (no whole copy)."""
        if len(text) <= chunk:
            raw = text.encode("utf-8", "surrogatepass")
            return self.content_hash(raw), len(raw)
        h = hashlib.blake2b(digest_size=16, key=self.dataset_key[:64])
        size = 0
        for i in range(0, len(text), chunk):
            part = text[i:i + chunk].encode("utf-8", "surrogatepass")
            h.update(part)
            size += len(part)
        return h.hexdigest(), size

    def hasher(self):
        """An incremental `content_hash` (``update`` with bytes, then ``hexdigest``)."""
        return hashlib.blake2b(digest_size=16, key=self.dataset_key[:64])

    def short(self, label: str, value: str, n: int = 12) -> str:
        """A short keyed pseudonym for an identifier (session id, tool_use id, message id)."""
        # Memoized per key: ingest asks again and again for the same ids and path components
        # (a tool_use id at its call and its result, a message id per streamed part; about 104k
        # calls for 36k blocks on the shared entire-cli corpus).
        memo = _SHORT_MEMO.get(self.dataset_key)
        if memo is None or len(memo) >= _SHORT_MEMO_MAX:
            memo = _SHORT_MEMO[self.dataset_key] = {}
        k = (label, value, n)
        out = memo.get(k)
        if out is None:
            out = hashlib.blake2b(
                label.encode() + b"\0" + value.encode("utf-8", "surrogatepass"),
                digest_size=n // 2 if n % 2 == 0 else n // 2 + 1,
                key=self.dataset_key[:64],
            ).hexdigest()[:n]
            if len(value) <= 256:
                memo[k] = out
        return out

    def path(self, path: str, cwd: str | None = None) -> str:
        """Pseudonymize a path per component: same path -> same pseudonym, a/b stays under a.

        Relative paths are resolved against ``cwd`` first so the same file read by absolute
        and relative path gets one pseudonym. A component is pseudonymized whole; only an
        extension of the known-extension vocabulary is kept, lower-cased, for per-language
        breakdowns (`replay.ingest.extensions.split_extension`): the tail of a dotted user or
        host name is no extension.
        """
        if not path:
            return ""
        if not isinstance(path, str) or not isinstance(cwd, (str, type(None))):
            return self._path(path, cwd)  # fails as it always did (a reader skips the record)
        # memoized per key as `short` is: a session names the same files and folders again and again
        memo = _PATH_MEMO.get(self.dataset_key)
        if memo is None or len(memo) >= _SHORT_MEMO_MAX:
            memo = _PATH_MEMO[self.dataset_key] = {}
        out = memo.get((path, cwd))
        if out is None:
            out = self._path(path, cwd)
            if len(path) + len(cwd or "") <= 1024:
                memo[(path, cwd)] = out
        return out

    def _path(self, path: str, cwd: str | None) -> str:
        p = path.replace("\\", "/")
        if not p.startswith("/") and not p.startswith("~") and cwd:
            p = posixpath.join(cwd.replace("\\", "/"), p)
        p = posixpath.normpath(p)
        lead = "/" if p.startswith("/") else ""
        parts = []
        for comp in p.strip("/").split("/"):
            if comp in ("", "."):
                continue
            parts.append(self.short("path", comp, 10) + split_extension(comp)[1].lower())
        return lead + "/".join(parts)
