"""The guided tour as a video: `k3-explorer export --animate --tour --out tour.mp4` (issue 40.4).

The tour's six chapters (app/window/tour.py) on a view that is never shown: each chapter's camera (an eased move from the
last one), what it draws of the explanation (the Explain dock's own result at the last prompt position, computed
once: lens column, arcs, the route in its chapter) and its caption burnt in below the picture ("2 / 6 · The lens
column" and the chapter's sentences), held TOUR_HOLD_S seconds to be read. The widgets' chapters (the answer
strip, side by side) show the exploded layer with their caption.
"""
from __future__ import annotations

from app.export.caption import caption_band_height, compose_frame
from app.export.image import render_view
from app.window.tour import CHAPTERS, chapter_camera, chapter_text

TOUR_HOLD_S = 4.0  # seconds a chapter's caption stays (two sentences to read)
# what each chapter draws in 3D: (lens, route, arcs)
DRAWN = {"answer": (True, False, True), "lens": (True, False, False), "route": (True, True, False),
         "knockout": (True, False, True), "arcs": (False, False, True), "side": (True, False, False)}


def captions(spec) -> list[tuple[str, str]]:
    """(head, body) of every chapter in the export's language."""
    from app.export.animate import tr

    t = tr(spec)
    out = []
    for i, chapter in enumerate(CHAPTERS):
        title, body = chapter_text(chapter, t)
        out.append((t("tour.caption", n=i + 1, total=len(CHAPTERS), title=title), body))
    return out


def overlays(config, trace) -> dict:
    """Each chapter's ExplainOverlay (the dock's overlay_of of one explanation)."""
    from app.docks.explain.show3d import DEFAULT_PERCENT
    from app.engine.explain_service import ExplainRequest, explain_result, knobs_of, overlay_of

    req = ExplainRequest(0, config, trace.weights_name, tuple(tuple(t) for t in trace.tokens),
                         trace.prompt_len - 1, knobs_of(trace.knobs), sources=False,
                         causal=any(route for _lens, route, _arcs in DRAWN.values()))  # the route chapter's
    res = explain_result(req)
    return {c: overlay_of(res, lens, route, DEFAULT_PERCENT, arcs) for c, (lens, route, arcs) in DRAWN.items()}


def export_tour(view, config, trace, spec, out: str, progress=None) -> tuple[str, int]:
    """Render and encode the tour on `view` (an offscreen SceneView holding `trace`) to `out`; (path, frames).
    Raises ExportError (one line) or AnimationCancelled; either way no file is left behind."""
    from app.export.animate import MAX_FRAMES, AnimationCancelled, Shot, VideoFile, _move_shots, check_spec, size_view, tr
    from app.export.image import ExportError

    check_spec(spec, out)
    view.set_translator(tr(spec))
    heads = captions(spec)
    band = caption_band_height(spec.width, spec.height, heads) if spec.captions else 0
    size_view(view, spec.width, spec.height - band)
    drawn = overlays(config, trace)
    hold = max(1, round(max(spec.hold_s, TOUR_HOLD_S) * spec.fps))
    move = max(0, round(spec.move_s * spec.fps))
    shots: list[Shot] = []
    before = None
    for i, chapter in enumerate(CHAPTERS):
        view.set_explanation(drawn[chapter])  # its header line changes the band the camera frames for
        cam = chapter_camera(view, chapter).to_dict()
        if before is not None and before != cam:
            shots += _move_shots(before, cam, move, spec.move_renders, i)
        shots.append(Shot(i, cam, hold))
        before = cam
    total = sum(s.frames for s in shots)
    if total > MAX_FRAMES:
        raise ExportError(tr(spec)("anim.error.too_long", n=total, max=MAX_FRAMES))
    video = VideoFile(out, spec.width, spec.height, spec.fps, holds=[s.frames for s in shots])
    try:
        with view.keeping_export_buffers():
            for shot in shots:
                view.set_explanation(drawn[CHAPTERS[shot.step]])
                view.set_camera_state(shot.camera)
                image = render_view(view, spec.width, spec.height - band, labels=spec.labels)
                if band:
                    image = compose_frame(image, spec.width, spec.height, *heads[shot.step])
                video.write_image(image, shot.frames)
                if progress is not None and progress(video.frames, total) is False:
                    raise AnimationCancelled()
        return video.commit(), total
    except BaseException:
        video.abort()
        raise
