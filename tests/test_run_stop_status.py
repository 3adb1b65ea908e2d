"""A replay stopped by Ctrl-C or a stop signal is stored as ``interrupted`` (hostile-input audit,
2026-11-28: it was ``failed`` with the error "KeyboardInterrupt: ", while a killed one is listed
``interrupted``); a replay that raises is ``failed`` with its error."""

from __future__ import annotations

import pytest

from replay.experiments import runs


def test_stop_reason_tells_a_stop_from_a_failure():
    from replay.cli.common import Terminated

    assert runs.stop_reason(KeyboardInterrupt()) == ("interrupted", "interrupted (Ctrl-C)")
    assert runs.stop_reason(Terminated(15)) == ("interrupted", "stopped by a signal")
    assert runs.stop_reason(ValueError("bad")) == ("failed", "ValueError: bad")


@pytest.mark.parametrize("stop, status", [(KeyboardInterrupt, "interrupted"), (RuntimeError, "failed")])
def test_a_stopped_replay_is_stored_as_interrupted(tmp_path, monkeypatch, stop, status):
    from replay import store
    from replay.cli.demo import sample_logs_dir
    from replay.engine import ReplayOptions
    from replay.experiments.slices import load
    from replay.policies import build
    from replay.store.load import ingest

    db = tmp_path / "s.duckdb"
    ingest([sample_logs_dir()], db, master_key=b"k" * 32)
    con = store.connect(db)
    try:
        ds = load(con, "default")

        def boom(*a, **k):
            raise stop()

        monkeypatch.setattr(runs, "replay_session", boom)
        with pytest.raises(stop):
            runs.run_policy(con, ds, build("noop"), ReplayOptions())
        [got] = runs.list_runs(con)
        assert got["status"] == status and got["finished_at"] is not None
    finally:
        con.close()


def test_a_stop_inside_a_duckdb_statement_is_an_interruption_too():
    """Review (2026-11-28): DuckDB reports Ctrl-C inside a statement as RuntimeError("Query
    interrupted"); a run stopped there was stored as failed, and ingest's "what was kept" line
    was skipped."""
    from replay.cli.common import is_stop

    assert runs.stop_reason(RuntimeError("Query interrupted")) == ("interrupted", "interrupted (Ctrl-C)")
    assert is_stop(RuntimeError("Query interrupted")) and is_stop(KeyboardInterrupt())
    assert not is_stop(RuntimeError("other")) and runs.stop_reason(RuntimeError("other"))[0] == "failed"
