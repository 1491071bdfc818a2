"""The ``feeslab`` command.

Subcommands:

- ``feeslab serve``: run the devnet in the foreground and print how to reach it; Ctrl-C stops it.
  ``--ipfs-dir`` keeps its IPFS node's blocks and pins in a directory of your choice;
  ``--height N`` lengthens the mainnet chain to head block N for benchmarks and scale tests
  (``--height 1000000`` for a 1,000,000-block scan; the default chain's blocks are unchanged).
- ``feeslab fetch KIND ... -o FILE.parquet|FILE.csv``: one frame of a dataset into a file; a
  KIND for each dataset with a command-line name in ``feeslab.datasets.REGISTRY`` (base-fees,
  fee-history, blocks, uncles, storage, transactions), its options declared with it. The
  credit plan is printed before anything is sent and the ledger after; the file is written by
  ``feeslab.frames.io.write_frame`` (a temporary name, then renamed, so a failed run leaves no
  partial file; exact ints beyond int64, such as storage words and difficulties, as decimal
  text, the same bytes ``Lab.publish_frame`` shares).

  Connection: ``--url`` (a devnet or service root, as ``feeslab serve`` prints) with
  ``--api-key``/``--api-key-secret`` or ``INFURA_API_KEY``/``INFURA_API_KEY_SECRET``; a key
  alone reaches the real service; nothing starts the embedded devnet (``--seed``).
  On a cluster (``--workers``/``--scheduler``) several keys multiply the rate: ``--api-key
  KEY[:SECRET]`` repeated or as a comma list, or ``INFURA_API_KEYS``; each key has its own
  credit bucket and ledger (printed per key, as "key 1", "key 2": never the key itself), one
  ``--budget`` for all; ``--url`` once for every key, or once per key in the same order;
  ``--era1 PATH`` (a file, a directory or a glob) reads era1 archive files instead, at zero
  credits, ``--ere PATH`` Ere files and ``--era PATH`` the beacon chain's Era files, one or
  several formats across the merge (a damaged file, a range no file covers, or tips asked of
  files without receipts, is a user mistake: exit 2).
  ``--scheduler ADDRESS`` (a running dask scheduler) or ``--workers N`` (a local cluster of N
  worker processes) fetch in partitions (``feeslab.cluster``): one Parquet file a partition in
  OUTPUT's stem + ``.parts/``, which a rerun resumes; every kind but the Gas API's base fees.
- ``feeslab watch``: the head live (``feeslab.watch``, :func:`run_watch`): a line per new block
  until Ctrl-C or ``--stop-after``; ``-o`` writes the frame (the window filled as it started,
  and the blocks after it).
- ``feeslab export-era1 --out DIR``: the devnet chain 1's pre-merge blocks as era1 files.
- ``feeslab export-era --format ere --out DIR``: the devnet chain 1's blocks on both sides of
  its merge as Ere files (``--format era1``: as ``export-era1``).

  Exit status: 0 done; 2 a user mistake (bad option or range, unknown output suffix, missing
  key, a budget the plan exceeds), reported on one line; 1 a failure of the service or the
  network, also on one line; 130 interrupted. Keys and secrets are never printed.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import re
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Protocol, TextIO, TypedDict

from feeslab.protocol.costs import TEAM_PLAN_CREDITS_PER_SECOND as DEFAULT_CREDITS_PER_SECOND
from feeslab.protocol.costs import TEAM_PLAN_DAILY_CREDITS as DEFAULT_DAILY_CREDITS

if TYPE_CHECKING:
    import pandas as pd

    from feeslab.connection import Environment
    from feeslab.datasets.registry import Dataset
    from feeslab.devnet.server import DevnetHandle
    from feeslab.devnet.service import Devnet
    from feeslab.fetch.core import Governor
    from feeslab.fetch.credits import CreditLedger, Plan
    from feeslab.lab import Lab

DEFAULT_PORT = 8545  # the usual local node port


def _serve_parser(sub: argparse._SubParsersAction[OneLineParser]) -> None:
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
    serve.add_argument(
        "--height",
        type=int,
        metavar="N",
        default=None,
        help="for benchmarks and scale tests: lengthen the mainnet chain (chain 1) to head "
        "block N (default: its 210,000). Blocks up to 210,000 stay the default chain's; the "
        "rest continue its last fork (proof of stake with blobs). N from 206,000 (its last "
        "fork) to 10,000,000. A million blocks take ~75 s to generate (in the background) and "
        "~390 MB",
    )
    serve.add_argument(
        "--reorgs", type=float, default=0.0,
        help="with --block-time: the chance per new block of a 1-2 block reorganisation "
        "(announced again over newHeads, as a node does; default %(default)s)",
    )
    serve.add_argument(
        "--history",
        choices=("all", "postmerge"),
        default="all",
        help="which history the node serves, as geth's --history.chain (EIP-4444): all "
        "(default), or postmerge: bodies, uncles and receipts before each chain's merge "
        "answer 4444 'pruned history unavailable' while headers stay served; read them "
        "from era1 files (feeslab export-era1) instead",
    )
    serve.add_argument(
        "--ipfs-dir",
        default=None,
        help="the IPFS node's blockstore directory, kept across restarts "
        "(default: <cache>/devnet/ipfs)",
    )
    serve.add_argument(
        "--read-timeout",
        type=float,
        default=10.0,
        help="seconds a client has to send a request's headers, and the longest pause in a "
        "body, before its connection is closed (default %(default)s)",
    )
    user = serve.add_argument_group(
        "the wallet's user (what the person at WS /wallet approves of a connection request)"
    )
    user.add_argument(
        "--wallet-decline", action="store_true", help="decline every wallet_createSession (4001)"
    )
    user.add_argument(
        "--wallet-chains",
        metavar="CAIP2,...",
        type=_csv,
        default=None,
        help="the chains the user shares, e.g. eip155:1,eip155:137 (default: every one asked)",
    )
    user.add_argument(
        "--wallet-deny-methods",
        metavar="METHOD,...",
        type=_csv,
        default=(),
        help="methods left out of every grant",
    )
    user.add_argument(
        "--wallet-accounts",
        metavar="N",
        type=_accounts,
        default=1,
        help="accounts granted per chain: a number (0 for none) or 'all' (default 1)",
    )
    user.add_argument(
        "--wallet-allow-origin",
        metavar="ORIGIN",
        action="append",
        default=None,
        help="a browser origin (https://dapp.example) besides loopback pages that may open "
        "WS /wallet; repeat for more, '*' for any (default: loopback pages only)",
    )
    serve.set_defaults(func=_run_serve)


def _csv(text: str) -> tuple[str, ...]:
    items = tuple(item.strip() for item in text.split(",") if item.strip())
    if not items:
        raise argparse.ArgumentTypeError("give one or more comma-separated values")
    return items


def _accounts(text: str) -> int | None:
    if text == "all":
        return None
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"a number of accounts or 'all', not {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="feeslab", description="Study Ethereum fee markets and uncle rates."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _serve_parser(sub)
    _fetch_parser(sub)
    _watch_parser(sub)
    _export_era1_parser(sub)
    _export_era_parser(sub)
    return parser


# -- feeslab watch --------------------------------------------------------------------------------


def _watch_parser(sub: argparse._SubParsersAction[OneLineParser]) -> None:
    from feeslab.datasets.registry import percentiles_arg

    watch = sub.add_parser(
        "watch", help="follow the head live: one line per block",
        description="Follow the chain's head (newHeads, else polling): one line per block until "
                    "Ctrl-C or --stop-after; -o writes what it saw (Parquet or CSV) on exit. "
                    "Without a key: the embedded devnet, growing a block every --block-time.")
    watch.add_argument("--blocks", type=int, default=128, help="rows kept (default %(default)s)")
    watch.add_argument("--stop-after", type=int, default=None, help="stop after this many blocks")
    watch.add_argument("--percentiles", type=percentiles_arg, default=(10.0, 50.0, 90.0),
                       help="tip percentiles (default 10,50,90)")
    watch.add_argument("-o", "--output", default=None, metavar="FILE",
                       help="on exit, write the frame to FILE.parquet or FILE.csv")
    watch.add_argument("--url", help="root of a running devnet or service; needs a key")
    watch.add_argument("--api-key", help="default: $INFURA_API_KEY")
    watch.add_argument("--network", default="mainnet", help="network (default %(default)s)")
    watch.add_argument("--block-time", type=float, default=1.0,
                       help="the embedded devnet's seconds per block (default %(default)s)")
    watch.set_defaults(func=_run_watch)  # fmt: skip


def _run_watch(args: argparse.Namespace) -> int:
    from feeslab.connection import Environment, Settings, connect_with
    from feeslab.errors import FeeslabError

    environment = Environment.read()  # the key's default, read once
    if args.output is not None and Path(args.output).suffix.lower() not in FORMATS:
        print(f"feeslab watch: error: write FILE.parquet or FILE.csv, not {args.output!r}",
              file=sys.stderr)  # fmt: skip
        return USER_ERROR
    keyed = args.api_key or environment.api_key  # else the embedded devnet, growing
    settings = (Settings(api_key=args.api_key, url=args.url, progress=False,
                         network=args.network) if keyed
                else Settings(block_time=args.block_time, progress=False, network=args.network))
    try:
        with connect_with(settings, environment) as lab:
            return run_watch(lab, blocks=args.blocks, stop_after=args.stop_after,
                             out=args.output, percentiles=args.percentiles)  # fmt: skip
    except FeeslabError as exc:
        print(f"feeslab watch: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return USER_ERROR


def run_watch(
    lab: Lab,
    *,
    blocks: int = 128,
    percentiles: Sequence[float] = (10.0, 50.0, 90.0),
    stop_after: int | None = None,
    out: str | None = None,
    websocket: bool | str | None = None,
    stream: TextIO | None = None,
) -> int:
    """``feeslab watch`` on ``lab``: a header line, then one line per new block on ``stream``
    (default stdout) until Ctrl-C or ``stop_after`` blocks; then, with ``out``, the frame
    (the prefilled window and the blocks after it) written atomically
    (``feeslab.frames.io.write_frame``: Parquet, or CSV by the suffix). Returns the exit
    status (1 when the watch stopped on an error, which is printed on stderr)."""
    from feeslab.frames.base_fees import reward_column
    from feeslab.frames.io import write_frame
    from feeslab.watch import watch

    stream = stream or sys.stdout
    rewards = [reward_column(float(p)) for p in percentiles]
    print(f"{'block':>10} {'base[gwei]':>10} {'blob[gwei]':>10} {'/target':>6} {'blobs':>5} "
          + " ".join(f"{'p' + format(float(p), 'g'):>10}" for p in percentiles),
          file=stream, flush=True)  # fmt: skip

    def line(row: Mapping[str, object]) -> None:
        print(_watch_line(row, rewards), file=stream, flush=True)

    w = watch(lab, blocks=blocks, percentiles=percentiles, stop_after=stop_after,
              websocket=websocket, on_block=line)  # fmt: skip
    try:
        while not w.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        w.stop()
    print(w.status(), file=stream, flush=True)
    if out is not None:
        frame = w.frame
        path = write_frame(frame, out)
        print(f"wrote {len(frame):,} blocks to {path}", file=stream, flush=True)
    if w.error is not None:
        print(f"error: {w.error}", file=sys.stderr)
        return 1
    return 0


def _watch_line(row: Mapping[str, object], rewards: Sequence[str]) -> str:
    """One block of ``feeslab watch``: number, base fee and blob base fee [gwei], gas used
    over the target, blobs, tips [gwei]; ``reorg`` when it replaced a block."""

    def gwei(value: object) -> str:
        # a base fee or tip [wei] (exact below 2**53, so as the int's own quotient)
        return "-" if not isinstance(value, int) else f"{value / 10**9:10.4f}"

    blobs = row["blob_count"]
    tips = " ".join(gwei(row[name]) for name in rewards)
    mark = " reorg" if row["reorged"] else ""
    return (f"{row['block_number']:>10} {gwei(row['base_fee_wei'])} "
            f"{gwei(row['base_fee_per_blob_gas_wei'])} {row['gas_target_ratio']:6.3f} "
            f"{'-' if blobs is None else blobs:>5} {tips}{mark}")  # fmt: skip


# -- feeslab export-era1 --------------------------------------------------------------------------


def _export_era1_parser(sub: argparse._SubParsersAction[OneLineParser]) -> None:
    export = sub.add_parser(
        "export-era1",
        help="write the devnet chain 1's pre-merge blocks as era1 files",
        description="The devnet's chain 1, blocks 0 .. 164,999, as era1 files of 8,192 blocks "
        "(devnet-<epoch>-<root>.era1), readable by `feeslab fetch --era1` and other era1 tools.",
    )
    _export_options(export, all_epochs="all 21")
    export.set_defaults(func=_run_export_era1)


def _export_options(export: argparse.ArgumentParser, *, all_epochs: str) -> None:
    """The options both export commands take: where, which epochs, which devnet."""
    export.add_argument("--out", required=True, metavar="DIR", help="directory to write into")
    export.add_argument("--start-epoch", type=_non_negative, default=0,
                        help="first epoch (default %(default)s)")  # fmt: skip
    export.add_argument("--epochs", type=_non_negative, help=f"how many (default: {all_epochs})")
    export.add_argument("--seed", type=int, default=0, help="devnet seed (default %(default)s)")


def _exported(command: str, export: Callable[..., list[Path]], args: argparse.Namespace) -> int:
    """Run an export (``feeslab.devnet.era1.export_era1``, ``...ere.export_ere``) on ``args``:
    the files written, one a line; a bad epoch exits 2 and a write that failed 1."""
    try:
        paths = export(args.out, start_epoch=args.start_epoch, epochs=args.epochs,
                       seed=args.seed)  # fmt: skip
    except ValueError as exc:
        print(f"feeslab {command}: error: {exc}", file=sys.stderr)
        return USER_ERROR
    except OSError as exc:
        print(f"feeslab {command}: error: cannot write {args.out}: {exc}", file=sys.stderr)
        return FAILURE
    for path in paths:
        print(path)
    return 0


def _run_export_era1(args: argparse.Namespace) -> int:
    from feeslab.devnet.era1 import export_era1

    return _exported("export-era1", export_era1, args)


def _export_era_parser(sub: argparse._SubParsersAction[OneLineParser]) -> None:
    export = sub.add_parser(
        "export-era",
        help="write the devnet chain 1's blocks as archive files (Ere or era1)",
        description="The devnet's chain 1 as archive files of 8,192 blocks: --format ere, every "
        "block 0 .. 209,999 across the merge (devnet-<epoch>-<last hash>-noproofs.ere, headers, "
        "bodies, slim receipts, total difficulties, accumulator); --format era1, the pre-merge "
        "blocks as `feeslab export-era1` writes them.",
    )
    export.add_argument("--format", choices=("ere", "era1"), default="ere",
                        help="file format (default %(default)s)")  # fmt: skip
    _export_options(export, all_epochs="all")
    export.set_defaults(func=_run_export_era)


def _run_export_era(args: argparse.Namespace) -> int:
    if args.format == "era1":
        return _run_export_era1(args)
    from feeslab.devnet.ere import export_ere

    return _exported("export-era", export_ere, args)


def _history_lines(devnet: Devnet) -> list[str]:
    """What a devnet pruned as geth's --history.chain says in its banner (nothing for all)."""
    if devnet.history == "all":
        return []
    cut = ", ".join(f"{chain_id}: {block:,}" for chain_id, block in
                    devnet.history_cutoffs().items() if block)  # fmt: skip
    return [f"history:         {devnet.history} (4444 below each chain's cutoff: {cut})"]


def _banner(handle: DevnetHandle) -> str:
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
            f"IPFS API:        {handle.url}/api/v0/<command> (Basic key:secret)",
            f"wallet:          {handle.ws_url}/wallet (CAIP-25 sessions)",
            *_history_lines(handle.devnet),
            "",
            "Try:",
            f"  curl -s -X POST -H 'Content-Type: application/json' --data {call} \\",
            f"    {handle.url}/v3/{key}",
            f"  curl -s -u {key}:{secret} {handle.url}/networks/1/suggestedGasFees",
            f"  curl -s -u {key}:{secret} {handle.url}/devnet/credits",
            f"  curl -s -X POST -u {key}:{secret} -F file=@notes.txt {handle.url}/api/v0/add",
            "",
            "Press Ctrl-C to stop.",
        ]
    )


def _run_serve(args: argparse.Namespace) -> int:
    import feeslab.devnet
    from feeslab.errors import ConfigError

    try:
        feeslab.devnet.require("feeslab serve needs the devnet")
    except ConfigError as exc:
        print(f"feeslab serve: {exc}", file=sys.stderr)
        return 2
    from feeslab.devnet.server import start
    from feeslab.devnet.wallet import WalletUser

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        user = WalletUser(
            approve=not args.wallet_decline,
            chains=args.wallet_chains,
            deny_methods=args.wallet_deny_methods,
            accounts_per_scope=args.wallet_accounts,
        )
        handle = start(
            seed=args.seed,
            port=args.port,
            host=args.host,
            latency_ms=args.latency_ms,
            daily_credits=args.daily_credits,
            credits_per_second=args.credits_per_second,
            block_time=args.block_time,
            blockstore=args.ipfs_dir,
            wallet_user=user,
            wallet_allow_origin=args.wallet_allow_origin,
            read_timeout=args.read_timeout,
            height=args.height,
            reorgs=args.reorgs,
            history=args.history,
        )
    except (OSError, ValueError) as exc:  # CaipError is a ValueError: a bad --wallet-chains
        print(f"feeslab serve: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    # SIGTERM (e.g. from a supervisor) stops as cleanly as Ctrl-C
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(_banner(handle), flush=True)
    threading.Thread(target=_settle, args=(handle,), name="feeslab-settle", daemon=True).start()
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


def _settle(handle: DevnetHandle) -> None:
    """Build every chain's history now, then freeze what the process holds (``gc.freeze``).

    The histories are lists of a few million ints and hashes that live as long as the server:
    every full collection walked them (90 ms on chain 1, a stall in whichever answers were in
    flight); frozen, the collector skips them. Only ``feeslab serve`` does this: the process
    is the devnet's own, unlike ``feeslab.devnet.start()`` in a user's kernel.
    """
    import gc

    try:
        for chain in handle.chains:
            chain.history.ensure(chain.head())
    except Exception:  # an optimisation: the first requests build them anyway
        logging.getLogger(__name__).debug("chain histories not built ahead", exc_info=True)
        return
    gc.collect()
    gc.freeze()


# -- feeslab fetch ------------------------------------------------------------------------------

FORMATS = (".parquet", ".csv")
USER_ERROR = 2  # a user mistake: bad option, range, suffix, key or budget
FAILURE = 1  # the service or the network failed


class UsageError(Exception):
    """A user mistake found before anything is sent: reported on one line, exit status 2."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (no usage block), with the words it could
    not place masked (a stray word may be a key or a secret), and exit status 2; its
    subcommands' parsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        self.exit(USER_ERROR, f"{self.prog}: error: {_masked_arguments(message)}\n")


def _non_negative(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


KEYS_VARIABLE = "INFURA_API_KEYS"
"""Several keys for a cluster job, ``KEY[:SECRET],KEY[:SECRET],...`` (read with the others by
``feeslab.connection.Environment``)."""


def _api_keys(text: str) -> tuple[tuple[str, str | None], ...]:
    """``KEY[:SECRET]`` or a comma list of them: (key, secret or None) pairs. A mistake is
    named without the text, which holds secrets (argparse would echo a ValueError's value)."""
    pairs = []
    for item in text.split(","):
        key, colon, secret = item.strip().partition(":")
        if not key or (colon and not secret) or any(c.isspace() for c in key + secret):
            raise argparse.ArgumentTypeError(
                "expected KEY or KEY:SECRET, or a comma list of them (the value is not shown)")
        pairs.append((key, secret or None))
    return tuple(pairs)


def _masked_arguments(message: str) -> str:
    """argparse's ``unrecognized arguments: ...`` with the values left out: a stray word may be
    a key or a secret (``--api-key KEY SECRET``); the options are kept, to show the typo."""
    head, colon, rest = message.partition(": ")
    if head != "unrecognized arguments" or not colon:
        return message
    return f"{head}: " + " ".join(t if t.startswith("-") else "(a value)" for t in rest.split())


def _fetch_parser(sub: argparse._SubParsersAction[OneLineParser]) -> None:
    fetch = sub.add_parser(
        "fetch",
        help="fetch a dataset (base fees, fee history, blocks, uncles, ...) into a Parquet or "
        "CSV file",
        description="Fetch one frame into FILE.parquet or FILE.csv; the credit plan is printed "
        "before anything is sent and the ledger after.",
    )
    common = OneLineParser(add_help=False)
    common.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="where to write: FILE.parquet or FILE.csv",
    )
    where = common.add_argument_group("connection (default: the embedded devnet)")
    where.add_argument(
        "--url", action="append",
        help="root of a running devnet or service (as `feeslab serve` prints); needs a key; "
        "with several keys, once for all or once per key",
    )  # fmt: skip
    where.add_argument("--api-key", metavar="KEY[:SECRET]", type=_api_keys, action="append",
                       help="default: $INFURA_API_KEYS or $INFURA_API_KEY; on a cluster, repeat "
                       "it (or give a comma list) for several keys: each its own bucket")
    where.add_argument("--api-key-secret", help="the (first) key's secret; default: "
                       "$INFURA_API_KEY_SECRET")  # fmt: skip
    where.add_argument("--network", default="mainnet", help="network (default %(default)s)")
    where.add_argument(
        "--seed", type=int, default=0, help="the embedded devnet's seed (default %(default)s)"
    )
    where.add_argument(
        "--era1",
        metavar="PATH",
        help="read era1 files (a file, a directory or a glob): alone, no node and no "
        "credits; with --url or a key, the blocks the files hold from them and the rest from "
        "the node (a node with expired history, EIP-4444)",
    )
    where.add_argument(
        "--ere",
        metavar="PATH",
        help="read Ere files (execution history with receipts, on both sides of the merge), "
        "named as --era1; with --era1, the era1 files give the blocks they hold and the Ere "
        "files the rest; beside a node as --era1",
    )
    where.add_argument(
        "--era",
        metavar="PATH",
        help="read the beacon chain's Era files (execution payloads since the merge, no "
        "receipts: fee history needs --percentiles with no value), named as --era1",
    )
    run = common.add_argument_group("running")
    run.add_argument(
        "--budget",
        type=_non_negative,
        metavar="CREDITS",
        help="refuse to start if the plan needs more credits",
    )
    run.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the answer cache"
    )
    run.add_argument("--quiet", action="store_true", help="print neither plan, ledger nor progress")
    run.add_argument(
        "--credits-per-second",
        metavar="N|PLAN",
        help="pace requests at N credits/s or a plan's rate (core, developer, team); default: "
        "what a devnet reports, else the Core plan's 500 on the service; inf: no pacing",
    )
    scale = common.add_argument_group("on a dask cluster (pip install 'feeslab[dask]'; "
                                      "datasets over a range or a series of blocks)")
    scale.add_argument("--scheduler", metavar="ADDRESS",
                       help="run in partitions on this dask scheduler (tcp://host:8786); the "
                       "partition files go to OUTPUT's stem + .parts/, and a rerun resumes")
    scale.add_argument("--workers", type=_non_negative, metavar="N",
                       help="start a local cluster of N worker processes instead")
    scale.add_argument("--partition-blocks", type=_non_negative, metavar="N",
                       help="blocks per partition on a node (default 8,192; a series: of "
                       "its blocks; fee history: rounded up to whole calls of 1,024; era1: "
                       "a file each)")

    kinds = fetch.add_subparsers(dest="kind", metavar="KIND")
    kinds.required = True
    from feeslab.datasets import REGISTRY  # the kinds: every dataset with a command-line name

    for dataset in REGISTRY.on_command_line():
        assert dataset.cli is not None
        kind = kinds.add_parser(dataset.cli, parents=[common], help=dataset.summary,
                                description=f"lab.{dataset.name}: {dataset.summary}.")  # fmt: skip
        kind.set_defaults(dataset=dataset.name)
        for option in dataset.options:
            option.add_to(kind)
    fetch.set_defaults(func=_run_fetch)


class _Client(Protocol):
    """What ``feeslab fetch`` does with a ``distributed.Client`` itself: close it, or stop
    the local cluster it made (the cluster's functions take the client as it is)."""

    def close(self) -> object: ...
    def shutdown(self) -> object: ...


class _Checked(TypedDict, total=False):
    """What ``feeslab fetch`` checked (:func:`_check_args`), then what it opened."""

    output: Path
    keys: list[tuple[str, str | None]]
    dataset: Dataset
    params: dict[str, object]  # the dataset's parameters
    written: dict[str, object]  # its options that pick what is written
    client: _Client | None  # _client's
    labs: list[Lab]  # one per API key after the first


def _check_args(args: argparse.Namespace, environment: Environment) -> _Checked:
    """Every check that needs no network: the output, the keys and the dataset's arguments,
    or ``UsageError``."""
    from feeslab.datasets import REGISTRY

    output = Path(args.output)
    if output.suffix.lower() not in FORMATS:
        raise UsageError(
            f"unknown output format {output.suffix or '(no suffix)'!r} of "
            f"{output.name!r}: use FILE.parquet or FILE.csv"
        )
    if not output.parent.is_dir():
        raise UsageError(f"no directory {str(output.parent)!r} to write {output.name!r} into")
    if output.is_dir():
        raise UsageError(f"{str(output)!r} is a directory")
    keys = _keys_given(args, environment)
    if args.url is not None and not keys:
        raise UsageError("--url needs --api-key (or INFURA_API_KEY in the environment)")
    if len(keys) > 1 and args.scheduler is None and not args.workers:
        raise UsageError(f"{len(keys)} API keys: several keys share a job's partitions on a "
                         "cluster (--workers N or --scheduler ADDRESS); one process uses one")
    if args.url is not None and len(args.url) not in (1, max(1, len(keys))):
        raise UsageError(f"--url given {len(args.url)} times for {len(keys)} API keys: give it "
                         "once (every key) or once per key")  # fmt: skip
    for name in ("era1", "ere", "era"):
        if getattr(args, name) is not None and args.url is not None:
            raise UsageError(f"--{name} reads files: it takes no --url")
    dataset = REGISTRY[args.dataset]
    given = {o.dest: getattr(args, o.dest) for o in dataset.options}
    written = {o.dest: given.pop(o.dest) for o in dataset.options if o.written_only}
    if "stop" in given and given["stop"] <= given["start"]:
        raise UsageError(f"--stop ({given['stop']}) must be greater than --start "
                         f"({given['start']}), as in range()")  # fmt: skip
    if (args.scheduler is not None or args.workers) and dataset.partitions is None:
        raise UsageError(f"{dataset.cli} runs in one process: --scheduler/--workers are for "
                         "datasets over a range or a series of blocks")  # fmt: skip
    return {"output": output, "keys": keys, "dataset": dataset, "params": given,
            "written": written}


def _keys_given(
    args: argparse.Namespace, environment: Environment | None = None
) -> list[tuple[str, str | None]]:
    """The API keys and their secrets: ``--api-key`` (repeated, or comma lists), else
    ``INFURA_API_KEYS``, else ``INFURA_API_KEY``; ``--api-key-secret`` (or
    ``INFURA_API_KEY_SECRET``) is the first key's secret when it has none of its own. The
    variables are ``environment``'s (read now when not given)."""
    from feeslab.connection import Environment

    environment = Environment.read() if environment is None else environment
    if args.api_key:
        keys = [pair for given in args.api_key for pair in given]
    elif environment.api_keys:
        try:
            keys = list(_api_keys(environment.api_keys))
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"${KEYS_VARIABLE}: {exc}") from None
    elif environment.api_key:
        keys = [(environment.api_key, None)]
    else:
        return []
    secret = args.api_key_secret or environment.api_key_secret
    if keys[0][1] is None and secret:
        keys[0] = (keys[0][0], secret)
    return keys


def _planned(lab: Lab, args: argparse.Namespace, checked: _Checked
             ) -> tuple[Plan, Callable[[], pd.DataFrame]]:  # fmt: skip
    """The plan of the fetch ``args`` ask for (bought samples stay within ``--budget``), and
    the function that gets its frame: in one process, or planned once for the cluster."""
    from feeslab.datasets import registry

    dataset, source = checked["dataset"], lab.data_source
    params = dict(checked["params"])
    if dataset.takes("progress"):
        params["progress"] = not args.quiet
    if dataset.plan is not None and "budget" in inspect.signature(dataset.plan).parameters:
        params["budget"] = args.budget  # a plan that buys a sample checks it first

    def written(value: object) -> pd.DataFrame:
        return dataset.written(value, **checked["written"])

    client = checked.get("client")
    if client is None:
        plan = registry.plan(dataset, source, params)
        params.pop("budget", None)  # the plan is checked against it (_fetch)
        return plan, lambda: written(registry.get(dataset, source, params))
    from feeslab import cluster

    output = checked["output"]
    out = output.with_name(output.stem + ".parts")
    blocks = args.partition_blocks or cluster.DEFAULT_PARTITION_BLOCKS
    job = cluster.plan(dataset, source, out=out, partition_blocks=blocks, **params)
    params["budget"] = args.budget
    return job.plan, lambda: written(cluster.run(
        dataset, source, client=client, planned=job, out=out, partition_blocks=blocks,
        keys=checked.get("labs", ()), **params).value)


def _client(args: argparse.Namespace) -> _Client | None:
    """A ``distributed.Client`` for ``--scheduler``/``--workers`` (None without them)."""
    if args.scheduler is None and not args.workers:
        return None
    if args.scheduler is not None and args.workers:
        raise UsageError("give --scheduler (a running cluster) or --workers (a local one)")
    try:
        from distributed import Client
    except ImportError:
        raise UsageError("--scheduler/--workers need dask: pip install 'feeslab[dask]'"
                         ) from None  # fmt: skip
    if args.workers:
        from feeslab.cluster import local_client

        local: _Client = local_client(args.workers)
        return local
    return Client(args.scheduler)  # type: ignore[no-untyped-call]


def _fetch(lab: Lab, args: argparse.Namespace, checked: _Checked,
           say: Callable[[str], None]) -> pd.DataFrame:
    """Plan, check the budget, print the plan, fetch: the frame."""
    from feeslab.fetch.credits import Budget

    dataset = checked["dataset"]
    if lab.has_node and dataset.partitions is not None:
        last = dataset.partitions.span(checked["params"])[1] - 1
        if last > (head := lab.node.head(refresh=True)):
            raise UsageError(f"block {last:,} is beyond the head ({head:,}); lower the range's "
                             "end")  # fmt: skip
    plan, get = _planned(lab, args, checked)
    if args.budget is not None:
        Budget(args.budget).check(plan, lab.credits)
    say(repr(plan))
    labs = [lab, *checked.get("labs", ())]
    nodes = [one.node for one in labs] if lab.has_node else []  # era1 files: not paced
    found = [getattr(getattr(n, "transport", None), "governor", None) for n in nodes]
    governors: list[Governor] = [g for g in found if g is not None]
    if governors and len(governors) == len(found) and plan.total:
        for governor in governors:
            governor.settle(timeout=5.0)
        rate = sum(governor.ceiling for governor in governors)  # each key its own bucket
        keys = f" over {len(labs)} API keys" if len(labs) > 1 else ""
        say(f"pacing at {rate:,.0f} credits/s{keys}: about {plan.total / rate:,.0f} s "
            "(--credits-per-second to change)")
    return get()


def _ledger_text(ledger: CreditLedger) -> str:
    table = ledger.to_frame()
    lines = [
        f"spent {ledger.spent:,} credits ({ledger.calls:,} calls sent, "
        f"{ledger.cached:,} answered from the cache)"
    ]
    if not table.empty:
        lines.append(table.to_string(index=False))
    return "\n".join(lines)


def _ledgers_text(labs: Sequence[Lab]) -> str:
    """The ledger, or each API key's (named by its place, never by the key)."""
    if len(labs) == 1:
        return _ledger_text(labs[0].credits)
    return "\n".join(f"key {i}: {_ledger_text(lab.credits)}" for i, lab in enumerate(labs, 1))


def _run_fetch(args: argparse.Namespace) -> int:
    from feeslab.connection import Environment, Settings, connect_with
    from feeslab.errors import BudgetExceeded, ConfigError, FeeslabError, redact
    from feeslab.frames.io import write_frame

    prog = f"feeslab fetch {args.kind}"
    environment = Environment.read()  # the keys' defaults, read once for every Lab
    secrets = [s for s in (args.api_key_secret, environment.api_key_secret,
                           environment.api_key) if s]  # fmt: skip
    secrets += [s for given in args.api_key or () for pair in given for s in pair if s]
    secrets += [s for pair in _keys_quietly(environment) for s in pair if s]

    def fail(status: int, message: str) -> int:
        text = " ".join(redact(str(message), secrets).split())  # one line, no secrets
        print(f"{prog}: error: {text}", file=sys.stderr, flush=True)
        return status

    def say(text: str) -> None:
        if not args.quiet:
            print(redact(text, secrets), flush=True)

    try:
        params = _check_args(args, environment)
    except UsageError as exc:
        return fail(USER_ERROR, str(exc))
    given: list[tuple[str | None, str | None]] = list(params.pop("keys", []))
    keys = given or [(None, None)]
    urls = args.url or [None]
    labs: list[Lab] = []
    try:
        params["client"] = _client(args)
        for i, (key, secret) in enumerate(keys):
            labs.append(connect_with(Settings(
                api_key=key,
                api_key_secret=secret,
                network=args.network,
                url=urls[i % len(urls)],
                seed=args.seed,
                cache=not args.no_cache and not i,  # the driver's sample: in the first's
                progress=not args.quiet,
                credits_per_second=args.credits_per_second,
                era1=args.era1,
                ere=args.ere,
                era=args.era,
            ), environment))  # fmt: skip
        lab = labs[0]
        params["labs"] = labs[1:]
        frame = _fetch(lab, args, params, say)
        write_frame(frame, params["output"])
        say(_ledgers_text(labs))
        say(f"wrote {len(frame):,} rows to {params['output']}")
        return 0
    except (UsageError, ConfigError, BudgetExceeded, ValueError) as exc:
        return fail(USER_ERROR, str(exc))
    except FeeslabError as exc:
        if labs:
            say(_ledgers_text(labs))
        return fail(FAILURE, f"{type(exc).__name__}: {exc}")
    except OSError as exc:  # writing the file: disk full, permissions
        return fail(FAILURE, f"cannot write {params['output']}: {exc}")
    except KeyboardInterrupt:
        return fail(130, "interrupted; nothing written (fetched answers stay in the cache)")
    finally:
        client = params.get("client")
        if client is not None and args.workers:  # the local cluster stops with the command
            client.shutdown()
        elif client is not None:
            client.close()
        for one in labs:
            one.close()


def _keys_quietly(environment: Environment) -> list[tuple[str, str | None]]:
    """``INFURA_API_KEYS``' keys and secrets, to mask in messages (its pieces, should it not
    parse)."""
    if not environment.api_keys:
        return []
    try:
        return list(_api_keys(environment.api_keys))
    except argparse.ArgumentTypeError:
        return [(item.strip(), None) for item in re.split(r"[,:]", environment.api_keys)]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``feeslab`` command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
