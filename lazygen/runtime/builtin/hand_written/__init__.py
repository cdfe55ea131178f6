"""The hand-written pieces the built-in op list (``yaml/builtin.yaml``) asks for; the
default ``--hand-written`` package of ``lazygen gen``, as a new backend's
``<package>.hand_written`` is its own:

* ``kernels``: kernels of ``supported`` ops;
* ``shape_functions``: ``compute_shape_<kernel>`` of ops without a meta kernel;
* ``lowerings``: ``lower_<node>`` of non-native ops and of ``LowerDeclOnly`` nodes;
* ``autograd``: kernels of the ``autograd`` section.
"""
