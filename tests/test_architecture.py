"""The layering of docs/architecture.md as a checked contract.

Each room (sub-package of `replay/`, and `analysis/`) may import only the rooms listed for it;
a lower room importing a higher one fails here, with the file, line and import named.
Imports inside functions count too: a lazy import is still a dependency.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# room -> rooms it may import (besides itself and the bare `replay` package for __version__)
ALLOWED: dict[str, set[str]] = {
    "ingest": set(),
    "store": {"ingest"},
    "model": {"ingest", "store"},
    "policies": {"ingest", "model"},
    "engine": {"ingest", "model", "policies"},
    "experiments": {"ingest", "store", "model", "policies", "engine"},
    "privacy": {"ingest"},
    "synth": {"ingest"},
    "analysis": {"ingest", "store", "model", "policies", "engine", "experiments"},
    "cli": {"ingest", "store", "model", "policies", "engine", "experiments", "privacy", "synth", "analysis"},
}


def room_of_module(name: str) -> str | None:
    parts = name.split(".")
    if parts[0] == "analysis":
        return "analysis"
    if parts[0] == "replay" and len(parts) > 1 and parts[1] in ALLOWED:
        return parts[1]
    return None  # the bare package (`replay.__version__`) or a top-level module


def modules():
    for top in ("replay", "analysis"):
        for path in sorted((ROOT / top).rglob("*.py")):
            yield path, ".".join(path.relative_to(ROOT).with_suffix("").parts)


def imported(path: Path, modname: str):
    tree = ast.parse(path.read_text(), str(path))
    package = modname.rsplit(".", 1)[0] if path.name != "__init__.py" else modname
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "replay":  # `from replay import store` names a room
                for alias in node.names:
                    yield node.lineno, f"replay.{alias.name}"
            else:
                yield node.lineno, target


def test_rooms_are_known():
    rooms = {p.name for p in (ROOT / "replay").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert rooms <= set(ALLOWED), f"new room(s) {rooms - set(ALLOWED)}: add them to ALLOWED and docs/architecture.md"
    assert len(rooms) >= 4


def test_no_room_imports_a_higher_one():
    bad = []
    for path, mod in modules():
        room = room_of_module(mod)
        if room is None:  # replay/__init__.py
            continue
        for line, target in imported(path, mod):
            other = room_of_module(target)
            if target.split(".")[0] not in ("replay", "analysis") or other is None or other == room:
                continue
            if other not in ALLOWED[room]:
                bad.append(f"{path.relative_to(ROOT)}:{line} ({room}) imports {target} ({other})")
    assert not bad, "layering broken:\n" + "\n".join(bad)


def test_the_check_catches_an_upward_import(tmp_path):
    # the checker itself must see relative, absolute, `from replay import x` and lazy imports
    src = "from replay import store\ndef f():\n    from ..engine import loop\n"
    p = tmp_path / "x.py"
    p.write_text(src)
    got = [t for _, t in imported(p, "replay.model.x")]
    assert got == ["replay.store", "replay.engine"]


def test_module_sizes_and_top_level():
    big = [f"{p.relative_to(ROOT)}: {n}" for p, _ in modules() if (n := len(p.read_text().splitlines())) > 500]
    assert not big, "modules over 500 lines:\n" + "\n".join(big)
    top = [p.name for p in (ROOT / "replay").glob("*.py")]
    assert len(top) <= 8, top
