"""Integer literals and operators as C evaluates them: the one core of the source model's
constant folding (`source/folding.py`) and of the preprocessor's `#if` (`conditional.py`)."""

from __future__ import annotations


def int_literal(text: str) -> int | None:
    """An integer literal's value (digit separators, u/l/z suffixes, hex, binary, octal); None otherwise."""
    t = text.replace("'", "").lower()
    t = t.rstrip("ulz")
    try:
        if t.startswith("0x"):
            return int(t[2:], 16)
        if t.startswith("0b"):
            return int(t[2:], 2)
        if len(t) > 1 and t.startswith("0") and t.isdigit():
            return int(t[1:], 8)
        if t.isdigit():
            return int(t)
    except ValueError:
        return None
    return None


def c_div(a: int, b: int) -> int | None:
    """C's integer division: truncated toward zero; None for a division by zero."""
    if b == 0:
        return None
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def binary(op: str, a: int, b: int) -> int | None:
    """`a op b` for a C binary operator; None where C leaves it undefined or the operator is not one."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return c_div(a, b)
    if op == "%":
        q = c_div(a, b)
        return None if q is None else a - q * b
    if op in ("<<", ">>"):
        if not 0 <= b < 64:
            return None
        return a << b if op == "<<" else a >> b
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    comparisons = {
        "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b,
        "&&": bool(a) and bool(b), "||": bool(a) or bool(b),
    }
    result = comparisons.get(op)
    return None if result is None else int(result)
