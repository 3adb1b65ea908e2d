"""pipeline: an ordered composition of registered policies, configured in TOML.

    policy = "pipeline"
    [[params.steps]]
    policy = "devboy_lru"
    params = { capacity = 8 }
    [[params.steps]]
    policy = "anthropic_clear_tool_uses"

Each block passes through every insert-time step in order (each sees the size the previous
one left); before each request every retroactive step runs in order. Each step keeps its
own state. Like JP RFD 036's CompactionReport (seed 001), the run records a per-step
breakdown: blocks changed and tokens saved by each step, stored with the session figures
under `step:<index>:<policy>:blocks_changed|tokens_saved`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.policies.base import Context, ParamError, Policy, did_you_mean


@dataclass(frozen=True)
class Step:
    policy: Policy
    label: str


class Pipeline(Policy):
    """Runs several policies in order; records what each step changed."""

    name = "pipeline"
    source = "composition (seed 001 CompactionReport for the per-step breakdown)"

    @dataclass(frozen=True)
    class Params:
        # ordered steps: each {"policy": NAME, "params": {...}}
        steps: tuple = ()

        def __post_init__(self):
            if not self.steps:
                raise ValueError("pipeline needs at least one step: [[params.steps]] policy = NAME")

    def __init__(self, params: "Pipeline.Params | None" = None):
        super().__init__(params)
        from replay.policies import get

        steps = []
        for i, raw in enumerate(self.params.steps):
            spec = dict(raw) if not isinstance(raw, dict) else raw
            unknown = set(spec) - {"policy", "params"}
            if unknown:
                k = sorted(unknown)[0]
                raise ParamError(f"pipeline step {i}: unknown key {k!r}{did_you_mean(k, ['policy', 'params'])}")
            if "policy" not in spec:
                raise ParamError(f"pipeline step {i}: missing `policy = NAME`")
            if spec["policy"] == "pipeline":
                raise ParamError(f"pipeline step {i}: a pipeline cannot contain a pipeline")
            cls = get(spec["policy"])
            steps.append(Step(cls(cls.make_params(dict(spec.get("params") or {}))), f"step:{i}:{cls.name}"))
        self.steps = steps
        self._insert = [s for s in steps if type(s.policy).insert_time()]
        kinds = [type(s.policy).append_kinds for s in self._insert]
        self.append_kinds = None if any(k is None for k in kinds) else frozenset().union(*kinds)
        self._retro = [s for s in steps if type(s.policy).retroactive()]

    @classmethod
    def make_params(cls, values: dict[str, Any]) -> "Pipeline.Params":
        unknown = set(values) - {"steps"}
        if unknown:
            k = sorted(unknown)[0]
            raise ParamError(f"policy 'pipeline' has no parameter {k!r}{did_you_mean(k, ['steps'])} (parameters: steps)")
        steps = values.get("steps", ())
        if isinstance(steps, str):
            raise ParamError("pipeline steps come from a --config TOML file ([[params.steps]] tables)")
        try:
            return cls.Params(steps=tuple(steps))
        except ValueError as e:
            raise ParamError(str(e)) from e

    def insert_time(self) -> bool:  # per instance: depends on the steps
        return bool(self._insert)

    def retroactive(self) -> bool:
        return bool(self._retro)

    # each step sees its own state dict; the per-step breakdown is the metric delta around its call
    def _call(self, ctx: Context, step: Step, fn, *args):
        states = ctx.state.setdefault("_pipeline", {})
        outer = ctx.state
        ctx.state = states.setdefault(step.label, {})
        m = ctx.metrics
        b0, t0 = m["blocks_changed"], m["tokens_saved"]
        try:
            return fn(ctx, *args)
        finally:
            ctx.state = outer
            key = step.label
            m[key + ":blocks_changed"] = m.get(key + ":blocks_changed", 0.0) + m["blocks_changed"] - b0
            m[key + ":tokens_saved"] = m.get(key + ":tokens_saved", 0.0) + m["tokens_saved"] - t0

    def start_stream(self, ctx: Context) -> None:
        for s in self.steps:
            self._call(ctx, s, s.policy.start_stream)

    def on_compaction(self, ctx: Context, pos: int) -> None:
        for s in self.steps:
            self._call(ctx, s, s.policy.on_compaction, pos)

    def on_append(self, ctx: Context, i: int, size: float) -> float:
        m = ctx.metrics
        for s in self._insert:
            new = self._call(ctx, s, s.policy.on_append, i, size)
            if new != size:
                # the engine counts the pipeline's total change; attribute it to this step here
                key = s.label
                m[key + ":blocks_changed"] = m.get(key + ":blocks_changed", 0.0) + 1
                m[key + ":tokens_saved"] = m.get(key + ":tokens_saved", 0.0) + size - new
                size = new
        return size

    def before_request(self, ctx: Context, k: int) -> None:
        for s in self._retro:
            self._call(ctx, s, s.policy.before_request, k)

    def overhead(self, ctx: Context, overhead: float) -> float:
        for s in self.steps:
            overhead = self._call(ctx, s, s.policy.overhead, overhead)
        return overhead
