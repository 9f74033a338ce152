"""The window's command line (`k3-explorer [options] [FILE.k3view]`), its usage with the other forms (the
`export` subcommand, the kernel warm-up, the desktop launcher), the exit codes and environment variables its
--help ends with, and the man page generated from the same parsers (`k3-explorer --man > k3-explorer.1`).

Only argparse and app.cli's parsing helpers: nothing here imports Qt or numpy."""
from __future__ import annotations

import argparse
import datetime

from app import __version__
from app.engine.kernel_warmup import WARM_FLAG

DEVICES = ("auto", "cpu", "cuda")
PROG = "k3-explorer"

EXIT_CODES = (
    ("0", "success (the window closed normally, the file was written, the kernels are in the cache)"),
    ("1", "an export that could not be written, an engine or render that failed, a warm-up that failed"),
    ("2", "bad arguments, or a view or model config file that is refused"),
    ("3", "no display (none set, or no X server answers), a system library Qt needs is missing (the line names "
          "its Debian package), or --warm-kernels without numba"),
    ("130, 143", "stopped by SIGINT (Ctrl+C) or SIGTERM: the window closes as by its close button, an export "
                 "leaves no partial file"),
)
ENVIRONMENT = (
    ("K3_NO_NUMBA", "1: never use the numba-compiled kernels (the numpy operators run; also where numba is not "
                    "installed)"),
    ("K3_NO_FIRST_RUN_HINT", "1: never show the first-run hint over the 3D view by itself (Help -> Show hint again "
                             "still does)"),
    ("XDG_CACHE_HOME", "the compiled kernels' cache: $XDG_CACHE_HOME/k3-explorer/ (default ~/.cache/k3-explorer/)"),
    ("NUMBA_CACHE_DIR", "put the compiled kernels' cache there instead"),
    ("XDG_STATE_HOME", "the log file: $XDG_STATE_HOME/k3-explorer/k3-explorer.log "
                       "(default ~/.local/state/k3-explorer/)"),
    ("XDG_CONFIG_HOME", "the settings: $XDG_CONFIG_HOME/K3Explorer/K3 Explorer.ini (default ~/.config/...; "
                        "--settings FILE uses another file)"),
    ("XDG_DATA_HOME", "where --install-desktop puts the launcher, icons, metainfo and MIME type "
                      "(default ~/.local/share/)"),
    ("DISPLAY, QT_QPA_PLATFORM", "the X display (or Xvfb: xvfb-run -a k3-explorer export ...) and Qt's platform"),
)
FORMS = (
    "[options] [FILE.k3view]",
    "export --out FILE [options]      (k3-explorer export --help)",
    f"{WARM_FLAG} [--if-needed]",
    "--install-desktop | --uninstall-desktop | --man",
)


def epilog() -> str:
    lines = ["exit status:"]
    lines += [f"  {code:<9} {text}" for code, text in EXIT_CODES]
    lines += ["", "environment:"]
    lines += [f"  {name:<16} {text}" if len(name) <= 16 else f"  {name}\n  {'':<16} {text}" for name, text in ENVIRONMENT]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The window's parser; its usage also names the export subcommand and the one-shot commands."""
    from app.cli import CONFIG_HELP, OneLineParser, bundled_config_names, config_argument

    usage = "\n".join(f"{'' if i == 0 else '       '}%(prog)s {form}" for i, form in enumerate(FORMS))
    parser = OneLineParser(prog=PROG, usage=usage, formatter_class=argparse.RawDescriptionHelpFormatter,
                           description="K3 Explorer: a 3D explorer of one Kimi K3 inference. "
                                       "'k3-explorer export' renders the 3D view to a PNG, MP4, WebM or GIF "
                                       "without a window ('k3-explorer export --help').",
                           epilog=epilog())
    parser.add_argument("--lang", choices=("en", "ko"), help="interface language (default: saved, else system)")
    parser.add_argument("--settings", metavar="FILE", help="settings file to use instead of the user's")
    parser.add_argument("--device", default="auto", choices=DEVICES,
                        help="engine device: auto, cpu or cuda (default auto)")
    parser.add_argument("--weights", choices=("trained", "random"),
                        help="toy weights for this session: trained or random (default: the Model menu's choice)")
    parser.add_argument("--verbose", action="store_true",
                        help="log debug details to stderr and the log file (default: warnings)")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--config", metavar="NAME|FILE", type=config_argument,
                        help=CONFIG_HELP.format(names=", ".join(bundled_config_names())))
    parser.add_argument(WARM_FLAG, dest="warm_kernels", action="store_true",
                        help="compile the engine's kernels into the cache now (about a minute of CPU once; the "
                             "window otherwise does it in the background) and exit 0; with --if-needed only when "
                             "the cache is not ready")
    parser.add_argument("--install-desktop", action="store_true",
                        help="add K3 Explorer to your desktop's app menu (launcher, icons, metainfo, the "
                             "*.k3view file type, under ~/.local/share) and exit")
    parser.add_argument("--uninstall-desktop", action="store_true", help="remove what --install-desktop added")
    parser.add_argument("--man", action="store_true", help="print the man page (roff) and exit")
    parser.add_argument("view", nargs="?", metavar="FILE.k3view", help="open a saved view (File -> Save view…)")
    return parser


# --- the man page ------------------------------------------------------------------------------------------

def _roff(text: str) -> str:
    """Text for a roff line: backslashes and hyphens escaped, other than ASCII as \\[uXXXX], no line starting with
    a control character."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    text = "".join(c if ord(c) < 128 else f"\\[u{ord(c):04X}]" for c in text)  # groff reads ASCII (no preconv)
    return "\\&" + text if text[:1] in (".", "'") else text


def _options(parser: argparse.ArgumentParser) -> list[str]:
    out = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            names = ", ".join(f"\\fB{_roff(o)}\\fR" for o in action.option_strings)
            if action.nargs != 0:
                meta = action.metavar or ("{" + ",".join(action.choices) + "}" if action.choices else
                                          action.dest.upper())
                names += f" \\fI{_roff(str(meta))}\\fR"
        else:
            names = f"\\fI{_roff(action.metavar or action.dest)}\\fR"
        help_text = (action.help or "") % {"prog": parser.prog, "default": action.default}
        out += [".TP", names, _roff(help_text)]
    return out


def man_page(date: datetime.date | None = None) -> str:
    """k3-explorer.1: the window's and the export's options, exit status, environment and files (roff)."""
    from app.cli import build_parser as export_parser

    window, export = build_parser(), export_parser()
    day = (date or datetime.date.today()).isoformat()
    lines = [
        f'.TH K3\\-EXPLORER 1 "{day}" "k3\\-explorer {__version__}" "User Commands"',
        ".SH NAME", "k3\\-explorer \\- a 3D explorer of one Kimi K3 inference",
        ".SH SYNOPSIS",
    ]
    for form in FORMS:
        lines += [".br", f"\\fBk3\\-explorer\\fR {_roff(form.split('  ')[0].strip())}"]
    lines += [".SH DESCRIPTION", _roff(window.description), ".PP", _roff(export.description),
              ".SH OPTIONS", *_options(window),
              ".SH EXPORT OPTIONS", "Options of \\fBk3\\-explorer export\\fR:", *_options(export),
              ".SH EXIT STATUS"]
    for code, text in EXIT_CODES:
        lines += [".TP", f"\\fB{_roff(code)}\\fR", _roff(text)]
    lines.append(".SH ENVIRONMENT")
    for name, text in ENVIRONMENT:
        lines += [".TP", f"\\fB{_roff(name)}\\fR", _roff(text)]
    lines += [".SH FILES",
              ".TP", _roff("~/.config/K3Explorer/K3 Explorer.ini"), "Settings (window layout, language, knobs).",
              ".TP", _roff("~/.cache/k3-explorer/"), "The compiled kernels' cache; safe to delete.",
              ".TP", _roff("~/.local/state/k3-explorer/k3-explorer.log"),
              _roff("Warnings, errors and engine tracebacks (rotated: the log and three older ones)."),
              ".SH EXAMPLES", ".nf",
              _roff('k3-explorer export --layer 37 --step 6 --size 3840x2160 --lang ko --prompt "로봇이 컵을 '
                    '집었다" --out layer37.png'), ".fi",
              ".SH SEE ALSO", "\\fBxvfb\\-run\\fR(1)"]
    return "\n".join(lines) + "\n"
