"""FSx for Lustre on the emulator: a local directory per file system, real imports from S3."""
