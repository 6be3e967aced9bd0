"""``python -m tests.kube_emulator --port P --nodes N --kubeconfig PATH``."""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading

from tests.kube_emulator.emulator import KubeEmulator


def main() -> None:
    parser = argparse.ArgumentParser(description="An emulated Kubernetes API server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--kubeconfig", default="")
    parser.add_argument("--token", default=None)
    parser.add_argument("--time-scale", type=float, default=1.0)
    args = parser.parse_args()
    emu = KubeEmulator(token=args.token, time_scale=args.time_scale, port=args.port)
    for i in range(args.nodes):
        emu.add_node(f"node-{i}")
    url = emu.start()
    if args.kubeconfig:
        emu.write_kubeconfig(args.kubeconfig)
    print(url, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with contextlib.suppress(KeyboardInterrupt):
        done.wait()
    emu.stop()


if __name__ == "__main__":
    main()
