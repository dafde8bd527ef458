"""EMR Serverless: Spark job runs on the emulator."""
