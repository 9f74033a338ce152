"""Entry point: `k3-explorer` / `python -m app` opens the main window;
`k3-explorer export ...` renders a PNG without user interaction (see app/cli.py); `k3-explorer --warm-kernels`
(handled before anything else, no Qt) is the compiled kernels' warm-up (app/engine/kernel_warmup.py; also the app's own
child: a frozen bundle has no `python -m`). The options and --help are app/cli_main.py's. Ctrl+C / SIGTERM close the window as its close button does (settings saved)
and exit 130 / 143 (app/window/terminal_signals.py).

Before Qt starts, the display is checked (Qt aborts the process when its X display cannot be opened) and
PyOpenGL is pointed at the GL window system Qt will use (scene/display.py): both happen here, before anything
imports pyqtgraph or OpenGL."""
from __future__ import annotations

import argparse
import os
import sys

from app import __version__
from app.engine.kernel_warmup import WARM_FLAG  # imports only os, sys, time

EXIT_NO_DISPLAY = 3


def _gui_args(argv: list[str]) -> argparse.Namespace:
    from app.cli_main import build_parser

    return build_parser().parse_args(argv)


def _one_shot(args: argparse.Namespace) -> int | None:
    """--man, --install-desktop / --uninstall-desktop, a --warm-kernels not given first: their exit status; None
    for the window."""
    if args.man:
        from app.cli_main import man_page

        sys.stdout.write(man_page())
        return 0
    if args.install_desktop or args.uninstall_desktop:
        from app.files import desktop_install

        return desktop_install.main(remove=args.uninstall_desktop)
    if args.warm_kernels:
        from app.engine import kernel_warmup

        return kernel_warmup.main([])
    return None


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
        from app.engine import kernel_warmup

        return kernel_warmup.main(argv[1:])
    if argv and argv[0] == "export":
        from app.cli import main as export_main

        return export_main(argv[1:])
    args = _gui_args(argv)
    code = _one_shot(args)
    if code is not None:
        return code
    from app import i18n, log

    log.setup(verbose=args.verbose, to_file=True)
    from app.window.display_check import display_error
    from scene.display import prepare_gl_platform, release_probe

    i18n.set_language(args.lang or i18n.system_language())
    view = None
    if args.view is not None:  # checked before any window: a bad file is one line and exit 2, like a bad option
        from app.files import viewfile

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
    from app.window.terminal_signals import SignalStopper

    stopper = SignalStopper(app)  # Ctrl+C / SIGTERM from here on: the window closes as by its close button
    app.setApplicationName("K3 Explorer")
    app.setOrganizationName("K3Explorer")
    from app.files.desktop import APP_ID, app_icon

    app.setDesktopFileName(APP_ID)  # the launcher entry APP_ID.desktop; the Wayland app-id
    app.setWindowIcon(app_icon())  # the layer stack (assets/desktop), every window and dialog
    from app import slot_guard
    from app.window.main_window import MainWindow

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
