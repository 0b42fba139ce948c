"""Numbers as rungrade shows them: rounded half up at the decimals shown, as a reader
rounds them (Python's `round` and format go to the even neighbour of the binary value: 3.125
showed as 3.12, 46.15 as 46.1), and a zero never signed."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal


def rounded(value: float, places: int) -> float:
    """`value` rounded half away from zero at `places` decimals, as its shortest decimal
    form is written: 3.125 is 3.13, 46.15 is 46.2, -0.05 is -0.1, -0.04 is 0.0 (unsigned)."""
    if not math.isfinite(value) or abs(value) >= 1e15:  # (inf, nan, and a float whose
        return value  # decimals are past its precision: nothing to round, as written)
    step = Decimal(1).scaleb(-places)
    return float(Decimal(repr(value)).quantize(step, rounding=ROUND_HALF_UP)) + 0.0


def shown(value: float, places: int, signed: bool = False) -> str:
    """`value` written with `places` decimals (rounded half up), with its sign when `signed`;
    a value that rounds to zero is written 0 (never -0.0), so a bound short of zero by less
    than the last decimal shows as touching it only where it does."""
    value = rounded(value, places)
    return f"{value:+.{places}f}" if signed and value else f"{value:.{places}f}"
