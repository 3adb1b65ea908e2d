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
