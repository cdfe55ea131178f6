"""The TorchScript (TS) backend: hand-written kernels, shape functions, lowerings and
autograd kernels that generated code refers to, and the backend that runs graphs."""
