"""The result store: what Spark showed for a case, kept under a fingerprint of everything
that can change it, so that a run executes only what can have changed. `fingerprint`
says what a case's observation depends on; `results_store` keeps observations in one
SQLite file; `reuse` judges a kept observation against today's expectations. Imports
from core, scenario, spark (versions only, no session) and check."""
