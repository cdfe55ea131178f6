"""Compiles of transformers models trained over many sequence lengths, and what the fixes
of docs/guides/recompiles.md cost: dynamic shapes, right-padding to a few lengths.

    python bench/lengths.py [--models gpt2,llama,bert] [--backends torchscript,jax]
                            [--modes static,dynamic,bucketed,masked] [--steps 20]

Workload (issue 49's): a transformers model from a small config (2 layers, width 32,
vocab 64, dropout off), AdamW, batch 2, ``--steps`` steps over the 16 lengths 17..32 in a
shuffled order (repeating), the loss read every step. Each (model, backend, mode) runs in
a fresh process, one thread, after the same steps on the CPU (eager) for the losses.

Modes:
* ``static``: sizes compiled in, the default recompile budget (what a user gets first);
* ``dynamic``: ``lr.init(dynamic_shapes=True)``;
* ``bucketed``: sizes compiled in, each batch right-padded to a multiple of 8 (24 or 32)
  with labels -100 on the padding and no attention mask (exact for causal models: no
  real token attends to a later one; a bidirectional model, BERT, sees the padding);
* ``masked``: the same padding with an ``attention_mask`` (0 on the padding), as
  transformers' docs pad.

Printed per run: lazygen graphs compiled, steps run uncompiled (past the budget), XLA
compiles of new sizes (jax) and the seconds they took, host reads and the refused ops'
graph cuts (an attention mask's costs), the wall time of all steps, the median of the
last 4 steps, and the largest loss difference from eager's run of the same batches
(``bucketed`` and ``masked``: from eager's run of the unpadded batches).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

MODELS = ("gpt2", "llama", "bert")
BACKENDS = ("torchscript", "jax")
MODES = ("static", "dynamic", "bucketed", "masked")
VOCAB = 64


def make_model(name: str) -> torch.nn.Module:
    """``name``'s model from a small config, dropout off (jax draws its own masks)."""
    import transformers

    torch.manual_seed(0)
    if name == "gpt2":
        config = transformers.GPT2Config(
            vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=2, n_inner=64,
            attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0, loss_type="ForCausalLM",
        )  # fmt: skip
        return transformers.GPT2LMHeadModel(config)
    if name == "llama":
        config = transformers.LlamaConfig(
            vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        )  # fmt: skip
        return transformers.LlamaForCausalLM(config)
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, loss_type="ForMaskedLM",
    )  # fmt: skip
    return transformers.BertForMaskedLM(config)


def lengths(steps: int) -> list[int]:
    """``steps`` lengths from 17..32 (16 distinct), shuffled, repeating."""
    return [17 + (i * 7) % 16 for i in range(steps)]


def batches(steps: int, mode: str) -> list[dict]:
    """The model's keyword arguments per step (padded per ``mode``)."""
    generator = torch.Generator().manual_seed(1)
    out = []
    for n in lengths(steps):
        ids = torch.randint(1, VOCAB, (2, n), generator=generator)
        if mode not in ("bucketed", "masked"):
            out.append({"input_ids": ids, "labels": ids.clone()})
            continue
        padded = -(-n // 8) * 8
        labels = torch.full((2, padded), -100)
        labels[:, :n] = ids
        step = {"input_ids": torch.nn.functional.pad(ids, (0, padded - n)), "labels": labels}
        if mode == "masked":
            mask = torch.zeros(2, padded, dtype=torch.long)
            mask[:, :n] = 1
            step["attention_mask"] = mask
        out.append(step)
    return out


def train(model, steps: list[dict], device: str, lr=None) -> tuple[list[float], list[float]]:
    """Losses and each step's seconds of AdamW over ``steps`` on ``device``."""
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses, seconds = [], []
    for kwargs in steps:
        start = time.perf_counter()
        loss = model(**{k: v.to(device) for k, v in kwargs.items()}).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if lr is not None:
            lr.mark_step()
        losses.append(loss.item())
        seconds.append(time.perf_counter() - start)
    return losses, seconds


def run_one(model_name: str, mode: str, steps: int) -> dict:
    import lazygen.runtime as lr

    torch.set_num_threads(1)
    lr.init(dynamic_shapes=mode == "dynamic")  # before any backward()
    reference = "static" if mode in ("bucketed", "masked") else mode
    eager, _ = train(make_model(model_name), batches(steps, reference), "cpu")
    lr.metrics.reset()
    losses, seconds = train(make_model(model_name), batches(steps, mode), "lazygen", lr)
    report = lr.metrics.fallback_report()
    size_compile = lr.metrics.metric_data("JaxSizeCompileTime")
    compile_time = lr.metrics.metric_data("CompileTime")
    return {
        "compiles": lr.metrics.counter_value("UncachedCompile") or 0,
        "uncompiled": lr.metrics.counter_value("UncompiledGraphRun") or 0,
        "xla_compiles": lr.metrics.counter_value("JaxSizeCompile") or 0,
        "xla_s": size_compile[1] if size_compile else 0.0,
        "compile_s": compile_time[1] if compile_time else 0.0,
        "host_reads": sum(e.count for e in report.host_reads),
        "refused_cuts": sum(e.graph_cuts for e in report.refused),
        "refused": sorted({e.op for e in report.refused}),
        "total_s": sum(seconds),
        "late_step_ms": statistics.median(seconds[-4:]) * 1e3,
        "loss_diff": max(abs(a - b) for a, b in zip(losses, eager, strict=True)),
    }


def _child(model: str, backend: str, mode: str, steps: int) -> dict | None:
    cmd = [sys.executable, __file__, "--child", f"{model},{backend},{mode}", "--steps", str(steps)]
    env = dict(os.environ, LAZYGEN_BACKEND=backend, OMP_NUM_THREADS="1")
    env.pop("LAZYGEN_DYNAMIC_SHAPES", None)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  {model} {backend} {mode}: failed ({tail})", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _choices(parser, text: str, known: tuple[str, ...], what: str) -> list[str]:
    chosen = [c for c in text.split(",") if c]
    unknown = [c for c in chosen if c not in known]
    if unknown or not chosen:
        parser.error(f"unknown {what} {', '.join(unknown) or '(none)'}; known: {', '.join(known)}")
    return chosen


def _row(model: str, backend: str, mode: str, r: dict) -> str:
    xla = f"{r['xla_compiles']} ({r['xla_s']:.0f} s)" if backend == "jax" else "-"
    refused = f"{r['refused_cuts']} ({', '.join(r['refused'])})" if r["refused_cuts"] else "0"
    return (
        f"| {model} | {backend} | {mode} | {r['compiles']} | {r['uncompiled']} | {xla} "
        f"| {r['host_reads']} | {refused} | {r['total_s']:.1f} s | {r['late_step_ms']:.0f} ms "
        f"| {r['loss_diff']:.1e} |"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--child", metavar="MODEL,BACKEND,MODE")
    args = parser.parse_args(argv)
    if args.steps < 4:
        parser.error("--steps must be at least 4")
    if args.child:
        model, _, mode = args.child.split(",")
        print(json.dumps(run_one(model, mode, args.steps)))
        return
    models = _choices(parser, args.models, MODELS, "model(s)")
    backends = _choices(parser, args.backends, BACKENDS, "backend(s)")
    modes = _choices(parser, args.modes, MODES, "mode(s)")
    print(
        f"lengths: {args.steps} steps over {len(set(lengths(args.steps)))} lengths (17..32), "
        "AdamW, batch 2, 1 thread"
    )
    print(
        "| model | backend | mode | graphs compiled | steps uncompiled | XLA size compiles "
        "| host reads | refused-op cuts | all steps | late step | loss vs eager |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for model in models:
        for backend in backends:
            for mode in modes:
                r = _child(model, backend, mode, args.steps)
                if r is not None:
                    print(_row(model, backend, mode, r), flush=True)


if __name__ == "__main__":
    main()
