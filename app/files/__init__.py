"""Files the app reads and writes: atomic writes, view files, settings, the desktop entry, export files."""
