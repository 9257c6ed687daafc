#!/usr/bin/env python3
"""Serve a GGUF model with llama.cpp's own HTTP server (llama-server), as embedded in the PyPI
package `xllamacpp`, and block until SIGTERM/SIGINT or until the process that started it is
gone (checked twice a second). Launched by `inferbench` for rows whose framework is `llamacpp`; every setting comes from
the command line.

Stopping exits at once (`os._exit`): llama-server's own shutdown waits for the requests in flight
to finish generating, tens of seconds on a CPU, and a benchmark server has nothing to save.

Total context is `ctx_per_slot * n_parallel` because llama-server splits n_ctx across slots.
"""
import argparse
import os
import signal
import sys
import threading
import time

import xllamacpp


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True, help="path to a .gguf file")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--n-parallel", type=int, default=1, help="decode slots (continuous batching)")
    ap.add_argument("--ctx-per-slot", type=int, default=2048, help="tokens of context per slot")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads for decode and batch")
    ap.add_argument("--poll", type=int, default=0,
                    help="how hard idle threads spin for work, 0-100 (llama.cpp's own default is 50; "
                         "0 lets them sleep, which keeps a shared or oversubscribed CPU usable)")
    a = ap.parse_args()

    params = xllamacpp.CommonParams()
    params.model.path = a.model
    params.hostnames = [a.host] if isinstance(params.hostnames, list) else a.host
    params.port = a.port
    params.n_parallel = a.n_parallel
    params.n_ctx = a.ctx_per_slot * a.n_parallel
    params.cpuparams.n_threads = a.threads
    params.cpuparams_batch.n_threads = a.threads
    params.cpuparams.poll = a.poll
    params.cpuparams_batch.poll = a.poll
    params.cont_batching = True
    params.endpoint_metrics = True

    # While the model loads (C code, seconds on a loaded CPU) a Python handler could not run:
    # the default dispositions end the process at once instead.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    parent = os.getppid()

    def orphaned() -> None:
        # A parent killed outright (SIGKILL, a crashed test harness) cannot stop us: notice it,
        # from this thread, whatever the main one is doing.
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=orphaned, daemon=True).start()
    server = xllamacpp.Server(params)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"llamacpp_serve: listening on {server.listening_address} "
          f"(n_parallel={a.n_parallel}, n_ctx={params.n_ctx}, threads={a.threads})", flush=True)
    stop.wait()
    print("llamacpp_serve: stopping", flush=True)
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
