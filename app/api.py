"""Python API for notebooks and scripts: render K3 Explorer's 3D view to a numpy image, no window shown.

    from app.api import render, run

    image = render(prompt="로봇이 컵을 집었다", layer=37, step=6, size=(1280, 720))   # HxWx4 uint8 RGBA
    image = render(model="kimi-k2")                    # that model at its own default layer and step
    image = render(view="talk.k3view")                 # exactly a saved view (File -> Save view…)
    ex = explain("아이가 상자를 집었다. 그리고")           # why ' 상자': lens, attention, contributions, sources
    print(run(prompt="The robot").summary())           # the trace itself, summarised in a few dozen lines

`render` uses the same off-screen path as `k3-explorer export` (the scene is built by `build_scene`, which the
CLI uses too, and drawn by app/export.render_view): it starts a QApplication when none exists, which needs a
display (X11 or Xvfb, e.g. `xvfb-run -a jupyter lab`); without one it raises DisplayError with one line saying
so. Arguments given explicitly override those of `view`. Bad arguments raise ValueError (one line).
"""
from __future__ import annotations

import os
import time

import numpy as np

from app import viewfile
from app.viewfile import View
from compute.trace import Knobs

_ENGINES: dict[tuple, object] = {}  # (model, weights, device) -> ToyK3, reused between calls in a session
SETTLE_MS = 600  # the step focus animates the camera (scene.view ANIM_MS) before it is rendered


class DisplayError(RuntimeError):
    """No display Qt can use (none set, or no X server answers there)."""


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
    if model is not None and model != base.model and "layer" not in changes and model in viewfile.available_configs():
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
            source_mode: str = "zero", lens_mode: str = "exit", device: str = "cpu"):
    """Why the toy predicts its word at one position: a compute.explain.Explanation.

    position: 0-based token index (default: the last prompt position, the one that predicts the first answer
    token). model: a bundled config name ("kimi-k3", the default) or a compute.engine.ToyK3 (its weights must
    be `weights`). knobs: a compute.trace.Knobs or a view file's knobs object (alpha/beta/expert bias change the
    run; the word is the one predicted at temperature 0). The result has .word, .position, .lens (one entry per
    layer, index 0 = the embedding) with .lens_rank(piece), .blocks ((layer, part, value); sum(values) + .rest
    == .logit), .rest, .logit, .sources ((position, piece, effect) of knocking each token out), .attention(layer)
    (heads x positions x positions: KDA's implicit attention or MLA's softmax; layers 1-based) and
    .knockout(tokens=, blocks=, experts=, sources=, mode="zero") -> Explanation (sources: AttnRes candidates,
    0 = the embedding, j = block j's stored sum). Bad arguments raise ValueError (one line)."""
    from compute.explain import Explanation

    if weights not in viewfile.WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(viewfile.WEIGHTS)}, got {weights!r}")
    if model is None or isinstance(model, str):
        name = View().model if model is None else model
        from compute.config import available_configs

        if name not in available_configs():
            raise ValueError(f"model must be one of {', '.join(available_configs())}, got {name!r}")
        key = (name, weights, device)
        engine = _ENGINES.get(key)
        if engine is None:
            from compute.engine import ToyK3

            engine = _ENGINES[key] = ToyK3(config=_config(name), device=device, weights=weights)
    elif hasattr(model, "forward") and hasattr(model, "weights_name"):
        engine = model
        if engine.weights_name != weights:
            raise ValueError(f"the model runs {engine.weights_name} weights, not {weights!r}: pass "
                             f"weights={engine.weights_name!r}")
    else:
        raise ValueError(f"model must be a config name or a ToyK3, got {type(model).__name__}")
    if knobs is not None and not hasattr(knobs, "alpha"):
        knobs = resolve_view(None, knobs=knobs).knobs
    return Explanation.of_prompt(engine, prompt, position, knobs=knobs, source_mode=source_mode,
                                 lens_mode=lens_mode)


def render(prompt: str | None = None, layer: int | None = None, step: int | None = None,
           size: tuple[int, int] | str | None = None, view: View | str | os.PathLike | None = None, *,
           camera: str | None = None, lang: str | None = None, tokens: int | None = None, knobs=None,
           weights: str | None = None, model: str | None = None, transparent: bool = False, labels: bool = True,
           theme: str = "dark", device: str = "cpu", explain=None, route_threshold: int | None = None) -> np.ndarray:
    """The 3D view as an HxWx4 uint8 RGBA array, rendered off screen (no window is shown).

    layer and step are 1-based (as the trace player counts: step 6 = prefill); size is (width, height) or
    "WIDTHxHEIGHT" (default: the view's saved size, else 1920x1080); camera a preset name ("front", "side",
    "top", "stack", "reset") in place of the view's camera; knobs a compute.trace.Knobs or a view file's
    knobs object; weights "trained" | "random"; model a bundled config's name (default: the view's, else
    "kimi-k3"; layer and step default to that model's, compute.model_defaults); theme "dark" | "light" (slide theme of the title, legend and labels);
    explain: what the Explain panel draws in the 3D view, "lens", "arcs", "route" or a list / comma list of them
    ("none": nothing; default: the view's explain3d, else nothing), for the last prompt position (or the view's);
    route_threshold: the route's share of the largest block, 0-100 % (default: the view's, else 30)."""
    from app.export import THEMES
    from scene.camera import PRESETS

    if camera is not None and (not isinstance(camera, str) or camera not in PRESETS):
        raise ValueError(f"camera must be one of {', '.join(PRESETS)}, got {_short(camera)}")
    if not isinstance(theme, str) or theme not in THEMES:
        raise ValueError(f"theme must be one of {', '.join(THEMES)}, got {_short(theme)}")
    for name, flag in (("transparent", transparent), ("labels", labels)):
        if not isinstance(flag, bool):
            raise ValueError(f"{name} must be True or False, got {_short(flag)}")
    _check_device(device)
    from app.explain_render import check_percent, overlay_for, parse_parts, view_parts

    asked = parse_parts(explain) if explain is not None else None
    if route_threshold is not None:
        check_percent(route_threshold)
    v = resolve_view(view, prompt=prompt, layer=layer, step=step, size=size, language=lang, tokens=tokens,
                     knobs=knobs, weights=weights, model=model)
    parts, percent, position = view_parts(v)
    parts = asked if asked is not None else parts
    percent = route_threshold if route_threshold is not None else percent
    width, height = v.size or (1920, 1080)
    app = ensure_app()  # no display: say so before the engine runs
    trace = _trace(v, device)
    from app import i18n, player

    steps = player.build_steps(trace)
    if not 1 <= v.step <= len(steps):
        raise ValueError(f"step {v.step} is outside 1…{len(steps)} (steps of this trace)")
    before = i18n.language()
    i18n.set_language(v.language)
    try:
        from app.export import render_view

        config = _config(v.model)
        scene = build_scene(app, config, trace, v, steps[v.step - 1], width, height, camera,
                            overlay_for(config, trace, parts, percent, position))
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
    from app.display_check import display_error

    problem = display_error()
    if problem:
        raise DisplayError(problem)
    from PySide6.QtCore import QCoreApplication, Qt

    from scene.display import prepare_gl_platform

    prepare_gl_platform()  # before scene.view imports pyqtgraph and OpenGL
    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    return QApplication(["k3-explorer"])


def build_scene(app, config, trace, view: View, step, width: int, height: int, camera_preset: str | None = None,
                explanation=None):
    """A SceneView showing `trace` at the view's layer, `step` (a player.Step), selection and camera, never
    on screen, framed for a width x height image; `explanation` (app/explain_render.overlay_for) drawn too. The
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


def image_array(image) -> np.ndarray:
    """QImage -> a new HxWx4 uint8 RGBA array."""
    from PySide6.QtGui import QImage

    image = image.convertToFormat(QImage.Format_RGBA8888)
    w, h = image.width(), image.height()
    data = np.frombuffer(image.constBits(), dtype=np.uint8, count=image.sizeInBytes())
    return data.reshape(h, image.bytesPerLine())[:, : w * 4].reshape(h, w, 4).copy()


def _size(value) -> tuple[int, int]:
    if isinstance(value, str):
        from app.export import parse_size

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


def _trace(view: View, device: str):
    key = (view.model, view.weights, device)
    engine = _ENGINES.get(key)
    if engine is None:
        from compute.engine import ToyK3

        engine = _ENGINES[key] = ToyK3(config=_config(view.model), device=device, weights=view.weights)
    return engine.run(view.prompt, max_new_tokens=view.tokens, knobs=view.knobs)
