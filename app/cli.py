"""Headless PNG export for slides:

    k3-explorer export --layer 37 --step 6 --size 3840x2160 --lang ko --camera front \
                       --prompt "로봇이 컵을 집었다" --out layer37.png

Runs the toy engine on the prompt, puts the scene at the given layer (1-based) and trace step (1-based, as
numbered in the trace player), renders the 3D view with labels at the given size and writes a PNG. Needs an X
display (a real one or Xvfb: `xvfb-run -a k3-explorer export ...`); no window is needed on screen.
Exit status: 0 written, 2 bad arguments, 1 the file could not be written, the engine or rendering failed,
3 no display (none set, or it cannot be opened) or a system library Qt's X11 platform needs is missing (the
line names the package to install), 130 / 143 stopped by SIGINT / SIGTERM (no partial file left).
Every failure is one line on stderr, never a traceback.
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import sys

from app import i18n
from app.export.cli_signals import (Stopped, _on_signal, _quiet_stop, _shield, _shielded, _stopped,  # noqa: F401
                             check_stop)
from app.window.display_check import display_error, missing_libraries_error
from app.i18n import tr

CAMERAS = ("front", "side", "top", "stack", "reset")  # scene.camera.PRESETS (numpy is not needed to parse)
DEVICES = ("cpu", "cuda", "auto")
WEIGHTS = ("trained", "random")  # app.weights_choice.WEIGHTS (that module is not needed to parse)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr (exit 2), without the usage block."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def bundled_config_names() -> list[str]:
    """The models shipped with the package (assets/configs/NAME.json), by name."""
    from assets import asset_path

    return sorted(path.stem for path in asset_path("configs").glob("*.json"))


def config_argument(value: str) -> str:
    """A --config value: a path that exists is that file; else a bundled model's name (`kimi-k2`, or
    `kimi-k2.json`) is its file in the installed package; else the value as given (the guarded loader then
    says it cannot be read; '' is refused there)."""
    if value and not os.path.lexists(value):
        name = value[:-len(".json")] if value.endswith(".json") else value
        if name in bundled_config_names():
            from assets import asset_path

            return str(asset_path("configs") / f"{name}.json")
    return value


CONFIG_HELP = "model to show: a bundled name ({names}) or a config.json path (default: kimi-k3)"


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="k3-explorer export",
                description="Render the 3D view of K3 Explorer without user interaction: a PNG image, or with "
                            "--animate an MP4, WebM or GIF animation of the trace player's steps.")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="file to write: FILE.png; with --animate FILE.mp4, FILE.webm or FILE.gif (the container "
                        "follows the name); an existing file is replaced atomically")
    p.add_argument("--view", metavar="FILE.k3view",
                   help="render a saved view (File -> Save view…); options given as well override it")
    p.add_argument("--layer", type=int, default=None,
                   help="layer to open, 1-based (default: the --view file's where the model has it, else the "
                        "model's own default layer)")
    p.add_argument("--step", type=int, default=None, help="trace player step, 1-based (default 6 = prefill)")
    p.add_argument("--size", default="1920x1080", help="WIDTHxHEIGHT in pixels, each side <= 8192")
    p.add_argument("--scale", type=float, default=None, help="multiply --size by this factor")
    p.add_argument("--lang", choices=i18n.LANGUAGES, default="en", help="label language (default en)")
    p.add_argument("--camera", choices=CAMERAS, default=None, help="camera preset (default: the app's view)")
    p.add_argument("--prompt", default="로봇이 컵을 집었다", help="prompt the toy engine runs")
    p.add_argument("--tokens", type=int, default=4, help="tokens to generate, 1..64 (default 4)")
    p.add_argument("--transparent", action="store_true", help="transparent background")
    p.add_argument("--no-labels", action="store_true", help="leave out the labels and the legend")
    p.add_argument("--explain", type=_explain_parts, default=None, metavar="PARTS",
                   help="draw what the Why-this-word panel draws in the 3D view: a comma list of lens, arcs, route, "
                        "units (the exploded layer's heads and experts lit by their total effects) or none (for the "
                        "last prompt position; default: the --view file's choice, else none)")
    p.add_argument("--route-threshold", type=_route_percent, default=None, metavar="PCT",
                   help="with --explain route: a block glows from this %% of the largest one (0-100, default 30)")
    p.add_argument("--theme", choices=("dark", "light"), default="dark",
                   help="slide theme of the title, legend and labels: dark (default) or light slides")
    p.add_argument("--device", default="cpu", choices=DEVICES, help="engine device: cpu (default), cuda or auto")
    p.add_argument("--weights", choices=WEIGHTS, default="trained",
                   help="toy weights: trained (default; random when the trained file is not installed) or random")
    p.add_argument("--verbose", action="store_true", help="log debug details to stderr (default: warnings)")
    p.add_argument("--config", metavar="NAME|FILE", type=config_argument,
                   help=CONFIG_HELP.format(names=", ".join(bundled_config_names())))
    p.add_argument("--compare", metavar="MODEL",
                   help="write one PNG of two models on --prompt side by side (answer, top-5, lens curves, patching "
                        "maps, figures): the --config model and MODEL, a bundled name or a config.json path")
    p.add_argument("--animate", action="store_true",
                   help="write an animation (--out FILE.mp4, .webm or .gif) of every trace player step")
    p.add_argument("--fps", type=int, default=30, help="frames per second of --animate (default 30)")
    p.add_argument("--orbit", action="store_true", help="with --animate: one orbit around the scene at --step")
    p.add_argument("--no-captions", action="store_true", help="with --animate: leave out the step captions")
    p.add_argument("--tour", action="store_true",
                   help="with --animate: the guided tour 'why this word' (Help -> Tour), its captions burnt in")
    return p


def _fail(message: str, code: int) -> int:
    print(f"k3-explorer export: error: {_printable(message)}", file=sys.stderr)
    _reported.append(code)
    return code


_reported: list[int] = []  # the failures already said (a signal after one adds no second line)


def _printable(text: str) -> str:
    """text with any undecodable bytes shown as \\xNN (a path or prompt from argv may hold them)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def scaled_size(width: int, height: int, scale: float) -> tuple[int, int]:
    """(width, height) times scale, as whole pixels within MAX_SIDE; ExportError (translated) otherwise."""
    from app.export.image import MAX_SIDE, ExportError, check_size

    if not (math.isfinite(scale) and scale > 0):
        raise ExportError(tr("app.cli.bad_scale", scale=scale))
    w, h = width * scale, height * scale
    if not (w <= MAX_SIDE and h <= MAX_SIDE):  # also catches a product that overflowed to inf
        raise ExportError(tr("app.cli.scale_too_big", scale=f"{scale:g}", w=width, h=height, max=MAX_SIDE))
    w, h = int(round(w)), int(round(h))
    check_size(w, h)
    return w, h


def invalid_text(text: str, option: str) -> str | None:
    """A translated one-line reason when text cannot be encoded as UTF-8, naming the option and the 1-based
    character: a byte that was not UTF-8 on the command line (Python keeps it as U+DC80..U+DCFF) or another
    lone surrogate. None when the text is valid."""
    for i, ch in enumerate(text):
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            return tr("app.cli.bad_byte", option=option, byte=f"0x{code - 0xDC00:02X}", pos=i + 1)
        if 0xD800 <= code <= 0xDFFF:
            return tr("app.cli.surrogate", option=option, code=f"U+{code:04X}", pos=i + 1)
    return None


def _check_arguments(args) -> tuple[int, int, str]:
    """(width, height, absolute output path) from the arguments that need no engine; ExportError if bad."""
    from app.export.image import ExportError, parse_size

    width, height = parse_size(args.size)
    if args.scale is not None:
        width, height = scaled_size(width, height, args.scale)
    problem = invalid_text(args.prompt, "--prompt") or invalid_text(args.out, "--out")
    if problem:
        raise ExportError(problem)
    if not args.prompt.strip():
        raise ExportError(tr("app.player.empty_prompt"))
    if not 1 <= args.tokens <= 64:
        raise ExportError(tr("app.cli.bad_tokens", n=args.tokens))
    out = os.path.abspath(os.path.expanduser(args.out))
    if getattr(args, "tour", False) and not args.animate:
        raise ExportError(tr("tour.cli.needs_animate"))
    if args.animate:
        from app.export.animate import check_spec

        check_spec(animation_spec(args, width, height), out)
    elif not out.lower().endswith(".png"):
        key = "anim.cli.needs_animate" if out.lower().endswith((".mp4", ".webm", ".gif")) else "app.cli.not_png"
        raise ExportError(tr(key, path=args.out))
    return width, height, out


def explicit_options(argv: list[str] | None) -> set[str]:
    """The dests of the options given on the command line (not left at their defaults)."""
    parser = build_parser()
    for action in parser._actions:
        action.default = argparse.SUPPRESS
    return set(vars(parser.parse_known_args(argv)[0]))


def _apply_view(args, argv: list[str] | None):
    """The view file named by --view (its values fill every option not given) or None; ViewError if bad
    (`--view ''` included: an empty name is refused, not ignored)."""
    if args.view is None:
        return None
    from app.files import viewfile

    saved = viewfile.load(args.view)
    given = explicit_options(argv)
    for dest, value in viewfile.argument_values(saved).items():
        if dest not in given and dest != "layer":  # the layer once the model is known (_default_places)
            setattr(args, dest, value)
    if isinstance(args.prompt, str) and isinstance(args.tokens, int):  # --prompt / --tokens against its knock-outs
        viewfile.check_positions(saved.with_changes(prompt=args.prompt, tokens=args.tokens), args.view)
    return saved


def _default_places(args, config, saved) -> None:
    """--layer and --step not given: the view file's layer where the model that runs has it, else that model's
    default, and the model's default step (compute.model_defaults, shared with the view file, API and window)."""
    from compute.model_defaults import layer_for, model_defaults

    if args.layer is None:
        args.layer = layer_for(config, saved.layer if saved is not None else None)
    if args.step is None:
        args.step = model_defaults(config).step


def main(argv: list[str] | None = None) -> int:
    """The export; SIGINT and SIGTERM stop it with one line and exit 130 / 143, no traceback, no partial file
    (the writers remove their temporary files on any exception)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    _stopped.clear()
    _shield.clear()
    _reported.clear()
    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    hooks = sys.excepthook, sys.unraisablehook
    sys.excepthook, sys.unraisablehook = _quiet_stop(sys.excepthook), _quiet_stop(sys.unraisablehook)
    try:
        try:
            code = _main(argv)
        finally:
            for sig in previous:  # no signal raises past this point
                signal.signal(sig, signal.SIG_IGN)
        if _stopped and code != 0:  # the signal's exception was swallowed on the way, the export failed
            raise Stopped(_stopped[0])
        return code
    except Stopped as exc:
        if _reported:  # the export had already failed and said why: that is its one line
            return 128 + exc.signum
        return _fail(tr("writer.signal.stopped", signal=signal.Signals(exc.signum).name), 128 + exc.signum)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.excepthook, sys.unraisablehook = hooks


def _main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from app import log

    log.setup(verbose=args.verbose)
    from app.files.viewfile import ViewError

    try:
        saved = _apply_view(args, argv)
    except ViewError as exc:
        return _fail(tr("app.view.bad_file", message=str(exc)), 2)
    i18n.set_language(args.lang)
    missing = missing_libraries_error()  # before app.export.image imports QtGui, which links against some of them
    if missing:
        return _fail(missing, 3)
    with _shielded():  # the first PySide6 import (shiboken's initialisation must not be interrupted)
        import PySide6.QtCore  # noqa: F401
        import PySide6.QtGui  # noqa: F401
        import PySide6.QtWidgets  # noqa: F401
    from app.export.image import ExportError, check_writable, render_view, save_png

    try:
        width, height, out = _check_arguments(args)
    except ExportError as exc:
        return _fail(str(exc), 2)
    from app.files import atomic_io

    try:  # a FIFO, a device (/dev/full) or a link to one: a bad --out (exit 2), never replaced
        atomic_io.check_target(out)
    except atomic_io.WriteError as exc:
        return _fail(atomic_io.message(exc), 2 if exc.kind in atomic_io.SPECIAL_KINDS else 1)
    try:
        check_writable(out)
    except ExportError as exc:
        return _fail(str(exc), 1)
    from compute.config import ConfigError, ModelConfig, available_configs, load_default

    try:
        config = load_default() if saved is None else ModelConfig.from_json(available_configs()[saved.model])
    except ConfigError as exc:
        return _fail(str(exc), 1)
    if args.config is not None:  # untrusted: the bounded, guarded loader; a bad file names its field (exit 2)
        from compute.config import ModelConfig

        try:
            config = ModelConfig.from_json(args.config)
        except ConfigError as exc:
            return _fail(tr("model.cli.bad_config", message=str(exc)), 2)
        if saved is not None:  # the view's knobs and selection against the model that will run them
            from app.files.viewfile import check_model

            try:
                check_model(saved, config, args.view, layer=False)
            except ViewError as exc:
                return _fail(tr("app.view.bad_file", message=str(exc)), 2)
    _default_places(args, config, saved)
    n_layers = len(config.mixer_types)
    if not 1 <= args.layer <= n_layers:
        return _fail(tr("app.cli.bad_layer", n=args.layer, total=n_layers), 2)
    from compute.engine import MAX_PROMPT_TOKENS, ToyK3  # torch: fine here, nothing is on screen yet
    from compute.language.tokenizer import ToyTokenizer

    n_tokens = len(ToyTokenizer(vocab_size=config.vocab_size).encode(args.prompt))
    if n_tokens > MAX_PROMPT_TOKENS:
        return _fail(tr("app.cli.prompt_too_long", n=n_tokens, max=MAX_PROMPT_TOKENS), 2)
    no_display = display_error(private=True)  # no display: a private Xvfb when one is installed
    if no_display:
        return _fail(no_display, 3)
    if args.compare is not None:  # two models on the prompt, one PNG (app/export/cli_compare.py)
        from app.export.cli_compare import compare_config, export_compare

        if args.animate:
            return _fail(tr("compare.cli.no_animate"), 2)
        try:
            other = compare_config(config_argument(args.compare), bundled_config_names())
        except ConfigError as exc:
            return _fail(tr("compare.cli.bad_model", message=str(exc)), 2)
        except ValueError as exc:
            return _fail(str(exc), 2)
        return export_compare(args, config, other, width, height, out, _fail, _printable, _one_line)

    import logging  # --verbose: which kernels ran (compiled = numba's cache was ready; k3-explorer --warm-kernels)

    from app.weights_choice import NOTE_PREFIX, fallback_reason

    def engine_fallback_log(record) -> bool:  # the reason is said once, in the line below
        return not record.getMessage().startswith(NOTE_PREFIX)

    logging.getLogger("compute.engine").addFilter(engine_fallback_log)
    try:
        engine = ToyK3(config=config, device=args.device, weights=args.weights)  # --weights, else the view's
        trace = engine.run(args.prompt, max_new_tokens=args.tokens, knobs=saved.knobs if saved else None)
    except Exception as exc:  # noqa: BLE001 - any engine failure is reported, not a traceback
        return _fail(tr("app.cli.engine_failed", device=args.device, message=_one_line(exc)), 1)
    finally:
        logging.getLogger("compute.engine").removeFilter(engine_fallback_log)
    if getattr(engine, "weights_fallback", "") in ("missing", "damaged"):  # K3's trained file: why it did not run
        print(f"k3-explorer export: {_printable(tr('weights.cli.fallback', reason=fallback_reason(engine.weights_note)))}",
              file=sys.stderr)

    logging.getLogger(__name__).info("export: engine on %s, %s kernels", engine.backend,
                                     "compiled" if engine.compiled else "numpy")
    from app import player

    check_stop()  # a signal swallowed on the way (a library's callback) stops here
    steps = player.build_steps(trace)
    if not 1 <= args.step <= len(steps):
        return _fail(tr("app.cli.bad_step", n=args.step, total=len(steps)), 2)
    step = steps[args.step - 1]

    from PySide6.QtCore import QCoreApplication, Qt
    from PySide6.QtWidgets import QApplication

    from scene.display import prepare_gl_platform, release_probe

    prepare_gl_platform()  # before scene.view imports pyqtgraph and OpenGL
    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    app = QApplication.instance() or QApplication(["k3-explorer"])
    if args.animate:
        return _animate(args, config, trace, steps, width, height, out)
    release_probe()  # Qt is connected: the display probe's connection may go
    from app.api import build_scene
    from app.files.viewfile import View

    shown = (saved or View()).with_changes(layer=args.layer)  # the scene as the view file (or none) says
    from app.engine.explain_render import overlay_for, result_for, view_parts

    parts, percent, position = view_parts(saved)  # the view's, unless --explain / --route-threshold say otherwise
    if args.explain is not None:
        parts = args.explain
    if args.route_threshold is not None:
        percent = args.route_threshold
    knockout = saved.knockouts if saved is not None else None  # run as the window's Explain dock runs them
    try:
        result = result_for(config, trace, position, knockout, causal="route" in parts) if knockout else None
        explanation = overlay_for(config, trace, parts, percent, position, knockout, result)
    except Exception as exc:  # noqa: BLE001 - reported in one line, as an engine failure
        return _fail(tr("app.cli.engine_failed", device=args.device, message=_one_line(exc)), 1)
    view = build_scene(app, config, trace, shown, step, width, height, args.camera, explanation)
    try:
        image = render_view(view, width, height, transparent=args.transparent, labels=not args.no_labels,
                            theme=args.theme)
        check_stop()
        save_png(image, out)
    except ExportError as exc:
        return _fail(str(exc), 1)
    finally:
        view.close()
        from scene.frames import stop_all

        stop_all()  # the view's render thread ends before Qt does
    print(_printable(tr("app.cli.wrote", path=out, w=width, h=height)))
    if result is not None and result.knockout:  # the Explain dock's before / after of the view's knock-outs
        from app.files.view_knockouts import knockout_line

        print(_printable(knockout_line(result)))
    return 0


def _explain_parts(value: str) -> tuple[str, ...]:
    from app.engine.explain_render import parse_parts

    try:
        return parse_parts(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _route_percent(value: str) -> int:
    from app.engine.explain_render import check_percent

    try:
        return check_percent(int(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer percent 0..100, got {value[:40]!r}") from None


def animation_spec(args, width: int, height: int):
    from app.export.animate import AnimationSpec

    return AnimationSpec(width=width, height=height, fps=args.fps, mode="orbit" if args.orbit else "steps",
                         lang=args.lang, captions=not args.no_captions, labels=not args.no_labels)


def _animate(args, config, trace, steps, width: int, height: int, out: str) -> int:
    """--animate: every step (or an orbit at --step) to out, a progress line on stderr."""
    from app.export import animate
    from app.export.image import ExportError
    from scene.frames import stop_all

    spec = animation_spec(args, width, height)
    view = animate.offscreen_view(config, trace, args.layer - 1, None, width, height)
    if args.camera:
        view.set_camera_preset(args.camera, animate=False)
    tty = sys.stderr.isatty()
    shown = [-1]

    def progress(done: int, total: int) -> bool:
        check_stop()
        tenth = done * 10 // max(total, 1)
        if tty or tenth != shown[0] or done == total:
            shown[0] = tenth
            line = tr("anim.cli.progress", n=done, total=total)
            print(f"\r{line}" if tty else line, end="" if tty and done < total else "\n", file=sys.stderr,
                  flush=True)
        return True

    try:
        if getattr(args, "tour", False):
            from app.window.tour_video import export_tour

            path, frames = export_tour(view, config, trace, spec, out, progress=progress)
        else:
            path, frames = animate.export(view, steps, spec, out, args.layer - 1, progress=progress,
                                          step=args.step - 1)
    except ExportError as exc:
        return _fail(str(exc), 1)
    finally:
        view.close()
        stop_all()  # the view's render thread ends before Qt does
    print(_printable(tr("anim.cli.wrote", path=path, frames=frames, w=width, h=height, fps=spec.fps)))
    return 0
