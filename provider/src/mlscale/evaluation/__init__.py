"""Model evaluation: metrics from Batch Transform outputs, the quality gate, the model registry."""
