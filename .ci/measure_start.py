"""Start-up of a K3 Explorer command, for the README's "Standalone build" comparison ("pick by
measuring size and start-up"): the seconds from launch to the window's first frame of the 3D view (the app logs
"OpenGL: ..." at INFO, with --verbose, once that frame is drawn), then SIGTERM. Median of N runs, each with a
fresh settings file. Needs a display (xvfb-run -a).

    xvfb-run -a python .ci/measure_start.py [-n 5] -- dist/k3-explorer/k3-explorer
    xvfb-run -a python .ci/measure_start.py -- .venv/bin/k3-explorer
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def window_seconds(cmd: list[str], timeout: float = 120) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        proc = subprocess.Popen([*cmd, "--verbose", "--lang", "en", "--settings", os.path.join(tmp, "k3.ini")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp)
        try:
            for line in proc.stderr:
                if "OpenGL: " in line:
                    return time.monotonic() - t0
                if time.monotonic() - t0 > timeout:
                    break
            raise SystemExit(f"measure_start: no first frame from {cmd[0]} (rc {proc.poll()})")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if os.sep in cmd[0]:
        cmd[0] = os.path.abspath(cmd[0])  # each run starts in its own empty folder
    window_seconds(cmd)  # warm-up: file cache, fontconfig cache
    runs = [window_seconds(cmd) for _ in range(args.n)]
    print(f"window {statistics.median(runs):.2f} s median of {args.n} "
          f"(min {min(runs):.2f}, max {max(runs):.2f}): {' '.join(cmd)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
