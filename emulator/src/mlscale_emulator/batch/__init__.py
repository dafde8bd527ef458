"""AWS Batch on the emulator: multi-node parallel and single-node jobs that really run, without Docker."""
