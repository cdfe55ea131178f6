"""The tensor API never crashes the process: a sweep of what users do with tensors outside
ordinary op calls, and of bad arguments, on the lazy device against eager CPU.

Each case is a program run eagerly on the CPU and on the lazy device (``support.api_sweep``:
crash-isolated, one child interpreter, restarted after a crash). It passes when both return
equal results (within eager's own tolerance) or both raise and lazy's error is one a user can
act on (no internal assert, no ``KeyError`` from inside lazygen). Where an accelerator behaves
otherwise than the CPU (``numpy()`` of a device tensor), the case names the error lazy must
raise and why. ``out`` is what a case's program leaves to compare; ``d`` its device, ``F``
its float dtype (``float64`` in the reference run), ``R(*shape, dtype=None)`` seeded data.
"""

from __future__ import annotations

import pytest
from support.api_sweep import Case, problem, run

ACCELERATOR = "as on an accelerator: the data is not in host memory"
STRIDES = "lazy tensors have contiguous strides and no storage offsets (README, as XLA's)"
STORAGE = "a lazy tensor's storage holds no data: set_ with it and resizing it are refused"
OVERLAP = "overlapping strided views of one storage (README known failures)"
ALIASING = "views copied together (deepcopy, torch.load) are copied apart, not as views"
OVERLAP_BUG = (
    "writes into memory that overlaps itself or its input (expanded, out= overlapping an "
    "input): eager refuses them, lazily each element is written from the functional result"
)
JIT_FUSER_BUG = (
    "TorchScript on lazy tensors: lazygen's TorchScript backend selects the legacy graph "
    "executor process-wide, whose fuser raises 'Unknown device for graph fuser' for a "
    "PrivateUse1 device (jit.trace's check and every optimized call of a scripted function; "
    "workaround: torch.jit.optimized_execution(False) or LAZYGEN_JIT_EXECUTOR=0)"
)
DLPACK = "lazy tensors have no memory to share through DLPack (docs/device-contract.md)"
CAST_BUG = (
    "in-place/out= results of a dtype the target cannot hold (float into int): eager refuses, "
    "lazy casts (out= skips functionalization's meta check; meta mul_ with a Python scalar "
    "does not check)"
)

PLUMBING = {
    "data_get": "x = R(3, 4); out = x.data",
    "data_set_same": "x = R(3, 4); x.data = R(3, 4); out = x * 2",
    "data_set_other_shape": "x = R(3, 4); x.data = R(5); out = (x + 1, x.shape)",
    "data_set_other_dtype": "x = R(3, 4); x.data = R(2, 2).double(); out = x * 2",
    "data_set_int": "x = R(3); x.data = torch.arange(4, device=d); out = x + 1",
    "data_set_on_grad_leaf": (
        "x = R(3).requires_grad_(); x.data = R(3) * 3; (x * x).sum().backward(); "
        "out = (x, x.grad)"
    ),
    "data_set_from_cpu": Case(
        "x = R(3); x.data = torch.ones(3)", "incompatible tensor type", "as with CUDA: one device"
    ),
    "data_set_other_device_view": "x = R(4, 4); x.data = R(4, 4).t(); out = x + 0",
    "set_tensor": "x = torch.empty(0, device=d); y = R(3, 4); x.set_(y); out = (x, x.is_set_to(y))",
    "set_tensor_then_write": "y = R(3, 4); x = torch.empty(0, device=d); x.set_(y); x.add_(1); out = y",
    "set_empty": "x = R(3); x.set_(); out = x.shape",
    "set_storage_sizes_strides": Case(
        "y = R(12); x = torch.empty(0, device=d); x.set_(y.untyped_storage(), 0, (3, 4), (4, 1))\n"
        "out = x",
        documented=STORAGE,
    ),
    "set_storage_offset_out_of_bounds": Case(
        "y = R(12); x = torch.empty(0, device=d); x.set_(y.untyped_storage(), 10, (3, 4))\n"
        "out = x",
        documented=STORAGE,
    ),
    "set_other_dtype": "x = torch.empty(0, device=d); x.set_(R(3).double())",
    "is_set_to_other": "out = R(3).is_set_to(R(3))",
    "resize_grow_keeps_prefix": "x = R(4); x.resize_(2, 3); out = (x.shape, x.flatten()[:4])",
    "resize_shrink": "x = R(4, 4); x.resize_(3); out = x",
    "resize_zero": "x = R(4); x.resize_(0); out = x",
    "resize_negative": "x = R(4); x.resize_(-1)",
    "resize_view": "x = R(4, 4); x[1].resize_(8)",
    "resize_grad_leaf": "x = R(4).requires_grad_(); x.resize_(8)",
    "resize_as": "x = R(4); x.resize_as_(R(2, 2)); out = x",
    "resize_channels_last": Case(
        "x = R(2, 3, 4, 4); x.resize_(2, 3, 2, 2, memory_format=torch.channels_last); "
        "out = (x.shape, x.is_contiguous(memory_format=torch.channels_last))",
        documented=STRIDES,
    ),
    "as_strided_overlapping": "x = R(6); out = x.as_strided((3, 3), (1, 1))",
    "as_strided_offset": "x = R(12); out = x.as_strided((2, 2), (3, 1), 5)",
    "as_strided_out_of_bounds": "x = R(6); out = x.as_strided((4, 4), (4, 1))",
    "as_strided_negative_stride": "x = R(6); x.as_strided((2,), (-1,))",
    "as_strided_negative_size": "x = R(6); x.as_strided((-2,), (1,))",
    "as_strided_overlapping_inplace": Case(
        "x = R(6); y = x.as_strided((3, 3), (1, 1)); y.add_(1); out = x", documented=OVERLAP
    ),
    "as_strided_of_view": "x = R(4, 4); out = x[1:].as_strided((2, 2), (1, 2))",
    "as_strided_then_sum": "x = R(8); out = x.as_strided((3, 3), (2, 1), 1).sum(0)",
    "storage_nbytes": "x = R(3, 4); out = (x.untyped_storage().nbytes(), x.storage().size())",
    "storage_of_view": "x = R(3, 4); out = x[1:].untyped_storage().nbytes()",
    "storage_offset": Case(
        "x = R(3, 4); out = (x[1:].storage_offset(), x[:, 1:].storage_offset())",
        documented=STRIDES,
    ),
    "data_ptr_views_agree": Case(
        "x = R(3, 4); out = (x[1].data_ptr() - x.data_ptr(), x.data_ptr() == x.view(12).data_ptr())",
        documented=STRIDES,
    ),
    "base_of_view": "x = R(3, 4); v = x[1]; out = (v._base is x, x._base is None, v._is_view())",
    "base_of_view_of_view": "x = R(3, 4); v = x[1][1:]; out = v._base is x",
    "view_dtype_same_size": "x = R(3, 4); out = x.view(torch.int32)",
    "view_dtype_smaller": "x = R(3, 4); out = x.view(torch.int16)",
    "view_dtype_larger": "x = R(3, 4); out = x.view(torch.float64)",
    "view_dtype_larger_odd": "x = R(3, 3); x.view(torch.float64)",
    "view_dtype_bool": "x = torch.arange(4, device=d, dtype=torch.uint8); out = x.view(torch.bool)",
    "view_dtype_complex": "x = R(3, 4); out = x.view(torch.complex64)",
    "view_dtype_then_write": "x = R(4); x.view(torch.int32).zero_(); out = x",
    "unfold": "x = R(10); out = x.unfold(0, 3, 2)",
    "unfold_2d": "x = R(4, 6); out = x.unfold(1, 2, 1)",
    "unfold_too_big": "x = R(4); x.unfold(0, 5, 1)",
    "unfold_zero_step": "x = R(4); x.unfold(0, 2, 0)",
    "unfold_then_inplace": Case(
        "x = R(10); x.unfold(0, 3, 3).mul_(2); out = x",
        bug="functionalization's unfold inverse is unfold_backward, which zeroes the base "
        "elements no window covers (pytorch/pytorch#198102, fix proposed in #198105)",
    ),
    "expand_then_inplace": Case("x = R(1, 3).expand(4, 3); x.add_(1)", bug=OVERLAP_BUG),
    "expand_then_copy": Case("x = R(1, 3).expand(4, 3); x.copy_(R(4, 3))", bug=OVERLAP_BUG),
    "expand_then_clone_inplace": "x = R(1, 3).expand(4, 3).clone(); x.add_(1); out = x",
    "expand_negative": "x = R(3); x.expand(-2, 3)",
    "expand_wrong": "x = R(3); x.expand(2, 4)",
    "inplace_on_view_of_grad_leaf": "x = R(3, 4).requires_grad_(); x[0].add_(1)",
    "inplace_on_grad_leaf": "x = R(3).requires_grad_(); x.add_(1)",
    "inplace_on_grad_leaf_no_grad": (
        "x = R(3).requires_grad_()\nwith torch.no_grad():\n    x[1:].mul_(2)\nout = x"
    ),
    "inplace_on_view_of_non_leaf": (
        "x = R(3, 4).requires_grad_(); y = x * 1; y[0].mul_(3); y.sum().backward(); out = x.grad"
    ),
    "requires_grad_int": "x = torch.arange(3, device=d); x.requires_grad_()",
    "requires_grad_bool": "x = torch.ones(3, device=d, dtype=torch.bool); x.requires_grad_()",
    "requires_grad_complex": (
        "x = R(3).to(torch.complex64).requires_grad_(); (x * x).abs().sum().backward(); out = x.grad"
    ),
    "retain_grad": (
        "x = R(3).requires_grad_(); y = x * 2; y.retain_grad(); (y * y).sum().backward(); "
        "out = (y.grad, x.grad)"
    ),
    "retain_grad_leaf": "x = R(3).requires_grad_(); x.retain_grad(); x.sum().backward(); out = x.grad",
    "retain_grad_no_grad": "x = R(3); x.retain_grad()",
    "register_hook_no_grad": "x = R(3); x.register_hook(lambda g: g)",
    "register_hook_modifies": (
        "x = R(3).requires_grad_(); x.register_hook(lambda g: g * 3); (x * x).sum().backward(); "
        "out = x.grad"
    ),
    "register_hook_raises": (
        "x = R(3).requires_grad_(); y = x * x\n"
        "y.register_hook(lambda g: (_ for _ in ()).throw(ValueError('hook says no')))\n"
        "y.sum().backward()"
    ),
    "register_hook_wrong_shape": (
        "x = R(3).requires_grad_(); x.register_hook(lambda g: g[:2]); (x * x).sum().backward()"
    ),
    "register_hook_wrong_dtype": (
        "x = R(3).requires_grad_(); x.register_hook(lambda g: g.double()); (x * x).sum().backward()\n"
        "out = x.grad"
    ),
    "grad_assign": "x = R(3).requires_grad_(); x.grad = R(3); out = x.grad",
    "grad_assign_wrong_shape": "x = R(3).requires_grad_(); x.grad = R(4)",
    "grad_assign_wrong_dtype": "x = R(3).requires_grad_(); x.grad = R(3).double()",
    "grad_assign_cpu": Case(
        "x = R(3).requires_grad_(); x.grad = torch.ones(3); out = x.grad",
        "gradient and the tensor are on the same device",
        "as with CUDA: a gradient lives on its tensor's device",
    ),
    "grad_assign_none": "x = R(3).requires_grad_(); x.grad = R(3); x.grad = None; out = x.grad",
    "grad_assign_int": "x = R(3).requires_grad_(); x.grad = torch.ones(3, dtype=torch.long, device=d)",
    "detach_": "x = R(3).requires_grad_(); y = x * 2; y.detach_(); out = (y, y.requires_grad)",
    "detach_view": "x = R(3, 4).requires_grad_(); y = (x * 2)[0]; y.detach_()",
    "detach_shares_data": "x = R(3); y = x.detach(); y.add_(1); out = x",
    "share_memory": "x = R(3); x.share_memory_(); out = x + 1",
    "pin_memory": Case("x = R(3); out = x.pin_memory()", "only dense CPU tensors", ACCELERATOR),
    # Pinning host tensors with the lazy device as the accelerator (DataLoader does it).
    "pin_memory_cpu_tensor": "x = torch.randn(3); y = x.pin_memory(); out = (y, y is x, x.is_pinned())",
    "pin_memory_data_loader": (
        "data = torch.utils.data.TensorDataset(torch.arange(8.0).view(4, 2))\n"
        "loader = torch.utils.data.DataLoader(data, batch_size=2, pin_memory=True)\n"
        "out = [batch[0].to(d) * 2 for batch in loader]"
    ),
    "is_pinned": "out = R(3).is_pinned()",
    "contiguous_channels_last_3d": "x = R(2, 3, 4); x.contiguous(memory_format=torch.channels_last)",
    "contiguous_channels_last_4d": (
        "x = R(2, 3, 4, 5); y = x.contiguous(memory_format=torch.channels_last); out = y * 1"
    ),
    "is_contiguous_channels_last": Case(
        "x = R(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)\n"
        "out = x.is_contiguous(memory_format=torch.channels_last)",
        documented=STRIDES,
    ),
    "clone_channels_last_3d": "R(2, 3, 4).clone(memory_format=torch.channels_last)",
    "empty_channels_last_3d": "torch.empty(2, 3, 4, device=d, memory_format=torch.channels_last)",
    "empty_channels_last_3d_format_5d": (
        "torch.empty(2, 3, 4, 5, device=d, memory_format=torch.channels_last_3d)"
    ),
    "empty_like_channels_last_3d": "torch.empty_like(R(2, 3, 4), memory_format=torch.channels_last)",
    "to_device_channels_last_3d": "torch.randn(2, 3, 4).to(d, memory_format=torch.channels_last)",
    "empty_strided_mismatch": "torch.empty_strided((2, 3), (1,), device=d)",
    "empty_strided_negative_one_element": "out = torch.empty_strided((1,), (-1,), device=d).shape",
    "channels_last_strides": Case(
        "x = R(2, 3, 4, 5); out = x.contiguous(memory_format=torch.channels_last).stride()",
        documented=STRIDES,
    ),
    "contiguous_channels_last_3d_5d": (
        "x = R(2, 3, 2, 4, 5); y = x.contiguous(memory_format=torch.channels_last_3d); out = y * 2"
    ),
    "to_channels_last_3d_tensor": "x = R(2, 3, 4); x.to(memory_format=torch.channels_last)",
    "to_channels_last": "x = R(2, 3, 4, 5).to(memory_format=torch.channels_last); out = x * 2",
    "to_preserve_format": Case(
        "x = R(2, 3, 4, 5).to(memory_format=torch.channels_last); "
        "out = x.to(torch.float64, memory_format=torch.preserve_format).stride()",
        documented=STRIDES,
    ),
    "stride_of_transpose": Case(
        "x = R(3, 4); out = (x.t().stride(), x.t().is_contiguous())", documented=STRIDES
    ),
    "zero_dim_views": "x = R(()); out = (x.view(1), x.expand(3), x.unsqueeze(0).squeeze())",
    "empty_views": "x = R(0, 3); out = (x.t(), x.view(3, 0), x.reshape(-1, 3), x.sum(0))",
    "view_incompatible": Case("x = R(3, 4).t(); x.view(12)", documented=STRIDES),
    "reshape_incompatible": "x = R(3, 4); x.reshape(5, -1)",
    "view_two_inferred": "x = R(3, 4); x.view(-1, -1)",
    "swap_tensors": "x = R(3); y = R(4); torch.utils.swap_tensors(x, y); out = (x, y)",
    "untyped_storage_resize": Case(
        "x = R(4); x.untyped_storage().resize_(0)", "RuntimeError", documented=STORAGE
    ),
    "clone_preserve_format": Case(
        "x = R(2, 3, 4, 4).to(memory_format=torch.channels_last); out = x.clone().stride()",
        documented=STRIDES,
    ),
    "new_tensor_from_lazy": "x = R(3); out = x.new_tensor(R(3))",
    "new_empty_strided": Case(
        "x = R(3); out = x.new_empty_strided((2, 3), (1, 2)).stride()", documented=STRIDES
    ),
    "empty_strided_negative": "torch.empty_strided((2,), (-1,), device=d)",
    "element_size": "x = R(3); out = (x.element_size(), x.nbytes, x.itemsize, x.numel())",
    "set_requires_grad_on_view": "x = R(3, 4); v = x[0]; v.requires_grad_(); (v * 2).sum().backward(); out = v.grad",
}

MIXED = {
    "cpu_scalar_operand": "out = R(3) + torch.tensor(2.0)",
    "cpu_scalar_int_operand": "out = R(3) * torch.tensor(3)",
    "cpu_scalar_first": "out = torch.tensor(2.0) - R(3)",
    "cpu_scalar_inplace": "x = R(3); x.mul_(torch.tensor(3.0)); out = x",
    "cpu_scalar_into_cpu_inplace": Case(
        "x = torch.tensor(2.0); x.add_(R(()))",
        "RuntimeError",
        "a CPU tensor cannot be written with a device tensor's value, as with CUDA",
    ),
    "cpu_tensor_operand": Case(
        "R(3) + torch.ones(3, device='cpu')",
        "move it with",
        "two devices in one op are an error, as with CUDA",
    ),
    "cpu_tensor_matmul": Case(
        "R(3, 3) @ torch.ones(3, 3)", "move it with", "two devices in one op, as with CUDA"
    ),
    "cpu_tensor_where": Case(
        "torch.where(torch.ones(3, dtype=torch.bool), R(3), R(3))",
        "RuntimeError",
        "two devices in one op, as with CUDA",
    ),
    "cpu_index_tensor": "x = R(5); out = x[torch.tensor([0, 2, 4])]",
    "cpu_bool_mask": "x = R(5); out = x[torch.tensor([True, False, True, False, True])]",
    "cpu_index_put": "x = R(5); x[torch.tensor([1, 3])] = 7.0; out = x",
    "lazy_index_into_cpu": Case(
        "x = torch.arange(5.0); out = x[torch.tensor([0, 2], device=d)]",
        "RuntimeError",
        "indices on the device into a CPU tensor are an error, as with CUDA",
    ),
    "index_select_cpu_index": Case(
        "out = R(5).index_select(0, torch.tensor([0, 2]))",
        "RuntimeError",
        "index_select with a CPU index is an error, as with CUDA",
    ),
    "gather_cpu_index": Case(
        "out = R(5).gather(0, torch.tensor([0, 2]))",
        "RuntimeError",
        "gather with a CPU index is an error, as with CUDA",
    ),
    "out_other_device": Case(
        "torch.add(R(3), R(3), out=torch.empty(3))",
        "RuntimeError",
        "out= on another device is an error, as with CUDA",
    ),
    "out_other_dtype_int": Case(
        "o = torch.empty(3, dtype=torch.long, device=d); torch.add(R(3), R(3), out=o)",
        bug=CAST_BUG,
    ),
    "out_other_dtype_double": (
        "o = torch.empty(3, dtype=torch.float64, device=d); torch.add(R(3), R(3), out=o); out = o"
    ),
    "out_wrong_shape_resizes": Case(
        "o = torch.empty(5, device=d)\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    torch.add(R(3), R(3), out=o)\n"
        "out = (o, any('resized' in str(w.message) for w in caught))",
        bug="out= of the wrong shape is resized without eager's deprecation warning",
    ),
    "out_empty_resizes": "o = torch.empty(0, device=d); torch.mul(R(2, 3), 2, out=o); out = o",
    "out_is_input": "x = R(3); torch.add(x, 1, out=x); out = x",
    "out_overlaps_input": Case(
        "x = R(6); torch.add(x[:3], 1, out=x[1:4]); out = x", bug=OVERLAP_BUG
    ),
    "out_non_contiguous": "o = torch.empty(3, 2, device=d).t(); torch.mm(R(2, 4), R(4, 3), out=o); out = o",
    "copy_cpu_into_lazy": "x = R(3); x.copy_(torch.arange(3.0)); out = x",
    "copy_broadcast": "x = R(3, 4); x.copy_(torch.arange(4.0)); out = x",
    "copy_bad_shape": "x = R(3, 4); x.copy_(R(5))",
    "copy_lazy_into_cpu": "x = torch.zeros(3); x.copy_(R(3)); out = x",
    "copy_int_into_float": "x = R(3); x.copy_(torch.arange(3, device=d)); out = x",
    "to_other_device_and_back": "x = R(3); out = x.to('cpu').to(d) + 1",
    "to_device_index_1": "x = R(3); y = x.to('cpu'); out = y",
    "complex_ops": "x = R(3).to(torch.complex64); out = (x * x.conj(), x.real, x.imag, x.abs(), x.angle())",
    "complex_view_as_real": "x = R(3, 2); c = torch.view_as_complex(x); out = (c * 2, torch.view_as_real(c * 2))",
    "complex_conj_view_write": "x = R(3).to(torch.complex64); y = x.conj(); y.add_(1j); out = x",
    "bool_ops": "x = R(5) > 0; out = (x & ~x, x.sum(), x.any(), x.float())",
    "bool_arith": "x = R(5) > 0; x - x",
    "uint8_overflow": "x = torch.tensor([250, 5], dtype=torch.uint8, device=d); out = (x + 10, x * 3, -x)",
    "int8_ops": "x = R(5, dtype=torch.int8); out = (x * 2, x // 3, x.abs(), x.sum())",
    "int16_ops": "x = R(5, dtype=torch.int16); out = (x << 2, x % 3, x.max())",
    "int_div_by_zero": "x = torch.arange(3, device=d); x // 0",
    "int_remainder_by_zero": "x = torch.arange(3, device=d); x % torch.zeros(3, dtype=torch.long, device=d)",
    "float16_ops": "x = R(4, 4).half(); out = (x @ x, x.sum(), x.softmax(0), x.float())",
    "bfloat16_ops": "x = R(4, 4).bfloat16(); out = (x @ x, x.mean(), x.relu(), x.exp())",
    "float8_e4m3_cast": "x = R(8); out = x.to(torch.float8_e4m3fn).float()",
    "float8_e5m2_cast": "x = R(8); out = x.to(torch.float8_e5m2).float()",
    "float8_e4m3fnuz_cast": "x = R(8); out = x.to(torch.float8_e4m3fnuz).float()",
    "float8_add": "x = R(8).to(torch.float8_e4m3fn); x + x",
    "float8_view_bytes": "x = R(8).to(torch.float8_e5m2); out = x.view(torch.uint8)",
    "promotion_int_float": "out = torch.arange(3, device=d) * R(3)",
    "promotion_half_double_scalar": "out = (R(3).half() * 2.5, R(3).half() + torch.tensor(1.0, dtype=torch.float64))",
    "promotion_bool_int": "out = (R(3) > 0) + torch.arange(3, device=d)",
    "uint16_ops": "x = torch.arange(4, device=d).to(torch.uint16); out = (x + x).to(torch.int32)",
    "uint32_cast": "x = torch.arange(4, device=d).to(torch.uint32); out = x.to(torch.int64)",
    "quantize_per_tensor_to_device": Case(
        "q = torch.quantize_per_tensor(torch.randn(4), 0.1, 0, torch.quint8); q.to(d)",
        ".dequantize() first",
        "a quantized storage cannot live on the device (as on accelerators without one)",
    ),
    "quantize_on_device": (
        "q = torch.quantize_per_tensor(R(4), 0.1, 0, torch.quint8)\n"
        "out = (q.dequantize(), q.int_repr(), q.q_scale(), q.is_quantized)"
    ),
    "qint8_dtype_empty": Case(
        "torch.empty(3, dtype=torch.qint8, device=d)",
        ".dequantize() first",
        "a quantized storage cannot live on the device",
    ),
    "dtype_conversion_chain": "x = R(6); out = x.double().half().bfloat16().int().bool().long()",
    "nan_to_int": "x = torch.tensor([float('nan'), 1.5], device=d); out = x.to(torch.int32).shape",
    "float64_mm": "out = R(3, 3).double() @ R(3, 3).double()",
    "bits_dtype": "x = R(4); out = x.view(torch.bits32).view(torch.int32)",
}

HOST = {
    "numpy": Case("R(3).numpy()", "Tensor.cpu()", ACCELERATOR),
    "numpy_force": "out = R(3).numpy(force=True)",
    "numpy_grad": Case("R(3).requires_grad_().numpy()", "numpy", ACCELERATOR),
    "numpy_cpu": "out = R(3).cpu().numpy()",
    "array": Case("np.asarray(R(3))", "Tensor.cpu()", ACCELERATOR),
    "array_of_cpu": "out = np.asarray(R(3).cpu())",
    "np_add": Case(
        "np.ones(3) + R(3)",
        "TypeError",
        "as with CUDA: the array becomes a CPU tensor, not a scalar",
    ),
    "tolist": "out = R(2, 3).tolist()",
    "tolist_0d": "out = R(()).tolist()",
    "tolist_empty": "out = R(0, 2).tolist()",
    "tolist_complex": "out = R(2).to(torch.complex64).tolist()",
    "tolist_half": "out = R(3).half().tolist()",
    "tolist_bool": "out = (R(3) > 0).tolist()",
    "item": "out = R(1).item()",
    "item_0d_int": "out = torch.tensor(7, device=d).item()",
    "item_multi": "R(3).item()",
    "item_empty": "R(0).item()",
    "item_bool": "out = (R(()) > 100).item()",
    "item_complex": "out = R(()).to(torch.complex64).item()",
    "bool_empty": "bool(R(0))",
    "bool_multi": "bool(R(3))",
    "bool_one": "out = bool(R(1) > -100)",
    "if_tensor": "out = 'yes' if torch.ones((), device=d) else 'no'",
    "int": "out = int(torch.tensor(3.7, device=d))",
    "int_multi": "int(R(2))",
    "float": "out = float(R(1))",
    "complex_builtin": "out = complex(R(()).to(torch.complex64))",
    "index": "out = [10, 20, 30][torch.tensor(2, device=d)]",
    "index_float": "[10, 20, 30][torch.tensor(2.0, device=d)]",
    "index_multi": "[10, 20, 30][torch.tensor([1, 2], device=d)]",
    "range_of_tensor": "out = list(range(torch.tensor(3, device=d)))",
    "format_0d": "out = f'{torch.tensor(3.14159, device=d):.2f}'",
    "format_multi": "f'{R(3):.2f}'",
    "format_empty_spec": "out = len(f'{R(2)}') > 0",
    "repr_0d": "out = repr(torch.tensor(1.5, device=d)).replace(\", device='lazygen:0'\", '')",
    "repr_empty": "out = repr(R(0, 3)).replace(\", device='lazygen:0'\", '')",
    "repr_complex": "out = repr(torch.tensor([1 + 2j], device=d)).replace(\", device='lazygen:0'\", '')",
    "repr_huge": "out = repr(torch.zeros(1000, 1000, device=d)).replace(\", device='lazygen:0'\", '')",
    "repr_int": "out = repr(torch.arange(5, device=d)).replace(\", device='lazygen:0'\", '')",
    "repr_grad": (
        "x = torch.ones(2, device=d, requires_grad=True) * 2; "
        "out = repr(x).replace(\", device='lazygen:0'\", '')"
    ),
    "repr_bool_half": (
        "out = (repr(torch.ones(2, device=d) > 0) + repr(torch.ones(2, device=d).half()))"
        ".replace(\", device='lazygen:0'\", '')"
    ),
    "str_nan_inf": (
        "out = str(torch.tensor([float('nan'), float('inf'), 1.0], device=d))"
        ".replace(\", device='lazygen:0'\", '')"
    ),
    "pickle": "out = pickle.loads(pickle.dumps(R(3, 4)))",
    "pickle_view": "x = R(3, 4); out = pickle.loads(pickle.dumps(x[1:, ::2]))",
    "pickle_grad_leaf": "x = R(3).requires_grad_(); y = pickle.loads(pickle.dumps(x)); out = y",
    "pickle_int": "out = pickle.loads(pickle.dumps(torch.arange(5, device=d)))",
    "deepcopy": "x = R(3, 4); y = copy.deepcopy(x); y.add_(1); out = (x, y)",
    "deepcopy_shared_views": Case(
        "x = R(4); pair = copy.deepcopy([x, x[1:]]); pair[1].zero_(); out = pair[0]",
        documented=ALIASING,
    ),
    "deepcopy_non_leaf": "copy.deepcopy(R(3).requires_grad_() * 2)",
    "deepcopy_module": "m = torch.nn.Linear(3, 2).to(d); out = copy.deepcopy(m)(R(4, 3)).shape",
    "copy_copy": "x = R(3); out = copy.copy(x)",
    "save_load": "x = R(3, 4); f = io.BytesIO(); torch.save(x, f); f.seek(0); out = torch.load(f)",
    "save_load_views": Case(
        "x = R(4, 4); f = io.BytesIO(); torch.save([x, x[1]], f); f.seek(0); a, b = torch.load(f)\n"
        "b.zero_(); out = a",
        documented=ALIASING,
    ),
    "save_load_map_cpu": (
        "f = io.BytesIO(); torch.save(R(3), f); f.seek(0); out = torch.load(f, map_location='cpu')"
    ),
    "save_load_map_device": (
        "f = io.BytesIO(); torch.save(torch.ones(3), f); f.seek(0); out = torch.load(f, map_location=d)"
    ),
    "save_load_map_dict": (
        "f = io.BytesIO(); torch.save(R(3), f); f.seek(0); "
        "out = torch.load(f, map_location={'lazygen:0': 'cpu'})"
    ),
    "save_load_state_dict": (
        "m = torch.nn.Linear(3, 2).to(d); f = io.BytesIO(); torch.save(m.state_dict(), f); f.seek(0)\n"
        "out = torch.load(f)"
    ),
    "save_load_weights_only": (
        "f = io.BytesIO(); torch.save({'w': R(3)}, f); f.seek(0); out = torch.load(f, weights_only=True)"
    ),
    # A lazy tensor has no memory to share: exporting it raises, naming t.cpu()
    # (docs/device-contract.md); a capsule of its placeholder storage gave a tensor without data.
    "dlpack_export": Case("torch.utils.dlpack.to_dlpack(R(3))", "DLPack", DLPACK),
    "dlpack_dunder": Case("R(3).__dlpack__()", "DLPack", DLPACK),
    "dlpack_device": Case("R(3).__dlpack_device__()", "DLPack", DLPACK),
    "from_dlpack_of_lazy": Case("torch.from_dlpack(R(3))", "DLPack", DLPACK),
    "from_dlpack_cpu_then_to": "out = torch.from_dlpack(np.arange(3.0)).to(d) * 2",
    "frombuffer_then_to": "out = torch.frombuffer(bytearray(b'abcdefgh'), dtype=torch.int16).to(d) + 1",
    "frombuffer_on_device_dtype": (
        "out = torch.frombuffer(bytearray(16), dtype=torch.float32).to(d, torch.float64)"
    ),
    "from_numpy_then_to": "a = np.arange(6.0).reshape(2, 3); x = torch.from_numpy(a).to(d); out = x",
    "from_numpy_to_copies": Case(
        "a = np.arange(6.0); x = torch.from_numpy(a).to(d); a[0] = 99; out = x",
        documented="as on CUDA, .to(device) copies; on the CPU it returns the array's tensor",
    ),
    "from_numpy_noncontiguous": "a = np.arange(12.0).reshape(3, 4)[:, ::2]; out = torch.from_numpy(a).to(d)",
    "from_numpy_negative_strides": "a = np.arange(4.0)[::-1]; torch.from_numpy(a)",
    "tensor_from_lazy_list": "out = torch.tensor([R(()), R(())]).shape",
    "stack_list_of_lazy_scalars": "out = torch.stack([R(()), R(())])",
    "as_tensor_lazy": "x = R(3); y = torch.as_tensor(x, device=d); out = y is x",
    "as_tensor_to_cpu": "out = torch.as_tensor(R(3), device='cpu')",
    "iter": "out = [t * 2 for t in R(3)]",
    "iter_0d": "iter(R(()))",
    "len": "out = len(R(4, 2))",
    "len_0d": "len(R(()))",
    "contains": "x = torch.arange(4, device=d); out = (2 in x, 7 in x)",
    "hash_eq": "x = R(3); out = (hash(x) == hash(x), x in {x})",
    "array_interface": Case(
        "R(3).__array_interface__", "AttributeError", "no host memory to describe"
    ),
    "cuda_array_interface": "R(3).__cuda_array_interface__",
    "memoryview": "memoryview(R(3))",
    "bytes_of_tensor": "bytes(R(3).byte())",
    "int_array_ufunc": Case("np.sin(R(3))", "Tensor.cpu()", ACCELERATOR),
}

BAD_ARGS = {
    "sum_dim_out_of_range": "R(3, 4).sum(2)",
    "sum_dim_negative_out_of_range": "R(3, 4).sum(-3)",
    "transpose_dim_out_of_range": "R(3, 4).transpose(0, 5)",
    "softmax_dim_out_of_range": "R(3).softmax(1)",
    "cat_dim_out_of_range": "torch.cat([R(3), R(3)], 1)",
    "cat_mismatched": "torch.cat([R(3, 4), R(3, 5)], 0)",
    "cat_empty_list": "torch.cat([])",
    "cat_dtypes": "out = torch.cat([R(3), torch.arange(3, device=d)])",
    "cat_zero_size": "out = torch.cat([R(0), R(3)])",
    "stack_mismatched": "torch.stack([R(3), R(4)])",
    "zeros_negative": "torch.zeros(-1, device=d)",
    "randn_negative": "torch.randn(2, -3, device=d)",
    "empty_negative": "torch.empty(-5, device=d)",
    "full_negative": "torch.full((-1,), 2.0, device=d)",
    "view_negative": "R(4).view(-2, 2)",
    "arange_bad_step": "torch.arange(0, 5, 0, device=d)",
    "arange_wrong_sign": "torch.arange(0, 5, -1, device=d)",
    "linspace_negative": "torch.linspace(0, 1, -1, device=d)",
    "zeros_huge": "torch.zeros(2**62, device=d)",
    "empty_huge": "torch.empty(2**40, 2**30, device=d)",
    "zeros_overflow": "torch.zeros(2**63, device=d)",
    "ones_huge_then_sum": "torch.ones(2**31, 2**31, device=d).sum()",
    "expand_huge_then_clone": "R(1).expand(2**62).clone()",
    "randn_huge": "torch.randn(2**40, 2**20, device=d)",
    "index_out_of_bounds": "R(3)[5]",
    "index_negative_out_of_bounds": "R(3)[-4]",
    "index_tensor_out_of_bounds": "R(3)[torch.tensor([0, 5], device=d)]",
    "index_tensor_negative": "out = R(3)[torch.tensor([-1, -3], device=d)]",
    "index_tensor_negative_out_of_bounds": "R(3)[torch.tensor([-4], device=d)]",
    "index_put_out_of_bounds": "x = R(3); x[torch.tensor([4], device=d)] = 1.0",
    "index_put_accumulate_out_of_bounds": (
        "x = R(3); x.index_put_((torch.tensor([7], device=d),), R(1), accumulate=True)"
    ),
    "index_select_out_of_bounds": "R(3).index_select(0, torch.tensor([3], device=d))",
    "index_select_negative": "R(3).index_select(0, torch.tensor([-1], device=d))",
    "index_select_float_index": "R(3).index_select(0, torch.tensor([1.0], device=d))",
    "gather_out_of_bounds": "R(3, 4).gather(1, torch.tensor([[0], [4], [1]], device=d))",
    "gather_negative": "R(3, 4).gather(1, torch.tensor([[0], [-1], [1]], device=d))",
    "gather_wrong_dims": "R(3, 4).gather(1, torch.tensor([0, 1], device=d))",
    "gather_float_index": "R(3, 4).gather(1, torch.zeros(3, 1, device=d))",
    "scatter_out_of_bounds": "R(3).scatter(0, torch.tensor([5], device=d), R(1))",
    "scatter_add_out_of_bounds": "R(3).scatter_add(0, torch.tensor([-5], device=d), R(1))",
    "scatter_reduce_out_of_bounds": (
        "R(3).scatter_reduce(0, torch.tensor([3], device=d), R(1), reduce='amax')"
    ),
    "scatter_inplace_out_of_bounds": "x = R(3); x.scatter_(0, torch.tensor([9], device=d), 1.0)",
    "index_add_out_of_bounds": "R(3).index_add(0, torch.tensor([3], device=d), R(1))",
    "index_copy_out_of_bounds": "R(3).index_copy(0, torch.tensor([3], device=d), R(1))",
    "index_fill_out_of_bounds": "R(3).index_fill(0, torch.tensor([3], device=d), 0.0)",
    "take_out_of_bounds": "torch.take(R(2, 2), torch.tensor([4], device=d))",
    "put_out_of_bounds": "x = R(2, 2); x.put_(torch.tensor([4], device=d), R(1))",
    "embedding_out_of_bounds": "torch.nn.functional.embedding(torch.tensor([0, 10], device=d), R(5, 3))",
    "embedding_negative": "torch.nn.functional.embedding(torch.tensor([-1], device=d), R(5, 3))",
    "embedding_module_out_of_bounds": "torch.nn.Embedding(4, 2).to(d)(torch.tensor([4], device=d))",
    "embedding_bag_out_of_bounds": (
        "torch.nn.functional.embedding_bag(torch.tensor([1, 9], device=d), R(5, 3), "
        "torch.tensor([0], device=d))"
    ),
    "one_hot_out_of_bounds": "torch.nn.functional.one_hot(torch.tensor([3], device=d), 3)",
    "cross_entropy_bad_target": (
        "torch.nn.functional.cross_entropy(R(2, 3), torch.tensor([0, 3], device=d))"
    ),
    "nll_loss_bad_target": "torch.nn.functional.nll_loss(R(2, 3), torch.tensor([-2, 0], device=d))",
    "nll_loss_ignore_index": (
        "out = torch.nn.functional.nll_loss(R(2, 3), torch.tensor([-100, 1], device=d))"
    ),
    "bincount_negative": "torch.bincount(torch.tensor([-1, 2], device=d))",
    "multinomial_bad": "torch.multinomial(-torch.ones(3, device=d), 1)",
    "index_out_of_bounds_after_ops": (
        "i = torch.arange(3, device=d) * 3; x = R(6); y = x[i]; out = y.sum()"
    ),
    "mm_mismatched": "R(2, 3) @ R(4, 5)",
    "mm_1d": "torch.mm(R(3), R(3))",
    "bmm_mismatched_batch": "torch.bmm(R(2, 3, 4), R(3, 4, 5))",
    "add_broadcast_mismatch": "R(3) + R(4)",
    "add_inplace_broadcast_grows": "x = R(3); x.add_(R(2, 3))",
    "mul_dtype_inplace_downcast": Case("x = torch.arange(3, device=d); x.mul_(1.5)", bug=CAST_BUG),
    "add_dtype_inplace_downcast_tensor": "x = torch.arange(3, device=d); x.add_(R(3))",
    "conv_bad_channels": "torch.nn.functional.conv2d(R(1, 3, 5, 5), R(4, 2, 3, 3))",
    "conv_kernel_too_big": "torch.nn.functional.conv2d(R(1, 1, 2, 2), R(1, 1, 3, 3))",
    "linear_mismatch": "torch.nn.Linear(3, 2).to(d)(R(4, 5))",
    "max_pool_too_big": "torch.nn.functional.max_pool2d(R(1, 1, 2, 2), 3)",
    "batch_norm_bad_shape": (
        "torch.nn.functional.batch_norm(R(2, 3), torch.zeros(4, device=d), torch.ones(4, device=d))"
    ),
    "layer_norm_bad_shape": "torch.nn.functional.layer_norm(R(2, 3), (4,))",
    "reshape_bad": "R(6).reshape(4, 2)",
    "squeeze_bad_dim": "R(3).squeeze(2)",
    "unsqueeze_bad_dim": "R(3).unsqueeze(3)",
    "permute_repeated": "R(3, 4).permute(0, 0)",
    "permute_wrong_count": "R(3, 4).permute(0)",
    "narrow_out_of_range": "R(5).narrow(0, 3, 4)",
    "select_out_of_range": "R(3, 4).select(1, 4)",
    "split_zero": "R(4).split(0)",
    "chunk_zero": "R(4).chunk(0)",
    "repeat_too_few": "R(3, 4).repeat(2)",
    "flip_repeated": "R(3, 4).flip(0, 0)",
    "topk_too_big": "R(3).topk(4)",
    "kthvalue_out_of_range": "R(3).kthvalue(4)",
    "max_empty": "R(0).max()",
    "argmax_empty": "R(0, 3).argmax(0)",
    "sum_empty": "out = (R(0).sum(), R(0, 3).sum(0), R(0).prod(), R(0).mean())",
    "min_empty_dim_ok": "out = R(3, 0).amin(0)",
    "zero_size_ops": (
        "x = R(0, 4); out = (x @ R(4, 2), x.relu(), x.softmax(1), x.t().contiguous(), x.cumsum(0))"
    ),
    "zero_size_index": "out = R(3)[torch.tensor([], dtype=torch.long, device=d)]",
    "zero_size_inplace": "x = R(0, 2); x.add_(1); x.mul_(R(0, 2)); out = x",
    "zero_size_cat_backward": (
        "x = R(0, 2).requires_grad_(); y = R(2, 2).requires_grad_(); torch.cat([x, y]).sum().backward()\n"
        "out = (x.grad, y.grad)"
    ),
    "nonzero_empty": "out = (R(3) > 100).nonzero()",
    "masked_select_mismatch": "R(3).masked_select(torch.ones(4, dtype=torch.bool, device=d))",
    "masked_fill_non_bool": "R(3).masked_fill(torch.ones(3, device=d), 0.0)",
    "where_mismatch": "torch.where(R(3) > 0, R(3), R(4))",
    "clamp_min_gt_max": "out = R(5).clamp(1.0, -1.0)",
    "pow_int_negative": "torch.tensor([2], device=d) ** torch.tensor([-1], device=d)",
    "sqrt_negative": "out = R(3).abs().neg().sqrt()",
    "log_zero": "out = torch.zeros(2, device=d).log()",
    "cholesky_not_pd": "torch.linalg.cholesky(-torch.eye(3, device=d))",
    "inverse_singular": "torch.linalg.inv(torch.zeros(3, 3, device=d))",
    "interpolate_bad_size": "torch.nn.functional.interpolate(R(1, 1, 4), size=-1)",
    "pad_too_much": "torch.nn.functional.pad(R(1, 3), (-5, 0))",
    "reflect_pad_too_much": "torch.nn.functional.pad(R(1, 1, 3), (4, 0), mode='reflect')",
    "dtype_kwarg_bad": "R(3).sum(dtype=torch.int32 if False else 'float')",
    "wrong_arg_type": "torch.add(R(3), 'x')",
    "too_many_args": "R(3).view(1, 2, 3, 4, 5)",
    "device_other_index": "out = torch.zeros(3, device='lazygen:1').cpu()",
    "device_bad_name": "torch.zeros(3, device='lazygen:x')",
    "to_bad_dtype": "R(3).to('float128')",
    "sort_stable": "out = torch.tensor([3, 1, 2, 1], device=d).sort(stable=True)",
    "unique_sorted": "out = torch.tensor([3, 1, 2, 1], device=d).unique(return_counts=True)",
    "repeat_interleave_negative": "torch.repeat_interleave(R(3), torch.tensor([1, -1, 1], device=d))",
    "diag_embed_bad": "torch.diagonal(R(3), 0, 0, 1)",
    "einsum_bad": "torch.einsum('ij,jk->ik', R(2, 3), R(4, 5))",
    "tensordot_bad": "torch.tensordot(R(2, 3), R(4, 5), dims=([1], [0]))",
    "nan_as_index_size": "torch.zeros(int(float('nan')), device=d)",
    "new_zeros_negative": "R(3).new_zeros(-1)",
    "randint_bad_range": "torch.randint(5, 2, (3,), device=d)",
    "normal_negative_std": "torch.normal(torch.zeros(3, device=d), -torch.ones(3, device=d))",
    "bernoulli_bad_p": "torch.bernoulli(torch.full((3,), 2.0, device=d))",
    "dropout_bad_p": "torch.nn.functional.dropout(R(3), p=1.5)",
}

AUTOGRAD = {
    "backward_twice": "x = R(3).requires_grad_(); y = (x * x).sum(); y.backward(); y.backward()",
    "backward_twice_retain": (
        "x = R(3).requires_grad_(); y = (x * x).sum(); y.backward(retain_graph=True); y.backward()\n"
        "out = x.grad"
    ),
    "backward_non_scalar": "x = R(3).requires_grad_(); (x * 2).backward()",
    "backward_non_scalar_with_grad": (
        "x = R(3).requires_grad_(); (x * 2).backward(torch.ones(3, device=d)); out = x.grad"
    ),
    "backward_grad_wrong_shape": "x = R(3).requires_grad_(); (x * 2).backward(torch.ones(4, device=d))",
    "backward_grad_cpu": Case(
        "x = R(3).requires_grad_(); (x * 2).backward(torch.ones(3)); out = x.grad",
        "invalid gradient",
        "as with CUDA: the gradient must be on the output's device",
    ),
    "backward_no_grad": "x = R(3); (x * 2).sum().backward()",
    "saved_tensor_modified": "x = R(3).requires_grad_(); y = x * 2; z = y * y; y.add_(1); z.sum().backward()",
    "saved_tensor_modified_view": (
        "x = R(3, 2).requires_grad_(); y = x * 2; z = y.sigmoid(); z[0].zero_(); z.sum().backward()"
    ),
    "saved_output_modified": "x = R(3).requires_grad_(); y = x.exp(); y.mul_(2); y.sum().backward()",
    "version_counter": "x = R(3); v = x._version; x.add_(1); x[0].mul_(2); out = x._version - v",
    "autograd_grad": "x = R(3).requires_grad_(); out = torch.autograd.grad((x ** 3).sum(), x)",
    "autograd_grad_unused": "x = R(3).requires_grad_(); y = R(3).requires_grad_(); torch.autograd.grad((x * 2).sum(), [x, y])",
    "autograd_grad_allow_unused": (
        "x = R(3).requires_grad_(); y = R(3).requires_grad_()\n"
        "out = torch.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)"
    ),
    "autograd_grad_materialize": (
        "x = R(3).requires_grad_(); y = R(3).requires_grad_()\n"
        "out = torch.autograd.grad((x * 2).sum(), [x, y], allow_unused=True, materialize_grads=True)"
    ),
    "autograd_grad_create_graph": (
        "x = R(3).requires_grad_(); (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)\n"
        "out = torch.autograd.grad(g.sum(), x)"
    ),
    "autograd_grad_non_leaf_input": (
        "x = R(3).requires_grad_(); y = x * 2; out = torch.autograd.grad((y * y).sum(), y)"
    ),
    "double_backward": (
        "x = R(3).requires_grad_(); y = (x.sin() * x).sum()\n"
        "(g,) = torch.autograd.grad(y, x, create_graph=True); g.sum().backward(); out = x.grad"
    ),
    "hook_raises_in_autograd_grad": (
        "x = R(3).requires_grad_(); y = x * 3\n"
        "def hook(g):\n    raise RuntimeError('hook failed')\n"
        "y.register_hook(hook); torch.autograd.grad(y.sum(), x)"
    ),
    "hook_returns_wrong_type": (
        "x = R(3).requires_grad_(); y = x * 3; y.register_hook(lambda g: 'oops'); y.sum().backward()"
    ),
    "post_accumulate_hook": (
        "x = R(3).requires_grad_(); seen = []\n"
        "x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.clone()))\n"
        "(x * 2).sum().backward(); out = seen"
    ),
    "grad_fn_hook_raises": (
        "x = R(3).requires_grad_(); y = x.exp()\n"
        "y.grad_fn.register_hook(lambda gi, go: [][1]); y.sum().backward()"
    ),
    "anomaly_mode_nan": (
        "x = torch.zeros(1, device=d, requires_grad=True)\n"
        "with torch.autograd.detect_anomaly():\n"
        "    (x.sqrt() * 0).sum().backward()"
    ),
    "anomaly_mode_ok": (
        "x = R(3).requires_grad_()\n"
        "with torch.autograd.detect_anomaly():\n"
        "    (x * x).sum().backward()\n"
        "out = x.grad"
    ),
    "anomaly_mode_error_trace": (
        "x = R(3).requires_grad_(); y = x * 2; z = y * y; y.add_(1)\n"
        "with torch.autograd.detect_anomaly():\n"
        "    z.sum().backward()"
    ),
    "set_detect_anomaly_check_nan": (
        "x = torch.tensor([-1.0], device=d, requires_grad=True)\n"
        "with torch.autograd.set_detect_anomaly(True, check_nan=False):\n"
        "    x.sqrt().sum().backward()\n"
        "out = x.grad"
    ),
    "jacobian": "out = torch.autograd.functional.jacobian(lambda t: t.sin() * t, R(3))",
    "jacobian_vectorize": (
        "out = torch.autograd.functional.jacobian(lambda t: t.sin() * t, R(3), vectorize=True)"
    ),
    "hessian": "out = torch.autograd.functional.hessian(lambda t: (t ** 3).sum(), R(3))",
    "vjp": "out = torch.autograd.functional.vjp(lambda t: t * t, R(3), R(3))",
    "jvp_functional": "out = torch.autograd.functional.jvp(lambda t: t.exp(), R(3), R(3))",
    "func_jvp": "out = torch.func.jvp(lambda t: t.sin(), (R(3),), (R(3),))",
    "func_grad": "out = torch.func.grad(lambda t: (t * t).sum())(R(3))",
    "func_vmap": "out = torch.func.vmap(lambda t: t @ t)(R(4, 3))",
    "func_jacrev": "out = torch.func.jacrev(lambda t: t.cos())(R(3))",
    "func_jacfwd": "out = torch.func.jacfwd(lambda t: t.cos())(R(3))",
    "fwad_dual": (
        "with fwAD.dual_level():\n"
        "    x = fwAD.make_dual(R(3), R(3))\n"
        "    y = (x * x).sin()\n"
        "    out = fwAD.unpack_dual(y).tangent"
    ),
    "fwad_dual_wrong_shape": ("with fwAD.dual_level():\n    fwAD.make_dual(R(3), R(4))"),
    "fwad_inplace": (
        "with fwAD.dual_level():\n"
        "    x = fwAD.make_dual(R(3), R(3)); y = x.clone(); y.mul_(2)\n"
        "    out = fwAD.unpack_dual(y).tangent"
    ),
    "checkpoint": (
        "from torch.utils.checkpoint import checkpoint\n"
        "x = R(3).requires_grad_(); y = checkpoint(lambda t: t.sin() * 2, x, use_reentrant=False)\n"
        "y.sum().backward(); out = x.grad"
    ),
    "custom_function": (
        "class Twice(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, t):\n"
        "        ctx.save_for_backward(t); return t * 2\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        (t,) = ctx.saved_tensors; return g * 2 + t\n"
        "x = R(3).requires_grad_(); Twice.apply(x).sum().backward(); out = x.grad"
    ),
    "custom_function_backward_raises": (
        "class Bad(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, t):\n"
        "        return t * 2\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        raise ValueError('custom backward')\n"
        "x = R(3).requires_grad_(); Bad.apply(x).sum().backward()"
    ),
    "custom_function_wrong_grad_shape": (
        "class Bad(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, t):\n"
        "        return t * 2\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        return g[:1]\n"
        "x = R(3).requires_grad_(); Bad.apply(x).sum().backward()"
    ),
    "no_grad_then_backward": (
        "x = R(3).requires_grad_()\nwith torch.no_grad():\n    y = x * 2\ny.sum().backward()"
    ),
    "inference_mode_tensor_in_autograd": (
        "with torch.inference_mode():\n    y = R(3)\nx = R(3).requires_grad_(); (x * y).sum().backward()\n"
        "out = x.grad"
    ),
    "inference_tensor_inplace_outside": ("with torch.inference_mode():\n    y = R(3)\ny.add_(1)"),
    "grad_of_int_output": "x = R(3).requires_grad_(); x.argmax().backward()",
    "backward_inputs": (
        "x = R(3).requires_grad_(); y = R(3).requires_grad_(); (x * y).sum().backward(inputs=[x])\n"
        "out = (x.grad, y.grad)"
    ),
    "grad_accumulates": (
        "x = R(3).requires_grad_()\nfor _ in range(3):\n    (x * x).sum().backward()\nout = x.grad"
    ),
    "zero_grad_set_to_none": (
        "m = torch.nn.Linear(3, 2).to(d); m(R(4, 3)).sum().backward(); m.zero_grad(); "
        "out = m.weight.grad"
    ),
    "optimizer_step_no_grad": (
        "m = torch.nn.Linear(3, 2).to(d); o = torch.optim.SGD(m.parameters(), lr=0.1); o.step(); "
        "out = m.weight"
    ),
    "clip_grad_norm_nonfinite": (
        "m = torch.nn.Linear(3, 2).to(d); (m(R(4, 3)) * float('inf')).sum().backward()\n"
        "torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0, error_if_nonfinite=True)"
    ),
    "saved_tensors_hooks": (
        "x = R(3).requires_grad_()\n"
        "with torch.autograd.graph.saved_tensors_hooks(lambda t: t.cpu(), lambda t: t.to(d)):\n"
        "    y = (x * x).sum()\n"
        "y.backward(); out = x.grad"
    ),
    # Hooks that do hostile things on the engine's device thread.
    "hook_raises_keyboard_interrupt": (
        "x = R(3).requires_grad_(); y = x * x\n"
        "def hook(g):\n    raise KeyboardInterrupt\n"
        "y.register_hook(hook); y.sum().backward()"
    ),
    "hook_raises_system_exit": (
        "x = R(3).requires_grad_(); y = x * x\n"
        "def hook(g):\n    raise SystemExit(3)\n"
        "y.register_hook(hook); y.sum().backward()"
    ),
    "hook_raises_memory_error": (
        "x = R(3).requires_grad_(); y = x * x\n"
        "def hook(g):\n    raise MemoryError('hook')\n"
        "y.register_hook(hook); y.sum().backward()"
    ),
    "hook_marks_step": (
        "import lazygen.runtime as lr\nx = R(3).requires_grad_(); y = x * x\n"
        "def hook(g):\n    lr.mark_step()\n    return g * 2\n"
        "y.register_hook(hook); y.sum().backward(); out = x.grad"
    ),
    "hook_reads_item": (
        "x = R(3).requires_grad_(); y = x * x; seen = []\n"
        "def hook(g):\n    seen.append(g.sum().item())\n    return g\n"
        "y.register_hook(hook); y.sum().backward(); out = (x.grad, seen)"
    ),
    "hook_nested_backward": (
        "x = R(3).requires_grad_(); y = x * x\n"
        "def hook(g):\n    q = R(3).requires_grad_(); (q * 2).sum().backward()\n    return g + q.grad\n"
        "y.register_hook(hook); y.sum().backward(); out = x.grad"
    ),
    "hook_modifies_saved_input": (
        "x = R(3).requires_grad_(); w = R(3).requires_grad_(); y = (x * w).sum()\n"
        "def hook(g):\n    with torch.no_grad():\n        w.add_(1)\n    return g\n"
        "x.register_hook(hook); y.backward()"
    ),
    "hook_uses_another_thread": (
        "import threading\nx = R(3).requires_grad_(); y = x * x; box = []\n"
        "def hook(g):\n    t = threading.Thread(target=lambda: box.append((x * 3).sum().item()))\n"
        "    t.start(); t.join(); return g\n"
        "y.register_hook(hook); y.sum().backward(); out = (x.grad, box)"
    ),
    "grad_from_threads": (
        "import threading\nx = R(3).requires_grad_(); y = (x * x).sum(); res = [None] * 3\n"
        "def work(i):\n    res[i] = torch.autograd.grad(y, x, retain_graph=True)[0]\n"
        "ts = [threading.Thread(target=work, args=(i,)) for i in range(3)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]; out = res"
    ),
    "saved_tensors_hooks_raise": (
        "x = R(3).requires_grad_()\n"
        "def unpack(t):\n    raise RuntimeError('unpack failed')\n"
        "with torch.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):\n"
        "    y = (x * x).sum()\n"
        "y.backward()"
    ),
}


# Storages, legacy constructors, subclasses, other devices, tracing and scripting.
OBJECTS = {
    "storage_getitem": Case("x = R(4); out = x.untyped_storage()[0]", documented=STORAGE),
    "typed_storage_getitem": Case("x = R(4); out = x.storage()[1]", documented=STORAGE),
    "storage_setitem": Case("x = R(4); x.storage()[1] = 5.0; out = x", documented=STORAGE),
    "storage_fill": Case("x = R(4); x.untyped_storage().fill_(0); out = x", documented=STORAGE),
    "storage_copy_from_cpu": Case(
        "x = R(4); x.untyped_storage().copy_(torch.ones(4).untyped_storage()); out = x",
        documented=STORAGE,
    ),
    "storage_tolist_typed": Case("out = R(3).storage().tolist()", documented=STORAGE),
    "storage_type": "out = R(3).storage().dtype",
    "storage_is_shared": Case("out = R(3).untyped_storage().is_shared()", documented=STORAGE),
    "storage_device": "out = R(3).untyped_storage().device",
    "storage_size_of_view": "out = R(4, 4)[1:].storage().size()",
    "storage_bytes": Case("out = bytes(R(3).untyped_storage())", documented=STORAGE),
    "storage_float": Case("out = R(3).storage().float().size()", documented=STORAGE),
    "tensor_from_storage": Case(
        "x = R(4); out = torch.tensor([], device=d).set_(x.storage())", documented=STORAGE
    ),
    "type_string": Case(
        "out = R(3).type()", documented="'torch.lazygen.FloatTensor', as 'torch.cuda.FloatTensor'"
    ),
    "type_convert": "out = R(3).type(torch.float64)",
    "type_legacy_name": "R(3).type('torch.DoubleTensor')",
    "legacy_new": "out = R(3).new(2, 3).shape",
    "legacy_new_data": "out = R(3).new([1.0, 2.0])",
    "legacy_tensor_ctor": "out = torch.Tensor(3).to(d).shape",
    "cuda_call": "R(3).cuda()",
    "to_meta": "out = R(3).to('meta').shape",
    "meta_to_device": "torch.empty(3, device='meta').to(d)",
    "meta_like": "out = torch.empty_like(R(3), device='meta').shape",
    "apply_": Case(
        "R(3).apply_(lambda v: v * 2)", "apply_ is only implemented on CPU", "as on CUDA"
    ),
    "map_": Case(
        "x = R(3); x.map_(R(3), lambda a, b: a + b)", "only implemented on CPU", "as on CUDA"
    ),
    "parameter_of_lazy": "p = torch.nn.Parameter(R(3)); out = (p * 2, type(p).__name__, p.requires_grad)",
    "parameter_data_swap": "p = torch.nn.Parameter(R(3)); p.data = R(3) * 0; out = p",
    "as_subclass": (
        "class Mine(torch.Tensor):\n    pass\n"
        "x = R(3).as_subclass(Mine); out = (type(x * 2).__name__, x * 2)"
    ),
    "torch_function_subclass": (
        "class Logged(torch.Tensor):\n"
        "    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        return super().__torch_function__(func, types, args, kwargs or {})\n"
        "x = R(3).as_subclass(Logged); out = (x + 1).sum()"
    ),
    "make_subclass": "out = torch.Tensor._make_subclass(torch.nn.Parameter, R(3), True).grad_fn is None",
    "weakref": (
        "import weakref, gc\nx = R(3); r = weakref.ref(x); y = x * 2; del x; gc.collect(); "
        "out = (r() is None, y)"
    ),
    "del_pending_then_step": "x = R(3) * 2; y = x + 1; del x; out = y",
    "threads": (
        "import threading\nresults = [None] * 4\n"
        "def work(i):\n    results[i] = (R(8) * i).sum()\n"
        "ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\nout = [r.shape for r in results]"
    ),
    "jit_trace": Case(
        "m = torch.nn.Linear(3, 2).to(d); t = torch.jit.trace(m, R(4, 3)); out = t(R(4, 3)).shape",
        bug=JIT_FUSER_BUG,
    ),
    "jit_trace_unchecked": (
        "m = torch.nn.Linear(3, 2).to(d); t = torch.jit.trace(m, R(4, 3), check_trace=False)\n"
        "out = [t(R(4, 3)) for _ in range(3)]"
    ),
    "jit_script_unoptimized": (
        "f = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU()).to(d))\n"
        "with torch.jit.optimized_execution(False):\n    out = [f(R(4, 3)) for _ in range(3)]"
    ),
    "fx_symbolic_trace": (
        "g = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU()))\n"
        "g = g.to(d); out = g(R(4, 3)).shape"
    ),
    "functional_call": (
        "m = torch.nn.Linear(3, 2).to(d)\n"
        "params = {k: torch.zeros_like(v) for k, v in m.named_parameters()}\n"
        "out = torch.func.functional_call(m, params, (R(4, 3),))"
    ),
    "generator_on_device": (
        "g = torch.Generator(device=d); g.manual_seed(1); out = torch.randn(3, generator=g, device=d)"
    ),
    "cpu_generator_device_tensor": "g = torch.Generator().manual_seed(1); out = torch.randn(3, generator=g, device=d).shape",
    "complex32": "x = R(4).to(torch.complex32); out = (x + x).to(torch.complex64)",
    "complex32_mul": "x = R(4).to(torch.complex32); out = (x * x).to(torch.complex64)",
    "fft": "out = torch.fft.fft(R(8))",
    "rfft_irfft": "out = torch.fft.irfft(torch.fft.rfft(R(8)))",
    "stft": "out = torch.stft(R(64), 16, return_complex=True, window=torch.hann_window(16, device=d)).abs()",
    "uint64_ops": "x = torch.arange(4, device=d).to(torch.uint64); out = (x * 3).to(torch.int64)",
    "bits8_view": "x = torch.arange(4, device=d, dtype=torch.uint8); out = x.view(torch.bits8).view(torch.uint8)",
    "scaled_mm": (
        "a = R(16, 16).to(torch.float8_e4m3fn); b = R(16, 16).to(torch.float8_e4m3fn).t()\n"
        "one = torch.tensor(1.0, device=d); out = torch._scaled_mm(a, b, one, one, out_dtype=torch.float32)"
    ),
    "searchsorted_cpu_boundaries": Case(
        "torch.searchsorted(torch.tensor([1.0, 2.0]), R(3))", "RuntimeError", "two devices, as CUDA"
    ),
    "bucketize": "out = torch.bucketize(R(5), torch.tensor([-1.0, 0.0, 1.0], device=d))",
    "non_blocking_then_modify_source": Case(
        "src = torch.ones(3); x = src.to(d, non_blocking=True); src.zero_(); out = x",
        documented="as on CUDA, .to(device) copies; on the CPU it returns the source itself",
    ),
    "save_on_cpu": (
        "x = R(3).requires_grad_()\n"
        "with torch.autograd.graph.save_on_cpu(pin_memory=True):\n"
        "    y = (x.sin() * x).sum()\n"
        "y.backward(); out = x.grad"
    ),
    "grad_scaler": (
        "m = torch.nn.Linear(3, 2).to(d); opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "scaler = torch.amp.GradScaler(d); scaler.scale(m(R(4, 3)).sum()).backward()\n"
        "scaler.step(opt); scaler.update(); out = m.weight.shape"
    ),
    "error_then_continue": (
        "try:\n    R(3)[torch.tensor([5], device=d)].cpu()\nexcept Exception:\n    pass\n"
        "out = R(3) * 2"
    ),
    "error_mid_graph_keeps_others": (
        "a = R(3) * 2\n"
        "try:\n    R(3)[torch.tensor([5], device=d)].cpu()\nexcept IndexError:\n    pass\n"
        "except RuntimeError:\n    pass\nout = a + 1"
    ),
    "set_printoptions_full": (
        "torch.set_printoptions(profile='full')\n"
        "try:\n    out = str(torch.zeros(2000, device=d)).replace(\", device='lazygen:0'\", '')\n"
        "finally:\n    torch.set_printoptions(profile='default')"
    ),
    "tensor_of_lazy_tensor": "out = torch.tensor(R(3))",
    "as_tensor_list_of_lazy": "out = torch.as_tensor([R(()), R(())])",
    "nonzero_static": "out = torch.nonzero_static(R(6) > 0, size=8)",
    "masked_scatter": "x = R(4); out = x.masked_scatter(x > 0, R(4))",
    "index_put_bool_mask_lazy": "x = R(4); x[x > 0] = 0.0; out = x",
    "sort_nan": "out = torch.tensor([float('nan'), 1.0, -1.0], device=d).sort()",
    "unique_dim": "out = torch.tensor([[1, 2], [1, 2], [3, 4]], device=d).unique(dim=0)",
    "resize_huge": "x = R(3); x.resize_(2**62)",
    "as_strided_zero_size_huge_stride": "out = R(3).as_strided((0, 5), (2**40, 1)).shape",
    "expand_zero": "out = R(1, 3).expand(0, 3)",
    "repeat_huge": "R(3).repeat(2**40)",
    # torch.accelerator with the lazy device as the accelerator (both runs: one process).
    "accelerator_synchronize": "x = R(3) * 2; torch.accelerator.synchronize(); out = x",
    "accelerator_empty_cache": "x = R(3) * 2; torch.accelerator.empty_cache(); out = x",
    "accelerator_memory_allocated": "torch.accelerator.memory_allocated()",
    "accelerator_memory_stats": "torch.accelerator.memory_stats()",
    "accelerator_stream_event": (
        "s = torch.Stream(device='lazygen'); e = torch.Event(device='lazygen'); e.record(s)\n"
        "s.synchronize(); e.synchronize(); out = R(3) + 1"
    ),
    "device_module_synchronize": "x = R(3) * 2; torch.get_device_module('lazygen').synchronize(); out = x",
    "record_stream": "R(3).record_stream(torch.Stream(device='lazygen'))",
    "reduce_ex": "out = type(R(3).__reduce_ex__(2)).__name__",
    "setstate_roundtrip": "x = R(3); y = torch.empty(0, device=d); y.__setstate__(x.__getstate__()) if hasattr(x, '__getstate__') else None",
}

# Aliasing through .data/set_/resize_ with views alive, and what nn utilities do to tensors.
ALIASING_AND_MODULES = {
    "data_set_to_view_then_write": "x = R(4); y = R(2, 4); x.data = y[1]; x.add_(1); out = (x, y)",
    "set_then_write_view": "y = R(4, 4); x = torch.empty(0, device=d); x.set_(y); x[1].zero_(); out = y",
    "view_then_data_set": "x = R(4, 4); v = x[0]; x.data = R(2); out = (v, x)",
    "resize_with_view_alive": "x = R(8); v = x[:4]; x.resize_(2); v.add_(1); out = (x, v)",
    "swap_tensors_views": "a = R(4); b = R(4); torch.utils.swap_tensors(a, b); a[1:].zero_(); out = (a, b)",
    "retain_grad_then_modify_grad": (
        "x = R(3).requires_grad_(); y = x * 2; y.retain_grad(); y.sum().backward(); "
        "y.grad.mul_(3); out = (y.grad, x.grad)"
    ),
    "grad_inplace_zero": "x = R(3).requires_grad_(); (x * x).sum().backward(); x.grad.zero_(); out = x.grad",
    "to_empty": "m = torch.nn.Linear(3, 2, device='meta').to_empty(device=d); out = m.weight.shape",
    "to_empty_reset": (
        "m = torch.nn.Linear(3, 2, device='meta').to_empty(device=d); torch.manual_seed(1)\n"
        "m.reset_parameters(); out = m.weight"
    ),
    "load_state_dict_from_cpu": (
        "m = torch.nn.Linear(3, 2).to(d); c = torch.nn.Linear(3, 2)\n"
        "m.load_state_dict(c.state_dict()); out = m(R(4, 3))"
    ),
    "load_state_dict_assign": (
        "m = torch.nn.Linear(3, 2).to(d); sd = {k: v.to(d) * 0 for k, v in m.state_dict().items()}\n"
        "m.load_state_dict(sd, assign=True); out = m(R(4, 3))"
    ),
    "load_state_dict_wrong_shape": (
        "m = torch.nn.Linear(3, 2).to(d); m.load_state_dict({'weight': R(5, 5), 'bias': R(2)})"
    ),
    "parameters_to_vector": (
        "m = torch.nn.Linear(3, 2).to(d); v = torch.nn.utils.parameters_to_vector(m.parameters())\n"
        "torch.nn.utils.vector_to_parameters(v * 0 + 1, m.parameters()); out = (v, m.weight)"
    ),
    "weight_norm": (
        "m = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(3, 2).to(d))\n"
        "m(R(4, 3)).sum().backward(); out = m.parametrizations.weight.original0.grad"
    ),
    "spectral_norm": (
        "m = torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(3, 2).to(d))\n"
        "out = m(R(4, 3))"
    ),
    "prune": (
        "m = torch.nn.Linear(3, 2).to(d); torch.nn.utils.prune.l1_unstructured(m, 'weight', 0.5)\n"
        "out = (m.weight, m.weight_mask)"
    ),
    "orthogonal_parametrization": (
        "m = torch.nn.utils.parametrizations.orthogonal(torch.nn.Linear(3, 3).to(d))\n"
        "w = m.weight; out = w @ w.t()"
    ),
    "model_half_channels_last": (
        "m = torch.nn.Conv2d(3, 4, 3).to(d).half().to(memory_format=torch.channels_last)\n"
        "out = m(R(1, 3, 5, 5).half()).float()"
    ),
    "clip_grad_norm_foreach": (
        "m = torch.nn.Linear(3, 2).to(d); m(R(4, 3)).sum().backward()\n"
        "n = torch.nn.utils.clip_grad_norm_(m.parameters(), 0.1, foreach=True); out = (n, m.weight.grad)"
    ),
    "clip_grad_value": (
        "m = torch.nn.Linear(3, 2).to(d); m(R(4, 3)).sum().backward()\n"
        "torch.nn.utils.clip_grad_value_(m.parameters(), 0.1); out = m.weight.grad"
    ),
    "lr_scheduler": (
        "m = torch.nn.Linear(3, 2).to(d); o = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "s = torch.optim.lr_scheduler.StepLR(o, 1, 0.5)\n"
        "for _ in range(2):\n    m(R(4, 3)).sum().backward(); o.step(); s.step(); o.zero_grad()\n"
        "out = (m.weight, s.get_last_lr())"
    ),
    "optimizer_state_dict_roundtrip": (
        "m = torch.nn.Linear(3, 2).to(d); o = torch.optim.Adam(m.parameters())\n"
        "m(R(4, 3)).sum().backward(); o.step(); sd = o.state_dict()\n"
        "o2 = torch.optim.Adam(m.parameters()); o2.load_state_dict(sd); out = o2.state_dict()['state'][0]"
    ),
    "sdpa_bool_mask": (
        "q = R(1, 2, 4, 8); mask = torch.ones(4, 4, dtype=torch.bool, device=d).tril()\n"
        "out = torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask)"
    ),
    "sdpa_cpu_mask": Case(
        "q = R(1, 2, 4, 8); mask = torch.ones(4, 4, dtype=torch.bool).tril()\n"
        "torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask)",
        "RuntimeError",
        "a CPU mask with device inputs, as with CUDA",
    ),
    "multihead_attention_need_weights": (
        "m = torch.nn.MultiheadAttention(8, 2, batch_first=True).to(d); q = R(2, 4, 8)\n"
        "out = m(q, q, q, need_weights=True)"
    ),
    "embedding_max_norm": (
        "e = torch.nn.Embedding(5, 3, max_norm=1.0).to(d); out = (e(torch.tensor([1, 1, 2], device=d)), e.weight)"
    ),
    "embedding_padding_idx_grad": (
        "e = torch.nn.Embedding(5, 3, padding_idx=0).to(d); e(torch.tensor([0, 1, 0], device=d)).sum().backward()\n"
        "out = e.weight.grad"
    ),
    "batch_norm_eval_train_switch": (
        "m = torch.nn.BatchNorm1d(3).to(d); m(R(4, 3)); m.eval(); a = m(R(4, 3)); m.train(); out = (a, m.running_mean)"
    ),
    "dropout_eval": "m = torch.nn.Dropout(0.5).to(d).eval(); out = m(R(4))",
    "rnn_packed_sequence": (
        "r = torch.nn.LSTM(3, 4, batch_first=True).to(d); x = R(2, 5, 3)\n"
        "p = torch.nn.utils.rnn.pack_padded_sequence(x, torch.tensor([5, 3]), batch_first=True)\n"
        "o, _ = r(p); out = torch.nn.utils.rnn.pad_packed_sequence(o, batch_first=True)[0]"
    ),
    "rnn_packed_lengths_on_device": (
        "x = R(2, 5, 3)\n"
        "p = torch.nn.utils.rnn.pack_padded_sequence(x, torch.tensor([5, 3], device=d), batch_first=True)\n"
        "out = (p.data, p.batch_sizes, torch.nn.utils.rnn.pad_packed_sequence(p, batch_first=True))"
    ),
    "ctc_loss": (
        "lp = R(6, 2, 4).log_softmax(2); t = torch.tensor([[1, 2], [1, 1]], device=d)\n"
        "out = torch.nn.functional.ctc_loss(lp, t, torch.tensor([6, 6]), torch.tensor([2, 2]))"
    ),
}

# Every dtype through common ops: made on the CPU, moved to the device, run there.
DTYPES = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex32",
    "complex64",
    "complex128",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
)
DTYPE_OPS = {
    "clone": "t.clone()",
    "add": "t + t",
    "mul_scalar": "t * 2",
    "sum": "t.sum()",
    "view_write": "u = t.clone(); u.view(-1)[1:3].zero_(); u",
    "cat": "torch.cat([t, t])",
    "transpose_contiguous": "t.t().contiguous()",
    "index_select": "t.index_select(0, torch.tensor([2, 0], device=d))",
    "where": "torch.where(torch.tensor([True, False, True], device=d)[:, None], t, t.flip(0))",
    "max": "t.max()",
    "sort": "t.sort(0)",
    "eq": "t == t",
    "neg": "-t",
    "abs": "t.abs()",
    "to_float": "t.to(torch.float32) if not t.is_complex() else t.to(torch.complex64)",
    "item": "t[0, 0].item()",
    "repr": "repr(t).replace(\", device='lazygen:0'\", '')",
}
DTYPE_MATRIX = {
    f"{dtype}.{op}": (
        f"t = (torch.arange(12) % 5).view(3, 4).to(torch.{dtype}).to(d)\nout = {expr}"
    )
    for dtype in DTYPES
    for op, expr in DTYPE_OPS.items()
}

AREAS = {
    "plumbing": PLUMBING,
    "mixed": MIXED,
    "host": HOST,
    "bad_args": BAD_ARGS,
    "autograd": AUTOGRAD,
    "objects": OBJECTS,
    "modules": ALIASING_AND_MODULES,
    "dtypes": DTYPE_MATRIX,
}

CASES = {
    f"{area}.{name}": case if isinstance(case, Case) else Case(case)
    for area, cases in AREAS.items()
    for name, case in cases.items()
}


@pytest.fixture(scope="module")
def outcomes():
    return run(CASES)


def _param(name: str):
    bug = CASES[name].bug
    return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=bug)) if bug else name


@pytest.mark.parametrize("name", [_param(name) for name in sorted(CASES)])
def test_lazy_matches_eager_and_never_crashes(name, outcomes):
    why = problem(CASES[name], outcomes[name])
    assert why is None, f"{name}: {why}"


#: Cases whose outcome differs on the fx backend: bugs of its own, or a bug it has not.
FX_BUGS = {
    "plumbing.resize_view": "resize_ of a view past its own elements: fx lowers it as an "
    "as_strided_copy of the view alone, out of bounds (TorchScript reads the base)",
}
FX_WITHOUT = {"objects.jit_trace"}  # fx leaves TorchScript's executor alone


@pytest.mark.slow
def test_the_fx_backend_too():
    """The whole sweep on the fx backend: the same known bugs (less TorchScript's), plus
    its own, and no crash."""
    outcomes = run(CASES, backend="fx")
    failing = {name for name, case in CASES.items() if problem(case, outcomes[name])}
    expected = {name for name, case in CASES.items() if case.bug} - FX_WITHOUT | set(FX_BUGS)
    details = {name: problem(CASES[name], outcomes[name]) for name in failing - expected}
    assert failing == expected, details


def test_the_sweep_sees_crashes_differences_and_internal_errors():
    """The harness itself: a signal in one case is that case's failure and the next case
    still runs; a wrong value, an error only lazily and an internal error each fail."""
    lazy_only = "if d != 'cpu':\n    "
    cases = {
        "a_abort": Case(lazy_only + "import os; os.abort()\nout = 1"),
        "b_after_the_crash": Case("out = R(3) * 2"),
        "c_wrong_value": Case("out = R(3) + (1 if d != 'cpu' else 0)"),
        "d_raises_lazily": Case(lazy_only + "raise RuntimeError('lazy only')\nout = 1"),
        "e_internal": Case("raise (AssertionError if d != 'cpu' else ValueError)('x')"),
        "f_internal_assert": Case("raise RuntimeError('INTERNAL ASSERT FAILED at x.cpp')"),
        "g_same_error": Case("R(3).sum(5)"),
    }
    outcomes = run(cases)
    why = {name: problem(case, outcomes[name]) for name, case in cases.items()}
    assert outcomes["a_abort"].returncode < 0 and "signal" in why["a_abort"]
    assert why["b_after_the_crash"] is None and why["g_same_error"] is None
    assert "from the float64 run" in why["c_wrong_value"]
    assert "lazy raised where eager returned" in why["d_raises_lazily"]
    assert "internal error type AssertionError" in why["e_internal"]
    assert "internal error" in why["f_internal_assert"]
