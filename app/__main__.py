"""Entry point: `k3-explorer` / `python -m app` opens the main window;
`k3-explorer export ...` renders a PNG without user interaction (see app/cli.py); `k3-explorer --warm-kernels`
(hidden, handled before anything else, no Qt) is the compiled kernels' warm-up child (app/kernel_warmup.py: a
frozen bundle has no `python -m`). Ctrl+C / SIGTERM close the window as its close button does (settings saved)
and exit 130 / 143 (app/terminal_signals.py).

Before Qt starts, the display is checked (Qt aborts the process when its X display cannot be opened) and
PyOpenGL is pointed at the GL window system Qt will use (scene/display.py): both happen here, before anything
imports pyqtgraph or OpenGL."""
from __future__ import annotations

import argparse
import os
import sys

from app import __version__
from app.kernel_warmup import WARM_FLAG  # imports only os, sys, time

DEVICES = ("auto", "cpu", "cuda")
EXIT_NO_DISPLAY = 3


def _gui_args(argv: list[str]) -> argparse.Namespace:
    from app.cli import CONFIG_HELP, OneLineParser, bundled_config_names, config_argument

    parser = OneLineParser(prog="k3-explorer",
                           description="K3 Explorer: a 3D explorer of one Kimi K3 inference. "
                                       "Use 'k3-explorer export --help' for headless export "
                                       "(PNG, MP4, WebM, GIF).")
    parser.add_argument("--lang", choices=("en", "ko"), help="interface language (default: saved, else system)")
    parser.add_argument("--settings", metavar="FILE", help="settings file to use instead of the user's")
    parser.add_argument("--device", default="auto", choices=DEVICES,
                        help="engine device: auto, cpu or cuda (default auto)")
    parser.add_argument("--weights", choices=("trained", "random"),
                        help="toy weights for this session: trained or random (default: the Model menu's choice)")
    parser.add_argument("--verbose", action="store_true", help="log debug details to stderr (default: warnings)")
    parser.add_argument("--version", action="version", version=f"k3-explorer {__version__}")
    parser.add_argument("--config", metavar="NAME|FILE", type=config_argument,
                        help=CONFIG_HELP.format(names=", ".join(bundled_config_names())))
    parser.add_argument("view", nargs="?", metavar="FILE.k3view", help="open a saved view (File -> Save view…)")
    return parser.parse_args(argv)


def _import_before_qt() -> None:
    """Import the window's big Qt-free dependencies before PySide6. Once PySide6 is imported, shiboken checks
    every newly imported module for `from __feature__` by reading its source (inspect.getsource, ~0.18 ms a
    module on 2 cores): ~50 ms of start-up for the ~280 modules of numpy and PyOpenGL, which never use Qt.
    PyOpenGL only after prepare_gl_platform(): it picks its GL platform when imported."""
    import numpy  # noqa: F401

    try:
        from OpenGL import GL  # noqa: F401
    except Exception:  # noqa: BLE001 - a PyOpenGL that cannot load fails again where the window imports it
        pass


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == WARM_FLAG:  # first: the kernel warm-up child (frozen bundles have no `python -m`)
        from app import kernel_warmup

        return kernel_warmup.main(argv[1:])
    if argv and argv[0] == "export":
        from app.cli import main as export_main

        return export_main(argv[1:])
    args = _gui_args(argv)
    from app import i18n, log

    log.setup(verbose=args.verbose)
    from app.display_check import display_error
    from scene.display import prepare_gl_platform, release_probe

    i18n.set_language(args.lang or i18n.system_language())
    view = None
    if args.view is not None:  # checked before any window: a bad file is one line and exit 2, like a bad option
        from app import viewfile

        try:
            view = viewfile.load(args.view)
            view = view.with_changes(language=args.lang) if args.lang else view  # --lang given: it wins
        except viewfile.ViewError as exc:
            print(f"k3-explorer: error: {i18n.tr('app.view.bad_file', message=str(exc))}", file=sys.stderr)
            return 2
    config = None
    if args.config is not None:  # untrusted: the bounded, guarded loader; a bad file is one line naming the field, exit 2
        from compute.config import ConfigError, ModelConfig

        try:
            config = ModelConfig.from_json(args.config)
        except ConfigError as exc:
            print(f"k3-explorer: error: {i18n.tr('model.cli.bad_config', message=str(exc))}", file=sys.stderr)
            return 2
    no_display = display_error()
    if no_display:
        print(f"k3-explorer: error: {no_display}", file=sys.stderr)
        return EXIT_NO_DISPLAY
    prepare_gl_platform()  # before pyqtgraph / OpenGL are imported
    _import_before_qt()
    from PySide6.QtCore import QCoreApplication, Qt
    from PySide6.QtWidgets import QApplication

    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)  # before the QApplication (docs/spec/platform.md)
    app = QApplication.instance() or QApplication([sys.argv[0]])
    release_probe()  # Qt is connected: the display probe's connection may go
    from app.terminal_signals import SignalStopper

    stopper = SignalStopper(app)  # Ctrl+C / SIGTERM from here on: the window closes as by its close button
    app.setApplicationName("K3 Explorer")
    app.setOrganizationName("K3Explorer")
    from app.desktop import DESKTOP_ID, app_icon

    app.setDesktopFileName(DESKTOP_ID)  # the launcher entry k3-explorer.desktop; the Wayland app-id
    app.setWindowIcon(app_icon())  # the layer stack (assets/desktop), every window and dialog
    from app import slot_guard
    from app.main_window import MainWindow

    slot_guard.install_excepthook()  # an exception reaching Qt's event loop or a thread: logged, one status line

    window = MainWindow(settings_path=args.settings, device=args.device, language=args.lang, weights=args.weights)
    window.show()
    if config is not None:
        window.models.request(config)  # the engine switches to it in its thread; the window follows
    if view is not None:
        window.views.source = os.path.abspath(args.view)  # a refused field names the file
        try:  # checked against the --config model when one is given: a refusal is one message, the window runs on
            if window.views.apply(view, config=config):
                window.views.remember(args.view)
        finally:
            window.views.source = None
    code = app.exec()
    stopper.uninstall()
    return stopper.exit_code(code)  # 130 / 143 when a signal closed it


if __name__ == "__main__":
    sys.exit(main())
