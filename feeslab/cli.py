"""The ``feeslab`` command.

Subcommands:

- ``feeslab serve``: run the devnet in the foreground and print how to reach it; Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence

from feeslab.devnet.server import DEFAULT_CREDITS_PER_SECOND, DEFAULT_DAILY_CREDITS

DEFAULT_PORT = 8545  # the usual local node port


def _serve_parser(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser(
        "serve",
        help="run the devnet (node JSON-RPC, WebSocket and Gas API) in the foreground",
        description="Run the embedded devnet on loopback until interrupted (Ctrl-C).",
    )
    serve.add_argument("--host", default="127.0.0.1", help="loopback address (default %(default)s)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="TCP port, 0 for any free")
    serve.add_argument("--seed", type=int, default=0, help="chain seed (default %(default)s)")
    serve.add_argument("--latency-ms", type=float, default=0.0, help="delay added to every answer")
    serve.add_argument(
        "--daily-credits",
        type=int,
        default=DEFAULT_DAILY_CREDITS,
        help="credits per UTC day (default: Infura Team plan, %(default)s)",
    )
    serve.add_argument(
        "--credits-per-second",
        type=float,
        default=DEFAULT_CREDITS_PER_SECOND,
        help="throughput limit (default: Infura Team plan, %(default)s)",
    )
    serve.add_argument(
        "--block-time",
        type=float,
        default=None,
        help="seconds per new block (live chains); omit for fixed chains",
    )
    serve.set_defaults(func=_run_serve)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="feeslab", description="Study Ethereum fee markets and uncle rates."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _serve_parser(sub)
    return parser


def _banner(handle) -> str:
    key, secret = handle.api_key, handle.api_key_secret
    call = '\'{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}\''
    return "\n".join(
        [
            f"feeslab devnet (seed {handle.seed}) is running",
            f"URL:        {handle.url}",
            f"WS URL:     {handle.ws_url}",
            f"API key:    {key}",
            f"API secret: {secret}",
            f"node (mainnet):  {handle.url}/v3/{key}",
            f"node (sepolia):  {handle.url}/sepolia/v3/{key}",
            f"WebSocket:       {handle.ws_url}/ws/v3/{key}",
            "",
            "Try:",
            f"  curl -s -X POST -H 'Content-Type: application/json' --data {call} \\",
            f"    {handle.url}/v3/{key}",
            f"  curl -s -u {key}:{secret} {handle.url}/networks/1/suggestedGasFees",
            f"  curl -s -u {key}:{secret} {handle.url}/devnet/credits",
            "",
            "Press Ctrl-C to stop.",
        ]
    )


def _run_serve(args: argparse.Namespace) -> int:
    from feeslab.devnet.server import start

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        handle = start(
            seed=args.seed,
            port=args.port,
            host=args.host,
            latency_ms=args.latency_ms,
            daily_credits=args.daily_credits,
            credits_per_second=args.credits_per_second,
            block_time=args.block_time,
        )
    except (OSError, ValueError) as exc:
        print(f"feeslab serve: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    # SIGTERM (e.g. from a supervisor) stops as cleanly as Ctrl-C
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(_banner(handle), flush=True)
    try:
        while not stop.is_set() and handle.running:
            stop.wait(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        handle.stop()
        print("devnet stopped", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``feeslab`` command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
