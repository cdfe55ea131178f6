"""A whole step's sync, replayed from the plan of the step before it.

A captured training step (``lazygen.dynamo``'s spliced calls) syncs one graph of the same
structure at every step: its parameters and optimizer state in, the same values out. The
generic sync looks that graph up anew each time: the outputs' signature, the templates
filed under it, the recompile policy's decision, the executable's output placements, the
dtype check of every result and a ``DeviceData`` built with a shape read back from each
result. A ``StepPlan`` keeps, per device, what the last whole step found, so the next one
does only what can change:

* the replay of the plan's template is the guard: it checks every node's class,
  attributes, shapes and operands, and that distinct slots hold distinct nodes (the step's
  nodes are new at every step, so this part cannot be skipped). A step whose graph differs
  misses, and the generic sync runs it and files its plan instead;
* the executable is the one the compile cache still holds under the template's key (a
  graph evicted or forgotten after a failed run has no plan: ``cache.get`` says so);
* the results' dtypes are checked at the plan's first run only: a compiled graph's result
  dtypes follow from its structure and its inputs' dtypes, which the replay matched, so
  the positions a backend returned in another dtype are the same ones at every run;
* each output's ``DeviceData`` is made, for a backend whose data is not torch's, from the
  shape the template holds and the placement the backend gave the executable's outputs
  (torch data still tells its own shape, where a kernel may disagree with inference).

Donation is left as it was: which inputs are dead is decided per run, from reference
counts (``liveness``), since a user may hold a parameter's data between two steps.
"""

from __future__ import annotations

from .. import metrics
from ..devices import LazyDevice
from ..graph import GraphTemplate, replay
from ..graph.uncompiled import UncompiledGraph
from ..ir import DeviceData, Node, Shape, Value
from . import running


class StepPlan:
    """What the last whole step of a device found (see the module docstring)."""

    __slots__ = ("template", "executable", "placements", "shapes", "casts", "checked")

    def __init__(self, template: GraphTemplate, executable, placements: tuple) -> None:
        self.template = template
        self.executable = executable
        self.placements = placements
        #: Each output's inferred shape (the template's: the replay matched them).
        self.shapes: list[Shape] = [template.shapes[p][i] for p, i in template.outputs]
        #: Output positions whose results come in another dtype than inferred.
        self.casts: tuple[int, ...] = ()
        self.checked = False


def find(device: LazyDevice, outputs: list[Value]) -> tuple[StepPlan, list[Node]] | None:
    """The device's plan and the step's post-order, when ``outputs``' graph replays the plan's
    template and its executable is still the cached one; else None (the generic path)."""
    plan = device.step_plan
    if plan is None:
        return None
    template = plan.template
    if len(outputs) != len(template.outputs):
        return None
    if device.cache.get(template.key) is not plan.executable:
        device.step_plan = None
        return None
    order = replay(template, outputs)
    if order is None:
        metrics.count("StepPlanMiss")
        return None
    metrics.count("StepPlanReplay")
    metrics.count("CachedCompile")  # as the generic path counts a cached graph
    return plan, order


def remember(device: LazyDevice, template: GraphTemplate, executable) -> StepPlan | None:
    """File the plan of a whole step that took the generic path (replacing the last one);
    the plan, which this run completes (``finish``), or None for an uncompiled graph."""
    if type(executable) is UncompiledGraph:
        device.step_plan = None
        return None
    placements = running.output_placements(device, executable, len(template.outputs))
    plan = device.step_plan = StepPlan(template, executable, placements)
    return plan


def finish(device: LazyDevice, plan: StepPlan, outputs: list[Value], results) -> list:
    """``running.finish`` for a planned step: the contract (a list, one result per output)
    checked at every run, the dtypes at the plan's first run (later runs cast the same
    positions)."""
    if not plan.checked:
        finished = running.finish(device, outputs, results, "execute")
        if device.backend.torch_data:
            plan.casts = tuple(
                i for i, (r, f) in enumerate(zip(results, finished, strict=True)) if r is not f
            )
        plan.checked = True
        return finished
    if type(results) is not list or len(results) != len(outputs):
        return running.finish(device, outputs, results, "execute")  # raises, naming it
    for i in plan.casts:
        metrics.count("OutputDtypeMismatch")
        results[i] = results[i].to(plan.shapes[i].dtype)
    return results


def device_data(device: LazyDevice, plan: StepPlan, outputs: list[Value], results) -> dict:
    """``running.as_device_data`` for a planned step: from the plan's shapes and placements."""
    if device.backend.torch_data:  # the shape read from each result, as the generic path
        return {value: Value(DeviceData(r), 0) for value, r in zip(outputs, results, strict=True)}
    backend = device.backend
    return {
        value: Value(DeviceData(r, None, shape, backend, p), 0)
        for value, r, shape, p in zip(outputs, results, plan.shapes, plan.placements, strict=True)
    }
