"""Greengrass v2 on the emulator (moto has only v1): components, deployments, simulated core devices."""
