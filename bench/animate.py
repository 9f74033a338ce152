"""Animated export speed (goal: a 1080p MP4 of all steps in <= 30 s on 2 CPU cores), one JSON object:

    python bench/animate.py [--size 1920x1080] [--fps 30] [--out /tmp/k3-bench.mp4] [--tokens 4]

Runs `k3-explorer export --animate` in-process, the same path as the CLI: the engine run is timed apart; the
export's time covers planning, every render (software OpenGL here), captions and ffmpeg's encoding.
The machine may be shared, so besides the wall time the export's CPU seconds are reported: this process (its
render threads included, `export_cpu_s`) and ffmpeg (`ffmpeg_cpu_s`); their sum over 2 cores (`idle_bound_s`) is
the least wall time the export could take on an idle 2-core machine, next to the 1-minute load average.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")
from xdisplay import x_display  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--tokens", type=int, default=4)
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "k3-bench-animate.mp4"))
    args = ap.parse_args()
    with x_display("bench/animate.py"):
        from scene.display import prepare_gl_platform

        prepare_gl_platform()
        from PySide6.QtCore import QCoreApplication, Qt
        from PySide6.QtWidgets import QApplication

        QCoreApplication.setAttribute(Qt.AA_ShareOpenGLContexts)
        app = QApplication.instance() or QApplication(["bench"])  # noqa: F841
        from app.export import animate
        from app import player
        from app.export.image import parse_size
        from compute.config import load_default
        from compute.engine import ToyK3
        from scene.frames import stop_all

        w, h = parse_size(args.size)
        t0 = time.perf_counter()
        config = load_default()
        trace = ToyK3(config=config, device="cpu").run("로봇이 컵을 집었다", max_new_tokens=args.tokens)
        engine_s = time.perf_counter() - t0
        steps = player.build_steps(trace)
        spec = animate.AnimationSpec(width=w, height=h, fps=args.fps)
        renders = []
        t1, cpu1 = time.perf_counter(), os.times()
        view = animate.offscreen_view(config, trace, 36, None, w, h)
        path, frames = animate.export(view, steps, spec, args.out, 36,
                                      progress=lambda done, total: renders.append(done) is None)
        export_s, cpu2 = time.perf_counter() - t1, os.times()
        own = (cpu2.user + cpu2.system) - (cpu1.user + cpu1.system)
        ffmpeg = (cpu2.children_user + cpu2.children_system) - (cpu1.children_user + cpu1.children_system)
        view.close()
        stop_all()
        print(json.dumps({
            "size": f"{w}x{h}", "fps": args.fps, "steps": len(steps), "frames": frames,
            "renders": len(renders) - 1, "video_s": round(frames / args.fps, 1),
            "engine_s": round(engine_s, 2), "export_s": round(export_s, 2),
            "export_cpu_s": round(own, 2), "ffmpeg_cpu_s": round(ffmpeg, 2),
            "idle_bound_s": round((own + ffmpeg) / min(2, os.cpu_count() or 1), 2),
            "bytes": os.path.getsize(path), "cpus": os.cpu_count(),
            "load_avg_1min": round(os.getloadavg()[0], 2), "goal_s": 30,
        }))


if __name__ == "__main__":
    main()
