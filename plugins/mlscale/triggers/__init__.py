"""Triggers: wait for AWS resources in the triggerer, with no attempt cap."""
