"""How an amount of money is computed and rounded: one rule, kept here and nowhere else.

Every stored amount is `cost_of(gpu_hours, price_per_gpu_hour)`: a job's `cost` when an import stores
it (`fleet.ingest`) and when a price change re-prices it (`fleet.costs.recompute_costs`), and a
finding's `cost`, which is also what its fix would recover (`guidance["recoverable_cost"]`), when
triage stores it and when a price change re-prices it (`triage.receivers`). So the same GPU-hours at the
same price are the same amount wherever they are shown.

The rule: the GPU-hours as stored (a float, read as the shortest decimal that gives it back, its `repr`)
times the price of a GPU-hour (a decimal with 4 places), multiplied exactly in decimal arithmetic, then
rounded once, to the cent, **half a cent up** (`ROUND_HALF_UP`: 0.125 -> 0.13, 0.135 -> 0.14), as a
bill rounds and as the pages' `floatformat` rounds. Never from an amount already rounded (a job's cost
divided by its hours is not its price). Totals add these cents up (converted at the exchange rates);
pages and digests round a total only to show it, all by `whole` (the API and CSV by `to_cents`).

Pure Python: no Django, so the guidance (and anything else) can use it as is.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, localcontext

CENT = Decimal("0.01")


def to_cents(amount: Decimal) -> Decimal:
    """An exact amount rounded to the cent, half a cent up."""
    with localcontext() as context:
        context.prec = 60  # more than any amount's digits: only the quantize rounds
        return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def cost_of(gpu_hours: float, price_per_gpu_hour: Decimal | None) -> Decimal | None:
    """What `gpu_hours` cost at `price_per_gpu_hour`, to the cent; None without a price."""
    if price_per_gpu_hour is None:
        return None
    with localcontext() as context:
        context.prec = 60  # 17 digits of hours x 10 of a price: the product is exact
        exact = Decimal(repr(float(gpu_hours))) * Decimal(price_per_gpu_hour)
    return to_cents(exact)


def cents(amount: Decimal | str) -> str:
    """One job's or one finding's stored amount as the pages show it, to the cent with thousands
    separators as `whole` writes a total: Decimal("1234.5") -> "1,234.50" (the pages wrote "1234.50")."""
    return f"{to_cents(Decimal(str(amount))):,}"


def whole(amount: float | Decimal) -> str:
    """A total as the pages and digests show money, in whole units with thousands separators: to the
    cent first (the figure the API and CSV give, and a float sum of cents is a cent off a hair's
    breadth), then half a unit up, so the overview's card, the teams table and the digest agree:
    2608.5 -> "2,609" (Python's `{:,.0f}` made it "2,608" where `floatformat:0` made it 2609)."""
    cents = to_cents(Decimal(repr(float(amount))))
    return f"{cents.quantize(Decimal(1), rounding=ROUND_HALF_UP):,}"
