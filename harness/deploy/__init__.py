"""The suite elsewhere: a standalone cluster on this machine (cluster), Spark Connect
sessions and a local Connect server (connect, connect_server), and every Spark version in its
own environment (matrix). Tools beside the suite; may import any stage below.
"""
