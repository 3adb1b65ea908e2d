"""`--set KEY=VALUE` strings read as each parameter's declared type (replay.policies.base.coerce).
Hostile-input audit (2026-11-28): `--set capacity=` (an empty value) was read as none, i.e. an
unbounded cache, without a word; "none" says that on purpose."""

from __future__ import annotations

import pytest

from replay.policies import build
from replay.policies.base import ParamError


def test_an_empty_value_for_an_optional_number_is_an_error_naming_none():
    with pytest.raises(ParamError, match=r"parameter 'capacity': cannot read '' as int \| None; give none for no limit"):
        build("devboy_lru", {"capacity": ""})
    assert build("devboy_lru", {"capacity": "none"}).params.capacity is None
    assert build("devboy_lru", {"capacity": " 8 "}).params.capacity == 8


def test_an_empty_value_for_a_plain_number_names_its_type():
    with pytest.raises(ParamError, match=r"cannot read '' as int$"):
        build("devboy_lru", {"min_body_chars": ""})


def test_none_reads_as_none_for_an_optional_fraction_too():
    """Review (2026-11-28): the empty-value error said "give none", which an optional float refused."""
    with pytest.raises(ParamError, match="give none for no limit"):
        build("jp_compaction", {"auto_target": ""})
    assert build("jp_compaction", {"auto_target": "none"}).params.auto_target is None
