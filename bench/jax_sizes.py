"""What a new size costs on the jax backend, and what ``jax.export``'s shape polymorphism
would save: per new sequence length, ``jax.jit``'s trace and lowering and XLA's compile,
against an export with a symbolic length (lowered once) refined and compiled per length.

    python bench/jax_sizes.py [--lengths 6] [--layers 2]

Workload: transformer encoder layers written in ``jax.numpy`` (width 64, 4 heads, batch 4,
float32): a forward pass, reshapes to heads and back included, as lazygen's graphs hold
them. Each length is new to both paths (no cache hit); medians over the lengths. One
process, JAX's 64-bit mode on (as the jax backend runs). The lazy device's own figures
(a training step's graph: ``JaxSizeCompileTime``) come from ``bench/dynamic.py --impls
lazy-static-jax,lazy-dynamic-jax``.
"""

from __future__ import annotations

import argparse
import statistics
import time

WIDTH, HEADS, BATCH = 64, 4, 4


def _model(layers: int):
    import jax
    import jax.numpy as jnp

    keys = jax.random.split(jax.random.key(0), 3)
    w1 = jax.random.normal(keys[0], (WIDTH, 4 * WIDTH), jnp.float32) * 0.05
    w2 = jax.random.normal(keys[1], (4 * WIDTH, WIDTH), jnp.float32) * 0.05
    wq = jax.random.normal(keys[2], (WIDTH, WIDTH), jnp.float32) * 0.05

    def layer(x):
        b, s, h = x.shape
        q = (x @ wq).reshape(b, s, HEADS, h // HEADS).transpose(0, 2, 1, 3)
        a = jax.nn.softmax(q @ q.transpose(0, 1, 3, 2) / (h // HEADS) ** 0.5, axis=-1)
        o = (a @ q).transpose(0, 2, 1, 3).reshape(b * s, h)
        return (jax.nn.relu(o @ w1) @ w2).reshape(b, s, h) + x

    def forward(x):
        for _ in range(layers):
            x = layer(x)
        return x.mean(axis=1)

    return forward


def _timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def run(lengths: int, layers: int) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import export

    jax.config.update("jax_enable_x64", True)
    forward = _model(layers)
    length = export.symbolic_shape("s")[0]
    spec = jax.ShapeDtypeStruct((BATCH, length, WIDTH), jnp.float32)
    exported, export_s = _timed(lambda: export.export(jax.jit(forward))(spec))
    call = jax.jit(exported.call)
    times = {"jit_lower": [], "jit_compile": [], "export_lower": [], "export_compile": []}
    for i in range(lengths):
        n = 5 + 2 * i
        x = jax.random.normal(jax.random.key(n), (BATCH, n, WIDTH), jnp.float32)
        lowered, seconds = _timed(lambda x=x: jax.jit(forward).lower(x))
        times["jit_lower"].append(seconds)
        compiled, seconds = _timed(lowered.compile)
        times["jit_compile"].append(seconds)
        want = compiled(x)
        lowered, seconds = _timed(lambda x=x: call.lower(x))
        times["export_lower"].append(seconds)
        compiled, seconds = _timed(lowered.compile)
        times["export_compile"].append(seconds)
        np.testing.assert_allclose(np.asarray(compiled(x)), np.asarray(want), rtol=1e-5)
    result = {name: statistics.median(values) * 1e3 for name, values in times.items()}
    result["export_once"] = export_s * 1e3
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, default=6)
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args(argv)
    if args.lengths < 1 or args.layers < 1:
        parser.error("--lengths and --layers must be at least 1")
    try:
        import jax  # noqa: F401
    except ImportError:
        parser.error("JAX is not installed: pip install lazygen[jax]")
    r = run(args.lengths, args.layers)
    print(
        f"jax_sizes: {args.layers} encoder layer(s), {args.lengths} new lengths, median per "
        "length (ms)"
    )
    print("| path | once | per new length: trace + lower | per new length: XLA compile |")
    print("|---|---:|---:|---:|")
    print(f"| jax.jit (the jax backend) | - | {r['jit_lower']:.1f} | {r['jit_compile']:.1f} |")
    print(
        f"| jax.export, symbolic length | {r['export_once']:.1f} | {r['export_lower']:.1f} "
        f"| {r['export_compile']:.1f} |"
    )


if __name__ == "__main__":
    main()
