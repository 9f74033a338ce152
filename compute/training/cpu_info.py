"""Which CPU a training run ran on, and its "class": what decides whether float32 training is bit for bit.

Training's float32 arithmetic goes through two libraries that choose their kernels by the CPU they find:
ATen's vectorised loops (sums, exp, softmax: compute.training.train pins them to AVX2 on x86) and MKL's sgemm (every
matmul), which picks different kernels on Intel and AMD and by instruction set; its choice is not pinned, and no MKL
setting was found that makes it vendor-independent: MKL_CBWR=COMPATIBLE gives 5.38699, 5.268329, 5.369781 for the
recipe's first three losses on an Intel Xeon with AVX-512 (issue 45) and 5.38699, 5.269616, 5.365835 on an AMD EPYC
(AVX2; measured 2026-12-05), the defaults 5.387012, 5.282064, 5.37427 and 5.38699, 5.271506, 5.340709. So a
rebuild is bit for bit only on the CPU class of the machine that made the file: the same architecture, vendor and widest vector ISA (avx512f or not), with ATen on AVX2 and MKL left
to its defaults (no MKL_CBWR / MKL_ENABLE_INSTRUCTIONS / MKL_DEBUG_CPU_TYPE). `cpu_class()` is that key.

SHIPPED_TOY_CPU_CLASS is the class of the machine that made the shipped toy-k3-v2.npz. Its provenance predates
the "cpu" field; the class was read off the machines that reproduced it: the recorded losses came from an AMD EPYC
(issue 45), and on 2026-12-05 an AMD EPYC (family 25 model 1, AVX2, no AVX-512) gave the file's own 12 first
recorded losses exactly (tests/compute/test_train.py checks the first two on every run). No Qt, no torch import.
"""
from __future__ import annotations

import os
import platform
import sys

# The flags that name the vector ISA MKL and ATen may choose (the widest one present is the class's ISA)
ISA_ORDER = ("avx512f", "avx2", "avx", "sse4_2", "sse2")
FLAGS_KEPT = ("sse2", "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
              "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16")
MKL_ENV = ("MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE")
SHIPPED_TOY_CPU_CLASS = "x86_64/AuthenticAMD/avx2"


def _cpuinfo(path: str = "/proc/cpuinfo") -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (Linux); {} elsewhere or when unreadable."""
    out: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    if out:
                        break
                    continue
                key, _, value = line.partition(":")
                out.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return out


def cpu_info(cpuinfo_path: str = "/proc/cpuinfo") -> dict:
    """{"machine", "vendor", "model_name", "family", "model", "flags" (FLAGS_KEPT present), "isa", "class",
    "aten_cpu_capability" (None when torch is not loaded), "mkl_env" (the MKL settings that change its kernels)}."""
    raw = _cpuinfo(cpuinfo_path)
    flags = set(raw.get("flags", "").split())
    machine = platform.machine()
    isa = next((f for f in ISA_ORDER if f in flags), None)
    torch = sys.modules.get("torch")
    try:
        cap = torch.backends.cpu.get_cpu_capability() if torch is not None else None
    except Exception:  # noqa: BLE001 - a torch without the call: the capability is just unknown
        cap = None
    info = {"machine": machine, "vendor": raw.get("vendor_id"), "model_name": raw.get("model name"),
            "family": raw.get("cpu family"), "model": raw.get("model"),
            "flags": [f for f in FLAGS_KEPT if f in flags], "isa": isa, "aten_cpu_capability": cap,
            "mkl_env": {k: os.environ[k] for k in MKL_ENV if k in os.environ}}
    info["class"] = class_of(info)
    return info


def class_of(info: dict) -> str:
    """"machine/vendor/isa", with "+mkl:<settings>" when MKL's kernel choice is changed by the environment and
    "+aten:<capability>" when ATen runs other kernels than AVX2 on x86."""
    key = f"{info.get('machine')}/{info.get('vendor') or 'unknown'}/{info.get('isa') or 'unknown'}"
    env = info.get("mkl_env") or {}
    if env:
        key += "+mkl:" + ",".join(f"{k}={v}" for k, v in sorted(env.items()))
    cap = info.get("aten_cpu_capability")
    if cap not in (None, "AVX2") and info.get("machine") in ("x86_64", "AMD64"):
        key += f"+aten:{cap}"
    return key


def cpu_class() -> str:
    """This machine's class (class_of(cpu_info()))."""
    return cpu_info()["class"]


def is_recording_class(cls: str | None = None) -> bool:
    """Whether `cls` (default: this machine's) is the class that made the shipped toy: there a rebuild of its
    recipe is bit for bit; elsewhere the training rounds differently from step 1 or 2 on."""
    return (cpu_class() if cls is None else cls) == SHIPPED_TOY_CPU_CLASS


__all__ = ["cpu_info", "cpu_class", "class_of", "is_recording_class", "SHIPPED_TOY_CPU_CLASS"]
