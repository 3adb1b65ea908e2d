import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from replay.cli import main

ARTIFACTS = Path(os.environ.get("CTXREPLAY_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "out" / "test-artifacts"))


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    d = tmp_path_factory.mktemp("demo")
    r = CliRunner().invoke(main, ["demo", "--db", str(d / "demo.duckdb"), "--report", str(d / "report")])
    assert r.exit_code == 0, r.output
    return d


def test_report_files_and_offline_html(demo):
    html = (demo / "report" / "index.html").read_text()
    md = (demo / "report" / "report.md").read_text()
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", html), "the report must not load anything from the network"
    assert "http://" not in html and "https://" not in html
    for section in ("## Dataset", "## Baseline fidelity", "## Leaderboard", "## Cost saved vs risk", "## Sweeps",
                    "## Tool results by tool", "## Risk", "## Recommendation", "## Reproducibility"):
        assert section in md
    assert html.count("data:image/png;base64,") >= 5
    assert "Objective: minimize **cost**" in md and "Recommended: **" in md


def test_report_numbers_match_compare_json(demo):
    _check_numbers(demo / "demo.duckdb", demo / "report")


def test_shared_corpus_report_after_every_policy(tmp_path):
    from conftest import shared_logs
    from replay.policies import REGISTRY

    logs = shared_logs("claude-code")
    db = str(tmp_path / "cc.duckdb")
    runner = CliRunner()
    assert runner.invoke(main, ["ingest", str(logs), "--db", db, "-q"]).exit_code == 0
    for name in sorted(REGISTRY):
        if name != "pipeline":
            r = runner.invoke(main, ["replay", "--db", db, "--policy", name])
            assert r.exit_code == 0, (name, r.output)
    r = runner.invoke(main, ["report", "--db", db, "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "http://" not in html and "https://" not in html
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Objective: minimize **cost**" in md and "Recommended: **" in md
    _check_numbers(Path(db), tmp_path / "rep")


def _check_numbers(db: Path, rep: Path) -> None:
    r = CliRunner().invoke(main, ["compare", "--db", str(db), "--json"])
    rows = json.loads(r.output)
    md = (rep / "report.md").read_text()
    leaderboard = md.split("## Leaderboard")[1].split("\n## ")[0]
    table = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")]
             for line in leaderboard.splitlines() if line.startswith("| ") and len(line.split("|")[1].strip()) >= 12}
    checked = 0
    for row in rows:
        cells = table[row["run_id"]]
        f = row["figures"]
        assert cells[3] == f"{f['cost']:,.2f}"
        assert cells[5] == f"{f['context_tokens']:,.0f}"
        assert cells[7] == f"{f['tokens_delivered']:,.0f}"
        assert cells[9] == f"{f['busts']:,.0f}"
        if row.get("saved_pct"):
            assert cells[4] == f"{100 * row['saved_pct']['cost']:+.2f}%"
        checked += 1
    assert checked == len(rows) >= 8


def test_report_renders_in_headless_chromium(demo):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_bin = shutil.which("chromedriver")
    if not (chromium and driver_bin):
        if os.environ.get("CI") == "true":
            pytest.fail("chromium and chromedriver must be installed in CI (.ci/run installs them)")
        pytest.skip("chromium/chromedriver not installed (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--window-size=1200,900", f"--user-data-dir={demo / 'chrome-profile'}"):
        opts.add_argument(a)
    drv = webdriver.Chrome(service=Service(driver_bin), options=opts)
    try:
        drv.get((demo / "report" / "index.html").as_uri())
        state = drv.execute_script(
            "const imgs=[...document.images];"
            "return {n: imgs.length, loaded: imgs.filter(i => i.complete && i.naturalWidth > 0).length,"
            " text: document.body.innerText.length, h: document.body.scrollHeight};")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "report.png"
        drv.set_window_size(1200, min(int(state["h"]) + 50, 12000))
        drv.save_screenshot(str(shot))
    finally:
        drv.quit()
    assert state["n"] >= 5 and state["loaded"] == state["n"], state
    assert state["text"] > 2000, "page is blank"
    from PIL import Image

    im = Image.open(shot).convert("L")
    hist = im.histogram()
    assert max(hist) < 0.97 * sum(hist), "screenshot is a single colour"
