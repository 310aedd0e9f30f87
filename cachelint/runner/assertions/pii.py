"""Personal data in an answer, for the `no-pii` assertion: emails, phone numbers, card numbers
(Luhn-checked) and Brazilian CPF/CNPJ numbers (check digits verified)."""

from __future__ import annotations

import re
from collections.abc import Iterable

PII_KINDS = ("email", "phone", "card", "cpf", "cnpj")

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# Phones need a "+", parentheses or separators: a bare digit run is ambiguous with CPF/card numbers.
_PHONES = (
    re.compile(r"(?<![\w+])\+\d[\d\s().-]{6,20}\d(?!\d)"),  # international / E.164
    re.compile(
        r"(?<![\w(])\(\d{2,3}\)\s?\d{3,5}[\s.-]?\d{4}(?!\d)"
    ),  # (11) 91234-5678, (555) 123-4567
    re.compile(
        r"(?<![\w.-])\d{2,3}[\s.-]\d{3,5}[\s.-]\d{4}(?![\w-])"
    ),  # 11 91234-5678, 555-123-4567
    # A Brazilian mobile without area code; "2019-2020" (4-4) must stay a year range.
    re.compile(r"(?<![\w.-])9\d{4}-\d{4}(?![\w-])"),  # 91234-5678
)
_CARD = re.compile(r"(?<![\d.-])\d(?:[ -]?\d){12,18}(?![\d-])")
_CPF = re.compile(r"(?<![\d./-])(?:\d{3}\.\d{3}\.\d{3}-\d{2}|\d{11})(?![\d./-])")
_CNPJ = re.compile(r"(?<![\d./-])(?:\d{2}\.\d{3}\.\d{3}/\d{4}-\d{2}|\d{14})(?![\d./-])")


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def luhn_valid(number: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(number)):
        d = int(char)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def cpf_valid(number: str) -> bool:
    if len(number) != 11 or len(set(number)) == 1:
        return False
    nums = [int(c) for c in number]
    for n in (9, 10):
        check = sum(nums[i] * (n + 1 - i) for i in range(n)) * 10 % 11 % 10
        if check != nums[n]:
            return False
    return True


def cnpj_valid(number: str) -> bool:
    if len(number) != 14 or len(set(number)) == 1:
        return False
    nums = [int(c) for c in number]
    for n, weights in (
        (12, (5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2)),
        (13, (6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2)),
    ):
        rest = sum(w * d for w, d in zip(weights, nums[:n], strict=True)) % 11
        if nums[n] != (0 if rest < 2 else 11 - rest):
            return False
    return True


def mask(sample: str) -> str:
    """Enough of a match to find it, not enough to leak it."""
    if len(sample) <= 4:
        return "*" * len(sample)
    keep = 2 if len(sample) < 12 else 3
    return sample[:keep] + "*" * (len(sample) - 2 * keep) + sample[-keep:]


def find_pii(text: str, kinds: Iterable[str] = PII_KINDS) -> list[tuple[str, str]]:
    """(kind, matched text) for every PII match of the wanted kinds, in text order per kind."""
    wanted = set(kinds)
    found: list[tuple[int, str, str]] = []
    if "email" in wanted:
        found += [(m.start(), "email", m.group()) for m in _EMAIL.finditer(text)]
    if "phone" in wanted:
        spans: list[tuple[int, int]] = []
        for pattern in _PHONES:
            for m in pattern.finditer(text):
                if any(s <= m.start() < e or m.start() <= s < m.end() for s, e in spans):
                    continue  # one number matched by two patterns is one finding
                if 8 <= len(_digits(m.group())) <= 15:
                    spans.append((m.start(), m.end()))
                    found.append((m.start(), "phone", m.group()))
    if "card" in wanted:
        for m in _CARD.finditer(text):
            digits = _digits(m.group())
            if 13 <= len(digits) <= 19 and luhn_valid(digits):
                found.append((m.start(), "card", m.group()))
    if "cpf" in wanted:
        found += [
            (m.start(), "cpf", m.group())
            for m in _CPF.finditer(text)
            if cpf_valid(_digits(m.group()))
        ]
    if "cnpj" in wanted:
        found += [
            (m.start(), "cnpj", m.group())
            for m in _CNPJ.finditer(text)
            if cnpj_valid(_digits(m.group()))
        ]
    found.sort()
    return [(kind, sample) for _, kind, sample in found]
