"""Scale-out: where stage shards run (threads or Dask), the gateway's worker processes, leases on shards
between processes and the concurrency limits they share through the Prefect server.
"""
