"""The fallback report (`metrics.fallback_report()`): the list of ops to add to the op list,
so it names each one as an op list does, overload included."""

from __future__ import annotations

import torch

import lazygen.runtime as lr


def test_the_report_names_the_overloads_to_add_to_the_op_list(fresh_metrics):
    """A newcomer read `aten::div` in the report and could not tell which overload to list
    (`div` alone means `div.Tensor`): each entry now lists the overloads that ran, as an op
    list names them, and the printed table has them in a column of their own."""
    lr.config.set_force_fallback("div.Tensor, div.Tensor_mode, relu")
    x = torch.arange(1.0, 4.0, device="lazygen")
    y = (x / x).relu() + torch.div(x, x, rounding_mode="floor")
    lr.mark_step()
    assert y.cpu().tolist() == [2.0, 2.0, 2.0]
    report = lr.metrics.fallback_report()
    entries = {e.op: e for e in report.fallbacks}
    assert entries["aten::div"].listed == ("div.Tensor", "div.Tensor_mode")
    assert entries["aten::div"].count == 2
    assert entries["aten::relu"].listed == ("relu",)  # the default overload: the bare name
    lines = str(report).splitlines()
    header = lines[1].split()
    assert header[:4] == ["op", "op", "list", "name"], lines
    (div,) = [line.split() for line in lines if line.strip().startswith("aten::div")]
    assert div[:4] == ["aten::div", "div.Tensor,", "div.Tensor_mode", "2"], lines


def test_host_reads_have_no_op_list_column(fresh_metrics):
    x = torch.ones(2, device="lazygen") * 2
    assert x.sum().item() == 4.0
    text = str(lr.metrics.fallback_report())
    assert "Ops run eagerly (not in the op list): 0" in text
    assert "op list name" not in text  # nothing to add: a read is not a missing kernel
