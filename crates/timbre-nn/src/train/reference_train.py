# The reference side of `parity_tests.rs`: rvc_next 0.2.16's discriminators, losses and
# checkpoint functions, and torch 2.11's AdamW and ExponentialLR, seeded, writing their inputs,
# parameters and outputs for the Rust tests to compare with, then checking what Rust wrote back.
#
# usage: python reference_train.py TASK DIR
#   discriminator         DIR/D_v2.pth (RVC's save_checkpoint), DIR/discriminator.pt
#   discriminator_resume  RVC's load_checkpoint of DIR/D_ours_v1.pth; prints JSON
#   losses                DIR/losses.pt
#   adamw                 DIR/adamw.pt, DIR/adamw_state.pt (torch's optimizer.state_dict())
#   adamw_fused           the same with AdamW(fused=True)
#   adamw_resume          AdamW.load_state_dict of DIR/ours_adamw_state.pt; prints JSON
#   spectrograms          DIR/spectrograms.pt (spectrogram_torch, mel_spectrogram_torch)

import json
import os
import sys

import torch

from rvc_next.engine.models.synthesizer import MultiPeriodDiscriminator, MultiPeriodDiscriminatorV2
from rvc_next.engine.train.losses import discriminator_loss, feature_loss, generator_loss, kl_loss
from rvc_next.engine.train.loop import load_checkpoint, save_checkpoint
from rvc_next.engine.train.mel import mel_spectrogram_torch, spectrogram_torch

LEARNING_RATE = 1e-4
BETAS = (0.8, 0.99)
EPS = 1e-9
# Gradients the Rust test compares, besides the generated waveform's.
GRADIENT_NAMES = [
    "discriminators.0.convs.1.weight_g",
    "discriminators.0.convs.1.weight_v",
    "discriminators.0.conv_post.bias",
    "discriminators.3.convs.2.weight_g",
    "discriminators.5.conv_post.weight_v",
    "discriminators.8.convs.4.weight_g",
    "discriminators.8.convs.4.weight_v",
]
ADAM_LR = 1e-3
ADAM_GAMMA = 0.9
ADAM_SHAPES = [(3, 4), (5,), (2, 3, 2)]


def discriminator(out):
    torch.manual_seed(0)
    model = MultiPeriodDiscriminatorV2(False)
    optimizer = torch.optim.AdamW(model.parameters(), LEARNING_RATE, betas=BETAS, eps=EPS)
    save_checkpoint(model, optimizer, LEARNING_RATE, 7, os.path.join(out, "D_v2.pth"))
    # 2400 samples: a multiple of 2, 3 and 5, not of the larger periods, which pad.
    y = torch.randn(1, 1, 2400) * 0.3
    y_hat = (torch.randn(1, 1, 2400) * 0.3).requires_grad_()
    real_scores, generated_scores, real_features, generated_features = model(y, y_hat)
    loss = discriminator_loss(real_scores, generated_scores)[0] + feature_loss(real_features, generated_features) + generator_loss(generated_scores)[0]
    loss.backward()
    named = dict(model.named_parameters())
    saved = {"y": y, "y_hat": y_hat.detach(), "loss": loss.detach(), "grad.y_hat": y_hat.grad}
    for name in GRADIENT_NAMES:
        saved[f"grad.{name}"] = named[name].grad
    for i in range(len(real_scores)):
        saved[f"real_scores.{i}"] = real_scores[i].detach()
        saved[f"generated_scores.{i}"] = generated_scores[i].detach()
        for j in range(len(real_features[i])):
            saved[f"real_features.{i}.{j}"] = real_features[i][j].detach()
            saved[f"generated_features.{i}.{j}"] = generated_features[i][j].detach()
    torch.save(saved, os.path.join(out, "discriminator.pt"))


def discriminator_resume(out):
    model = MultiPeriodDiscriminator(False)
    optimizer = torch.optim.AdamW(model.parameters(), 0.5, betas=BETAS, eps=EPS)
    _, _, learning_rate, iteration = load_checkpoint(os.path.join(out, "D_ours_v1.pth"), model, optimizer)
    raw = torch.load(os.path.join(out, "D_ours_v1.pth"), weights_only=True, mmap=True)["model"]
    reference = torch.load(os.path.join(out, "D_v2.pth"), weights_only=True, mmap=True)["model"]
    loaded = model.state_dict()
    print(json.dumps({
        "key_order_matches": list(raw.keys()) == list(loaded.keys()),
        "max_abs_difference": max(float((loaded[k] - reference[k]).abs().max()) for k in loaded),
        "learning_rate": learning_rate,
        "iteration": iteration,
        "optimizer_lr": optimizer.param_groups[0]["lr"],
        "optimizer_initial_lr": optimizer.param_groups[0].get("initial_lr"),
        "optimizer_parameters": len(optimizer.param_groups[0]["params"]),
    }))


def losses(out):
    torch.manual_seed(1)
    real_scores = [torch.randn(2, n) for n in (5, 7, 3)]
    generated_scores = [torch.randn(2, n, requires_grad=True) for n in (5, 7, 3)]
    shapes = [[(2, 4, 9), (2, 1, 9)], [(2, 8, 3, 2), (2, 1, 3, 2)]]
    real_features = [[torch.randn(*s) for s in maps] for maps in shapes]
    generated_features = [[torch.randn(*s, requires_grad=True) for s in maps] for maps in shapes]
    z_p, logs_q, m_p = (torch.randn(2, 4, 6) for _ in range(3))
    logs_p = (torch.randn(2, 4, 6) * 0.5).requires_grad_()
    z_mask = torch.ones(2, 1, 6)
    z_mask[1, :, 4:] = 0
    d_total, r_losses, g_losses = discriminator_loss(real_scores, generated_scores)
    g_total, g_terms = generator_loss(generated_scores)
    fm = feature_loss(real_features, generated_features)
    kl = kl_loss(z_p, logs_q, m_p, logs_p, z_mask)
    (fm + g_total + kl).backward()
    saved = {
        "z_p": z_p, "logs_q": logs_q, "m_p": m_p, "logs_p": logs_p.detach(), "z_mask": z_mask,
        "feature_loss": fm.detach(), "discriminator_loss": d_total, "generator_loss": g_total.detach(),
        "kl_loss": kl.detach(), "real_losses": torch.tensor(r_losses), "generated_losses": torch.tensor(g_losses),
        "generator_terms": torch.stack([t.detach() for t in g_terms]),
        "grad.logs_p": logs_p.grad, "grad.generated_scores.1": generated_scores[1].grad,
        "grad.generated_features.1.0": generated_features[1][0].grad,
    }
    for i in range(3):
        saved[f"real_scores.{i}"] = real_scores[i]
        saved[f"generated_scores.{i}"] = generated_scores[i].detach()
    for i, maps in enumerate(shapes):
        for j in range(len(maps)):
            saved[f"real_features.{i}.{j}"] = real_features[i][j]
            saved[f"generated_features.{i}.{j}"] = generated_features[i][j].detach()
    torch.save(saved, os.path.join(out, "losses.pt"))


def adam_grads():
    """Four steps' gradients; parameter 1 has none at the second step (torch skips it)."""
    generator = torch.Generator().manual_seed(3)
    grads = [[torch.randn(*s, generator=generator) for s in ADAM_SHAPES] for _ in range(4)]
    grads[1][1] = None
    return grads


def adam_step(params, optimizer, grads):
    for p, g in zip(params, grads):
        p.grad = g
    optimizer.step()


def adamw(out, fused=None):
    generator = torch.Generator().manual_seed(2)
    initial = [torch.randn(*s, generator=generator) for s in ADAM_SHAPES]
    params = [torch.nn.Parameter(p.clone()) for p in initial]
    optimizer = torch.optim.AdamW(params, ADAM_LR, betas=BETAS, eps=EPS, fused=fused)
    for group in optimizer.param_groups:
        group.setdefault("initial_lr", ADAM_LR)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=ADAM_GAMMA, last_epoch=-1)
    grads = adam_grads()
    saved = {}
    for i, p in enumerate(initial):
        saved[f"initial.{i}"] = p
    for k in range(4):
        if k == 3:
            torch.save(optimizer.state_dict(), os.path.join(out, "adamw_state.pt"))
        adam_step(params, optimizer, grads[k])
        if k in (0, 2):
            scheduler.step()
        for i, p in enumerate(params):
            saved[f"after.{k}.{i}"] = p.detach().clone()
            if grads[k][i] is not None:
                saved[f"grad.{k}.{i}"] = grads[k][i]
    torch.save(saved, os.path.join(out, "adamw.pt"))


def adamw_fused(out):
    """The same steps by torch's fused kernel (AdamW(fused=True), which runs on the CPU too)."""
    adamw(out, fused=True)


def adamw_resume(out):
    """Our state after three steps loads into torch's AdamW and its fourth step is torch's."""
    ours = torch.load(os.path.join(out, "ours_adamw_state.pt"), weights_only=True)
    theirs = torch.load(os.path.join(out, "adamw_state.pt"), weights_only=True)
    reference = torch.load(os.path.join(out, "adamw.pt"), weights_only=True)
    params = [torch.nn.Parameter(reference[f"after.2.{i}"].clone()) for i in range(len(ADAM_SHAPES))]
    optimizer = torch.optim.AdamW(params, 0.5)
    optimizer.load_state_dict(ours)
    adam_step(params, optimizer, adam_grads()[3])
    difference = max(float((p.detach() - reference[f"after.3.{i}"]).abs().max()) for i, p in enumerate(params))

    def layout(state):
        # `fused` names the kernel that stepped, not the layout: ours writes torch's default.
        groups = [{k: (v if k != "params" else list(v)) for k, v in g.items() if k != "fused"} for g in state["param_groups"]]
        entries = {k: {n: (str(t.dtype), list(t.shape)) for n, t in v.items()} for k, v in state["state"].items()}
        return repr((groups, entries))

    print(json.dumps({
        "layout_matches": layout(ours) == layout(theirs),
        "ours": layout(ours),
        "theirs": layout(theirs),
        "max_abs_difference": difference,
    }))


def spectrograms(out):
    torch.manual_seed(5)
    audio = torch.randn(2, 12_000) * 0.1
    audio[1, :4000] = 0.0  # silence: the floors under the root and the log matter there
    tensors = {"audio": audio}
    for name, (sr, n_fft, hop, n_mels, fmax) in {
        "40k": (40000, 2048, 400, 125, None),
        "32k": (32000, 1024, 320, 80, 8000.0),
    }.items():
        tensors[f"{name}.linear"] = spectrogram_torch(audio, n_fft, sr, hop, n_fft)
        tensors[f"{name}.mel"] = mel_spectrogram_torch(audio, n_fft, n_mels, sr, hop, n_fft, 0.0, fmax)
    torch.save(tensors, os.path.join(out, "spectrograms.pt"))


if __name__ == "__main__":
    task, out = sys.argv[1], sys.argv[2]
    globals()[task](out)
