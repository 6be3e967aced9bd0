"""Armada's own wire API, served beside ``/api/v1``: the gRPC services whose generated modules
the ``armada_client`` package ships, and the REST gateway paths that map onto them.

Each operation is one function registered in ``registry`` and written against the protobuf
messages; the gRPC server (``wire.server``) and the REST gateway (``wire.gateway``) both call
that one function, so an operation behaves the same whichever way it arrives.
"""
