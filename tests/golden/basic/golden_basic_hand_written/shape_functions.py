"""Hand-written shape functions for ops without a usable meta kernel."""

from lazygen.runtime.ir import Shape


def compute_shape_glu_jvp(glu, x, dx, dim):
    return [Shape(glu.dtype, tuple(glu.shape))]


def compute_shape_index_tensor(self, indices):
    raise NotImplementedError("value dependent")


# ShapeCompute / ShapeCache nodes built without shapes: operands (IR values), then attributes.


def _shape(value):
    return value.node.shapes[value.index]


def compute_shape_scalar(value, type):
    return [Shape(type, ())]


def compute_shape_cast(input, dtype, stype):
    return (Shape(dtype, _shape(input).sizes),)  # a tuple works as well as a list


def compute_shape_expand(input, size, is_scalar_expand):
    return [Shape(_shape(input).dtype, tuple(size))]
