#!/usr/bin/env python3
"""Start llama.cpp's own `llama-server` (embedded in the PyPI wheel `xllamacpp`) for a GGUF model.

Prints one line `listening on http://127.0.0.1:PORT` (flushed) once the HTTP listener is up,
then serves until it receives SIGTERM or SIGINT. Used by inferbench's integration tests and
reusable by the runner. Binds 127.0.0.1 only.

Usage: llamacpp_serve.py MODEL.gguf [--port 0] [--parallel 4] [--ctx-per-slot 2048]
                                    [--threads 2]
  --port 0 picks a free port.  --parallel is llama.cpp's n_parallel (decode slots); requests
  beyond it wait in the server's queue.  Continuous batching and /metrics are on.
"""
import argparse
import signal
import socket
import sys
import threading


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--ctx-per-slot", type=int, default=2048)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = a.model
    params.hostnames = ["127.0.0.1"]
    params.port = a.port or free_port()
    params.n_parallel = a.parallel
    params.n_ctx = a.ctx_per_slot * a.parallel
    params.cpuparams.n_threads = a.threads
    params.cpuparams_batch.n_threads = a.threads
    params.cont_batching = True
    params.endpoint_metrics = True

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server = xllamacpp.Server(params)
    print(f"listening on http://127.0.0.1:{params.port}", flush=True)
    while not stop.wait(0.5):
        pass
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
