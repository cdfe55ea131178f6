"""The hand-written pieces of lazygen's built-in op list (``yaml/ts_backend.yaml``,
generated into ``lazygen.generated.ts_backend``) that generated code refers to:
``kernels`` (the ``supported`` section), ``shape_functions``, ``lowerings`` (of the
``non_native`` nodes) and ``autograd``; ``tables`` gives the whole list as ``KernelTables``.

Every built-in backend (``torchscript``, ``inductor``, ``fx``) traces with this op list, so
it speaks only backend-neutral interfaces (``LoweringContext``, ``kernel_support``) and
names no backend. It is the default ``--hand-written`` package of ``lazygen gen``.
"""
