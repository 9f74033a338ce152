"""The engine thread and the background work: the worker, its housekeeping, the compiled kernels' warm-up and switch, the background lanes and the explanation service."""
