"""``ember.ops`` namespaces and ``ember.library`` custom operators, compared with torch 2.13."""
import pytest
from oracle import error_of, torch_or_skip

import ember


def test_ops_namespace_is_created_on_first_access():
    mylib = ember.ops.testlib_namespace
    assert mylib is ember.ops.testlib_namespace
    assert repr(mylib) == "<module 'ember.ops.testlib_namespace' from 'ember.ops'>"
    assert mylib.name == "testlib_namespace"


def test_ops_unknown_operator_error_matches_torch():
    torch = torch_or_skip()
    assert (error_of(lambda: ember.ops.nolib_probe.nothing)
            == error_of(lambda: torch.ops.nolib_probe.nothing))


def test_ops_packet_and_overload_names():
    packet = ember.ops.testlib_names._packet("myop")
    overload = packet._add_overload("default", "(Tensor x) -> Tensor", lambda x: x + 1)
    assert ember.ops.testlib_names.myop is packet
    assert packet.default is overload
    assert (repr(packet), str(packet)) == ("<OpOverloadPacket(op='testlib_names.myop')>",
                                           "testlib_names.myop")
    assert (repr(overload), str(overload), overload.name(), overload.__name__) == (
        "<OpOverload(op='testlib_names.myop', overload='default')>",
        "testlib_names.myop.default", "testlib_names::myop", "myop.default")
    assert packet.overloads() == ["default"]
    assert packet(1) == overload(1) == 2
    assert error_of(lambda: packet.other) == (
        "AttributeError", "The underlying op of 'testlib_names.myop' has no overload name 'other'")
