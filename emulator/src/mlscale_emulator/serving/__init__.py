"""The local model server: SageMaker's inference toolkit contract (/ping, /invocations) for one model."""
