"""A small DDP training run for comparing PyTorch backends (gloo, NCCL, HetCCL).

Launched with torchrun (env:// rendezvous):

    torchrun --standalone --nproc-per-node=N tests/gpu/ddp_train.py \
        --backend {nccl,gloo} --steps 200 --out FILE [--fsdp-step] [--seed 0] [--domain-per-rank]

Each rank uses GPU LOCAL_RANK % device_count. The model is a small
decoder-only transformer (torch.nn only), float32, deterministic settings,
trained with next-token prediction on deterministic synthetic data (tokens
from a torch.Generator seeded with (seed, step, rank)). Model and data are on
the GPU for every backend; gloo all-reduces CUDA tensors through host memory,
which is the baseline HetCCL's cross-domain path is compared against.

Per step it records rank 0's loss and the loss averaged over the ranks (an
all-reduce SUM of each rank's loss, divided by the world size: gloo has no
AVG). Steps after the first 10 are timed (tokens/s over all ranks). Then it
checks all_reduce, all_gather_into_tensor, reduce_scatter_tensor, broadcast,
all_to_all_single and send/recv once each against locally computed results
(integer-valued float32, so exact). With --fsdp-step it also trains a fresh
copy of the model for 3 steps under FullyShardedDataParallel (an error there
is recorded, not raised).

--domain-per-rank sets HETCCL_DOMAIN=d<LOCAL_RANK> before torch is imported
(and so before any NCCL call), putting each rank in its own HetCCL domain;
torchrun gives every worker the same environment, so this is done here.

Rank 0 writes FILE (JSON): backend, world_size, steps, losses, avg_losses,
tokens_per_s, seconds, collectives_ok, collective_errors, fsdp_losses or
fsdp_error, and a few facts about the run (torch and NCCL versions, GPU,
whether HetCCL's NCCL face is the libnccl.so.2 in use). The file is written
once after the collective checks and again after the FSDP step, so a hang in
FSDP still leaves the DDP result. Exit status 0 only when the collectives
checked out on every rank.
"""

import argparse
import os
import sys

# Deterministic cuBLAS: must be in the environment before CUDA is initialised.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=["nccl", "gloo"], required=True)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--out", required=True, help="JSON result file (written by rank 0)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fsdp-step", action="store_true", help="also run 3 FSDP training steps")
    p.add_argument("--domain-per-rank", action="store_true",
                   help="set HETCCL_DOMAIN=d<LOCAL_RANK> (each rank its own HetCCL domain)")
    return p.parse_args()


ARGS = parse_args()
if ARGS.domain_per_rank:
    # Before importing torch, so before anything can load or call NCCL.
    os.environ["HETCCL_DOMAIN"] = "d%d" % int(os.environ.get("LOCAL_RANK", "0"))

import ctypes  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

VOCAB = 4096
D_MODEL = 512
N_LAYERS = 4
N_HEADS = 8
D_FF = 2048
BATCH = 8
SEQ = 256
LR = 1e-3
WARMUP = 10
FSDP_STEPS = 3


def set_deterministic():
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    # The legacy TF32 flags; newer releases may warn about them but honour them.
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    except Exception as e:  # pragma: no cover - depends on the torch release
        print("warning: could not clear the TF32 flags: %s" % e, file=sys.stderr)
    torch.use_deterministic_algorithms(True, warn_only=True)
    # Attention through the math kernel only: the fused kernels' backward
    # passes may be non-deterministic (and flash does not take float32).
    for name, on in (("enable_flash_sdp", False), ("enable_mem_efficient_sdp", False),
                     ("enable_cudnn_sdp", False), ("enable_math_sdp", True)):
        fn = getattr(torch.backends.cuda, name, None)
        if fn is not None:
            fn(on)


class TinyLM(nn.Module):
    """Decoder-only transformer: embeddings, causal encoder layers, LM head."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Embedding(SEQ, D_MODEL)
        layer = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, dim_feedforward=D_FF, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, N_LAYERS, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, x):
        s = x.shape[1]
        positions = torch.arange(s, device=x.device)
        h = self.tok(x) + self.pos(positions).unsqueeze(0)
        # A plain tensor, not a buffer: DDP would broadcast buffers every step.
        mask = torch.triu(torch.full((s, s), float("-inf"), device=x.device), diagonal=1)
        h = self.blocks(h, mask=mask, is_causal=True)
        return self.head(self.norm(h))


def make_batch(seed, step, rank):
    """Tokens of (BATCH, SEQ + 1) from a generator seeded with (seed, step, rank).

    Arithmetic sequences (random start and stride per row) with 10% of the
    tokens replaced by random ones: learnable, so the loss falls.
    """
    g = torch.Generator()
    g.manual_seed(((seed * 1000003 + step) * 1009 + rank) % (1 << 62))
    start = torch.randint(0, VOCAB, (BATCH, 1), generator=g)
    stride = torch.randint(1, 17, (BATCH, 1), generator=g)
    tokens = (start + stride * torch.arange(SEQ + 1).unsqueeze(0)) % VOCAB
    noise = torch.rand((BATCH, SEQ + 1), generator=g) < 0.1
    random_tokens = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=g)
    return torch.where(noise, random_tokens, tokens)


def lm_loss(model, tokens):
    logits = model(tokens[:, :-1])
    return F.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))


def hetccl_face_loaded():
    """True when the libnccl.so.2 in this process is HetCCL's face."""
    try:
        return hasattr(ctypes.CDLL("libnccl.so.2"), "hetcclGetVersion")
    except OSError:
        return None


def check_collectives(backend, rank, world, dev):
    """Each collective once on CUDA tensors; returns a list of error strings."""
    errors = []
    n = 1024  # elements per rank
    f32 = dict(device=dev, dtype=torch.float32)

    def run(name, fn):
        try:
            fn()
            torch.cuda.synchronize(dev)
        except Exception as e:
            errors.append("rank %d %s: %s: %s" % (rank, name, type(e).__name__, e))

    def expect(name, got, want):
        if not torch.equal(got, want):
            bad = (got != want).nonzero()
            first = int(bad[0, 0]) if bad.numel() else -1
            raise AssertionError("%s: wrong result, %d of %d elements differ; first at %d: got %s, want %s"
                                 % (name, bad.shape[0], want.numel(), first,
                                    got.flatten()[first].item() if first >= 0 else "?",
                                    want.flatten()[first].item() if first >= 0 else "?"))

    base = torch.arange(n, **f32)

    def all_reduce():
        x = base + 1000 * rank
        dist.all_reduce(x, op=dist.ReduceOp.SUM)
        expect("all_reduce", x, base * world + 1000 * (world * (world - 1) // 2))

    def all_gather():
        out = torch.empty(world * n, **f32)
        dist.all_gather_into_tensor(out, base + 1000 * rank)
        want = torch.cat([base + 1000 * r for r in range(world)])
        expect("all_gather_into_tensor", out, want)

    def reduce_scatter():
        inp = torch.arange(world * n, **f32) + rank
        out = torch.empty(n, **f32)
        dist.reduce_scatter_tensor(out, inp, op=dist.ReduceOp.SUM)
        want = (torch.arange(world * n, **f32) * world + world * (world - 1) // 2)[rank * n:(rank + 1) * n]
        expect("reduce_scatter_tensor", out, want)

    def broadcast():
        x = base + 1000 * rank
        dist.broadcast(x, src=0)
        expect("broadcast", x, base)

    def all_to_all():
        # Block j of rank r's input holds 100 * r + j; block j of the output
        # comes from rank j: 100 * j + rank.
        m = 64
        inp = torch.cat([torch.full((m,), float(100 * rank + j), **f32) for j in range(world)])
        out = torch.empty(world * m, **f32)
        dist.all_to_all_single(out, inp)
        want = torch.cat([torch.full((m,), float(100 * j + rank), **f32) for j in range(world)])
        expect("all_to_all_single", out, want)

    def send_recv():
        # Rank 0 sends to rank 1, which adds 1 and sends back. Gloo's
        # send/recv take host memory only, so gloo stages through the host.
        host = backend == "gloo"
        if rank == 0:
            x = base + 7
            dist.send(x.cpu() if host else x, dst=1)
            back = torch.empty(n, dtype=torch.float32, device="cpu" if host else dev)
            dist.recv(back, src=1)
            expect("send/recv", back.to(dev), base + 8)
        elif rank == 1:
            y = torch.empty(n, dtype=torch.float32, device="cpu" if host else dev)
            dist.recv(y, src=0)
            z = y.to(dev) + 1  # sent back before checking, so rank 0 never waits in vain
            dist.send(z.cpu() if host else z, dst=0)
            expect("send/recv (rank 1's receive)", y.to(dev), base + 7)

    run("all_reduce", all_reduce)
    run("all_gather_into_tensor", all_gather)
    run("reduce_scatter_tensor", reduce_scatter)
    run("broadcast", broadcast)
    run("all_to_all_single", all_to_all)
    if world >= 2:
        run("send/recv", send_recv)
    return errors


def gather_strings(local, world):
    """Every rank's list of strings, flattened (all_gather_object)."""
    gathered = [None] * world
    dist.all_gather_object(gathered, local)
    return [s for part in gathered for s in (part or [])]


def run_fsdp(batches, seed, dev):
    """3 FSDP training steps on a fresh copy of the model: (losses, error)."""
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        torch.manual_seed(seed)
        model = TinyLM().to(dev)
        fsdp = FSDP(model, use_orig_params=True, device_id=dev)
        opt = torch.optim.AdamW(fsdp.parameters(), lr=LR)
        losses = []
        for step in range(FSDP_STEPS):
            opt.zero_grad(set_to_none=True)
            loss = lm_loss(fsdp, batches[step])
            loss.backward()
            opt.step()
            losses.append(loss.item())
        torch.cuda.synchronize(dev)
        return losses, None
    except Exception as e:
        return None, "%s: %s" % (type(e).__name__, e)


def write_json(path, result):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def main():
    args = ARGS
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if not torch.cuda.is_available():
        print("ddp_train.py: no CUDA device", file=sys.stderr)
        return 2
    dev_index = local_rank % torch.cuda.device_count()
    torch.cuda.set_device(dev_index)
    dev = torch.device("cuda", dev_index)
    set_deterministic()

    if args.backend == "nccl":
        dist.init_process_group("nccl", device_id=dev)
    else:
        dist.init_process_group("gloo")

    # Data for every step of this rank, on the GPU before training starts.
    batches = torch.stack([make_batch(args.seed, s, rank) for s in range(max(args.steps, FSDP_STEPS))]).to(dev)

    torch.manual_seed(args.seed)
    model = TinyLM().to(dev)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[dev_index])
    opt = torch.optim.AdamW(ddp.parameters(), lr=LR)

    local_losses, summed_losses = [], []
    t0 = t1 = None
    ddp.train()
    for step in range(args.steps):
        if step == WARMUP:
            torch.cuda.synchronize(dev)
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = lm_loss(ddp, batches[step])
        loss.backward()
        opt.step()
        mine = loss.detach().reshape(1).clone()
        total = mine.clone()
        dist.all_reduce(total, op=dist.ReduceOp.SUM)
        local_losses.append(mine)
        summed_losses.append(total)
    torch.cuda.synchronize(dev)
    if t0 is not None:
        t1 = time.perf_counter()
    # The same floats loss.item() gives, read once after the timed steps.
    losses = torch.cat(local_losses).tolist() if local_losses else []
    avg_losses = [v / world for v in torch.cat(summed_losses).tolist()] if summed_losses else []
    seconds = (t1 - t0) if t0 is not None else None
    tokens_per_s = ((args.steps - WARMUP) * BATCH * SEQ * world / seconds) if seconds else None

    errors = check_collectives(args.backend, rank, world, dev)
    try:
        all_errors = gather_strings(errors, world)
    except Exception as e:
        all_errors = errors + ["rank %d gathering the other ranks' results: %s: %s" % (rank, type(e).__name__, e)]
    collectives_ok = not all_errors

    nccl_version = None
    if args.backend == "nccl":
        try:
            nccl_version = ".".join(str(v) for v in torch.cuda.nccl.version())
        except Exception:
            pass
    result = {
        "backend": args.backend,
        "world_size": world,
        "steps": args.steps,
        "warmup_steps": WARMUP,
        "batch": BATCH,
        "seq": SEQ,
        "seed": args.seed,
        "losses": losses,
        "avg_losses": avg_losses,
        "losses_finite": all(math.isfinite(v) for v in losses + avg_losses),
        "tokens_per_s": tokens_per_s,
        "seconds": seconds,
        "collectives_ok": collectives_ok,
        "collective_errors": all_errors,
        "torch_version": torch.__version__,
        "nccl_version": nccl_version,
        "hetccl_face": hetccl_face_loaded() if args.backend == "nccl" else None,
        "hetccl_domain": os.environ.get("HETCCL_DOMAIN"),
        "gpu": torch.cuda.get_device_name(dev),
        "gpus_visible": torch.cuda.device_count(),
        "params": sum(p.numel() for p in model.parameters()),
    }
    if args.fsdp_step:
        result["fsdp_error"] = "FSDP step not finished"
    if rank == 0:
        write_json(args.out, result)
        print("rank 0: %d steps, loss %.4f -> %.4f, %s tokens/s, collectives %s"
              % (args.steps, losses[0] if losses else float("nan"), losses[-1] if losses else float("nan"),
                 "%.0f" % tokens_per_s if tokens_per_s else "-", "ok" if collectives_ok else "FAILED"),
              flush=True)
    for e in all_errors if rank == 0 else errors:
        print("collective error: %s" % e, file=sys.stderr, flush=True)

    if args.fsdp_step:
        fsdp_losses, fsdp_error = run_fsdp(batches, args.seed, dev)
        try:
            fsdp_errors = gather_strings([fsdp_error] if fsdp_error else [], world)
        except Exception as e:
            fsdp_errors = ([fsdp_error] if fsdp_error else []) + [
                "gathering the other ranks' FSDP results: %s: %s" % (type(e).__name__, e)]
        del result["fsdp_error"]
        if fsdp_errors:
            result["fsdp_error"] = "; ".join(fsdp_errors)
        else:
            result["fsdp_losses"] = fsdp_losses
        if rank == 0:
            write_json(args.out, result)
            print("rank 0: FSDP %s" % (fsdp_losses if not fsdp_errors else "error: " + result["fsdp_error"]),
                  flush=True)

    try:
        dist.destroy_process_group()
    except Exception as e:
        print("rank %d: destroy_process_group: %s: %s" % (rank, type(e).__name__, e), file=sys.stderr, flush=True)
    return 0 if collectives_ok else 1


if __name__ == "__main__":
    sys.exit(main())
