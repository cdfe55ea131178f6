"""Hand-written autograd kernels."""


def gelu(self, *, approximate="none"):
    return self
