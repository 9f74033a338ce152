"""The Explain dock's 3D drawings (lens column, attention arcs, contribution route, the exploded layer's heads and
experts lit by their total effects) for pictures made without the window: `k3-explorer export --explain
lens,arcs,route,units` and `app.api.render(explain=...)`. The
explanation is the one service's (app/engine/explain_service.py, which the dock's worker runs too) at the last prompt
position or the view's, with the view's knock-outs; what is drawn is the service's overlay_of."""
from __future__ import annotations

PARTS = ("lens", "arcs", "route", "units")


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
                knockouts: dict | None = None, result=None):
    """The scene.explain_overlay.ExplainOverlay of `trace` (its weights, its knobs; temperature 0) at `position`
    (None, or one the trace lacks: its last prompt position) with a view file's `knockouts` run on it, as the
    window's Explain dock runs them (result_for), or None without parts; `result`: that result, made already."""
    if not parts:
        return None
    from app.engine.explain_service import overlay_of

    res = result if result is not None else result_for(config, trace, position, knockouts, causal="route" in parts,
                                                       units="units" in parts)
    return with_units(overlay_of(res, "lens" in parts, "route" in parts, percent, "arcs" in parts), res,
                      "units" in parts)


def result_for(config, trace, position: int | None = None, knockouts: dict | None = None, causal: bool = False,
               units: bool = False):
    """The Explain dock's ExplainResult of `trace` at `position` (as overlay_for), with a view file's knock-out
    set (app/files/viewfile's `knockouts`, checked) applied as the dock applies it: its .knockout is the "after";
    causal: with the causal route and the patching grid (what a drawn route needs); units: with the heads' and
    experts' total-effect grids (app/engine/explain_effects.units_of)."""
    from app.engine.explain_service import ExplainRequest, explain_result, knobs_of, knockout_items

    at = position if position is not None and 0 <= position < len(trace.tokens) else trace.prompt_len - 1
    items, mode = knockout_items(knockouts)
    req = ExplainRequest(0, config, trace.weights_name, tuple(tuple(t) for t in trace.tokens), at,
                         knobs_of(trace.knobs), items, mode, sources=False, causal=causal,  # as for a covered
                         effects=("units",) if units else ())
    # dock: a picture and the knock-out's line need no per-token re-runs (the sources table)
    return explain_result(req)


def overlay_of_explanation(ex, parts: tuple[str, ...], percent: int = 30):
    """The overlay of a compute.explain.Explanation already made (what `app.api.explain` returns), or None
    without parts."""
    if not parts:
        return None
    from app.engine.explain_service import ENGINE_LOCK, overlay_of, result_of

    with ENGINE_LOCK:
        res = result_of(ex, sources=False, causal="route" in parts)
        if "units" in parts:
            from app.engine.explain_effects import effects_of

            res.effects = effects_of(ex, ("units",))
    return with_units(overlay_of(res, "lens" in parts, "route" in parts, percent, "arcs" in parts), res,
                      "units" in parts)


def with_units(ov, res, on: bool, units=None):
    """The overlay `ov` (overlay_of's, or None) of result `res` with the heads' and experts' total effects
    (`units`, else res.effects["units"]: a scene.effect_cells.UnitEffects) when `on`: still computing while there
    are none, its one-line error when they could not be made; ov as it is when off or without a result."""
    if not on or res is None:
        return ov
    from dataclasses import replace

    from scene.effect_cells import UnitEffects
    from scene.explain_data import ExplainOverlay

    eff = getattr(res, "effects", {}) or {}
    units = units if units is not None else eff.get("units")
    if units is None:
        err = eff.get("units_error", "")
        units = UnitEffects(error=err) if err else UnitEffects(computing=True)
    if ov is None:
        piece = res.pieces[res.position] if res.position < len(res.pieces) else ""
        ov = ExplainOverlay(res.position, piece, res.word, n_tokens=len(res.pieces))
    return replace(ov, units=units)
