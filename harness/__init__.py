"""Join-strategy test harness for Apache Spark. From Python: `from harness import capture`.

The packages follow the data flow, each importing only from those before it in LAYERS:
a scenario file is loaded and checked (scenario), its tables and query are built on a
SparkSession (spark), the plans Spark made are read and explained (observe), compared
with what the file expects (check), kept under a fingerprint so that a later run judges
it again without Spark (store), and written as reports (report). Capturing a team's
own queries (capturing) and running the suite elsewhere (deploy: a standalone cluster,
Spark Connect, the version matrix) are tools beside them; the pytest plugin
(harness.plugin) and the command line (harness.cli) sit on top. tests/test_layers.py
holds the code to this order.
"""

__version__ = "0.3.0"

# Lowest first: a package may import from itself and from those before it, never after.
LAYERS = ("core", "scenario", "spark", "observe", "check", "store", "report", "capturing", "deploy")


def __getattr__(name: str):
    if name == "capture":  # imported on use: the pytest plugin loads this package without Spark work
        from harness.capturing.to_scenario import capture
        return capture
    raise AttributeError(f"module 'harness' has no attribute '{name}'")
