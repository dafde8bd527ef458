"""The example project's own code: the pipeline's steps and params (`pipeline`) and the digits datasets its
producer writes (`datasets`). The DAGs in dags/ import it; it imports the mlscale provider, never the emulator."""
