"""The TorchScript (TS) backend: its lowering context (``lowering``, the module name
``lazygen new-backend`` gives it), graph passes (``passes``) and runner (``backend``). The
op list it traces with is the built-in one, shared with the other built-in backends
(``lazygen.runtime.builtin``, from ``yaml/builtin.yaml``)."""
