"""The hand-written pieces the generated code refers to (``--hand-written
tiny_backend.hand_written``): ``supported`` kernels and lowerings of non-native ops."""
