"""Local AWS emulator: moto's server for the control plane, mlscale executors for the work.

Never imported by the authoring or AWS layers: they reach it only over the AWS API.
"""
