"""Hand-written `supported` kernels."""


def clone(self, *, memory_format=None):
    return self
