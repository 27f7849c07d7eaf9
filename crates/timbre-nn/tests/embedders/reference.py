"""The embedders' reference for `tests/embedders/mod.rs`: Applio's `HubertModelWithFinalProj`
(rvc/lib/utils.py: transformers' HubertModel with a `final_proj` Linear) with random weights, in
each architecture the embedders Applio ships are made of, saved as Applio ships them
(config.json + pytorch_model.bin), with Applio's features
of a random input: v2 = last_hidden_state, v1 = final_proj(last_hidden_state)
(rvc/infer/pipeline.py).

Usage: reference.py DIR; writes DIR/<variant>/ and DIR/<variant>/io.safetensors (audio, v1, v2).
"""

import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn
from transformers import HubertConfig, HubertModel


class HubertModelWithFinalProj(HubertModel):
    def __init__(self, config):
        super().__init__(config)
        self.final_proj = nn.Linear(config.hidden_size, config.classifier_proj_size)


SMALL = dict(
    hidden_size=32,
    num_hidden_layers=3,
    num_attention_heads=4,
    intermediate_size=64,
    conv_dim=(16, 16, 16, 16, 16, 16, 16),
    num_conv_pos_embeddings=16,
    num_conv_pos_embedding_groups=4,
    classifier_proj_size=24,
)
# HuBERT base (contentvec, spin, spin-v2, the chinese, japanese and korean bases): a group norm
# on the first convolution, post-norm layers, no convolution biases. HuBERT large / XLS-R-shaped
# checkpoints (which a `custom` folder may be): layer norms after every convolution, pre-norm
# layers, convolution biases.
VARIANTS = {
    "base": dict(feat_extract_norm="group", do_stable_layer_norm=False, conv_bias=False),
    "large": dict(
        feat_extract_norm="layer",
        do_stable_layer_norm=True,
        conv_bias=True,
        feat_proj_layer_norm=True,
    ),
}


def main():
    out = Path(sys.argv[1])
    torch.manual_seed(5)
    audio = torch.randn(1, 16000) * 0.1
    for name, variant in VARIANTS.items():
        folder = out / name
        model = HubertModelWithFinalProj(HubertConfig(**SMALL, **variant)).eval()
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.02 * torch.randn_like(p))
            # Applio ships pytorch_model.bin (torch.save of the state dict); transformers 5 writes
            # only safetensors, so the state dict is saved as that file instead.
            model.save_pretrained(folder)
            (folder / "model.safetensors").unlink()
            torch.save(model.state_dict(), folder / "pytorch_model.bin")
            loaded = HubertModelWithFinalProj.from_pretrained(folder).eval()
            v2 = loaded(audio)["last_hidden_state"]
            v1 = loaded.final_proj(v2)
        save_file({"audio": audio, "v1": v1.contiguous(), "v2": v2.contiguous()}, folder / "io.safetensors")


if __name__ == "__main__":
    main()
