"""What every stage shares: Spark's join vocabulary (vocab), the typed records of what a
run saw (records), the run's options (options), safe text (text) and whole-or-nothing
files (files). Imports nothing of the harness."""
