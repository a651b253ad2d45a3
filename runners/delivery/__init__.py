"""Getting a run to the service: the one run-payload definition (schema,
schema_types), the run document assembled from what was measured (payload), the
posting client with its spool (client) and a job's status reports (jobreport)."""
