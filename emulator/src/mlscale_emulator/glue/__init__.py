"""Glue on the emulator: Python shell job runs execute their script locally."""
