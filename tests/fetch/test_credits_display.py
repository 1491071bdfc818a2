"""`Plan.count` and the ledger's HTML table: what notebooks read instead of a plan's lines or
the ledger's private rows."""

from __future__ import annotations

from html.parser import HTMLParser

from feeslab.fetch.credits import FEE_ROW, CreditLedger, Plan, PlanLine


class Cells(HTMLParser):
    """The text of every table cell, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.caption = ""
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th", "caption"):
            self._in = tag
            if tag != "caption":
                self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "caption":
            self.caption += data
        elif self._in is not None:
            self.rows[-1][-1] += data


def cells(markup: str) -> Cells:
    parser = Cells()
    parser.feed(markup)
    return parser


def test_count_sums_a_methods_lines_and_is_zero_for_others() -> None:
    plan = Plan([
        ("eth_getBlockByNumber", 800),
        PlanLine.of("eth_getUncleByBlockNumberAndIndex", 61, estimated=True),
        ("eth_getBlockByNumber", 200),
    ])
    assert plan.count("eth_getBlockByNumber") == 1_000
    assert plan.count("eth_getUncleByBlockNumberAndIndex") == 61
    assert plan.count("eth_call") == 0


def test_count_follows_the_cache() -> None:
    plan = Plan([("eth_getBlockByNumber", 800)]).minus_cached({"eth_getBlockByNumber": 300})
    assert plan.count("eth_getBlockByNumber") == 500


def test_the_ledger_reads_as_a_table_with_a_total_row() -> None:
    ledger = CreditLedger()
    ledger.record_request(["eth_getBlockByNumber"] * 1_500)  # 80 credits each
    ledger.record("eth_feeHistory")  # 80
    ledger.record("eth_feeHistory", cached=True)
    ledger.record("eth_call", http_status=400)  # refused: the 5-credit fee
    table = cells(ledger._repr_html_())
    assert table.caption == "Credits spent: 120,085"
    header, *body, total = table.rows
    assert header == ["method", "calls", "cached", "refused", "credits"]
    assert body == [
        ["eth_getBlockByNumber", "1,500", "0", "0", "120,000"],
        ["eth_feeHistory", "1", "1", "0", "80"],
        [FEE_ROW, "0", "0", "0", "5"],
        ["eth_call", "1", "0", "1", "0"],
    ]
    assert total == ["total", "1,502", "1", "", "120,085"]


def test_the_ledger_table_says_when_nothing_is_priced() -> None:
    ledger = CreditLedger(priced=False)
    ledger.record("eth_call")
    markup = ledger._repr_html_()
    assert "not priced" in cells(markup).caption
    assert cells(markup).rows[1] == ["eth_call", "1", "0", "0", "0"]
