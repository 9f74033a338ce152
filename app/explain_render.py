"""The Explain dock's 3D drawings (lens column, attention arcs, contribution route) for pictures made
without the window: `k3-explorer export --explain lens,arcs,route` and `app.api.render(explain=...)`. The
explanation is the dock's own (app/docks/explain/model.explain_result) at the last prompt position, computed
here once for the picture; what is drawn is the dock's overlay_of."""
from __future__ import annotations

PARTS = ("lens", "arcs", "route")


def parse_parts(value) -> tuple[str, ...]:
    """'lens,route' / ('lens', 'route') / None / '' / 'none' -> the parts, in PARTS order; ValueError (one line)
    for anything else."""
    if value is None:
        return ()
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = list(value)
    else:
        raise ValueError(f"explain must be a comma list of {', '.join(PARTS)} (or none), got {type(value).__name__}")
    if items == ["none"]:
        return ()
    bad = [v for v in items if v not in PARTS]
    if bad:
        raise ValueError(f"explain parts are {', '.join(PARTS)} (or none), got {bad[0][:40]!r}")
    return tuple(p for p in PARTS if p in items)


def check_percent(value) -> int:
    """The route threshold: an integer percent 0..100 of the largest block; ValueError (one line) otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
        raise ValueError(f"route threshold must be an integer percent 0..100, got {str(value)[:40]!r}")
    return value


def view_parts(view) -> tuple[tuple[str, ...], int, int | None]:
    """(parts, route threshold, position) a view file records in explain3d ((), 30, None without it)."""
    e = getattr(view, "explain3d", None)
    if not e:
        return (), 30, None
    return tuple(p for p in PARTS if e.get(p)), int(e.get("route_threshold", 30)), e.get("position")


def overlay_for(config, trace, parts: tuple[str, ...], percent: int = 30, position: int | None = None,
                knockout: dict | None = None, result=None):
    """The scene.explain_overlay.ExplainOverlay of `trace` (its weights, its knobs; temperature 0) at `position`
    (None, or one the trace lacks: its last prompt position), or None without parts. `knockout`: a view file's
    knock-out set, run as the window's Explain dock runs it (result_for); `result`: that result, made already."""
    if not parts:
        return None
    from app.docks.explain.show3d import overlay_of

    res = result if result is not None else result_for(config, trace, position, knockout)
    return overlay_of(res, "lens" in parts, "route" in parts, percent, "arcs" in parts)


def result_for(config, trace, position: int | None = None, knockout: dict | None = None):
    """The Explain dock's ExplainResult of `trace` at `position` (as overlay_for), with a view file's knock-out
    set (app/viewfile's `knockouts`, checked) applied as the dock applies it: its .knockout is the "after"."""
    from app.docks.explain.model import Engines, ExplainRequest, explain_result
    from app.view_knockouts import dock_items
    from compute.trace import Knobs

    k = trace.knobs
    knobs = Knobs(alpha=k.alpha, beta=k.beta, temperature=0.0, expert_bias=dict(k.expert_bias))
    at = position if position is not None and 0 <= position < len(trace.tokens) else trace.prompt_len - 1
    req = ExplainRequest(0, config, trace.weights_name, tuple(tuple(t) for t in trace.tokens), at, knobs,
                         dock_items(knockout), (knockout or {}).get("mode", "zero"), sources=False)  # as for a
    # covered dock: a picture and the knock-out's line need no per-token re-runs (the sources table)
    return explain_result(Engines(), req)
