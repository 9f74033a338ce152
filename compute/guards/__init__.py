"""Files and guards: every file read bounded, every write atomic, non-finite results reported."""
