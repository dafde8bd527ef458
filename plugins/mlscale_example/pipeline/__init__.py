"""The example pipeline's own steps, as tested functions: what its DAG file would otherwise hold as glue."""
