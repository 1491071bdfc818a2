"""What importing feeslab costs a fresh process: its peak memory and the import's wall time.

Each measure runs in a new Python process (a process's own peak is ``VmHWM`` in
``/proc/self/status``; ``ru_maxrss`` in a child carries its parent's), timing the import
statement alone, the best of ``RUNS`` processes (the others pay for a busy machine). Beside
``import feeslab`` (issue 37's goal: at most 100 MiB and 0.5 s) stand what a scan imports before
its first block (``from feeslab import connect``: the client stack, the datasets, pandas) and
pandas alone, the floor of anything that makes a frame.

``python benchmarks/import_weight.py`` prints the rows; ``bench()`` returns them for ``run.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys

RUNS = 7
GOAL_MIB = 100
GOAL_S = 0.5

# one import in a fresh process: its wall time and the process's peak memory after it
_CHILD = r"""
import json, sys, time
began = time.perf_counter()
exec(sys.argv[1])
took = time.perf_counter() - began
status = open("/proc/self/status").read()
peak = int(status.split("VmHWM:")[1].split()[0]) / 1024
heavy = sorted(m for m in ("pandas", "pyarrow", "scipy", "matplotlib", "eth_abi", "eth_utils",
                           "rlp", "trie", "web3", "uvicorn", "pyrevm") if m in sys.modules)
print(json.dumps({"seconds": took, "peak_mib": peak, "heavy": heavy}))
"""

CASES = (
    ("import feeslab", "import feeslab"),
    ("from feeslab import connect (the client stack)", "from feeslab import connect"),
    ("import pandas (the floor of any frame)", "import pandas"),
)


def measure(statement: str, runs: int = RUNS) -> dict:
    """The fastest of ``runs`` fresh processes' ``statement``, and the highest peak of them."""
    results = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", _CHILD, statement], capture_output=True,
                              text=True, check=True, timeout=300)  # fmt: skip
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    best = min(results, key=lambda r: r["seconds"])
    return {**best, "peak_mib": max(r["peak_mib"] for r in results)}


def bench() -> list[tuple[str, float, str]]:
    rows = []
    for name, statement in CASES:
        result = measure(statement)
        loaded = ", ".join(result["heavy"]) or "none"
        rows.append((name, result["seconds"],
                     f"peak {result['peak_mib']:,.0f} MiB; heavy modules loaded: {loaded}"))
        if statement == "import feeslab":
            ok = result["peak_mib"] <= GOAL_MIB and result["seconds"] <= GOAL_S
            rows.append((f"GOAL import feeslab <= {GOAL_MIB} MiB and <= {GOAL_S} s",
                         result["seconds"],
                         f"{'PASS' if ok else 'FAIL'} (peak {result['peak_mib']:,.0f} MiB, "
                         f"best of {RUNS} fresh processes)"))  # fmt: skip
    return rows


if __name__ == "__main__":
    for name, seconds, note in bench():
        print(f"{name:<55}  {seconds:>9.3f}  {note}")
