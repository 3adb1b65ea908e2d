from pathlib import Path

from replay.cli.docgen import render_cli, render_policies

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_cli_reference_is_current():
    assert (DOCS / "cli.md").read_text() == render_cli(), "run: python -m replay.cli.docgen"


def test_policy_catalogue_is_current():
    assert (DOCS / "policies.md").read_text() == render_policies(), "run: python -m replay.cli.docgen"
