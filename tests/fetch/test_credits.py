"""The client's credit ledger, fetch plans and budgets.

Prices are written out here from the interface (section 8) and REFERENCE.md ("Credits"), not read
from ``feeslab.protocol.costs``, so a wrong table fails these tests.
"""

from __future__ import annotations

import sys
import threading
from types import SimpleNamespace

import pandas as pd
import pytest

from feeslab.errors import BudgetExceeded, FeeslabError
from feeslab.fetch.credits import FEE_ROW, Budget, CreditLedger, Plan, PlanLine

NODE_PRICES = {
    # interface section 8
    "eth_getStorageAt": 80,
    "eth_estimateGas": 300,
    "eth_call": 80,
    "eth_getUncleByBlockNumberAndIndex": 150,
    "eth_getUncleByBlockHashAndIndex": 150,
    # REFERENCE.md "Credits"
    "eth_blockNumber": 80,
    "eth_chainId": 5,
    "eth_getBlockByNumber": 80,
    "eth_feeHistory": 80,
    "eth_subscribe": 5,
    "eth_unsubscribe": 10,
    "eth_getTransactionReceipt": 80,  # any other method
}


# -- ledger ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "price"), sorted(NODE_PRICES.items()))
def test_a_served_call_costs_its_price(method: str, price: int) -> None:
    ledger = CreditLedger()
    assert ledger.record(method) == price
    assert ledger.record(method, http_status=200) == price
    assert ledger.spent == 2 * price
    assert ledger.by_method == {method: 2 * price}
    assert ledger.calls == 2


def test_gas_api_and_subscription_events_use_their_own_tables() -> None:
    ledger = CreditLedger()
    assert ledger.record("baseFeeHistory", kind="gas") == 80
    assert ledger.record("suggestedGasFees", kind="gas") == 80
    assert ledger.record("newHeads", kind="event") == 50
    assert ledger.spent == 210
    with pytest.raises(ValueError, match="kind"):
        ledger.record("eth_call", kind="grpc")  # type: ignore[arg-type]
    assert ledger.calls == 3


def test_a_mixed_session_adds_up() -> None:
    ledger = CreditLedger()
    for _ in range(20):
        ledger.record("eth_getBlockByNumber")  # 20 x 80 = 1,600
    for _ in range(3):
        ledger.record("eth_getUncleByBlockNumberAndIndex")  # 3 x 150 = 450
    ledger.record("eth_estimateGas")  # 300
    ledger.record("eth_chainId")  # 5
    for _ in range(7):
        ledger.record("eth_getBlockByNumber", cached=True)  # free
    assert ledger.spent == 2_355
    assert ledger.calls == 25
    assert ledger.cached == 7
    assert ledger.by_method == {
        "eth_chainId": 5,
        "eth_estimateGas": 300,
        "eth_getBlockByNumber": 1_600,
        "eth_getUncleByBlockNumberAndIndex": 450,
    }


@pytest.mark.parametrize(
    ("status", "credits"),
    [
        (402, 0),
        (429, 0),
        (500, 0),
        (502, 0),
        (503, 0),
        (400, 5),
        (401, 5),
        (403, 5),
        (404, 5),
        (405, 5),
        (413, 5),
    ],
)
def test_refused_answers_follow_the_status_rules(status: int, credits: int) -> None:
    ledger = CreditLedger()
    assert ledger.record("eth_estimateGas", http_status=status) == credits
    assert ledger.spent == credits
    frame = ledger.to_frame().set_index("method")
    assert frame.loc["eth_estimateGas", "credits"] == 0  # the method itself was not served
    assert frame.loc["eth_estimateGas", "refused"] == 1
    assert ledger.by_method.get(FEE_ROW, 0) == credits


def test_cached_hits_are_free_whatever_the_status() -> None:
    ledger = CreditLedger()
    assert ledger.record("eth_estimateGas", cached=True, http_status=401) == 0
    assert (ledger.spent, ledger.calls, ledger.cached) == (0, 0, 1)


def test_a_batch_is_charged_per_call_but_a_rejected_batch_pays_one_fee() -> None:
    ledger = CreditLedger()
    batch = ["eth_call", "eth_estimateGas", "eth_chainId", "eth_getUncleByBlockHashAndIndex"]
    assert ledger.record_request(batch, 200) == 80 + 300 + 5 + 150
    assert ledger.record_request(batch, 429) == 0
    assert ledger.record_request(batch, 402) == 0
    assert ledger.record_request(batch, 503) == 0
    assert ledger.record_request(batch, 401) == 5  # per request, not 4 x 5
    assert ledger.spent == 535 + 5
    assert ledger.calls == 20
    frame = ledger.to_frame().set_index("method")
    assert frame.loc["eth_estimateGas"].to_dict() == {
        "calls": 5,
        "credits": 300,
        "cached": 0,
        "refused": 4,
    }


def test_on_response_takes_the_transports_call_objects() -> None:
    ledger = CreditLedger()
    calls = [
        SimpleNamespace(method="eth_getBlockByNumber", params=["0x1", False]),
        SimpleNamespace(method="eth_getStorageAt", params=["0x0", "0x0", "0x1"]),
    ]
    ledger.on_response(calls, 200)
    assert ledger.spent == 160


def test_to_frame_has_one_row_per_method() -> None:
    ledger = CreditLedger()
    ledger.record("eth_call")
    ledger.record("eth_call", cached=True)
    ledger.record("eth_estimateGas")
    frame = ledger.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["method", "calls", "credits", "cached", "refused"]
    assert frame.to_dict("records") == [
        {"method": "eth_estimateGas", "calls": 1, "credits": 300, "cached": 0, "refused": 0},
        {"method": "eth_call", "calls": 1, "credits": 80, "cached": 1, "refused": 0},
    ]
    assert CreditLedger().to_frame().empty


def test_concurrent_records_lose_nothing() -> None:
    ledger = CreditLedger()
    threads, rounds = 16, 2_000
    barrier = threading.Barrier(threads)

    def work() -> None:
        barrier.wait()
        for i in range(rounds):
            ledger.record("eth_getBlockByNumber")  # 80
            ledger.record("eth_getUncleByBlockNumberAndIndex", cached=i % 2 == 0)  # 150 or 0
            ledger.record_request(["eth_call", "eth_chainId"], 200)  # 85
            ledger.record("eth_call", http_status=400)  # 5 fee

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        pool = [threading.Thread(target=work) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    finally:
        sys.setswitchinterval(old)
    n = threads * rounds
    assert ledger.spent == n * (80 + 85 + 5) + (n // 2) * 150
    assert ledger.cached == n // 2
    assert ledger.calls == n * 4 + n // 2
    assert ledger.by_method[FEE_ROW] == 5 * n


# -- plans -----------------------------------------------------------------------------------------


def uncle_scan_plan() -> Plan:
    return Plan(
        [
            ("eth_getBlockByNumber", 20_000),
            PlanLine.from_sample(
                "eth_getUncleByBlockNumberAndIndex", found=40, sample=500, population=20_000
            ),
        ],
        title="Uncle scan",
    )


def test_the_uncle_scan_plan_totals() -> None:
    plan = uncle_scan_plan()
    blocks, uncles = plan.lines
    assert (blocks.count, blocks.unit_cost, blocks.credits, blocks.estimated) == (
        20_000,
        80,
        1_600_000,
        False,
    )
    assert (uncles.count, uncles.unit_cost, uncles.credits, uncles.estimated) == (
        1_600,
        150,
        240_000,
        True,
    )
    assert plan.total == 1_840_000
    assert plan.calls == 21_600


def test_the_plan_reads_as_a_table() -> None:
    text = repr(uncle_scan_plan())
    lines = text.splitlines()
    assert lines[0] == "Uncle scan: ~1,840,000 credits"
    assert "eth_getBlockByNumber" in lines[1]
    assert "x 20,000" in lines[1] and "1,600,000" in lines[1]
    assert "x ~1,600" in lines[2] and "240,000" in lines[2]
    assert "estimated from a sample" in lines[2]
    assert lines[3].split()[0] == "total" and lines[3].endswith("~1,840,000")
    html = uncle_scan_plan()._repr_html_()
    assert html.startswith("<table>") and html.endswith("</table>")
    assert "~1,840,000" in html and "<code>eth_getUncleByBlockNumberAndIndex</code>" in html
    assert "&lt;b&gt;" in Plan([("<b>", 1)])._repr_html_()  # names are escaped


def test_exact_plans_show_no_tilde_and_price_other_tables() -> None:
    plan = Plan(
        [PlanLine.of("baseFeeHistory", 3, kind="gas"), ("eth_estimateGas", 2), ("eth_chainId", 1)]
    )
    assert plan.total == 3 * 80 + 2 * 300 + 5
    assert "~" not in repr(plan)
    assert Plan([]).total == 0
    with pytest.raises(ValueError, match="count"):
        Plan([("eth_call", -1)])


def test_minus_cached_takes_off_what_the_cache_holds() -> None:
    plan = uncle_scan_plan()
    left = plan.minus_cached({"eth_getBlockByNumber": 15_000, "eth_call": 99})
    assert left.total == 5_000 * 80 + 240_000
    assert left.lines[0].count == 5_000 and left.lines[0].cached == 15_000
    assert "15,000 cached" in repr(left)
    assert plan.total == 1_840_000  # the original is unchanged
    # never below zero, and a method on two lines is taken off them in order
    two = Plan([("eth_call", 10), ("eth_call", 10), ("eth_estimateGas", 1)])
    after = two.minus_cached({"eth_call": 15, "eth_estimateGas": 5})
    assert [ln.count for ln in after.lines] == [0, 5, 0]
    assert after.total == 5 * 80


def test_plans_add_and_become_frames() -> None:
    both = Plan([("eth_chainId", 1)]) + Plan([("eth_call", 2)])
    assert both.total == 165
    frame = both.to_frame()
    assert list(frame["credits"]) == [5, 160]


# -- budgets ---------------------------------------------------------------------------------------


class CountingSender:
    """Stands in for the transport: counts what would go out on the wire."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def __call__(self, method: str) -> None:
        self.sent.append(method)


def run_fetch(plan: Plan, budget: Budget, ledger: CreditLedger, send: CountingSender) -> None:
    """The fetch layer's contract: check the whole plan, then charge each call before sending."""
    budget.check(plan, ledger)
    for line in plan.lines:
        for _ in range(line.count):
            budget.charge(line.unit_cost)
            send(line.method)
            ledger.record(line.method)


def test_a_plan_over_budget_is_refused_before_anything_is_sent() -> None:
    ledger, send = CreditLedger(), CountingSender()
    ledger.record("eth_estimateGas")  # 300 already spent this session
    plan = Plan([("eth_getBlockByNumber", 10)])  # 800
    with pytest.raises(BudgetExceeded) as caught:
        run_fetch(plan, Budget(1_000), ledger, send)
    assert send.sent == []
    err = caught.value
    assert isinstance(err, FeeslabError)
    assert (err.planned, err.budget, err.spent) == (800, 1_000, 300)
    assert ledger.spent == 300


def test_a_plan_that_exactly_fits_runs() -> None:
    ledger, send = CreditLedger(), CountingSender()
    ledger.record("eth_chainId")  # 5
    budget = Budget(805)
    run_fetch(Plan([("eth_getBlockByNumber", 10)]), budget, ledger, send)
    assert len(send.sent) == 10
    assert ledger.spent == 805 and budget.spent == 805 and budget.remaining == 0


def test_charge_stops_an_underestimated_fetch_before_it_crosses_the_budget() -> None:
    ledger, send = CreditLedger(), CountingSender()
    budget = Budget(1_000)
    budget.check(Plan([("eth_getUncleByBlockNumberAndIndex", 4)]), ledger)  # 600: fits
    # the estimate was low: the fetch turns out to need 10 uncles
    with pytest.raises(BudgetExceeded) as caught:
        for _ in range(10):
            budget.charge(150)
            send("eth_getUncleByBlockNumberAndIndex")
            ledger.record("eth_getUncleByBlockNumberAndIndex")
    assert len(send.sent) == 6  # 6 x 150 = 900; the 7th would make 1,050
    assert ledger.spent == 900 <= budget.limit
    assert (caught.value.planned, caught.value.budget, caught.value.spent) == (150, 1_000, 900)


def test_refund_gives_back_free_answers_and_budgets_are_thread_safe() -> None:
    budget = Budget(100_000)
    budget.charge(300)
    budget.refund(300)  # e.g. the answer was a free 429
    assert budget.spent == 0
    barrier = threading.Barrier(8)
    refused = []

    def work() -> None:
        barrier.wait()
        for _ in range(1_000):
            try:
                budget.charge(15)
            except BudgetExceeded:
                refused.append(1)

    pool = [threading.Thread(target=work) for _ in range(8)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    # 8,000 charges of 15 = 120,000 > 100,000: exactly 6,666 fit
    assert budget.spent == 6_666 * 15
    assert len(refused) == 8_000 - 6_666
    with pytest.raises(ValueError):
        Budget(-1)


def test_answers_from_kept_frames_are_booked_as_cached_and_free():
    from feeslab.fetch.credits import CreditLedger

    ledger = CreditLedger()
    ledger.record_cached("eth_getBlockByNumber", 4_096)
    ledger.record_cached("eth_getUncleByBlockNumberAndIndex", 3)
    assert (ledger.cached, ledger.calls, ledger.spent) == (4_099, 0, 0)
    rows = ledger.to_frame().set_index("method")
    assert rows.loc["eth_getBlockByNumber", "cached"] == 4_096
    assert rows.loc["eth_getUncleByBlockNumberAndIndex", "credits"] == 0
