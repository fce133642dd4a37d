"""The process's plumbing: environment defaults set before Prefect or torch load, structured
logs, signal handling, the watchdog on child processes, the Prefect server a command uses,
the service a command may hand its question to, and the handles on the index and the model."""
