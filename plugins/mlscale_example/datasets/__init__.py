"""Example datasets the demo pipeline stages into S3."""
