"""The fidelity check: the no-op replay must reproduce the usage the log recorded.

Per session and overall: recorded vs simulated input total, cache reads, cache writes and
cost, with relative errors. Three variants are measured and reported together:

* ``calibrated`` (the default cache model every policy run uses): anchored token counts,
  the system prefix warm where the log shows it was, and evictions the log shows replayed;
* ``model_only``: the same without replaying observed evictions or later warm prefixes —
  what the TTL/breakpoint model alone explains;
* ``raw_bpe``: no anchoring — block sizes are the o200k BPE counts, only the overhead is
  inferred — to show what anchoring buys.

Per request, each variant's simulated cache read *matches* the recorded one when it is within
max(256 tokens, 1% of the recorded read); a miss is "simulated less" (the model believes an
entry expired or broke that the provider still had) or "simulated more" (it misses a real
break). The share of requests with usage that match is reported per session, per agent and
corpus-wide for every variant (``request_match``, with the counts).

**Skill against naive predictors.** The model-only variant is given each request's recorded
input size (and uncached tail), so much of its per-request match comes from those inputs, not
from its rules. Beside it, two naive predictors get exactly the same inputs and the same
replay engine, with every rule that breaks the cache switched off (``naive_config``):

* ``never_breaks``: no entry ever expires and no client rule applies, so each request reads
  the longest entry an earlier request of its stream wrote that is still a prefix of its
  cacheable input (in practice: everything the previous request cached), and writes the rest;
* ``ttl_only``: the same, but entries expire when the request's TTL (the log's 5m/1h split)
  has passed since their last use (a request's send time): the cache breaks only on expiry.

For each: the same figures as a variant (corpus errors, sessions within targets, request
match) and, over the requests with usage, how the model does where the naive predictor
misses (``skill_counts``): ``explained`` = requests the naive predictor misses and the model
matches, ``explained_share`` = explained / naive misses, ``new_misses`` = requests the naive
predictor matches and the model misses, ``skill`` = (explained - new_misses) / naive misses
= 1 - model misses / naive misses (1: the model matches every request the naive predictor
misses and loses none; 0: no better; negative: worse).

Recorded cost is priced request by request (``recorded_cost``: each request at its own
model's, speed's and long-context tier's rates), the one pricing path of ``validate`` and of
``compare``'s baseline fidelity.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from replay.experiments import provider_reasons
from replay.model.arrays import Dataset, load_dataset, speed_column
from replay.model.cache import CacheConfig
from replay.engine import ReplayOptions, replay_session
from replay.model.costs import PriceError, PriceTable, price_key
from replay.policies import build

FIGURES = ("input_total", "cache_read", "cache_write", "cost")
VARIANTS = ("calibrated", "model_only", "raw_bpe")
NAIVE = ("never_breaks", "ttl_only")
# A simulated read matches the recorded one within max(READ_MATCH_TOKENS, READ_MATCH_SHARE x recorded).
READ_MATCH_TOKENS = 256
READ_MATCH_SHARE = 0.01
MATCH_COUNTS = ("requests", "matched", "sim_less", "sim_more")


def _rel(sim: float, rec: float) -> float | None:
    if rec == 0:
        return 0.0 if sim == 0 else None
    return (sim - rec) / rec


def read_match(recorded: float, simulated: float) -> int:
    """-1: the simulation read less than the recorded read, +1: more, 0: within
    max(256 tokens, 1% of the recorded read)."""
    tol = max(READ_MATCH_TOKENS, READ_MATCH_SHARE * recorded)
    d = simulated - recorded
    return -1 if d < -tol else 1 if d > tol else 0


def match_counts(recorded: list[float], simulated: list[float]) -> dict[str, int]:
    """Counts of requests whose simulated read matches the recorded one, or falls short or over."""
    return _sign_counts([read_match(r, s) for r, s in zip(recorded, simulated)])


def _sign_counts(signs: list[int]) -> dict[str, int]:
    c = dict.fromkeys(MATCH_COUNTS, 0)
    for m in signs:
        c["requests"] += 1
        c["matched" if m == 0 else "sim_less" if m < 0 else "sim_more"] += 1
    return c


def naive_config(cfg: CacheConfig, name: str) -> CacheConfig:
    """The cache configuration of naive predictor ``name`` (``NAIVE``), from the model's.

    Kept from ``cfg``: what the log gives every variant (each request's input size and
    uncached tail, the first request's warm read, the recorded read at requests the log gives
    no time, the TTL of each write) and what the prompt's structure implies (breakpoint
    placement, the system-prefix length, the minimum cacheable length, compactions, model
    switches, the clock, and content the recorded input sizes show removed). Switched
    off: every rule by which the model predicts a break or a write no request shows
    (observed evictions and writes, the turn-end write, thinking switches, resumes, task and
    skill turns, OpenAI's reasoning turns, second requests and routing misses); for
    ``never_breaks`` also the TTL."""
    if name not in NAIVE:
        raise ValueError(f"naive predictor {name!r}; known: {', '.join(NAIVE)}")
    off = dict(observed_evictions="none", turn_end_write="none", thinking_switch="ignore", resume="ignore",
               task_turns="ignore", skill_turns="ignore", tool_search="ignore", openai_reasoning="keep", openai_second_request="model",
               openai_routing_miss=0.0)
    return replace(cfg, **off, expiry="never" if name == "never_breaks" else cfg.expiry)


def skill_counts(naive: list[int], model: list[int]) -> dict[str, Any]:
    """How the model's per-request reads do where a naive predictor misses, over the same
    requests (``read_match`` signs, 0 = match): see the module's docstring."""
    if len(naive) != len(model):
        raise ValueError("naive and model signs cover different requests")
    misses = sum(1 for a in naive if a)
    explained = sum(1 for a, b in zip(naive, model) if a and not b)
    new = sum(1 for a, b in zip(naive, model) if b and not a)
    return {"naive_misses": misses, "explained": explained, "new_misses": new,
            "model_misses": misses - explained + new,
            "explained_share": explained / misses if misses else None,
            "skill": (explained - new) / misses if misses else None}


def _share(c: dict[str, int]) -> float | None:
    return c["matched"] / c["requests"] if c["requests"] else None


def _add_counts(parts) -> dict[str, int]:
    tot = dict.fromkeys(MATCH_COUNTS, 0)
    for c in parts:
        for k in MATCH_COUNTS:
            tot[k] += c[k]
    return tot


def _empty() -> dict[str, float]:
    return {**dict.fromkeys(FIGURES, 0.0), "requests_with_usage": 0, "requests_without_usage": 0}


def _usage_rows(source, dataset: str | None):
    """(session_key, price key, has_usage, uncached, w5, w1h, read, output) per request, and every session key."""
    if isinstance(source, Dataset):
        keys = [s.session_key for s in source.sessions]
        models = source.vocab.models

        def rows():
            for s in source.sessions:
                for st in s.streams:
                    for k in range(st.n_requests):
                        m = st.r_model[k]
                        yield (s.session_key, models[m] if m >= 0 else None, st.r_has_usage[k], st.r_uncached[k],
                               st.r_w5[k], st.r_w1h[k], st.r_read[k], st.r_output[k])
        return keys, rows()
    keys = [k for (k,) in source.execute("SELECT session_key FROM sessions WHERE dataset = ? ORDER BY 1",
                                         [dataset]).fetchall()]
    got = source.execute(
        f"""SELECT r.session_key, r.model, {speed_column(source)}, coalesce(r.has_usage, false),
                   r.input_tokens, r.cache_write_5m, r.cache_write_1h, r.cache_read, r.output_tokens
            FROM requests r JOIN sessions s USING (session_key) WHERE s.dataset = ?""", [dataset]).fetchall()
    return keys, ((k, None if m is None else price_key(m, sp), *rest) for k, m, sp, *rest in got)


def recorded_cost(source, dataset: str | None, prices: PriceTable) -> dict[str, Any]:
    """The recorded usage and its cost, every request with usage priced on its own at the rates
    of its model and speed (fast mode), long-context tiers applied per request: the one pricing
    path of ``validate`` and ``compare``'s baseline fidelity.

    ``source``: a DuckDB connection (``dataset`` names the dataset) or a loaded ``Dataset``.
    Returns the totals over the sessions whose log records usage (``input_total``,
    ``cache_read``, ``cache_write``, ``cost``, ``sessions``, ``requests``) and ``per_session``:
    session key -> the same figures plus ``requests_with_usage`` / ``requests_without_usage``.
    """
    keys, rows = _usage_rows(source, dataset)
    per = {k: _empty() for k in keys}
    for key, model, has, u, w5, w1h, rd, o in rows:
        f = per.setdefault(key, _empty())
        if not has:
            f["requests_without_usage"] += 1
            continue
        if model is None:
            raise PriceError(f"session {key}: a request with usage names no model, so it cannot be priced")
        u, w5, w1h, rd, o = (int(x or 0) for x in (u, w5, w1h, rd, o))
        f["requests_with_usage"] += 1
        f["input_total"] += u + w5 + w1h + rd
        f["cache_read"] += rd
        f["cache_write"] += w5 + w1h
        f["cost"] += prices.rates(model).cost(u, w5, w1h, rd, o)
    tot: dict[str, Any] = dict.fromkeys(FIGURES, 0.0)
    tot["sessions"] = tot["requests"] = 0
    for f in per.values():
        if f["requests_with_usage"]:
            tot["sessions"] += 1
            tot["requests"] += f["requests_with_usage"]
            for x in FIGURES:
                tot[x] += f[x]
    tot["per_session"] = per
    return tot


def _simulate(ds: Dataset, opts: ReplayOptions) -> dict[str, Any]:
    """No-op figures per session, over the requests whose log records usage (the others
    cannot be compared; a session without any usage is summed whole and not validated), and
    the per-request read match over the requests with usage."""
    policy = build("noop")
    opts = replace(opts, detail=True)
    res = {}
    for s in ds.sessions:
        r = replay_session(s, ds.vocab, policy, opts)
        d = r.detail
        usage = [st.r_has_usage[k] for st in s.streams for k in range(st.n_requests)]
        has = usage if any(usage) else [True] * len(usage)
        rec_reads = [st.r_read[k] for st in s.streams for k in range(st.n_requests)]
        f = {"input_total": 0.0, "cache_read": 0.0, "cache_write": 0.0, "cost": 0.0}
        for i, ok in enumerate(has):
            if ok:
                f["input_total"] += d["input_total"][i]
                f["cache_read"] += d["cache_read"][i]
                f["cache_write"] += d["cache_write_5m"][i] + d["cache_write_1h"][i]
                f["cost"] += d["cost"][i]
        signs = [read_match(rec_reads[i], d["cache_read"][i]) for i, ok in enumerate(usage) if ok]
        res[s.session_key] = {"figures": f, "detail": d, "match": _sign_counts(signs), "signs": signs}
    return res


def _summarize(recorded: dict, simulated: dict, keys: set[str] | None = None) -> dict[str, Any]:
    tot_r = dict.fromkeys(FIGURES, 0.0)
    tot_s = dict.fromkeys(FIGURES, 0.0)
    n = 0
    for key, rec in recorded.items():
        if keys is not None and key not in keys:
            continue
        n += 1
        sim = simulated[key]["figures"]
        for f in FIGURES:
            tot_r[f] += rec[f]
            tot_s[f] += sim[f]
    # no session compared (none records usage): no error to state, not an exact "+0.00%"
    rel = {f: _rel(tot_s[f], tot_r[f]) if n else None for f in FIGURES}
    return {"recorded": tot_r, "simulated": tot_s, "rel_error": rel}


# Per-session targets of the fidelity check (issue: input 1%, reads 1%, writes 5%, cost 2%).
TARGETS = {"input_total": 0.01, "cache_read": 0.01, "cache_write": 0.05, "cost": 0.02}


def _within(rel: dict[str, float | None]) -> bool:
    return all(rel[f] is not None and abs(rel[f]) <= TARGETS[f] for f in FIGURES)


def _variant_summary(recorded: dict, sim: dict, sessions: list[dict], keys: set[str], name: str,
                     group: str = "variants") -> dict[str, Any]:
    """One variant (or naive predictor: ``group`` "naive") over ``keys``: corpus errors,
    sessions within targets and the request match."""
    summ = _summarize(recorded, sim, keys)
    counts = _add_counts(sim[k]["match"] for k in keys)
    return {"rel_error": summ["rel_error"], "simulated": summ["simulated"], "sessions": len(keys),
            "sessions_within_targets": sum(1 for x in sessions if x["session_id"] in keys
                                           and x[group][name]["within_targets"]),
            "request_match": _share(counts), **counts}


def _per_session(sim: dict, key: str, rec: dict) -> dict[str, Any]:
    # a session whose log records no usage has nothing to be compared with (n/a, not +0.00%)
    usage = rec["requests_with_usage"] > 0
    rel = {f: _rel(sim[key]["figures"][f], rec[f]) if usage else None for f in FIGURES}
    m = sim[key]["match"]
    return {"rel_error": rel, "within_targets": None if rec["requests_with_usage"] == 0 else _within(rel),
            "request_match": _share(m), **m}


def _naive_summary(recorded: dict, naive: dict, model: dict, sessions: list[dict], keys: set[str]) -> dict:
    """Each naive predictor over ``keys``: its figures as a variant's, and ``vs_model_only``."""
    out = {}
    for name, sim in naive.items():
        v = _variant_summary(recorded, sim, sessions, keys, name, "naive")
        order = sorted(keys)
        v["vs_model_only"] = skill_counts([x for k in order for x in sim[k]["signs"]],
                                          [x for k in order for x in model[k]["signs"]])
        out[name] = v
    return out


def skill(ds: Dataset, opts: ReplayOptions) -> dict[str, Any]:
    """The model-only variant against the naive predictors on a loaded dataset, over the
    sessions whose log records usage: ``{"model_only": summary, "naive": {name: summary with
    vs_model_only}}`` (``validate`` reports the same within its report)."""
    recorded = recorded_cost(ds, None, opts.prices)["per_session"]
    model_only = _simulate(ds, replace(opts, cache=replace(opts.cache, observed_evictions="none")))
    naive = {name: _simulate(ds, replace(opts, cache=naive_config(opts.cache, name))) for name in NAIVE}
    keys = {k for k, r in recorded.items() if r["requests_with_usage"]}
    sessions = [{"session_id": k, "variants": {"model_only": _per_session(model_only, k, recorded[k])},
                 "naive": {n: _per_session(naive[n], k, recorded[k]) for n in NAIVE}} for k in keys]
    return {"model_only": _variant_summary(recorded, model_only, sessions, keys, "model_only"),
            "naive": _naive_summary(recorded, naive, model_only, sessions, keys)}


def validate(con, dataset: str, opts: ReplayOptions, session_keys: list[str] | None = None) -> dict[str, Any]:
    """The fidelity report of ``dataset`` (or of its ``session_keys``; see the module's docstring): per
    session, per agent and corpus-wide, for every variant, and the naive predictors beside the model only."""
    ds = load_dataset(con, dataset, session_keys=session_keys)
    raw = load_dataset(con, dataset, anchor=False, session_keys=session_keys)
    rec_all = recorded_cost(con, dataset, opts.prices)
    recorded = rec_all["per_session"]
    sims = {
        "calibrated": _simulate(ds, opts),
        "model_only": _simulate(ds, replace(opts, cache=replace(opts.cache, observed_evictions="none"))),
        "raw_bpe": _simulate(raw, opts),
    }
    naive = {name: _simulate(ds, replace(opts, cache=naive_config(opts.cache, name))) for name in NAIVE}
    calibrated = sims["calibrated"]
    sessions = []
    for s in ds.sessions:
        key = s.session_key
        rec = recorded.get(key) or _empty()
        no_usage = rec["requests_with_usage"] == 0
        per_variant = {name: _per_session(sim, key, rec) for name, sim in sims.items()}
        sessions.append({
            "session_id": key, "agent": s.agent, "requests": s.n_requests,
            "requests_without_usage": int(rec["requests_without_usage"]),
            "recorded": {f: rec[f] for f in FIGURES}, "simulated": calibrated[key]["figures"],
            "rel_error": per_variant["calibrated"]["rel_error"],
            "rel_error_model_only": per_variant["model_only"]["rel_error"],
            "rel_error_raw_bpe": per_variant["raw_bpe"]["rel_error"],
            "within_targets": per_variant["calibrated"]["within_targets"],
            "request_match": per_variant["calibrated"]["request_match"],
            "variants": per_variant,
            "naive": {name: _per_session(sim, key, rec) for name, sim in naive.items()},
            "usage_recorded": not no_usage,
            "residual_requests": sum(st.negative_deltas for st in s.streams),
        })
    # Sessions whose log records no input usage (some agents log output tokens only) replay on
    # BPE counts; they cannot be validated and are left out of the corpus-wide figures.
    checked = {x["session_id"] for x in sessions if x["usage_recorded"]}
    variants = {name: _variant_summary(recorded, sim, sessions, checked, name) for name, sim in sims.items()}
    naive_all = _naive_summary(recorded, naive, sims["model_only"], sessions, checked)
    for name, v in naive_all.items():
        v["cache_config"] = naive_config(opts.cache, name).as_dict()
    overall = _summarize(recorded, calibrated, checked)
    overall["sessions"] = len(checked)
    overall["sessions_without_usage"] = len(sessions) - len(checked)
    overall["sessions_within_targets"] = variants["calibrated"]["sessions_within_targets"]
    overall["request_match"] = variants["calibrated"]["request_match"]
    overall["request_match_counts"] = {k: variants["calibrated"][k] for k in MATCH_COUNTS}
    overall["request_match_tolerance"] = {"tokens": READ_MATCH_TOKENS, "share": READ_MATCH_SHARE}
    by_agent = {}
    for a in sorted({x["agent"] for x in sessions}):
        keys = {x["session_id"] for x in sessions if x["agent"] == a and x["usage_recorded"]}
        if keys:
            av = {name: _variant_summary(recorded, sim, sessions, keys, name) for name, sim in sims.items()}
            by_agent[a] = {"sessions": len(keys), "rel_error": av["calibrated"]["rel_error"],
                           "within_targets": av["calibrated"]["sessions_within_targets"],
                           "request_match": av["calibrated"]["request_match"], "variants": av,
                           "naive": _naive_summary(recorded, naive, sims["model_only"], sessions, keys)}
        else:
            by_agent[a] = {"sessions": 0, "note": "no input usage recorded: replayed on BPE counts, not validated"}
    overall["by_agent"] = by_agent
    overall["by_provider"] = by_provider(ds, recorded, sims, sessions)
    overall["provider_reasons"] = provider_reasons.score(ds, {"calibrated": sims["calibrated"],
                                                             "model_only": sims["model_only"], **naive})
    overall["requests"] = ds.n_requests
    overall["requests_with_residual"] = sum(x["residual_requests"] for x in sessions)
    overall["requests_without_usage"] = sum(x["requests_without_usage"] for x in sessions)
    return {
        "dataset": dataset,
        "targets": TARGETS,
        "cache_config": opts.cache.as_dict(),
        "prices": opts.prices.describe(),
        "sessions": sessions,
        "overall": overall,
        "variants": variants,
        "naive": naive_all,
        "_detail": {k: v["detail"] for k, v in calibrated.items()},
        "_dataset": ds,
    }


def plot_worst(report: dict[str, Any], out: Path, n: int = 4) -> Path:
    """The per-request read match of each variant (top), then simulated vs recorded cache reads
    per request for the ``n`` sessions with the worst cost error, the requests whose simulated
    read falls short of or over the recorded one marked. Written atomically (temp + rename)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ds: Dataset = report["_dataset"]
    by_key = {s.session_key: s for s in ds.sessions}
    checked = [x for x in report["sessions"] if x["usage_recorded"] and x["rel_error"]["cost"] is not None]
    worst = sorted(checked, key=lambda x: -abs(x["rel_error"]["cost"]))[:n]
    fig, axes = plt.subplots(1 + len(worst), 1, figsize=(9, 1.9 + 2.6 * len(worst)), squeeze=False,
                             gridspec_kw={"height_ratios": [1.0] + [2.0] * len(worst)})
    _plot_match(axes[0, 0], report)
    less_c, more_c = "#D55E00", "#CC79A7"
    keys: dict[str, Any] = {}  # one key for the session panels, below them: inside an axes it hid the data
    for ax, w in zip(axes[1:, 0], worst):
        s = by_key[w["session_id"]]
        d = report["_detail"][w["session_id"]]
        rec = [st.r_read[k] for st in s.streams for k in range(st.n_requests)]
        use = [st.r_has_usage[k] for st in s.streams for k in range(st.n_requests)]
        sim = d["cache_read"]
        x = range(len(rec))
        ax.plot(x, [v / 1000 for v in rec], color="#0072B2", lw=1.6, label="recorded")
        ax.plot(x, [v / 1000 for v in sim], color="#E69F00", lw=1.0, ls="--", label="simulated (no-op, calibrated)")
        marks = [(i, read_match(rec[i], sim[i])) for i in x if use[i]]
        for sign, marker, color, label in ((-1, "v", less_c, "simulated less"), (1, "^", more_c, "simulated more")):
            pts = [i for i, m in marks if m == sign]
            if pts:
                ax.scatter(pts, [sim[i] / 1000 for i in pts], marker=marker, s=22, color=color, zorder=3, label=label)
        err = {f: ("n/a" if v is None else f"{v:+z.1%}") for f, v in w["rel_error"].items()}
        v = w["variants"]["calibrated"]
        match = "" if v["request_match"] is None else (
            f"; reads matched {v['request_match']:.1%} of {v['requests']:,} "
            f"({v['sim_less']} less, {v['sim_more']} more)")
        ax.set_title(f"session {w['session_id'][:10]} ({w['agent']}): cost error {err['cost']}, "
                     f"writes {err['cache_write']}{match}", fontsize=9)
        ax.set_ylabel("cache read (k tokens)")
        ax.grid(alpha=0.3)
        keys.update((lab, h) for h, lab in zip(*ax.get_legend_handles_labels()) if lab not in keys)
    if worst:
        axes[-1, 0].set_xlabel("request (all streams, in order)")
    if keys:
        fig.legend(list(keys.values()), list(keys), loc="lower center", ncol=len(keys), fontsize=8, frameon=False)
    fig.suptitle(f"Fidelity: cache reads per request (top: every session; below: the {len(worst)} worst "
                 f"sessions by cost error)", fontsize=10)
    fig.tight_layout(rect=(0, 0.3 / fig.get_figheight() if keys else 0, 1, 1))
    _save_atomic(fig, out)
    plt.close(fig)
    return out


def _plot_match(ax, report: dict[str, Any]) -> None:
    """Horizontal bars: the share of requests whose simulated read falls short of / over the
    recorded one, calibrated and model only (raw BPE in the title: its bar would dwarf them)."""
    v = report["variants"]
    names = [("calibrated", "calibrated"), ("model_only", "model only")]
    for y, (name, label) in enumerate(names):
        c = v[name]
        n = max(1, c["requests"])
        less, more = 100 * c["sim_less"] / n, 100 * c["sim_more"] / n
        ax.barh(y, less, color="#D55E00", label="simulated less" if y == 0 else None)
        ax.barh(y, more, left=less, color="#CC79A7", label="simulated more" if y == 0 else None)
        text = "no requests with usage" if c["request_match"] is None else (
            f"{c['request_match']:.2%} match ({c['sim_less']:,} less, {c['sim_more']:,} more of {c['requests']:,})")
        ax.text(less + more, y, "  " + text, va="center", fontsize=8)
    top = max(100 * (v[name]["sim_less"] + v[name]["sim_more"]) / max(1, v[name]["requests"]) for name, _ in names)
    ax.set_xlim(0, max(1.0, top) * 2.2)
    ax.set_yticks(range(len(names)), [label for _, label in names], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("% of requests outside max(256 tokens, 1%) of the recorded read", fontsize=8)
    raw = v["raw_bpe"]
    raw_text = "" if raw["request_match"] is None else f"; raw BPE: {raw['request_match']:.1%} match"
    ax.set_title(f"Per-request cache reads, all {v['calibrated']['sessions']} sessions with usage{raw_text}",
                 fontsize=9)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)  # outside the bars
    ax.grid(alpha=0.3, axis="x")


def _save_atomic(fig, out: Path) -> None:
    """Write the PNG under a temporary name in the same folder, then rename it into place."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        fig.savefig(tmp, dpi=110, format="png")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def public(report: dict[str, Any]) -> dict[str, Any]:
    """The JSON-serializable part of a report."""
    return {k: v for k, v in report.items() if not k.startswith("_")}


def by_provider(ds: Dataset, recorded: dict, sims: dict, sessions: list[dict]) -> dict[str, Any]:
    """Each variant's figures over the validated sessions of each cache provider (the provider
    of the models a session's requests with usage name: "anthropic", "openai", "google", or
    "mixed" when they name several): each provider's cache rules are a model of their own."""
    from replay.model.costs import provider_of

    names = ds.vocab.models
    of: dict[str, str] = {}
    for s in ds.sessions:
        found = {provider_of(names[st.r_model[k]]) or "unknown" for st in s.streams
                 for k in range(st.n_requests) if st.r_has_usage[k]}
        of[s.session_key] = found.pop() if len(found) == 1 else "mixed"
    out = {}
    for p in sorted({of[x["session_id"]] for x in sessions if x["usage_recorded"]}):
        keys = {x["session_id"] for x in sessions if x["usage_recorded"] and of[x["session_id"]] == p}
        out[p] = {"sessions": len(keys),
                  "variants": {name: _variant_summary(recorded, sim, sessions, keys, name) for name, sim in sims.items()}}
    return out
