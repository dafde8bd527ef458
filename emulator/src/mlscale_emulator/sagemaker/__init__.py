"""SageMaker on the emulator: moto's backend keeps the state, mlscale's executors run the jobs."""
