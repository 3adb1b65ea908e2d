"""analysis.sweep_best: the report names each sweep's cheapest setting with caching, with its interval."""

from analysis.sweep_best import best_lines, best_of


def row(window, polling, cost, tokens, low, high, busts, variant="calibrated", sid="s1", policy="observation_masking"):
    return {"sweep_id": sid, "policy": policy, "variant": variant, "cache_config": {"ttl": "log"},
            "params": {"placeholder_tokens": 9.0, "polling": polling, "window": window},
            "saved_pct": {"cost": cost, "context_tokens": tokens},
            "interval": {"cost": {"low": low, "high": high}}, "figures": {"busts": busts},
            "risk": {"trimmed_reread": 2 * busts}}


ROWS = [
    row(10, 0, -2.15, 0.265, -2.42, -1.89, 7458),   # params in another order, as stored: shown as declared
    row(10, 10, -0.21, 0.240, -0.28, -0.15, 1184),
    row(20, 10, -0.22, 0.190, -0.28, -0.16, 890),
    row(10, 10, 0.50, 0.300, 0.40, 0.60, 10, variant="model_only"),   # another variant: not ranked
    row(5, 0, 0.90, 0.900, 0.80, 0.99, 1, sid="other"),                # another sweep
    {"sweep_id": "s1", "policy": "noop", "variant": "calibrated", "cache_config": {}, "params": {},
     "saved_pct": None, "interval": None, "figures": {}},
]


def test_the_cheapest_calibrated_setting_leads_with_its_interval():
    lines = best_lines(ROWS, "s1")
    head = lines[1]
    assert head.startswith("Cheapest with caching (calibrated): **observation_masking (window=10, polling=10)**")
    assert "cost saved -21.00% (95% interval -28.00% to -15.00%)" in head
    assert "Every setting of this sweep costs more than the no-op baseline." in head
    # the setting that saves the most tokens is another one, and costs the most
    assert "removed content the agent read again 2,368 times" in head and "trimmed_reread=2368" in head
    fewest = [x for x in lines if x.startswith("Fewest")]
    assert len(fewest) == 1 and fewest[0].startswith("Fewest context tokens: window=10, polling=0, context tokens "
                                                     "saved +26.50%, but cost saved -215.00%")
    table = [x for x in lines if x.startswith("| window")]
    assert [t.split(" | ")[0] for t in table] == ["| window=10, polling=10", "| window=20, polling=10",
                                                  "| window=10, polling=0"]
    assert "but cost saved -215.00% (95% interval -242.00% to -189.00%)" in fewest[0]
    assert table[-1].endswith("| 7,458 | 14,916 |")
    assert best_of(ROWS, "s1")["params"]["polling"] == 10


def test_a_sweep_without_policy_runs_says_nothing():
    assert best_lines(ROWS, "absent") == [] and best_of(ROWS, "absent") is None
    assert best_lines([ROWS[-1]], "s1") == []


def test_a_saving_sweep_has_no_warning_and_one_line_when_the_best_saves_the_most_tokens():
    rows = [row(5, 0, 0.05, 0.30, 0.01, 0.09, 0), row(20, 0, 0.01, 0.10, 0.00, 0.02, 1)]
    lines = best_lines(rows, "s1")
    assert "costs more" not in lines[1] and not any(x.startswith("Fewest") for x in lines)
    assert "read again" not in lines[1]   # no re-reads: within the risk limit
    assert "window=5" in lines[1] and "+5.00%" in lines[1]
