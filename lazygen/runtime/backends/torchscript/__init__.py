"""The TorchScript (TS) backend, and the hand-written pieces of its op list
(``yaml/ts_backend.yaml``) that generated code refers to: ``kernels`` (``supported``),
``shape_functions``, ``lowerings`` and ``autograd``. The inductor backend shares the op
list, so these pieces speak only backend-neutral interfaces."""
