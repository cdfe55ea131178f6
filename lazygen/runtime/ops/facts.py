"""The facts about particular ops that the core acts on, declared here, beside the ops'
nodes and kernels, and read by the core through ``op_registry`` (the core knows no op).

Each declaration says why the ops are apart; ``op_registry.FACTS`` says what the core does
with each fact. Declared on import of the ops package (``import lazygen.runtime``).
"""

from __future__ import annotations

from types import MappingProxyType

import torch

from .. import op_registry

_HERE = __name__
aten = torch.ops.aten

#: Normalisations whose saved statistics (and updated running statistics) eager's CPU
#: kernels give in another dtype than their meta kernels, which follow CUDA's: for a
#: float16 or bfloat16 input, CPU keeps the input's dtype unless a parameter is of another
#: (a "mixed" call: then the parameter's), where CUDA always accumulates in float32 (and
#: ``native_group_norm``'s meta kernel keeps the input's dtype even when mixed). The graph
#: runs the CPU kernels, so shape inference must declare their dtypes: a statistic declared
#: float32 was made float32 when a graph returned it, and the next graph's backward
#: (``native_layer_norm_backward`` of a bfloat16 ``LayerNorm`` whose forward ran in an
#: earlier graph) failed on CPU with "expected scalar type BFloat16 but found Float".
CPU_STATISTICS_OPS = frozenset(
    {
        aten.native_layer_norm,
        aten.native_group_norm,
        aten.native_batch_norm,
        aten._native_batch_norm_legit,
        aten._native_batch_norm_legit_functional,
        aten._native_batch_norm_legit_no_training,
        aten._batch_norm_with_update,
        aten._batch_norm_with_update_functional,
        aten._batch_norm_no_update,
    }
)

#: Batch norms whose CPU kernels, in evaluation, give their saved statistics (results 1 and
#: 2) with no elements, where their meta kernels give one per channel: op -> the name of
#: the argument that says it trains (None: the op never trains). Every backend runs or
#: mirrors the CPU kernel, so shape inference must declare what it gives: a lazy tensor
#: claiming C elements stood for data of 0 (the jax backend refuses a lowering whose sizes
#: differ from the node's).
CPU_EVAL_STATISTICS = MappingProxyType(
    {
        aten.native_batch_norm: "training",
        aten._native_batch_norm_legit: "training",
        aten._native_batch_norm_legit_functional: "training",
        aten._native_batch_norm_legit_no_training: None,
        aten._batch_norm_no_update: None,
    }
)

#: Ops whose eager kernels require all their tensor operands to have one dtype, which
#: torch's meta kernels do not check: without this a mismatch (a float16 input through a
#: float32 ``Linear``) would trace, and fail only inside the graph, away from the user's line.
SAME_DTYPE_OPS = frozenset(
    {
        aten.addbmm,
        aten.addmm,
        aten.addmv,
        aten.baddbmm,
        aten.bmm,
        aten.dot,
        aten.mm,
        aten.mv,
        aten.vdot,
    }
)

#: Random ops whose random-number consumption depends only on their inputs' dtypes and
#: sizes and on their non-tensor arguments (checked by tests/runtime/test_random.py):
#: their eager call is replayed at trace time on zero-filled stand-ins.
VALUE_INDEPENDENT = frozenset(
    {
        aten.bernoulli,
        aten.cauchy,
        aten.exponential,
        aten.geometric,
        aten.log_normal,
        aten.normal,
        aten.normal_functional,
        aten.random,
        aten.uniform,
    }
)

#: Ops whose eager run is a read of device data by the host, not a missing kernel.
HOST_READS = frozenset({aten._local_scalar_dense, aten.equal, aten.is_nonzero})

#: Results that stay host tensors, by position, as the CUDA kernels return them: packed
#: sequences' batch sizes and padded lengths are CPU tensors by contract (PackedSequence
#: refuses device ones), and moving them to the device broke ``pack_padded_sequence``.
HOST_RESULTS = MappingProxyType(
    {
        aten._pack_padded_sequence: frozenset({1}),
        aten._pad_packed_sequence: frozenset({1}),
    }
)

#: Ops whose result depends on their (first) tensor argument's dtype and sizes only.
METADATA_ONLY = frozenset(
    {
        aten.empty_like,
        aten.full_like,
        aten.new_empty,
        aten.new_full,
        aten.new_ones,
        aten.new_zeros,
        aten.ones_like,
        aten.rand_like,
        aten.randint_like,
        aten.randn_like,
        aten.zeros_like,
    }
)

#: Element op of a ``_foreach_`` op when its name is not the ``_foreach_`` op's without
#: ``_foreach_``.
FOREACH_ELEMENTS = MappingProxyType({aten._foreach_norm: aten.linalg_vector_norm})

#: Functionalization's copies of view ops, which a lowering may run as the views they copy
#: (see lowering_context's docstring, "Views may alias"): every overload of each.
VIEW_COPY_OPS = frozenset(
    {
        aten.alias_copy, aten.as_strided_copy, aten.detach_copy, aten.diagonal_copy,
        aten.expand_copy, aten.permute_copy, aten.select_copy, aten.slice_copy,
        aten.split_copy, aten.split_with_sizes_copy, aten.squeeze_copy, aten.t_copy,
        aten.transpose_copy, aten.unbind_copy, aten.unfold_copy, aten.unsqueeze_copy,
        aten.view_copy, aten.view_as_real_copy, aten._reshape_alias_copy,
    }
)  # fmt: skip

#: The view a view copy runs as where it is not the name without ``_copy``: ``view_copy``
#: runs as ``reshape``, which takes any layout.
VIEW_COPY_VIEWS = MappingProxyType({aten.view_copy: aten.reshape})

#: Ops whose result a lowering may make share its input's storage ("Views may alias"): the
#: view copies, and ``clone``, ``_to_copy`` and ``copy``.
MAY_ALIAS_OPS = VIEW_COPY_OPS | frozenset({aten.clone, aten._to_copy, aten.copy})

#: Ops whose first argument must be contiguous where views alias: their result depends on
#: its strides (see "Views may alias").
STRIDE_READING_OPS = frozenset(
    {aten.as_strided_copy, aten.as_strided_scatter, aten._reshape_alias_copy}
)

#: Ops whose CPU kernels require contiguous tensor inputs: eager reaches them through a
#: composite that calls ``.contiguous()`` first (``group_norm``, ``embedding_bag``,
#: ``pdist``), a no-op on a lazy tensor, which is contiguous by definition. Where views
#: alias, their tensor inputs may be strided views: a backend that aliases makes them
#: contiguous (native_group_norm raised "Expected X.is_contiguous(memory_format)" on a
#: transposed input in diffusers' attention; _embedding_bag_forward_only read strided indices
#: as contiguous and returned other bags' sums). Found by running every OpInfo entry on
#: strided views made inside the graph (tests/conformance/test_strided_inputs.py).
CONTIGUOUS_INPUT_OPS = frozenset(
    {
        aten.native_group_norm, aten.native_group_norm_backward,
        aten._embedding_bag, aten._embedding_bag_forward_only, aten._embedding_bag_backward,
        aten._embedding_bag_dense_backward, aten._embedding_bag_per_sample_weights_backward,
        aten._pdist_forward, aten._pdist_backward,
        # a complex view of the pairs in the last dimension: needs it at stride 1
        aten.view_as_complex_copy,
    }
)  # fmt: skip

#: ``ir.InputWrite`` (a graph writing its input in place) lowers as this op.
INPUT_WRITE_OP = aten.copy_.default

#: A captured optimizer's update of its host step counts, ``step + n`` (Adam's ``step +=
#: 1`` as aot_autograd functionalizes it): ``lazygen.dynamo.host_writes`` runs a graph of
#: these alone as one in-place ``_foreach_add_``.
COUNT_INCREMENT_OP = aten.add.Scalar

for _fact, _value in {
    "cpu_statistics": CPU_STATISTICS_OPS,
    "cpu_eval_statistics": CPU_EVAL_STATISTICS,
    "same_dtype": SAME_DTYPE_OPS,
    "value_independent_random": VALUE_INDEPENDENT,
    "host_reads": HOST_READS,
    "host_results": HOST_RESULTS,
    "metadata_only": METADATA_ONLY,
    "foreach_element": FOREACH_ELEMENTS,
    "view_copies": VIEW_COPY_OPS,
    "view_copy_views": VIEW_COPY_VIEWS,
    "may_alias": MAY_ALIAS_OPS,
    "stride_reading": STRIDE_READING_OPS,
    "contiguous_inputs": CONTIGUOUS_INPUT_OPS,
    "input_write": INPUT_WRITE_OP,
    "count_increment": COUNT_INCREMENT_OP,
}.items():
    op_registry.declare(_fact, _value, _HERE)
