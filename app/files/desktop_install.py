"""`k3-explorer --install-desktop` / `--uninstall-desktop`: the app in the user's desktop menu, for every kind of
install (pip, a checkout's .venv through `make install-desktop`, the standalone bundle), without root.

Into $XDG_DATA_HOME (default ~/.local/share): applications/APP_ID.desktop (Exec = the command that is running
now: the bundle's executable, or the k3-explorer console script), metainfo/APP_ID.metainfo.xml, the icon as SVG
and every PNG size under icons/hicolor/, and mime/packages/APP_ID.xml (*.k3view, the entry's MimeType). Then the
desktop's caches are refreshed when their tools are installed (update-mime-database, update-desktop-database),
so a file manager opens view files with the app. Uninstall removes exactly those files and refreshes again.
Only Qt-free modules: it runs before any QApplication."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from app.files.desktop import APP_ID, ICON_SIZES, icon_png, icon_svg
from assets import asset_path


def data_home() -> Path:
    base = os.environ.get("XDG_DATA_HOME", "")
    return Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "share"


def launcher_command() -> str:
    """What the desktop entry runs: a frozen bundle's executable; the console script that started this process
    (sys.argv[0], e.g. .venv/bin/k3-explorer); else the one beside this Python or on PATH; else the bare name."""
    if getattr(sys, "frozen", False):
        return os.path.abspath(sys.executable)
    started = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(started) == "k3-explorer" and os.access(started, os.X_OK):
        return started
    beside = Path(sys.executable).parent / "k3-explorer"
    if os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("k3-explorer") or "k3-explorer"


def exec_value(program: str) -> str:
    """The desktop entry's Exec: the program quoted as the Desktop Entry spec asks when it holds a reserved
    character, then %f (one file: a *.k3view)."""
    if any(c in program for c in " \t\n\"'\\><~|&;$*?#()`"):
        escaped = "".join("\\" + c if c in '"`$\\' else c for c in program)
        program = f'"{escaped}"'.replace("\\", "\\\\")  # the string-value level escapes the backslashes again
    return f"{program} %f"


def targets(root: Path) -> dict[Path, Path]:
    """{installed path: source file} of every file the install writes (the .desktop entry is rewritten)."""
    files = {
        root / "applications" / f"{APP_ID}.desktop": asset_path("desktop", f"{APP_ID}.desktop"),
        root / "metainfo" / f"{APP_ID}.metainfo.xml": asset_path("desktop", f"{APP_ID}.metainfo.xml"),
        root / "mime" / "packages" / f"{APP_ID}.xml": asset_path("desktop", f"{APP_ID}.mime.xml"),
        root / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg": icon_svg(),
    }
    for n in ICON_SIZES:
        files[root / "icons" / "hicolor" / f"{n}x{n}" / "apps" / f"{APP_ID}.png"] = icon_png(n)
    return files


def _refresh(root: Path) -> list[str]:
    """Rebuild the MIME and desktop caches of root (when the tools exist); the tools that ran."""
    ran = []
    for tool, folder in (("update-mime-database", root / "mime"), ("update-desktop-database", root / "applications")):
        if shutil.which(tool) and folder.is_dir():
            subprocess.run([tool, str(folder)], capture_output=True, timeout=60, check=False)
            ran.append(tool)
    return ran


def install(root: Path | None = None, program: str | None = None) -> list[Path]:
    root = root or data_home()
    written = []
    for path, source in targets(root).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".desktop":
            lines = source.read_text(encoding="utf-8").splitlines()
            value = exec_value(program or launcher_command())
            text = "\n".join(f"Exec={value}" if line.startswith("Exec=") else line for line in lines) + "\n"
            path.write_text(text, encoding="utf-8")
        else:
            shutil.copyfile(source, path)
        path.chmod(0o644)
        written.append(path)
    _refresh(root)
    return written


def uninstall(root: Path | None = None) -> list[Path]:
    root = root or data_home()
    removed = []
    for path in targets(root):
        try:
            path.unlink()
            removed.append(path)
        except FileNotFoundError:
            pass
    _refresh(root)
    return removed


def main(remove: bool = False) -> int:
    """The command line: one line saying what was done (exit 0), or why it could not (exit 1)."""
    root = data_home()
    try:
        if remove:
            removed = uninstall(root)
            print(f"k3-explorer: removed {len(removed)} files of the app menu entry from {root}")
        else:
            install(root)
            print(f"k3-explorer: in the app menu now (Exec={exec_value(launcher_command())}; *.k3view files open "
                  f"with it; files under {root}); undo: k3-explorer --uninstall-desktop")
    except OSError as exc:
        print(f"k3-explorer: error: {exc.strerror or exc}: {exc.filename or root}", file=sys.stderr)
        return 1
    return 0
