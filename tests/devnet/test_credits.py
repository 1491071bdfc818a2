"""The credit ledger and the cost table, with injected clocks."""

from __future__ import annotations

import threading

import pytest

from feeslab.devnet.credits import (
    SECONDS_PER_DAY,
    CreditLedger,
    payment_required_body,
    too_many_requests_body,
)
from feeslab.protocol import costs


class Clock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def ledger(daily: int = 1_000, cps: float = 100, wall: float = 10.0) -> tuple:
    wall_clock, mono = Clock(wall), Clock()
    return CreditLedger(daily, cps, wall_clock=wall_clock, monotonic=mono), wall_clock, mono


def test_cost_table_matches_the_interface_and_reference():
    assert costs.method_cost("eth_getStorageAt") == 80
    assert costs.method_cost("eth_estimateGas") == 300
    assert costs.method_cost("eth_call") == 80
    assert costs.method_cost("eth_getUncleByBlockNumberAndIndex") == 150
    assert costs.method_cost("eth_getUncleByBlockHashAndIndex") == 150
    assert costs.method_cost("eth_chainId") == 5
    assert costs.method_cost("eth_subscribe") == 5
    assert costs.method_cost("eth_unsubscribe") == 10
    assert costs.method_cost("anything_else") == 80
    assert costs.gas_api_cost("baseFeeHistory") == 80
    assert costs.event_cost("newHeads") == 50
    assert costs.batch_cost(["eth_chainId", "eth_call", "eth_estimateGas"]) == 385


@pytest.mark.parametrize(
    ("status", "cost"),
    [(400, 5), (404, 5), (413, 5), (402, 0), (429, 0), (500, 0), (503, 0), (200, 0)],
)
def test_http_status_cost(status, cost):
    assert costs.http_status_cost(status) == cost


def test_admit_charges_every_call_and_keeps_by_method():
    book, _, _ = ledger()
    assert book.admit([("eth_call", 80), ("eth_call", 80), ("eth_chainId", 5)]).admitted
    usage = book.usage()
    assert usage.spent == 165
    assert usage.remaining == 835
    assert usage.by_method == {"eth_call": 160, "eth_chainId": 5}


def test_over_the_daily_balance_is_402_and_free():
    book, _, _ = ledger(daily=100, cps=1_000)
    assert book.admit([("eth_call", 80)]).admitted
    decision = book.admit([("eth_call", 80)])
    assert decision.status == 402
    assert book.usage().spent == 80  # the refused request cost nothing
    assert book.admit([("eth_chainId", 5)]).admitted  # what still fits is served


def test_daily_balance_resets_at_midnight_utc():
    book, wall, _ = ledger(daily=100, cps=1_000, wall=SECONDS_PER_DAY * 3 + 100)
    book.admit([("eth_call", 80)])
    wall.now = SECONDS_PER_DAY * 4 - 1  # 23:59:59 the same day
    assert book.admit([("eth_call", 80)]).status == 402
    wall.now = SECONDS_PER_DAY * 4  # 00:00:00 UTC
    assert book.usage().spent == 0
    assert book.admit([("eth_call", 80)]).admitted


def test_big_batch_drives_the_bucket_negative_and_retry_after_is_honest():
    book, _, mono = ledger(daily=10**6, cps=100)
    assert book.admit([("eth_call", 80)] * 5).admitted  # 400 taken from a 100 bucket: -300
    refused = book.admit([("eth_chainId", 5)])
    assert refused.status == 429
    assert refused.retry_after == 4  # -300 + 4 s * 100/s = +100 > 0 (3 s would leave 0)
    mono.now += 3  # the bucket is back at exactly 0: still not positive
    assert book.admit([("eth_chainId", 5)]).status == 429
    mono.now += 1
    assert book.admit([("eth_chainId", 5)]).admitted
    assert book.usage().spent == 405


def test_retry_after_is_at_least_one_second():
    book, _, _ = ledger(daily=10**6, cps=100)
    book.admit([("x", 100)])  # exactly empties the bucket
    assert book.admit([("x", 1)]).retry_after == 1


def test_bucket_holds_at_most_one_second():
    book, _, mono = ledger(daily=10**6, cps=100)
    mono.now += 3600
    assert book.admit([("x", 150)]).admitted
    assert book.admit([("x", 1)]).status == 429  # 100 - 150 < 0: no hour of saved-up credit


def test_events_stop_when_the_balance_is_gone():
    book, _, _ = ledger(daily=120, cps=1_000)
    assert book.charge_event("newHeads", 50)
    assert book.charge_event("newHeads", 50)
    assert not book.charge_event("newHeads", 50)
    assert book.usage().by_method == {"newHeads": 100}


def test_fees_are_recorded():
    book, _, _ = ledger()
    book.charge_fee("http_4xx", 5)
    book.charge_fee("http_4xx", 0)
    assert book.usage().by_method == {"http_4xx": 5}


def test_ledger_is_thread_safe():
    book = CreditLedger(10**9, 10**12)

    def spend() -> None:
        for _ in range(1000):
            assert book.admit([("eth_call", 80), ("eth_chainId", 5)]).admitted

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    usage = book.usage()
    assert usage.spent == 8 * 1000 * 85
    assert usage.by_method == {"eth_call": 8 * 1000 * 80, "eth_chainId": 8 * 1000 * 5}


def test_limit_bodies_match_the_reference():
    body = payment_required_body(7)
    assert body["id"] == 7
    assert body["error"]["code"] == 402
    assert body["error"]["event"] == -33000
    assert body["error"]["message"] == "Payment Required"
    assert body["error"]["details"].startswith("You have reached your daily credit limit.")
    body = too_many_requests_body()
    assert body["error"]["code"] == 429
    assert body["error"]["event"] == -33200
    assert body["error"]["message"] == "Too Many Requests"
    assert body["error"]["details"].startswith("You have surpassed your allowed throughput limit.")


def test_bad_limits_are_refused():
    with pytest.raises(ValueError):
        CreditLedger(100, 0)
    with pytest.raises(ValueError):
        CreditLedger(-1, 10)
