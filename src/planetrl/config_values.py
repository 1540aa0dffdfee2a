"""Typed configuration values: fields with help and bounds, coercion from text, checks that name the key."""

from __future__ import annotations

import difflib
import math
import typing
from collections.abc import Callable, Iterable
from dataclasses import field
from typing import Any


class ConfigError(ValueError):
    """A configuration key or value that is not allowed."""


def did_you_mean(name: str, known: Iterable[str], cutoff: float = 0.5) -> str:
    """' Did you mean: a, b?' with up to three known names close to a mistyped `name`; '' when none is."""
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=cutoff)
    return f" Did you mean: {', '.join(close)}?" if close else ""


def option(
    default: Any,
    help: str,
    *,
    low: float | None = None,
    high: float | None = None,
    choices: tuple[Any, ...] | None = None,
) -> Any:
    """A dataclass field with its help line and the values it allows."""
    meta = {"help": help, "low": low, "high": high, "choices": choices}
    if isinstance(default, (list, dict)):
        raise TypeError("use tuples for sequence defaults; configs are immutable")
    return field(default=default, metadata=meta)


def _to_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.lower() in ("true", "1", "yes")
    raise ConfigError(f"Config key '{key}' got {value!r}; allowed: true or false.")


def _to_int(key: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    number = value if isinstance(value, float) else None
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is not None and float(number).is_integer():
        return int(number)
    raise ConfigError(f"Config key '{key}' got {value!r}; allowed: an integer.")


def _to_float(key: str, value: Any) -> float:
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is not None and math.isfinite(number):
        return number
    # nan passes every bound check (each comparison is false) and inf has no meaning as a rate or scale.
    raise ConfigError(f"Config key '{key}' got {value!r}; allowed: a finite number.")


def _to_str(key: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    raise ConfigError(f"Config key '{key}' got {value!r}; allowed: a string.")


_SCALARS: dict[Any, Callable[[str, Any], Any]] = {bool: _to_bool, int: _to_int, float: _to_float, str: _to_str}


def coerce(key: str, value: Any, tp: Any) -> Any:
    """Convert a parsed value to the field type (a scalar, or a tuple of them), or fail naming key and type."""
    if typing.get_origin(tp) is tuple:
        if isinstance(value, str):
            value = [v for v in value.split(",") if v.strip()]
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            value = [value]  # `--set ppo.policy_layers=64` reads as the number 64: one item
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"Config key '{key}' got {value!r}; allowed: a comma-separated list.")
        args = typing.get_args(tp)
        return tuple(coerce(key, v, args[0] if args else str) for v in value)
    if tp not in _SCALARS:
        raise ConfigError(f"Config key '{key}' has unsupported type {getattr(tp, '__name__', tp)}.")
    return _SCALARS[tp](key, value)


def _allowed_if_outside(value: Any, meta: typing.Mapping[str, Any]) -> str | None:
    """What a key allows, when `value` is outside its choices or bounds; None when it is inside."""
    choices, low, high = meta.get("choices"), meta.get("low"), meta.get("high")
    if choices is not None and value not in choices:
        return ", ".join(map(repr, choices))
    if low is not None and value < low:
        return f"at least {low} ({f'at most {high}' if high is not None else 'no upper bound'})"
    if high is not None and value > high:
        return f"at most {high}"
    return None


def check_range(key: str, value: Any, meta: typing.Mapping[str, Any]) -> None:
    """Fail naming the key, the value and what is allowed when a value (each item, of a tuple) is outside
    its choices or bounds."""
    many = isinstance(value, tuple)
    for item in value if many else (value,):
        allowed = _allowed_if_outside(item, meta)
        if allowed is not None:
            shown = list(value) if many else value
            raise ConfigError(f"Config key '{key}' got {shown!r}; allowed: {'each item ' * many}{allowed}.")
