"""Py4J answers longer than 8 KB without a 40 ms stall each.

Py4J's Java side writes an answer through an 8 KB buffered writer, so a longer answer (a
plan's JSON, a plan string) leaves the JVM in several writes. Nagle's algorithm holds each
write after the first until the previous one is acknowledged, and Linux delays that
acknowledgement by up to 40 ms on a connection it sees as request/response. Measured on
Spark 4.3.0 (py4j 0.10.9.9): an answer of 8,000 characters 0.5 ms, of 9,000 to 60,000
characters 44 ms, whatever its length in between. The harness reads two such trees per
scenario in the SQL guard and several per case.

The remedy is on the reading side: after every read from the socket, ask the kernel to
acknowledge at once (`TCP_QUICKACK`, which the kernel clears again by itself, hence after
every read). The same answers then take 0.9 ms (60,000 characters). Elsewhere than Linux
nothing changes.
"""
from __future__ import annotations

import io
import socket

QUICKACK = getattr(socket, "TCP_QUICKACK", None)
_INSTALLED = False


class QuickAckReader(io.RawIOBase):
    """A socket's raw reader that acknowledges every read at once."""

    def __init__(self, raw, sock):
        super().__init__()
        self._raw = raw
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int | None:
        count = self._raw.readinto(buffer)
        try:
            self._sock.setsockopt(socket.IPPROTO_TCP, QUICKACK, 1)
        except OSError:
            pass  # closed meanwhile: the next read reports it
        return count

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def quick_acks(connection) -> None:
    """Replace a just-opened Py4J connection's reader (nothing is buffered yet: the
    connection has at most read its authentication answer, a single line)."""
    sock, stream = getattr(connection, "socket", None), getattr(connection, "stream", None)
    if QUICKACK is None or sock is None or not isinstance(stream, io.BufferedReader) \
            or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    connection.stream = io.BufferedReader(QuickAckReader(stream.detach(), sock))


def _after(method):
    def opened(self, *args, **kwargs):
        result = method(self, *args, **kwargs)
        quick_acks(self)
        return result
    opened.__wrapped__ = method
    return opened


def install() -> None:
    """Every Py4J connection opened from now on in this process (the gateway's first one
    included, when called before the SparkContext starts) reads with quick acknowledgements."""
    global _INSTALLED
    if _INSTALLED or QUICKACK is None:
        return
    from py4j import clientserver, java_gateway
    clientserver.ClientServerConnection.connect_to_java_server = \
        _after(clientserver.ClientServerConnection.connect_to_java_server)
    java_gateway.GatewayConnection.start = _after(java_gateway.GatewayConnection.start)
    _INSTALLED = True
