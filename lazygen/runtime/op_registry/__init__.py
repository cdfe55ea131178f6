"""What the runtime knows of an op, keyed by the op itself.

* ``identity``: an op is its ``torch._ops.OpOverload``; every other spelling the runtime meets
  (``"aten::add.Tensor"``, an op list's ``"add.Tensor"``, the counters, a generated node class,
  the jax backend's table key) is converted here and nowhere else.
* ``facts``: the registry of facts about particular ops that the core reads (``has``, ``of``),
  keyed by the op's ``OpOverloadPacket``; the ops package declares them.

Near the bottom of the runtime: it imports only ``state``. Nothing here names an op.
"""
