"""Join-strategy test harness for Apache Spark. From Python: `from harness import capture`."""


def __getattr__(name: str):
    if name == "capture":  # imported on use: the pytest plugin loads this package without Spark work
        from .capturing import capture
        return capture
    raise AttributeError(f"module 'harness' has no attribute '{name}'")
