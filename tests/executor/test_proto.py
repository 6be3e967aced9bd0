"""The executor API's generated module is the one its .proto makes (``make proto``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "armada" / "executor" / "api"


def test_the_committed_module_is_what_the_proto_generates(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{API}",
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            str(API / "executorapi.proto"),
        ],
        check=True,
        timeout=120,
    )
    for name in ("executorapi_pb2.py", "executorapi_pb2.pyi"):
        assert (tmp_path / name).read_text() == (API / name).read_text(), (
            f"{name} is stale: run `make proto` and commit it"
        )


def test_the_service_names_the_wire_serves_are_the_protos():
    from armada.executor.api import executorapi_pb2 as pb
    from armada.wire.executor_ops import OPERATIONS, SERVICE

    service = pb.DESCRIPTOR.services_by_name["ExecutorApi"]
    assert service.full_name == SERVICE
    assert {m.name for m in service.methods} == set(OPERATIONS)
    for method in service.methods:
        op = OPERATIONS[method.name]
        assert op.request_class.DESCRIPTOR is method.input_type
        assert op.streaming == method.server_streaming
