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
    r = CliRunner().invoke(main, ["demo", "--db", str(d / "demo.duckdb"), "--report", str(d / "report"), "--json"])
    assert r.exit_code == 0, r.output

    def bad(c):
        raise ValueError(f"not strict JSON: {c}")

    summary = json.loads(r.stdout, parse_constant=bad)  # --json: the summary alone on stdout, strict
    assert summary["db"] == str(d / "demo.duckdb") and summary["report"] == str(d / "report" / "index.html")
    assert summary["ingest"]["sessions"] > 0 and "noop" in summary["policies"] and summary["answer"]["headline"]
    assert set(summary["fidelity"]) >= {"calibrated", "model_only"}
    # the embedded sample is synthetic, and the summary says so
    assert summary["synthetic"] is True and "Synthetic data" in summary["notice"]
    assert "illustrate the pipeline, not what real logs save" in summary["notice"]
    return d


def test_demo_report_says_the_data_is_synthetic_on_its_first_screen(demo):
    from analysis.report import SYNTHETIC_NOTICE

    md = (demo / "report" / "report.md").read_text().splitlines()
    # the banner is the line under the title, one short line, before the answer
    assert md[0].startswith("# ctxreplay policy report") and md[2] == f"**{SYNTHETIC_NOTICE}**"
    assert "illustrate the pipeline, not what real logs save" in md[2] and len(md[2]) < 120
    html = (demo / "report" / "index.html").read_text()
    assert html.index("Synthetic data") < html.index("<h2")  # above every section


def test_report_files_and_offline_html(demo):
    html = (demo / "report" / "index.html").read_text()
    md = (demo / "report" / "report.md").read_text()
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", html), "the report must not load anything from the network"
    assert "http://" not in html and "https://" not in html
    for section in ("## Dataset", "## Baseline fidelity", "## Leaderboard", "## Cost saved vs risk", "## Sweeps",
                    "## Tool results by tool", "## Risk", "## Recommendation", "## Reproducibility",
                    "## Savings under both cache-model variants", "## Per agent"):
        assert section in md
    assert html.count("data:image/png;base64,") >= 5
    assert "Objective: minimize **cost**" in md and "Recommended: **" in md


def test_report_leads_with_the_answer(demo):
    md = (demo / "report" / "report.md").read_text()
    head = "\n".join(md.splitlines()[:30])
    # the answer, in percent and dollars, with its interval, before any fidelity plot
    assert md.index("## Recommendation") < md.index("## Baseline fidelity") < md.index("## Leaderboard")
    assert re.search(r"Recommended: \*\*devboy_lru \(capacity=unbounded\), TTL [^*]+\*\*", head), head
    assert re.search(r"saves \+\d+\.\d\d% of cost \(\$\d+\.\d\d of \$\d+\.\d\d, \$\d+\.\d+ per session\), "
                     r"95% interval \+\d+\.\d\d% to \+\d+\.\d\d%", head), head
    assert "model only: +" in head  # the same configuration's saving without the calibration
    # the runner-up names the setting it differs in, and the margin has $ and %
    runner = next(line for line in md.splitlines() if line.startswith("Runner-up:"))
    assert re.search(r"differs in (TTL|capacity|policy): ", runner) and re.search(r"Margin \(difference of the two savings\): \$\d+\.\d\d \(\d+\.\d\d% of", runner)
    assert "capacity=0" not in md.split("## Reproducibility")[0]
    # fidelity: calibrated and model only side by side
    fid = md.split("## Baseline fidelity")[1].split("\n## ")[0]
    assert "calibrated: error" in fid and "model only: error" in fid
    assert re.search(r"\| sessions within targets \|.*\d+ of \d+ \|.*\d+ of \d+ \|", fid)


def test_report_has_cache_breaks_by_cause(demo):
    from replay.experiments.breaks import CAUSES

    md = (demo / "report" / "report.md").read_text()
    sec = md.split("## Cache breaks")[1].split("\n## ")[0]
    rows = [line for line in sec.splitlines() if line.startswith("| ") and "---" not in line]
    labels = {c.label for c in CAUSES}
    cause_rows = [r for r in rows if r.split("|")[1].strip() in labels]
    assert cause_rows, sec
    # a cause row: breaks, tokens, dollars, share of the re-billed tokens
    assert all(re.search(r"\| (direct|inferred|none) \| \d+ \| [\d,]+ \| \$\d+\.\d\d \| \d+\.\d\d% \|", r)
               for r in cause_rows), cause_rows
    assert re.search(r"\d+ breaks in \d+ sessions", sec) and "inferred" in sec
    assert "Sessions with the most re-billed dollars" in sec


def test_report_measures_policies_against_the_bounds(demo):
    md = (demo / "report" / "report.md").read_text()
    head = "\n".join(md.splitlines()[:30])
    # the answer names the bound: the recommendation's share of it, and both bounds' savings
    assert re.search(r"that is \d+% of the offline-optimal insert-time bound's saving \(\+\d+\.\d\d%, \$\d+\.\d\d\)",
                     head), head
    assert "`bound_insert`" in head and "`bound_retro`" in head
    assert "Recommended: **bound" not in md  # a bound is never recommended
    sec = md.split("## Offline-optimal bounds")[1].split("\n## ")[0]
    assert re.search(r"\| devboy_lru \| defaults \| log \| calibrated \| \+\d+\.\d\d% \| bound_insert \| "
                     r"\+\d+\.\d\d% \| \d+% \|", sec), sec
    assert re.search(r"\| jp_compaction \| defaults \| log \| calibrated \| [+-]\d+\.\d\d% \| bound_retro \|", sec), sec


def test_bound_kind_of_each_policy():
    from analysis.answer import bound_of, bound_share

    assert bound_of("devboy_lru") == "bound_insert" and bound_of("read_range_dedup") == "bound_insert"
    assert bound_of("supersede") == "bound_retro" and bound_of("jp_compaction") == "bound_retro"
    cfg = {"dataset": "d", "params": {}, "cache_config": {"ttl": "log"}, "prices": {}}
    b = {**cfg, "policy": "bound_insert", "run_id": "b", "saved_pct": {"cost": 0.2}, "figures": {"cost": 8.0},
         "delta": {"cost": -2.0}}
    p = {**cfg, "policy": "devboy_lru", "saved_pct": {"cost": 0.1}}
    got = bound_share(p, {("d", '{"ttl": "log"}', "{}"): {"bound_insert": b}})
    assert got["share"] == 0.5 and got["saved"] == 2.0 and got["bound"] == "bound_insert"
    assert bound_share({**p, "cache_config": {"ttl": "5m"}}, {("d", '{"ttl": "log"}', "{}"): {"bound_insert": b}}) is None


def test_per_agent_table_is_filled(demo):
    md = (demo / "report" / "report.md").read_text()
    table = md.split("## Per agent")[1].split("\n## ")[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    # every policy at its defaults and the baseline, under both variants
    assert len(rows) >= 16, table
    assert any("| calibrated |" in r for r in rows) and any("| model only |" in r for r in rows)
    assert all(re.search(r"\| -?\d+\.\d\d \| [+-]\d+\.\d\d% \|$", r) for r in rows), rows


def test_demo_runs_every_policy_under_both_variants(demo):
    from replay.policies import REGISTRY

    r = CliRunner().invoke(main, ["compare", "--db", str(demo / "demo.duckdb"), "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
    standalone = [x for x in rows if x["sweep_id"] is None]
    for name in REGISTRY:
        if name == "pipeline":
            continue
        got = {x["variant"] for x in standalone if x["policy"] == name}
        assert got == {"calibrated", "model_only"}, (name, got)
        for x in standalone:
            if x["policy"] == name:
                assert set(x["variants"]) == {"calibrated", "model_only"}
                assert x["variants"]["calibrated"]["saved_pct"]["cost"] is not None
                assert x["variants"]["model_only"]["interval"]["cost"]["low"] <= \
                    x["variants"]["model_only"]["saved_pct"]["cost"] <= x["variants"]["model_only"]["interval"]["cost"]["high"]
    for x in rows:
        if x["baseline_run"] and x["policy"] != "noop":
            i = x["interval"]["cost"]
            assert i["low"] <= x["saved_pct"]["cost"] <= i["high"]
    text = CliRunner().invoke(main, ["compare", "--db", str(demo / "demo.duckdb")]).output
    assert "Cost saved under both cache-model variants" in text and "model-only" in text


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
            # both cache-model variants for the baseline and the two compaction policies; one for the rest
            both = name in ("noop", "jp_compaction", "claude_code_microcompact")
            r = runner.invoke(main, ["replay", "--db", db, "--policy", name, *([] if both else ["--variants", "calibrated"])])
            assert r.exit_code == 0, (name, r.output)
    r = runner.invoke(main, ["report", "--db", db, "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "http://" not in html and "https://" not in html
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Objective: minimize **cost**" in md
    assert "Recommended: **" in md or "**No policy beats the baseline on these logs**" in md
    assert "95% interval" in "\n".join(md.splitlines()[:30])
    assert "## Offline-optimal bounds" not in md and "offline-optimal" not in md  # no bound runs: no bound
    assert "## Cache breaks" in md
    both = md.split("## Savings under both cache-model variants")[1].split("\n## ")[0]
    assert "| jp_compaction | defaults | log |" in both and "| claude_code_microcompact | defaults | log |" in both
    _check_numbers(Path(db), tmp_path / "rep")


def _check_numbers(db: Path, rep: Path) -> None:
    r = CliRunner().invoke(main, ["compare", "--db", str(db), "--json"])
    rows = json.loads(r.output)
    md = (rep / "report.md").read_text()
    leaderboard = md.split("## Leaderboard")[1].split("\n## ")[0]
    table = {}
    for line in leaderboard.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells[-1]) >= 12 and cells[-1] != "run":
            table[cells[-1]] = cells  # the run id is the last column
    checked = 0
    for row in rows:
        cells = table[row["run_id"]]
        f = row["figures"]
        assert cells[4] == f"{f['cost']:,.2f}"
        assert cells[8] == f"{f['context_tokens']:,.0f}"
        assert cells[10] == f"{f['tokens_delivered']:,.0f}"
        assert cells[13] == f"{f['busts']:,.0f}"
        assert cells[3] == row["variant"].replace("_", " ")
        if row.get("saved_pct"):
            assert cells[5] == f"{100 * row['saved_pct']['cost']:+z.2f}%"  # no -0.00 (issue 38)
            i = row["interval"]["cost"]
            assert cells[6] == f"{100 * i['low']:+z.2f}% to {100 * i['high']:+z.2f}%"
            if row["policy"] != "noop":
                assert cells[7] == ("yes" if row["distinguishable"]["cost"] else "no")
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
            "const ans=[...document.querySelectorAll('p')].find(p => /Recommended:|No policy beats/.test(p.innerText));"
            "const fid=[...document.querySelectorAll('h2')].find(h => h.innerText === 'Baseline fidelity');"
            "return {n: imgs.length, loaded: imgs.filter(i => i.complete && i.naturalWidth > 0).length,"
            " text: document.body.innerText.length, h: document.body.scrollHeight,"
            " answer_top: ans ? ans.getBoundingClientRect().top + window.scrollY : null,"
            " chart_top: imgs.length ? imgs[0].getBoundingClientRect().top + window.scrollY : null,"
            " first_alt: imgs.length ? imgs[0].alt : null,"
            " page_w: document.documentElement.clientWidth, scroll_w: document.documentElement.scrollWidth,"
            " too_wide: [...document.querySelectorAll('table, figure, p')].filter(e =>"
            "   e.getBoundingClientRect().right > document.documentElement.clientWidth + 1).map(e => e.tagName),"
            " fidelity_top: fid ? fid.getBoundingClientRect().top + window.scrollY : null};")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "report.png"
        drv.set_window_size(1200, min(int(state["h"]) + 50, 12000))
        drv.save_screenshot(str(shot))
    finally:
        drv.quit()
    assert state["n"] >= 5 and state["loaded"] == state["n"], state
    # the answer and its chart lead the page: above the first 1,000 px, before the fidelity section
    assert state["answer_top"] is not None and state["answer_top"] < 1000, state
    assert state["first_alt"].startswith("The best configurations") and state["chart_top"] < 1000, state
    assert state["fidelity_top"] > state["chart_top"], state
    assert state["text"] > 2000, "page is blank"
    # the page fits its width: no table (the leaderboard had 20 columns) or figure runs past the right edge
    assert state["scroll_w"] <= state["page_w"] and not state["too_wide"], state
    from PIL import Image

    im = Image.open(shot).convert("L")
    hist = im.histogram()
    assert max(hist) < 0.97 * sum(hist), "screenshot is a single colour"


def test_regenerate_line_names_the_real_database(demo):
    md = (demo / "report" / "report.md").read_text()
    line = next(x for x in md.splitlines() if "regenerate with" in x)
    assert f"`ctxreplay report --db {demo / 'demo.duckdb'} --dataset sample --out {demo / 'report'}`" in line


def test_report_html_renders_the_markdown(demo):
    """Emphasis, bold, code, lists and tables are HTML elements, not literal Markdown."""
    import html as _html

    page = (demo / "report" / "index.html").read_text()
    md = (demo / "report" / "report.md").read_text()
    assert "section *Offline-optimal bounds*" in md
    assert "section <em>Offline-optimal bounds</em>" in page
    assert "<strong>cost</strong>" in page and "<code>" in page and "<ul>" in page
    text = _html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r'src="data:[^"]*"', "", page)))
    assert not re.findall(r"\*[^\s*][^*\n]*[^\s*]\*", text), "literal *emphasis* in the HTML"
    assert "**" not in text and "|---" not in text
    assert page.count('<div class="table"><table>') == page.count("<table>") >= 5


def test_html_renders_markdown_and_escapes_raw_html(tmp_path):
    from analysis.report import _html

    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "a.png").write_bytes(b"\x89PNG fake")
    md = ["# Title <script>", "", "See *this* and **that** with `x|y`.", "", "- one *item*", "- two", "",
          "| a | b |", "|---|---|", "| 1 | *2* |", "", "![A caption](img/a.png)", ""]
    page = _html(md, [], tmp_path, "ds")
    assert "<h1>Title &lt;script&gt;</h1>" in page and "<script>" not in page
    assert "<em>this</em>" in page and "<strong>that</strong>" in page and "<code>x|y</code>" in page
    assert "<ul>\n<li>one <em>item</em></li>" in page
    assert '<div class="table"><table>' in page and "<td><em>2</em></td>" in page
    assert '<figcaption>A caption</figcaption>' in page and "data:image/png;base64," in page
    assert "img/a.png" not in page


def test_report_on_logs_without_usage_states_no_model_error(tmp_path, monkeypatch):
    """Copilot CLI logs record output tokens only: the what-if paragraph stated "model-only cost
    error against the recorded bill ;" (nothing after it), and the fidelity errors are "-"."""
    from conftest import shared_logs

    from replay.ingest.keys import load_or_create_master_key

    load_or_create_master_key(tmp_path / "key")
    monkeypatch.setenv("CTXREPLAY_KEY_FILE", str(tmp_path / "key"))
    db = tmp_path / "c.duckdb"
    runner = CliRunner()
    for args in (["ingest", str(shared_logs("copilot-cli")), "--db", str(db), "--key-file", str(tmp_path / "key")],
                 ["replay", "--db", str(db), "--policy", "noop"],
                 ["report", "--db", str(db), "--out", str(tmp_path / "rep")]):
        r = runner.invoke(main, args)
        assert r.exit_code == 0, (args, r.output)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "recorded bill ;" not in md and "+0.00% (" not in md
    assert "session(s) without recorded input usage" in md


def test_a_run_without_a_cost_does_not_stop_compare_or_the_report(demo, tmp_path):
    """A run priced with NaN rates (a price file before rates were checked) has no cost: `compare`
    crashed on its saving in dollars, the report's leaderboard on sorting it. It is listed, last."""
    import duckdb

    db = tmp_path / "d.duckdb"
    shutil.copy(demo / "demo.duckdb", db)
    con = duckdb.connect(str(db))
    run_id = con.execute("SELECT run_id FROM runs WHERE policy = 'devboy_lru' AND status = 'finished' "
                         "ORDER BY run_id LIMIT 1").fetchone()[0]
    con.execute("UPDATE run_sessions SET cost = 'nan'::DOUBLE WHERE run_id = ?", [run_id])
    con.close()
    r = CliRunner().invoke(main, ["compare", "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    row = next(x for x in json.loads(r.stdout) if x["run_id"] == run_id)
    assert row["figures"]["cost"] is None
    r = CliRunner().invoke(main, ["report", "--db", str(db), "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    board = (tmp_path / "rep" / "report.md").read_text().split("## Leaderboard")[1].split("\n## ")[0]
    assert run_id in board.splitlines()[-3] or run_id in "\n".join(board.splitlines()[-6:])
