"""Background threads yield the CPU to the UI thread (scene/thread_priority.py): a real thread's nice value as the
kernel reports it, and the real render thread of a 3D view with the GL driver's rasteriser threads of its context."""
import os
import sys
import threading

import pytest

from scene import frames, thread_priority

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")


def _nice(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def test_lower_this_thread_raises_only_that_thread_and_never_lowers_a_nicer_one():
    seen = {}

    def body():
        tid = threading.get_native_id()
        seen["changed"] = thread_priority.lower_this_thread()
        seen["nice"] = _nice(tid)
        seen["again"] = thread_priority.lower_this_thread(nice=thread_priority.BACKGROUND_NICE - 2)  # not lowered
        seen["after"] = _nice(tid)

    main_before = _nice(threading.get_native_id())
    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen["changed"] == (1 if main_before < thread_priority.BACKGROUND_NICE else 0)
    assert seen["nice"] == max(main_before, thread_priority.BACKGROUND_NICE)
    assert seen["again"] == 0 and seen["after"] == seen["nice"]
    assert _nice(threading.get_native_id()) == main_before  # the calling thread of the test is untouched


def test_threads_named_lists_this_process_threads_and_lower_skips_gone_ones():
    me = threading.get_native_id()
    with open(f"/proc/self/task/{me}/comm", encoding="utf-8") as f:
        name = f.read().strip()
    assert me in thread_priority.threads_named(name[:4])
    assert thread_priority.threads_named("no-such-thread-name-") == set()
    assert thread_priority.lower([2 ** 22 + 12345]) == 0  # no such thread: skipped, no error


def test_the_render_thread_and_its_gl_workers_yield_to_the_ui_thread(qtbot, k3_config):
    from scene.view import SceneView

    view = SceneView(None, k3_config)
    qtbot.addWidget(view)
    view.resize(400, 300)
    view.show()
    qtbot.waitUntil(lambda: view.gl.paint_count > 0, timeout=10000)
    renderer = view.gl.renderer
    assert renderer.threaded
    render = thread_priority.threads_named("k3-render")
    assert render, "the render thread is named after its QThread"
    assert all(_nice(t) >= thread_priority.BACKGROUND_NICE for t in render)
    workers = thread_priority.threads_named(frames.GL_WORKER_PREFIX)  # llvmpipe's, shared by every context
    assert workers and workers <= renderer._gl_workers, "Mesa's llvmpipe rasteriser threads"
    assert all(_nice(t) >= thread_priority.BACKGROUND_NICE for t in workers)
    assert _nice(threading.get_native_id()) < thread_priority.BACKGROUND_NICE  # the UI thread keeps its place
