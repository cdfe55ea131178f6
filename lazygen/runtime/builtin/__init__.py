"""lazygen's built-in op list, laid out as ``lazygen new-backend`` lays out a backend's:

* ``yaml/builtin.yaml``: the op list;
* ``generated`` (source folder ``generated/builtin/``, installed here by ``setup.py``):
  what ``lazygen gen`` writes from it (IR node classes, kernels, the registration);
* ``hand_written``: the pieces generated code refers to (``kernels`` of the ``supported``
  section, ``shape_functions``, ``lowerings`` of the ``non_native`` nodes, ``autograd``),
  the default ``--hand-written`` package of ``lazygen gen``;
* ``tables``: the whole list as ``KernelTables`` (what a backend's ``kernel_tables()``
  returns).

Every built-in backend (``torchscript``, ``inductor``, ``fx``, ``jax``) traces with this op
list, so it speaks only backend-neutral interfaces (``LoweringContext``,
``kernel_support``) and names no backend.
"""
