"""The folder the emulator puts first on every job's PYTHONPATH (see sitecustomize)."""
