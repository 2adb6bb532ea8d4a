"""Py4J connections read with quick acknowledgements (harness.spark.py4j_acks)."""
from __future__ import annotations

import socket
import threading

import pytest

from harness.spark import py4j_acks

pytestmark = pytest.mark.skipif(py4j_acks.QUICKACK is None, reason="TCP_QUICKACK is Linux's")


class Connection:
    """The two fields a Py4J connection has once it is open."""

    def __init__(self, sock):
        self.socket = sock
        self.stream = sock.makefile("rb")


def _tcp_pair():
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    accepted, _ = server.accept()
    server.close()
    return client, accepted


class Recording:
    """A socket whose options set are recorded."""

    def __init__(self, sock):
        self.sock, self.options = sock, []

    def setsockopt(self, *option):
        self.options.append(option)
        self.sock.setsockopt(*option)


def test_a_long_answer_written_in_pieces_is_read_whole_each_read_acknowledged_at_once():
    client, server = _tcp_pair()
    connection = Connection(client)
    py4j_acks.quick_acks(connection)
    assert isinstance(connection.stream.raw, py4j_acks.QuickAckReader)
    recording = Recording(client)
    connection.stream.raw._sock = recording
    answer = ("y" + "x" * 8191) * 8 + "\n"  # what an 8 KB buffered writer sends in eight writes

    def write():
        for start in range(0, len(answer), 8192):
            server.sendall(answer[start:start + 8192].encode())
    writer = threading.Thread(target=write)
    writer.start()
    assert connection.stream.readline().decode() == answer
    writer.join()
    assert recording.options and set(recording.options) == {(socket.IPPROTO_TCP, py4j_acks.QUICKACK, 1)}
    connection.stream.close()
    client.close()
    server.close()


def test_a_connection_that_is_not_tcp_keeps_its_reader():
    left, right = socket.socketpair()
    connection = Connection(left)
    stream = connection.stream
    py4j_acks.quick_acks(connection)
    assert connection.stream is stream
    for s in (stream, left, right):
        s.close()


def test_closing_the_reader_releases_the_socket_reader():
    client, server = _tcp_pair()
    connection = Connection(client)
    py4j_acks.quick_acks(connection)
    raw = connection.stream.raw._raw
    connection.stream.close()
    assert raw.closed
    client.close()
    server.close()


def test_the_session_reads_py4j_answers_through_it(session):
    from pyspark import SparkContext
    client = SparkContext._gateway._gateway_client
    connection = client.thread_connection.connection() if hasattr(client, "thread_connection") \
        else client.deque[0]
    assert isinstance(connection.stream.raw, py4j_acks.QuickAckReader)
    answer = session.spark._jvm.org.apache.commons.lang3.StringUtils.repeat("ab", 30000)
    assert answer == "ab" * 30000
