"""`k3-explorer export --compare MODEL --out FILE.png` (issue 41.3): the model that --config (or --view) names and
MODEL, each run on --prompt and explained at its last position (compute.teaching.compare_run.side_run: answer, top-5, lens
curve, residual patching map, named figures), written as one PNG — the Compare dock's Same-prompt page drawn off
screen (app/docks/compare/sheet.py) at --size's width and at least its height, in --lang.

MODEL is a bundled model's name or a config.json path, read by the same guarded loader as --config: a name that
is neither is one line and exit 2. Needs an X display like every export (Xvfb will do); no window is shown."""
from __future__ import annotations

import logging


def compare_config(value: str, names: list[str]):
    """MODEL's config (value: MODEL as app.cli.config_argument resolved it; names: the bundled models);
    compute.config.ConfigError (one line) when it is neither a bundled name nor a readable file, ValueError (one
    translated line) when it is empty."""
    from app.i18n import tr
    from compute.config import ModelConfig

    if not value or not value.strip():
        raise ValueError(tr("compare.cli.empty", names=", ".join(names)))
    return ModelConfig.from_json(value)


def run_pair(configs, prompt: str, device: str, weights: str):
    """side_run of each config's engine on prompt (the engines' fallback notes are left to the caller)."""
    from compute.teaching.compare_run import side_run
    from compute.engine import ToyK3

    return tuple(side_run(ToyK3(config=c, device=device, weights=weights), prompt) for c in configs)


def export_compare(args, config, other, width: int, height: int, out: str, fail, printable, one_line) -> int:
    """Run both, draw the sheet, write it; the exit status. app.cli's helpers come in as arguments (that module
    imports this one): fail(message, code) says a failure in one line, printable and one_line shape the text."""
    from PySide6.QtCore import QCoreApplication, Qt
    from PySide6.QtWidgets import QApplication

    from app.export.cli_signals import check_stop
    from app.files.export_files import ExportError
    from app.i18n import tr
    from app.weights_choice import NOTE_PREFIX

    quiet = lambda record: not record.getMessage().startswith(NOTE_PREFIX)  # noqa: E731 - the header says it
    logging.getLogger("compute.engine").addFilter(quiet)
    try:
        results = run_pair((config, other), args.prompt, args.device, args.weights)
    except Exception as exc:  # noqa: BLE001 - any engine failure is one line, not a traceback
        return fail(tr("app.cli.engine_failed", device=args.device, message=one_line(exc)), 1)
    finally:
        logging.getLogger("compute.engine").removeFilter(quiet)
    check_stop()
    QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
    app = QApplication.instance() or QApplication(["k3-explorer"])  # noqa: F841 - alive while the sheet is drawn
    from app.docks.compare.sheet import write_comparison

    try:
        image = write_comparison(results, args.prompt, out, width, height)
    except ExportError as exc:
        return fail(str(exc), 1)
    print(printable(tr("compare.cli.wrote", path=out, w=image.width(), h=image.height(), a=results[0].display,
                       b=results[1].display)))
    return 0
