"""The wait machinery: how the stages, the trigger and the sensors wait on AWS resources without exceeding
AWS's request limits (one shared poll per kind, connection and region; a log budget under CloudWatch
Logs' quota)."""
