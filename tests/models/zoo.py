"""Third-party models from small configurations (random weights, nothing downloaded), each
with a batch maker and the loss it trains on: transformers' and diffusers' (denoisers and
an autoencoder, trained on the mean squared error to a random target). Every builder is seeded by the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

VOCAB = 96
BATCH, SEQ = 2, 8


@dataclass(frozen=True)
class ModelSpec:
    """``build()`` returns the model; ``batch(generator)`` a dict of keyword inputs whose
    call returns an output with ``.loss`` (transformers models do, given labels)."""

    package: str  # the distribution the model comes from (the test skips without it)
    build: Callable[[], torch.nn.Module]
    batch: Callable[[torch.Generator], dict]
    # why the model cannot run although its package is installed, checked by the worker
    # before anything is built (None: it can)
    unavailable: Callable[[], str | None] = lambda: None
    why_not_installed: str = "pip install -e .[test]"
    # also trained in a training script's loop (gradient checkpointing and clipping), then
    # decoding greedily with ``generate`` (the worker's ``loop`` mode)
    loop: bool = False
    # Fallbacks the model's own code causes on the lazy device: data-dependent host reads
    # (``bool(tensor)``, ``.item()``), which sync on any accelerator too.
    host_reads: frozenset = frozenset()
    # Under torch.compile: FX nodes (name prefixes) that may run as eager segments, i.e.
    # ops of the model that read values on the host (a capture must not replay them).
    eager_segments: tuple = ()
    # On the lazy device: graphs per step whose sizes are values the model reads on the host
    # (transformers' MoE slices its tokens per expert by counts read with ``tolist()``).
    # Each is compiled again whenever those counts change, as on any device that compiles
    # graphs for their sizes; every other graph must be cached after warm-up.
    graphs_sized_by_data: int = 0
    # Under torch.compile: the same for a dimension Dynamo made dynamic because the data
    # sizes it (the tokens an expert receives): lazygen captures such a graph once per size.
    captures_sized_by_data: int = 0
    # mode -> (words of the exception it raises today, why): that exception is an xfail,
    # anything else (a crash, another error, success) fails the test
    known_failures: dict = field(default_factory=dict)


def _tokens(generator, shape=(BATCH, SEQ), low=1):
    return torch.randint(low, VOCAB, shape, generator=generator)


def _causal_lm_batch(generator):
    ids = _tokens(generator)
    return {"input_ids": ids, "labels": ids}


def _seq2seq_batch(generator):
    ids = _tokens(generator)
    labels = _tokens(generator, (BATCH, SEQ - 2))
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


def _masked_lm_batch(generator):
    ids = _tokens(generator)
    labels = ids.clone()
    labels[:, ::2] = -100  # the ignored positions take part in the loss's reduction
    mask = torch.ones_like(ids)
    mask[0, -2:] = 0  # one padded sequence: the attention mask is not all ones
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def _gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=2, n_inner=64
    )
    return GPT2LMHeadModel(config)


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,  # grouped-query attention
        max_position_embeddings=64,
    )
    return LlamaForCausalLM(config)


def _t5():
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        vocab_size=VOCAB,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        decoder_start_token_id=0,
        pad_token_id=0,
    )
    return T5ForConditionalGeneration(config)


def _bert():
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
    )
    return BertForMaskedLM(config)


#: The sizes of the zoo's encoder-decoder transformers (BART, Whisper).
_ENCODER_DECODER = dict(
    d_model=32,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
)


def _bart():
    from transformers import BartConfig, BartForConditionalGeneration

    config = BartConfig(
        vocab_size=VOCAB,
        **_ENCODER_DECODER,
        max_position_embeddings=32,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
    )
    return BartForConditionalGeneration(config)


def _vit():
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(
        image_size=16,
        patch_size=4,
        num_channels=3,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=4,
    )
    return ViTForImageClassification(config)


def _resnet():
    from transformers import ResNetConfig, ResNetForImageClassification

    config = ResNetConfig(
        num_channels=3,
        embedding_size=8,
        hidden_sizes=[8, 16],
        depths=[1, 1],
        layer_type="bottleneck",
        num_labels=4,
    )
    return ResNetForImageClassification(config)


def _mixtral():
    from transformers import MixtralConfig, MixtralForCausalLM

    config = MixtralConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        max_position_embeddings=64,
    )
    return MixtralForCausalLM(config)


def _swin():
    """Shifted windows: ``torch.roll``, window partitions as views, a relative position
    bias gathered by index, stochastic depth."""
    from transformers import SwinConfig, SwinForImageClassification

    config = SwinConfig(
        image_size=16,
        patch_size=2,
        embed_dim=8,
        depths=[1, 1],
        num_heads=[2, 2],
        window_size=4,
        num_labels=4,
        drop_path_rate=0.1,
    )
    return SwinForImageClassification(config)


def _deberta_v2():
    """Disentangled attention: relative positions bucketed by log, content-to-position and
    position-to-content scores gathered by index."""
    from transformers import DebertaV2Config, DebertaV2ForMaskedLM

    config = DebertaV2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=32,
        relative_attention=True,
        position_buckets=8,
        pos_att_type=["p2c", "c2p"],
    )
    return DebertaV2ForMaskedLM(config)


def _mamba():
    """A state-space model: transformers' reference selective scan (a Python loop over
    time steps), a causal depthwise convolution, no attention."""
    from transformers import MambaConfig, MambaForCausalLM

    config = MambaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        state_size=4,
        expand=2,
    )
    return MambaForCausalLM(config)


def _hubert():
    """Speech: a convolutional feature encoder with GroupNorm, a weight-normed positional
    convolution, then a transformer encoder and mean pooling."""
    from transformers import HubertConfig, HubertForSequenceClassification

    config = HubertConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(16, 16),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=4,
        num_conv_pos_embedding_groups=2,
        mask_time_prob=0.0,
        num_labels=4,
    )
    return HubertForSequenceClassification(config)


def _gemma2():
    """Sliding-window attention alternating with global layers, logits soft-capped by
    ``tanh``, RMSNorm around both sublayers; ``generate`` keeps a hybrid cache."""
    from transformers import Gemma2Config, Gemma2ForCausalLM

    config = Gemma2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        query_pre_attn_scalar=8,
        sliding_window=4,
        max_position_embeddings=64,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    return Gemma2ForCausalLM(config)


def _bloom():
    """ALiBi: attention biased by per-head slopes times key positions (``baddbmm``) instead
    of position embeddings; a LayerNorm after the embeddings."""
    from transformers import BloomConfig, BloomForCausalLM

    config = BloomConfig(vocab_size=VOCAB, hidden_size=32, n_layer=2, n_head=4, pad_token_id=0)
    return BloomForCausalLM(config)


def _mamba2():
    """Mamba-2's state-space duality: the chunked scan of transformers' reference path
    (segment sums by ``cumsum``, ``exp`` of masked differences, per-chunk states), grouped
    RMSNorm gated by the input, multi-head states."""
    from transformers import Mamba2Config, Mamba2ForCausalLM

    config = Mamba2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        num_heads=4,
        head_dim=16,
        state_size=4,
        expand=2,
        n_groups=1,
        num_hidden_layers=2,
        chunk_size=4,
        pad_token_id=0,
    )
    return Mamba2ForCausalLM(config)


def _whisper():
    """Speech to text: two ``conv1d`` over log-mel features into an encoder with
    sinusoidal positions, a decoder cross-attending to it."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    config = WhisperConfig(
        vocab_size=VOCAB,
        num_mel_bins=8,
        **_ENCODER_DECODER,
        max_source_positions=8,
        max_target_positions=16,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
    )
    return WhisperForConditionalGeneration(config)


def _speech_batch(generator):
    """Log-mel features (the encoder's convolutions halve 16 frames to its 8 positions)."""
    return {
        "input_features": torch.randn(BATCH, 8, 16, generator=generator),
        "labels": _tokens(generator, (BATCH, SEQ - 2)),
    }


class _Contrastive(torch.nn.Module):
    """A two-tower model called with ``return_loss=True`` (a flag, not a tensor input)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, **inputs):
        return self.model(**inputs, return_loss=True)


def _clip():
    """Contrastive image-text pretraining: a text and a vision transformer, normalised
    embeddings, a learned temperature (``logit_scale.exp()``), cross-entropy both ways."""
    from transformers import CLIPConfig, CLIPModel

    tower = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)
    config = CLIPConfig(
        text_config=dict(vocab_size=VOCAB, max_position_embeddings=32, **tower),
        vision_config=dict(image_size=16, patch_size=4, **tower),
        projection_dim=16,
    )
    return _Contrastive(CLIPModel(config))


def _image_text_batch(generator):
    return {
        "input_ids": _tokens(generator),
        "pixel_values": torch.randn(BATCH, 3, 16, 16, generator=generator),
    }


def _time_series():
    """Probabilistic forecasting: lagged values and time features, a mean scaler, and the
    negative log-likelihood of a Student's t distribution (``lgamma``, ``softplus``)."""
    from transformers import TimeSeriesTransformerConfig, TimeSeriesTransformerForPrediction

    config = TimeSeriesTransformerConfig(
        prediction_length=4,
        context_length=12,
        lags_sequence=[1, 2, 3],
        num_time_features=1,
        distribution_output="student_t",
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
    )
    return TimeSeriesTransformerForPrediction(config)


def _forecast_batch(generator, context=12, lags=3, horizon=4):
    past = context + lags
    return {
        "past_values": torch.randn(BATCH, past, generator=generator),
        "past_time_features": torch.randn(BATCH, past, 1, generator=generator),
        "past_observed_mask": torch.ones(BATCH, past),
        "future_values": torch.randn(BATCH, horizon, generator=generator),
        "future_time_features": torch.randn(BATCH, horizon, 1, generator=generator),
    }


def _switch():
    """A mixture of experts routed top-1 (``F.one_hot`` of the chosen expert, whose class
    checks are tensor assertions), with the router's jitter noise (``uniform_``) and an
    expert capacity (``cumsum`` of the one-hot routes)."""
    from transformers import SwitchTransformersConfig, SwitchTransformersForConditionalGeneration

    config = SwitchTransformersConfig(
        vocab_size=VOCAB,
        d_model=32,
        d_kv=8,
        d_ff=64,
        expert_capacity=8,
        num_layers=1,
        num_sparse_encoder_layers=1,
        num_decoder_layers=1,
        num_sparse_decoder_layers=1,
        num_heads=4,
        num_experts=4,
        relative_attention_num_buckets=8,
        router_jitter_noise=0.01,
        decoder_start_token_id=0,
        pad_token_id=0,
    )
    return SwitchTransformersForConditionalGeneration(config)


def _reformer():
    """Reversible residual layers (the backward recomputes each layer's input from its output,
    re-seeding dropout with ``torch.seed()``), local and LSH attention (random rotations,
    ``argsort`` of hash buckets), its input padded to ``np.lcm`` of the chunk lengths."""
    from transformers import ReformerConfig, ReformerModelWithLMHead

    config = ReformerConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_attention_heads=2,
        attention_head_size=16,
        feed_forward_size=64,
        attn_layers=["local", "lsh"],
        axial_pos_embds=False,
        max_position_embeddings=SEQ,
        local_attn_chunk_length=4,
        lsh_attn_chunk_length=4,
        num_buckets=2,
        num_hashes=1,
        is_decoder=True,
    )
    return ReformerModelWithLMHead(config)


def _fnet():
    """Token mixing by Fourier transforms instead of attention: ``fftn`` over the sequence
    and hidden dimensions, its real part (complex tensors inside the graph)."""
    from transformers import FNetConfig, FNetForMaskedLM

    config = FNetConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        intermediate_size=64,
        max_position_embeddings=32,
    )
    return FNetForMaskedLM(config)


def _unpadded_masked_lm_batch(generator):
    """A masked LM's batch for a model that takes no attention mask (FNet)."""
    batch = _masked_lm_batch(generator)
    del batch["attention_mask"]
    return batch


def _funnel():
    """Funnel attention: the sequence pooled between blocks (strided mean pooling of the
    hidden states and the attention mask), relative position attention, a decoder that
    upsamples back to the tokens (``repeat_interleave``)."""
    from transformers import FunnelConfig, FunnelForMaskedLM

    config = FunnelConfig(
        vocab_size=VOCAB,
        block_sizes=[1, 1],
        d_model=32,
        n_head=2,
        d_head=16,
        d_inner=64,
        num_decoder_layers=1,
        max_position_embeddings=32,
    )
    return FunnelForMaskedLM(config)


def _led():
    """Longformer's sliding-window attention in an encoder-decoder: the sequence padded to
    the window, chunks as ``as_strided`` views of a transpose, diagonals shifted by padding
    and slicing, a host read whether any token attends globally."""
    from transformers import LEDConfig, LEDForConditionalGeneration

    config = LEDConfig(
        vocab_size=VOCAB,
        **_ENCODER_DECODER,
        max_encoder_position_embeddings=32,
        max_decoder_position_embeddings=32,
        attention_window=[4, 4],
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
    )
    return LEDForConditionalGeneration(config)


def _prophetnet():
    """N-gram prediction: the decoder predicts two future tokens per position with
    n-gram self-attention streams, relative position buckets, a loss over both streams with
    label smoothing."""
    from transformers import ProphetNetConfig, ProphetNetForConditionalGeneration

    config = ProphetNetConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        num_encoder_layers=1,
        num_decoder_layers=1,
        num_encoder_attention_heads=2,
        num_decoder_attention_heads=2,
        max_position_embeddings=32,
        ngram=2,
        num_buckets=8,
        relative_max_distance=16,
        pad_token_id=0,
        decoder_start_token_id=0,
    )
    return ProphetNetForConditionalGeneration(config)


def _perceiver():
    """Cross-attention from a few learned latents to the byte inputs, self-attention among
    the latents, then a decoder cross-attending from output queries back to them."""
    from transformers import PerceiverConfig, PerceiverForMaskedLM

    config = PerceiverConfig(
        vocab_size=VOCAB,
        max_position_embeddings=SEQ,
        num_latents=4,
        d_latents=32,
        d_model=16,
        num_blocks=1,
        num_self_attends_per_block=1,
        num_self_attention_heads=2,
        num_cross_attention_heads=1,
    )
    return PerceiverForMaskedLM(config)


def _patchtst():
    """A time series cut into patches (``unfold``), channel-independent attention over the
    patches, instance normalisation by the series' own mean and scale, an MSE loss."""
    from transformers import PatchTSTConfig, PatchTSTForPrediction

    config = PatchTSTConfig(
        num_input_channels=2,
        context_length=16,
        patch_length=4,
        patch_stride=4,
        prediction_length=4,
        d_model=16,
        num_attention_heads=2,
        num_hidden_layers=1,
        ffn_dim=32,
    )
    return PatchTSTForPrediction(config)


def _patch_forecast_batch(generator):
    return {
        "past_values": torch.randn(BATCH, 16, 2, generator=generator),
        "future_values": torch.randn(BATCH, 4, 2, generator=generator),
    }


def _convnext():
    """Depthwise 7x7 convolutions, LayerNorm over channels of a permuted (channels-last)
    tensor, layer scale, stochastic depth."""
    from transformers import ConvNextConfig, ConvNextForImageClassification

    config = ConvNextConfig(
        num_channels=3,
        patch_size=2,
        hidden_sizes=[8, 16],
        depths=[1, 1],
        num_stages=2,
        num_labels=4,
        drop_path_rate=0.1,
    )
    return ConvNextForImageClassification(config)


def _cvt():
    """Convolutions inside attention: queries, keys and values projected by depthwise
    convolutions with BatchNorm over the tokens laid back out as an image, keys and values
    strided; a class token in the last stage only. (Its embeddings' dropout acts on a
    permuted tensor, where the lazy device draws other masks than eager: off here.)"""
    from transformers import CvtConfig, CvtForImageClassification

    def per_stage(first, second):
        return [first, second]

    config = CvtConfig(
        num_channels=3,
        patch_sizes=per_stage(3, 3),
        patch_stride=per_stage(2, 2),
        patch_padding=per_stage(1, 1),
        embed_dim=per_stage(8, 16),
        num_heads=per_stage(1, 2),
        depth=per_stage(1, 2),  # transformers indexes stage s's drop paths at s: depth > s
        mlp_ratio=per_stage(2.0, 2.0),
        attention_drop_rate=per_stage(0.0, 0.1),
        drop_rate=per_stage(0.0, 0.0),
        drop_path_rate=per_stage(0.0, 0.1),
        qkv_bias=per_stage(True, True),
        cls_token=per_stage(False, True),
        qkv_projection_method=per_stage("dw_bn", "dw_bn"),
        kernel_qkv=per_stage(3, 3),
        padding_kv=per_stage(1, 1),
        stride_kv=per_stage(2, 2),
        padding_q=per_stage(1, 1),
        stride_q=per_stage(1, 1),
        num_labels=4,
    )
    return CvtForImageClassification(config)


def _segformer():
    """Overlapping patch embeddings, attention over keys and values reduced by a strided
    convolution, a depthwise convolution in the MLP, an all-MLP decode head upsampling every
    stage (``interpolate``), cross-entropy per pixel with an ignored label. (The decode
    head's dropout acts on a channels-last tensor, where the lazy device draws other masks
    than eager: off here.)"""
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    config = SegformerConfig(
        num_channels=3,
        num_encoder_blocks=2,
        depths=[1, 1],
        sr_ratios=[2, 1],
        hidden_sizes=[8, 16],
        patch_sizes=[3, 3],
        strides=[2, 2],
        num_attention_heads=[1, 2],
        mlp_ratios=[2, 2],
        decoder_hidden_size=16,
        num_labels=4,
        drop_path_rate=0.1,
        classifier_dropout_prob=0.0,
    )
    return SegformerForSemanticSegmentation(config)


def _segmentation_batch(generator, size=16):
    labels = torch.randint(0, 4, (BATCH, size, size), generator=generator)
    labels[0, :2] = 255  # the ignored label
    return {
        "pixel_values": torch.randn(BATCH, 3, size, size, generator=generator),
        "labels": labels,
    }


class _Denoiser(torch.nn.Module):
    """A diffusers model trained as diffusion models are: the mean squared error of its
    prediction (``.sample``) to a target, returned as ``.loss`` like the zoo's other models."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, target, **inputs):
        from types import SimpleNamespace

        prediction = self.model(**inputs).sample
        return SimpleNamespace(loss=torch.nn.functional.mse_loss(prediction, target))


def _unet2d_condition():
    """Stable Diffusion's denoiser: ResNet blocks with GroupNorm and timestep embeddings,
    cross-attention to text states (``group_norm`` of a transposed view in each attention
    block), down- and upsampling with skip connections."""
    from diffusers import UNet2DConditionModel

    return _Denoiser(
        UNet2DConditionModel(
            sample_size=8,
            in_channels=4,
            out_channels=4,
            layers_per_block=1,
            block_out_channels=(8, 16),
            norm_num_groups=4,
            attention_head_dim=4,
            cross_attention_dim=8,
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
            mid_block_type=None,  # a third attention block: compile time, nothing new
        )
    )


def _denoising_batch(generator, channels=4, size=8):
    return {
        "sample": torch.randn(BATCH, channels, size, size, generator=generator),
        "timestep": torch.randint(0, 1000, (BATCH,), generator=generator),
        "encoder_hidden_states": torch.randn(BATCH, 5, 8, generator=generator),
        "target": torch.randn(BATCH, channels, size, size, generator=generator),
    }


class _MobileNetV3(torch.nn.Module):
    """A MobileNetV3-style network in plain torch (transformers has none): a strided stem,
    inverted residual blocks (expansion, depthwise convolution, squeeze-and-excitation
    gated by ``hardsigmoid``, projection) with ``hardswish`` activations and batch norm in
    training mode, pooled and classified; the cross-entropy as ``.loss``."""

    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn

        def conv(cin, cout, kernel, stride=1, groups=1):
            padding = kernel // 2
            layer = nn.Conv2d(cin, cout, kernel, stride, padding, groups=groups, bias=False)
            return nn.Sequential(layer, nn.BatchNorm2d(cout))

        self.stem = nn.Sequential(conv(3, 8, 3, 2), nn.Hardswish())
        self.expand = nn.Sequential(conv(8, 16, 1), nn.Hardswish())
        self.depthwise = nn.Sequential(conv(16, 16, 3, 2, groups=16), nn.Hardswish())
        self.excite = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Conv2d(16, 4, 1), nn.ReLU(), nn.Conv2d(4, 16, 1),
            nn.Hardsigmoid(),
        )  # fmt: skip
        self.project = conv(16, 8, 1)
        self.head = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 16), nn.Hardswish(),
            nn.Linear(16, 4),
        )  # fmt: skip

    def forward(self, pixel_values, labels):
        from types import SimpleNamespace

        x = self.stem(pixel_values)
        y = self.depthwise(self.expand(x))
        y = self.project(y * self.excite(y))
        x = torch.nn.functional.avg_pool2d(x, 2) + y  # the residual, at the block's stride
        logits = self.head(x)
        return SimpleNamespace(loss=torch.nn.functional.cross_entropy(logits, labels))


class _VariationalAutoencoder(torch.nn.Module):
    """AutoencoderKL trained as a VAE: encode, sample the latent (``randn`` on the model's
    device), decode; reconstruction error plus a weighted KL divergence, as ``.loss``."""

    def __init__(self) -> None:
        super().__init__()
        from diffusers import AutoencoderKL

        self.vae = AutoencoderKL(
            in_channels=3,
            out_channels=3,
            block_out_channels=(8, 16),
            layers_per_block=1,
            down_block_types=("DownEncoderBlock2D",) * 2,
            up_block_types=("UpDecoderBlock2D",) * 2,
            latent_channels=4,
            norm_num_groups=4,
            sample_size=16,
        )

    def forward(self, sample, target):
        from types import SimpleNamespace

        posterior = self.vae.encode(sample).latent_dist
        reconstruction = self.vae.decode(posterior.sample()).sample
        loss = torch.nn.functional.mse_loss(reconstruction, target)
        return SimpleNamespace(loss=loss + 1e-3 * posterior.kl().mean())


def _autoencoder_batch(generator):
    return {
        "sample": torch.randn(BATCH, 3, 16, 16, generator=generator),
        "target": torch.randn(BATCH, 3, 16, 16, generator=generator),
    }


def _flux():
    """Flux's MMDiT: joint text-image attention blocks, then single-stream blocks,
    rotary position embeddings over three axes, AdaLayerNorm modulated by the timestep."""
    from diffusers import FluxTransformer2DModel

    return _Denoiser(
        FluxTransformer2DModel(
            patch_size=1,
            in_channels=4,
            num_layers=1,
            num_single_layers=1,
            attention_head_dim=16,
            num_attention_heads=2,
            joint_attention_dim=8,
            pooled_projection_dim=8,
            axes_dims_rope=(4, 4, 8),
        )
    )


def _flux_batch(generator, tokens=5):
    grid = torch.meshgrid(torch.zeros(1), torch.arange(4.0), torch.arange(4.0), indexing="ij")
    return {
        "hidden_states": torch.randn(BATCH, 16, 4, generator=generator),
        "timestep": torch.rand(BATCH, generator=generator),
        "encoder_hidden_states": torch.randn(BATCH, tokens, 8, generator=generator),
        "pooled_projections": torch.randn(BATCH, 8, generator=generator),
        "img_ids": torch.stack(grid, -1).reshape(16, 3),  # (frame, row, column) per token
        "txt_ids": torch.zeros(tokens, 3),
        "target": torch.randn(BATCH, 16, 4, generator=generator),
    }


def _audio_batch(generator):
    return {
        "input_values": torch.randn(BATCH, 400, generator=generator),
        "labels": torch.randint(0, 4, (BATCH,), generator=generator),
    }


def _image_batch(generator, size=16):
    return {
        "pixel_values": torch.randn(BATCH, 3, size, size, generator=generator),
        "labels": torch.randint(0, 4, (BATCH,), generator=generator),
    }


def _timm_resnet():
    import timm

    return _TimmClassifier(timm.create_model("resnet18", pretrained=False, num_classes=4))


class _TimmClassifier(torch.nn.Module):
    """A timm model with the loss the zoo's models return, as ``.loss``."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, pixel_values, labels):
        from types import SimpleNamespace

        logits = self.model(pixel_values)
        return SimpleNamespace(loss=torch.nn.functional.cross_entropy(logits, labels))


def _importable(module: str, why: str) -> Callable[[], str | None]:
    """Unavailable when ``module`` does not import here (the error and ``why`` say why)."""

    def check():
        import importlib

        try:
            importlib.import_module(module)
        except Exception as error:  # ImportError, or torchvision's RuntimeError (see below)
            return f"{module} does not import ({type(error).__name__}: {error}); {why}"
        return None

    return check


_NO_TORCHVISION = (
    "timm imports torchvision, whose PyPI wheels for torch 2.13 are CUDA builds whose C++ "
    "ops do not load on a CPU torch (import raises 'operator torchvision::nms does not "
    "exist'): neither is a test extra"
)

# transformers' masking_utils asks ``padding_mask.all()`` to skip an all-ones mask.
_MASK_READS = frozenset({"aten::_local_scalar_dense"})

MODELS: dict[str, ModelSpec] = {
    "gpt2": ModelSpec("transformers", _gpt2, _causal_lm_batch),
    "llama": ModelSpec("transformers", _llama, _causal_lm_batch, loop=True),
    "t5": ModelSpec("transformers", _t5, _seq2seq_batch, host_reads=_MASK_READS, loop=True),
    "bert": ModelSpec("transformers", _bert, _masked_lm_batch, host_reads=_MASK_READS),
    "bart": ModelSpec("transformers", _bart, _seq2seq_batch, host_reads=_MASK_READS),
    "vit": ModelSpec("transformers", _vit, _image_batch),
    "resnet": ModelSpec("transformers", _resnet, _image_batch),
    "mobilenet_v3": ModelSpec("torch", _MobileNetV3, _image_batch),
    "mixtral": ModelSpec(
        "transformers",
        _mixtral,
        _causal_lm_batch,
        # transformers' grouped_mm_fallback loops over experts by offs.tolist()
        eager_segments=("grouped_mm_fallback", "getitem"),
        # per step: the graphs after each of the 2 MoE layers' offs.tolist() and the last
        # one (LAZYGEN_EXPLAIN_RECOMPILES=1 names transformers' moe.py slice_copy each time)
        graphs_sized_by_data=3,
    ),
    "swin": ModelSpec("transformers", _swin, _image_batch),
    "deberta_v2": ModelSpec("transformers", _deberta_v2, _masked_lm_batch, host_reads=_MASK_READS),
    "mamba": ModelSpec("transformers", _mamba, _causal_lm_batch),
    # transformers warns about padding without an attention mask: ``pad_token_id in ids``
    "reformer": ModelSpec("transformers", _reformer, _causal_lm_batch, host_reads=_MASK_READS),
    "switch_transformers": ModelSpec(
        "transformers",
        _switch,
        _seq2seq_batch,
        host_reads=_MASK_READS,
        # each expert takes the tokens routed to it (boolean indexing: a size read on the
        # host), 4 experts in each of 2 layers: the graphs after those reads, every step
        graphs_sized_by_data=11,
        # an expert's forward and backward, captured again for a token count not seen before
        captures_sized_by_data=2,
    ),
    "hubert": ModelSpec("transformers", _hubert, _audio_batch),
    "gemma2": ModelSpec("transformers", _gemma2, _causal_lm_batch, loop=True),
    "bloom": ModelSpec("transformers", _bloom, _causal_lm_batch, loop=True),
    "mamba2": ModelSpec("transformers", _mamba2, _causal_lm_batch, loop=True),
    "whisper": ModelSpec("transformers", _whisper, _speech_batch),
    "clip": ModelSpec("transformers", _clip, _image_text_batch),
    # torch.distributions validates the Student's t arguments and the target on the host
    # (``constraint.check(...).all()``: one read each, as on any device)
    "time_series": ModelSpec("transformers", _time_series, _forecast_batch, host_reads=_MASK_READS),
    "fnet": ModelSpec("transformers", _fnet, _unpadded_masked_lm_batch),
    "funnel": ModelSpec("transformers", _funnel, _masked_lm_batch, host_reads=_MASK_READS),
    # Longformer asks ``is_index_global_attn.flatten().any().item()`` in each layer
    "led": ModelSpec("transformers", _led, _seq2seq_batch, host_reads=_MASK_READS),
    "prophetnet": ModelSpec("transformers", _prophetnet, _seq2seq_batch, host_reads=_MASK_READS),
    "perceiver": ModelSpec("transformers", _perceiver, _masked_lm_batch, host_reads=_MASK_READS),
    "patchtst": ModelSpec("transformers", _patchtst, _patch_forecast_batch),
    "convnext": ModelSpec("transformers", _convnext, _image_batch),
    "cvt": ModelSpec("transformers", _cvt, _image_batch),
    "segformer": ModelSpec("transformers", _segformer, _segmentation_batch),
    # diffusers: random weights from small configurations, trained on the MSE to a target
    "unet2d_condition": ModelSpec("diffusers", _unet2d_condition, _denoising_batch),
    "autoencoder_kl": ModelSpec("diffusers", _VariationalAutoencoder, _autoencoder_batch),
    "flux": ModelSpec("diffusers", _flux, _flux_batch),
    # timm imports torchvision, and PyPI's torchvision wheels for torch 2.13 are CUDA
    # builds whose C++ ops do not load on a CPU torch ("operator torchvision::nms does
    # not exist" at import): neither is a test extra. Runs where a CPU torchvision is.
    "timm_resnet": ModelSpec(
        "timm",
        _timm_resnet,
        lambda generator: _image_batch(generator, size=32),
        unavailable=_importable("timm", _NO_TORCHVISION),
        why_not_installed=_NO_TORCHVISION,
    ),
}
