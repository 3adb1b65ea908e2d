"""The notebooks in notebooks/ run top to bottom with a real Jupyter kernel.

The database is built once for the module from the embedded sample (notebooks/_prepare.py:
ingest, every policy at its defaults, the example sweeps), each notebook gets it through a
papermill-style injected-parameters cell placed right after its ``parameters`` cell, and is
executed with nbclient. A notebook passes when no cell errors and it displays at least one PNG.

The kernel is ipykernel's own spec for the running interpreter (``sys.executable``), not
whatever ``python3`` kernelspec a user or system directory holds, so the notebooks run against
this checkout's ``replay`` and ``analysis``.
"""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
NOTEBOOKS = ["policy_comparison", "cost_vs_cache_hit", "threshold_tuning"]
CELL_TIMEOUT = 300  # seconds per cell; a cell takes about a second here


def _prepare_module():
    spec = importlib.util.spec_from_file_location("_notebooks_prepare", NB_DIR / "_prepare.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("notebooks") / "notebooks.duckdb"
    t0 = time.perf_counter()
    out = _prepare_module().prepare(path, quiet=True)
    assert out == path.resolve() and path.exists()
    assert (path.parent / "notebooks.duckdb.key").exists()
    print(f"prepare: {time.perf_counter() - t0:.1f}s")
    return path


def _parameters_index(nb) -> int:
    idx = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(idx) == 1, "exactly one cell tagged `parameters`"
    return idx[0]


def _execute(name: str, db: Path):
    nb = nbformat.read(NB_DIR / f"{name}.ipynb", as_version=4)
    i = _parameters_index(nb)
    injected = nbformat.v4.new_code_cell(f"DB = {json.dumps(str(db))}\nDATASET = \"sample\"")
    injected.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(i + 1, injected)
    # ipykernel's native spec: argv is this interpreter, whatever kernelspecs are installed
    km = KernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
    client = nbclient.NotebookClient(nb, km=km, timeout=CELL_TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(NB_DIR)}})
    client.execute(cleanup_kc=True)  # shut the kernel down even though we made its manager
    return nb


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_executes(name, db):
    t0 = time.perf_counter()
    nb = _execute(name, db)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, f"{name}: {errors[0].ename}: {errors[0].evalue}"
    pngs = [o for o in outputs if "image/png" in o.get("data", {})]
    assert pngs, f"{name}: no PNG displayed"
    # the injected path was used: the setup cell prints the database it opened
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert str(db.resolve()) in text
    print(f"{name}: {time.perf_counter() - t0:.1f}s, {len(pngs)} PNG(s)")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_stored_clean(name):
    """Committed without outputs, with a `parameters` cell holding DB and DATASET."""
    nb = nbformat.read(NB_DIR / f"{name}.ipynb", as_version=4)
    nbformat.validate(nb)
    for c in nb.cells:
        if c.cell_type == "code":
            assert c.outputs == [] and c.execution_count is None, f"{name}: stored with outputs"
    src = nb.cells[_parameters_index(nb)].source
    assert 'DB = "../out/notebooks.duckdb"' in src and 'DATASET = "sample"' in src


def test_prepare_default_path_and_idempotent(db):
    mod = _prepare_module()
    # a notebook's relative DB is relative to notebooks/, whatever the working directory
    assert mod.resolve("../out/notebooks.duckdb") == ROOT / "out" / "notebooks.duckdb"
    mtime = db.stat().st_mtime_ns
    assert mod.prepare(db, quiet=True) == db.resolve()
    assert db.stat().st_mtime_ns == mtime  # an existing database is left alone
    assert not list(db.parent.glob("*.partial*"))


@pytest.fixture(scope="module")
def noop_db(tmp_path_factory) -> Path:
    """Odd but valid: the sample with no policy run and no example sweep, only a no-op sweep over TTLs."""
    from click.testing import CliRunner

    from replay.cli import main

    d = tmp_path_factory.mktemp("notebooks-noop")
    path = d / "noop.duckdb"
    spec = d / "noop.toml"
    spec.write_text('name = "baselines"\npolicy = "noop"\n\n[cache]\nttl = ["log", "5m", "1h"]\n')
    for args in (["ingest", str(ROOT / "datasets" / "sample" / "logs"), "--db", str(path), "--dataset", "sample", "-q"],
                 ["sweep", str(spec), "--db", str(path), "--dataset", "sample"]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
    return path


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_executes_on_a_database_without_policy_runs(name, noop_db):
    nb = _execute(name, noop_db)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{name}: {errors[0].ename}: {errors[0].evalue}"


NEEDED_SWEEPS = {"policy_comparison": [],
                 "cost_vs_cache_hit": ["devboy_capacity.toml", "clear_tool_uses_trigger_keep.toml", "supersede_trigger.toml"],
                 "threshold_tuning": ["devboy_capacity.toml", "jp_min_bytes_lookback.toml",
                                      "clear_tool_uses_trigger_keep.toml", "supersede_trigger.toml"]}


def _cli(*args: str) -> None:
    from click.testing import CliRunner

    from replay.cli import main

    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 0, (args, r.output)


@pytest.fixture(scope="module")
def two_run_db(tmp_path_factory) -> Path:
    """Issue 29's acceptance database: the sample with a no-op and a devboy_lru run, no example sweep."""
    from replay.ingest.keys import load_or_create_master_key

    d = tmp_path_factory.mktemp("notebooks-two-runs")
    path, key = d / "two.duckdb", d / "key"
    load_or_create_master_key(key)
    _cli("ingest", str(ROOT / "datasets" / "sample" / "logs"), "--db", str(path), "--dataset", "sample", "-q",
         "--key-file", str(key))
    for policy in ("noop", "devboy_lru"):
        _cli("replay", "--db", str(path), "--dataset", "sample", "--policy", policy)
    return path


def _texts(nb) -> tuple[str, str]:
    """(printed text, text/plain of displayed values) of an executed notebook."""
    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    printed = "".join(o.get("text", "") for o in outs if o.output_type == "stream")
    shown = "\n".join(o["data"].get("text/plain", "") for o in outs if "data" in o)
    return printed, shown


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_on_a_noop_and_a_devboy_run_names_the_missing_sweeps(name, two_run_db):
    nb = _execute(name, two_run_db)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{name}: {errors[0].ename}: {errors[0].evalue}"
    printed, shown = _texts(nb)
    assert "Runs this notebook reads, on this database:" in printed and "policy runs against a baseline: 2" in printed
    for spec in NEEDED_SWEEPS[name]:  # each missing sweep: the command that creates it, ready to paste
        cmd = f"ctxreplay sweep {ROOT / 'examples' / spec} --db {two_run_db} --dataset sample"
        assert f"sweep {spec}: not run" in printed and cmd in printed, (spec, printed)
    assert "Empty DataFrame" not in shown  # a skipped section prints why, it does not show an empty table
    pngs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    if name != "threshold_tuning":  # the leaderboard and the price-ratio study need only the two runs
        assert pngs, f"{name}: no PNG displayed"
    if name == "policy_comparison":  # both runs have risk 0: a sentence instead of a one-column chart
        assert "so a chart of cost saved against risk would be a single column of points" in printed


def test_the_printed_command_creates_the_missing_run(noop_db, tmp_path):
    """On a database with baselines only, the command the notebook prints makes the run it asked for."""
    import shlex
    import shutil

    db = tmp_path / "copy.duckdb"
    shutil.copy(noop_db, db)
    nb = _execute("policy_comparison", db)
    printed, _ = _texts(nb)
    line = next(x for x in printed.splitlines() if "policy runs against a baseline: none" in x)
    cmds = line.split("create one with: ", 1)[1].split("   # or any policy")[0].split(" && ")
    assert len(cmds) == 2  # the baseline too: the stored ones are the sweep's, under other cache settings
    for cmd in map(shlex.split, cmds):
        assert cmd[0] == "ctxreplay" and str(db) in cmd
        _cli(*cmd[1:])
    printed, _ = _texts(_execute("policy_comparison", db))
    assert "policy runs against a baseline: none" not in printed and "skipped the leaderboard" not in printed


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> tuple[Path, dict]:
    """Issue 38's acceptance database: what `ctxreplay demo` writes (its sweep without the TTL axis),
    with the answer its report leads with (`--json`: the report's ``answer``)."""
    from click.testing import CliRunner

    from replay.cli import main

    d = tmp_path_factory.mktemp("notebooks-demo")
    r = CliRunner().invoke(main, ["demo", "--db", str(d / "demo.duckdb"), "--report", str(d / "report"), "--json"])
    assert r.exit_code == 0, r.output
    return d / "demo.duckdb", json.loads(r.stdout)  # warnings go to stderr


def test_notebooks_on_the_demo_database_draw_every_figure_and_recommend_what_the_report_does(demo_db):
    """The three notebooks run headless on the demo's own database: its devboy sweep is found (by
    its policy and spec file, not by an id recomputed from the spec's axes) and drawn, and the
    recommendation is the demo report's, word for word (`analysis.notebooks.report_answer`)."""
    from concurrent.futures import ThreadPoolExecutor

    db, summary = demo_db
    ans = summary["answer"]
    assert ans["verdict"] == "recommended" and summary["sweep"]["sweep_id"]
    with ThreadPoolExecutor(len(NOTEBOOKS)) as pool:  # one kernel each, side by side
        done = dict(zip(NOTEBOOKS, pool.map(lambda n: _execute(n, db), NOTEBOOKS)))
    pngs = {}
    for name, nb in done.items():
        outs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
        errors = [o for o in outs if o.output_type == "error"]
        assert not errors, f"{name}: {errors[0].ename}: {errors[0].evalue}"
        printed, shown = _texts(nb)
        assert "sweep devboy_capacity.toml: not run" not in printed and "skipped the devboy" not in printed, name
        pngs[name] = sum("image/png" in o.get("data", {}) for o in outs)
        if name != "cost_vs_cache_hit":  # the recommendation, printed by the same call as the report's
            assert ans["headline"] in printed.splitlines(), (name, ans["headline"])
    # leaderboard, cost vs risk, tools; price study twice + devboy heatmap; devboy line + heatmap
    assert pngs == {"policy_comparison": 3, "cost_vs_cache_hit": 3, "threshold_tuning": 2}, pngs
    printed, shown = _texts(done["threshold_tuning"])
    assert "devboy_capacity.toml" in shown and "recommended" in shown  # the sweep's best point, by the report's rules
