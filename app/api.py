"""Python API for notebooks and scripts: render K3 Explorer's 3D view to a numpy image, no window shown.

    from app.api import render, run

    image = render(prompt="로봇이 컵을 집었다", layer=37, step=6, size=(1280, 720))   # HxWx4 uint8 RGBA
    image = render(model="kimi-k2")                    # that model at its own default layer and step
    image = render(view="talk.k3view")                 # exactly a saved view (File -> Save view…)
    ex = explain("아이가 상자를 집었다. 그리고")           # why ' 상자': lens, attention, contributions, sources
    print(run(prompt="The robot").summary())           # the trace itself, summarised in a few dozen lines

`render` uses the same off-screen path as `k3-explorer export` (the scene is built by `build_scene`, which the
CLI uses too, and drawn by app/export/image.render_view): it starts a QApplication when none exists, which needs a
display (X11 or Xvfb, e.g. `xvfb-run -a jupyter lab`); without one it raises DisplayError with one line saying
so. Arguments given explicitly override those of `view`. Bad arguments raise ValueError (one line).

In Jupyter every result displays itself: render's RenderedImage as the picture, a Trace as a table, an
Explanation as its logit lens and a table, a Patching as a heat map and a table (compute/notebook.py; only
render needs a display). docs/notebook.ipynb is the example.
"""
from __future__ import annotations

import os
import time

import numpy as np

from app.files import viewfile
from app.files.viewfile import View
from compute.trace import Knobs

from app.engine.explain_service import ENGINES as _ENGINES  # (model, weights, device) -> ToyK3: the one engine cache
SETTLE_MS = 600  # the step focus animates the camera (scene.view ANIM_MS) before it is rendered


class DisplayError(RuntimeError):
    """No display Qt can use (none set, or no X server answers there)."""


class RenderedImage(np.ndarray):
    """What `render` returns: an HxWx4 uint8 RGBA numpy array that a notebook shows as a picture (Jupyter's
    `_repr_png_`). Slices stay pictures when they still are (HxWx3 or HxWx4 uint8); arithmetic, comparisons and
    reductions give plain numpy arrays and scalars."""

    def __array_wrap__(self, array, context=None, return_scalar=False):
        array = array.view(np.ndarray)
        return array[()] if return_scalar else array

    def _repr_png_(self) -> bytes | None:
        """The image as PNG bytes; None (the text repr then) for a slice that is no longer an image."""
        if self.dtype != np.uint8 or self.ndim != 3 or self.shape[2] not in (3, 4) or 0 in self.shape:
            return None
        from compute.notebook_charts import png_bytes

        return png_bytes(self.view(np.ndarray))


def resolve_view(view: View | str | os.PathLike | None = None, **overrides) -> View:
    """A View from a View, a *.k3view path or the defaults, with the non-None overrides applied and checked
    as a view file's fields are (ValueError, one line, on a bad value)."""
    if isinstance(view, (str, os.PathLike)):
        view = viewfile.load(view)  # the guarded reader: a FIFO, device or directory is refused at once
    elif view is not None and not isinstance(view, View):
        raise ValueError(f"view must be a View, a *.k3view path (str or os.PathLike) or None, got "
                         f"{type(view).__name__}")
    knobs = overrides.get("knobs")
    if knobs is not None and not isinstance(knobs, (Knobs, dict)):
        raise ValueError(f"knobs must be a compute.trace.Knobs, a view file's knobs object (dict) or None, got "
                         f"{type(knobs).__name__} {_short(knobs)}")
    changes = {k: v for k, v in overrides.items() if v is not None}
    model = changes.get("model")
    if view is None:  # the defaults: the layer is the chosen model's own (compute.model_defaults)
        base = View(model=model) if isinstance(model, str) and model in viewfile.available_configs() else View()
    else:
        base = view
    if not changes:
        return base
    doc = base.to_dict()
    if isinstance(model, str) and model != base.model and "layer" not in changes and \
            model in viewfile.available_configs():
        from compute.model_defaults import config_named, layer_for

        doc["layer"] = layer_for(config_named(model), base.layer)  # the view's layer where that model has it
    for key, value in changes.items():
        if key == "knobs":
            doc["knobs"] = View(knobs=value).to_dict()["knobs"] if not isinstance(value, dict) else value
        elif key == "size":
            doc["size"] = list(_size(value))
        else:
            doc[key] = value
    return View.from_dict(doc, "<arguments>")


def run(prompt: str | None = None, *, view: View | str | None = None, tokens: int | None = None, knobs=None,
        weights: str | None = None, model: str | None = None, device: str = "cpu"):
    """The toy engine's Trace for a prompt (or a view's prompt, knobs, weights and model)."""
    _check_device(device)
    v = resolve_view(view, prompt=prompt, tokens=tokens, knobs=knobs, weights=weights, model=model)
    return _trace(v, device)


def explain(prompt: str, *, weights: str = "trained", position: int | None = None, model=None, knobs=None,
            source_mode: str = "resample", lens_mode: str = "exit", device: str = "cpu",
            source_metric: str = "contrast"):
    """Why the toy predicts its word at one position: a compute.explain.Explanation.

    position: 0-based token index (default: the last prompt position, the one that predicts the first answer
    token). model: a bundled config name ("kimi-k3", the default) or a compute.engine.ToyK3 (its weights must
    be `weights`). knobs: a compute.trace.Knobs or a view file's knobs object (alpha/beta/expert bias change the
    run; the word is the one predicted at temperature 0); checked as `run` and `render` check them. device:
    checked as `run` and `render` do, before any engine is made.

    The causal story: .patch(corrupted=None, sites="residual") -> Patching (counterfactual activation patching:
    .scores — "residual" (layers+1) x T, row 0 = the embedding; "blocks" layers x 2 x T; "heads" layers x heads;
    "experts" MoE layers x experts —, .clean, .corrupted, .metric, .top(n); corrupted None: proposed for a prompt of
    the toy language, required outside it), .causal_route(threshold=0.3) -> [(layer, part, effect)] that
    .knockout(blocks=...) takes (empty with .spread and .note when no block reaches the threshold),
    .head_effects / .expert_effects (total effects), .path_patch(corrupted=None, sender=(layer, "mixer" | "ffn"
    [, head]) or a list of them patched together, receivers="logits" | [(layer, part), ..., "logits"]) ->
    PathPatching (the sender's effect only through the receivers, every other block frozen at its corrupted
    output; .score, .metric) and .direct_paths() (every block's direct path to the logits: .scores layers x 2, .top(n)), .sources ((position, piece, effect); source_mode
    "resample" (default) | "mean" | "zero", source_metric "contrast" (default) | "logit"; .source_measure names
    both) and .top_source(earlier_only=True). Secondary: .lens (one entry per layer: where the word is READABLE
    from), .attention(layer) (heads x positions x positions; per head), .blocks / .direct_effects (direct effects,
    not causal; sum(values) + .rest == .logit) and .knockout(tokens=, blocks=, experts=, sources=, mode="zero").
    Bad arguments raise ValueError (one line)."""
    from compute.explain import Explanation

    _check_device(device)
    if not isinstance(prompt, str):
        raise ValueError(f"prompt must be a string, got {type(prompt).__name__}")
    if len(prompt) > viewfile.MAX_PROMPT_CHARS:
        raise ValueError(f"the prompt has {len(prompt)} characters; at most {viewfile.MAX_PROMPT_CHARS} are taken")
    if weights not in viewfile.WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(viewfile.WEIGHTS)}, got {_short(weights)}")
    from compute.engine import ToyK3

    if model is None or isinstance(model, str):
        name = View().model if model is None else model
        from compute.config import available_configs

        if name not in available_configs():
            raise ValueError(f"model must be one of {', '.join(available_configs())}, got {name!r}")
        engine = _engine(_config(name), weights, device)
    elif isinstance(model, ToyK3):
        engine = model
        if engine.weights_name != weights:
            raise ValueError(f"the model runs {engine.weights_name} weights, not {weights!r}: pass "
                             f"weights={engine.weights_name!r}")
    else:
        raise ValueError(f"model must be a config name or a compute.engine.ToyK3, got {type(model).__name__}")
    if knobs is not None:
        if not isinstance(knobs, (Knobs, dict)):
            raise ValueError(f"knobs must be a compute.trace.Knobs, a view file's knobs object (dict) or None, got "
                             f"{type(knobs).__name__}")
        if isinstance(knobs, dict):
            knobs = resolve_view(None, knobs=knobs).knobs
        else:
            _check_knobs(knobs)
    from app.engine.explain_service import ENGINE_LOCK

    with ENGINE_LOCK:  # the cache's thread rule (app/engine/explain_service.py)
        return Explanation.of_prompt(engine, prompt, position, knobs=knobs, source_mode=source_mode,
                                     lens_mode=lens_mode, source_metric=source_metric)


def _check_knobs(knobs: Knobs) -> None:
    """ValueError (one line) unless a Knobs object's values are finite and in range (as `run` checks them)."""
    from compute.engine_io import check_knobs

    try:
        check_knobs(knobs)
    except (TypeError, AttributeError) as exc:
        raise ValueError(f"knobs: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None


def render(prompt: str | None = None, layer: int | None = None, step: int | None = None,
           size: tuple[int, int] | str | None = None, view: View | str | os.PathLike | None = None, *,
           camera: str | None = None, lang: str | None = None, tokens: int | None = None, knobs=None,
           weights: str | None = None, model: str | None = None, transparent: bool = False, labels: bool = True,
           theme: str = "dark", device: str = "cpu", explain=None, route_threshold: int | None = None) -> RenderedImage:
    """The 3D view as an HxWx4 uint8 RGBA array, rendered off screen (no window is shown); in a notebook it
    displays as the picture (RenderedImage).

    layer and step are 1-based (as the trace player counts: step 6 = prefill); size is (width, height) or
    "WIDTHxHEIGHT" (default: the view's saved size, else 1920x1080); camera a preset name ("front", "side",
    "top", "stack", "reset") in place of the view's camera; knobs a compute.trace.Knobs or a view file's
    knobs object; weights "trained" | "random"; model a bundled config's name (default: the view's, else
    "kimi-k3"; layer and step default to that model's, compute.model_defaults); theme "dark" | "light" (slide theme of the title, legend and labels);
    explain: what the Explain panel draws in the 3D view, "lens", "arcs", "route", "units" (the exploded layer's
    heads and experts lit by their total effects) or a list / comma list of them
    ("none": nothing; default: the view's explain3d, else nothing), for the last prompt position (or the view's),
    with the view's knock-outs (checked against its prompt, run as the window's Explain dock runs them); or the
    Explanation `explain(...)` returned, drawn as it is (lens, arcs and route, or the view's explain3d parts; its
    prompt, weights and model unless given);
    route_threshold: the route's share of the largest block, 0-100 % (default: the view's, else 30)."""
    from app.export.image import THEMES
    from scene.camera import PRESETS

    if camera is not None and (not isinstance(camera, str) or camera not in PRESETS):
        raise ValueError(f"camera must be one of {', '.join(PRESETS)}, got {_short(camera)}")
    if not isinstance(theme, str) or theme not in THEMES:
        raise ValueError(f"theme must be one of {', '.join(THEMES)}, got {_short(theme)}")
    for name, flag in (("transparent", transparent), ("labels", labels)):
        if not isinstance(flag, bool):
            raise ValueError(f"{name} must be True or False, got {_short(flag)}")
    _check_device(device)
    from app.engine.explain_render import PARTS, check_percent, overlay_for, overlay_of_explanation, parse_parts, view_parts

    given = explain if _is_explanation(explain) else None
    if given is not None:
        prompt, weights = _explanation_prompt(given, prompt, weights, view)
        explain = None
    asked = parse_parts(explain) if explain is not None else None
    if route_threshold is not None:
        check_percent(route_threshold)
    v = resolve_view(view, prompt=prompt, layer=layer, step=step, size=size, language=lang, tokens=tokens,
                     knobs=knobs, weights=weights, model=model)
    parts, percent, position = view_parts(v)
    parts = asked if asked is not None else parts or (PARTS if given is not None else ())
    percent = route_threshold if route_threshold is not None else percent
    width, height = v.size or (1920, 1080)
    app = ensure_app()  # no display: say so before the engine runs
    trace = _trace(v, device, given.model if given is not None else None)
    from app import i18n, player

    steps = player.build_steps(trace)
    if not 1 <= v.step <= len(steps):
        raise ValueError(f"step {v.step} is outside 1…{len(steps)} (steps of this trace)")
    before = i18n.language()
    i18n.set_language(v.language)
    try:
        from app.export.image import render_view

        config = _config(v.model)
        overlay = (overlay_for(config, trace, parts, percent, position, v.knockouts) if given is None
                   else overlay_of_explanation(given, parts, percent))
        scene = build_scene(app, config, trace, v, steps[v.step - 1], width, height, camera, overlay)
        try:
            image = render_view(scene, width, height, transparent=transparent, labels=labels, theme=theme)
        finally:
            close_scene(scene)
    finally:
        i18n.set_language(before)
    return image_array(image)


def ensure_app():
    """The running QApplication, or a new one (OpenGL prepared as the app does); DisplayError without a
    display."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is not None:
        return app
    from app.window.display_check import display_error

    problem = display_error()
    if problem:
        from app.window.display_check import missing_libraries_error
        from app.i18n import tr

        if not missing_libraries_error():  # no display: the way for a script or a notebook, not the CLI's
            problem = tr("api.no_display", display=os.environ.get("DISPLAY", "") or "-")
        raise DisplayError(problem)
    from PySide6.QtCore import QCoreApplication, Qt

    from scene.display import prepare_gl_platform

    prepare_gl_platform()  # before scene.view imports pyqtgraph and OpenGL
    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    return QApplication(["k3-explorer"])


def build_scene(app, config, trace, view: View, step, width: int, height: int, camera_preset: str | None = None,
                explanation=None):
    """A SceneView showing `trace` at the view's layer, `step` (a player.Step), selection and camera, never
    on screen, framed for a width x height image; `explanation` (app/engine/explain_render.overlay_for) drawn too. The
    caller renders it and then calls close_scene."""
    from PySide6.QtCore import Qt

    from app.i18n import tr
    from scene.view import SceneView

    scene = SceneView()
    scene.export_size = (int(width), int(height))  # framings keep the model clear of the image's own header
    scene.set_translator(tr)
    scene.set_config(config)
    scene.set_trace(trace)
    if explanation is not None:
        scene.set_explanation(explanation)
    scene.set_layer(view.layer - 1)
    scene.set_pass(step.pass_index)
    scene.set_token(step.token)
    scene.set_step_focus(step.kind)
    fit = min(1.0, 1600 / width, 1000 / height)  # same aspect as the image, so presets frame it the same
    scene.resize(max(1, int(width * fit)), max(1, int(height * fit)))
    scene.setAttribute(Qt.WA_DontShowOnScreen, True)
    scene.show()
    app.processEvents()
    settle(app)  # the step focus animates the camera
    if view.block:
        scene.select_block(view.block)  # a selection off screen is brought into view (animated)
        if not camera_preset and not view.camera:
            settle(app)
    if view.expert is not None:
        scene.select_expert(view.expert)
    if camera_preset:
        scene.set_camera_preset(camera_preset)
        settle(app)
    elif view.camera:
        scene.set_camera_state(view.camera)
    app.processEvents()
    return scene


def close_scene(scene) -> None:
    """Stop the scene's render thread and let Qt delete it."""
    renderer = getattr(scene.gl, "renderer", None)
    if renderer is not None:
        renderer.stop()
    scene.close()
    scene.deleteLater()


def settle(app, ms: int = SETTLE_MS) -> None:
    """Let an animated camera transition finish."""
    end = time.monotonic() + ms / 1000
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)


def image_array(image) -> RenderedImage:
    """QImage -> a new HxWx4 uint8 RGBA array (a RenderedImage: it displays inline in a notebook)."""
    from PySide6.QtGui import QImage

    image = image.convertToFormat(QImage.Format_RGBA8888)
    w, h = image.width(), image.height()
    data = np.frombuffer(image.constBits(), dtype=np.uint8, count=image.sizeInBytes())
    return data.reshape(h, image.bytesPerLine())[:, : w * 4].reshape(h, w, 4).copy().view(RenderedImage)


def _size(value) -> tuple[int, int]:
    if isinstance(value, str):
        from app.export.image import parse_size

        return parse_size(value)
    try:
        w, h = value
    except (TypeError, ValueError):
        raise ValueError(f"size must be (width, height) or \"WIDTHxHEIGHT\", got {value!r}") from None
    return w, h  # range-checked with the view's other fields


def _check_device(device) -> None:
    """ValueError (one line) unless the engine can run on `device`: "cpu", "auto", or "cuda" / "cuda:N" where
    torch is installed and sees that GPU (checked before any engine or window is made)."""
    from compute.engine import resolve_device

    if device is not None and not isinstance(device, str):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {_short(device)}")
    try:
        resolved = resolve_device(device)
    except ImportError as exc:  # cuda without torch: the install hint, as one line
        raise ValueError(str(exc).splitlines()[0]) from None
    if resolved.type == "cuda":
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(f"device {device!r}: CUDA is not available here (torch sees no GPU); "
                             "use device='cpu' or 'auto'")
        if resolved.index is not None and resolved.index >= count:
            raise ValueError(f"device {device!r}: there is no such GPU (torch sees {count})")


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _config(model: str):
    from compute.config import ModelConfig, available_configs

    return ModelConfig.from_json(available_configs()[model])


def _engine(config, weights: str, device: str):
    from app.engine.explain_service import engine_for

    return engine_for(config, weights, device, cache=_ENGINES)


def _trace(view: View, device: str, engine=None):
    from app.engine.explain_service import ENGINE_LOCK

    engine = engine or _engine(_config(view.model), view.weights, device)
    with ENGINE_LOCK:  # the cache's thread rule (app/engine/explain_service.py)
        return engine.run(view.prompt, max_new_tokens=view.tokens, knobs=view.knobs)


def _is_explanation(value) -> bool:
    from compute.explain import Explanation

    return isinstance(value, Explanation)


def _explanation_prompt(ex, prompt, weights, view) -> tuple[str, str]:
    """(prompt, weights) of a render that draws the Explanation ex: its own unless given; ValueError (one line)
    when they differ from its, or when the view's model is not its model."""
    own = "".join(ex.pieces)
    if weights is not None and weights != ex.model.weights_name:
        raise ValueError(f"the explanation ran {ex.model.weights_name} weights, not {weights!r}")
    v = resolve_view(view, prompt=prompt)
    if v.model != ex.model.config.name:
        raise ValueError(f"the explanation ran model {ex.model.config.name!r}, the view asks for {v.model!r}")
    if prompt is None and view is None:
        prompt = own
    elif not "".join(p for p, _ in ex.model.encode_prompt(v.prompt)).startswith(own):
        raise ValueError(f"the explanation is of {_short(own)}, not of the prompt {_short(v.prompt)}")
    return prompt, ex.model.weights_name
