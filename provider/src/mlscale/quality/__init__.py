"""Data quality: profile a dataset, check it against thresholds, compare with the last good run."""
