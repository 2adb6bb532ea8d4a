"""Verdicts: which expectations apply to a case on a Spark version and how an observation
compares (expect), one case run end to end (runner), the cross-strategy check that every
strategy Spark can apply gives the same rows (agreement), and `explain` (why Spark picks
each case's strategy). Imports the packages below it: core, scenario, spark, observe.
"""
