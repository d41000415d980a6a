import ctypes, os, torch, torch.distributed as dist
assert hasattr(ctypes.CDLL("libnccl.so.2"), "hetcclGetVersion"), "HetCCL's face is not loaded"
rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))
x = torch.arange(1 << 20, device="cuda", dtype=torch.float32) + rank
y = x.clone(); dist.all_reduce(y)
assert torch.equal(y, (torch.arange(1 << 20, device="cuda") * n + n * (n - 1) // 2).float())
b = x.clone(); dist.broadcast(b, src=n - 1); assert torch.equal(b, x - rank + n - 1)
g = [torch.empty_like(x) for _ in range(n)]; dist.all_gather(g, x)
assert all(torch.equal(g[r], x - rank + r) for r in range(n))
rs = torch.empty(1 << 10, device="cuda"); dist.reduce_scatter_tensor(rs, torch.ones(n << 10, device="cuda"))
assert torch.all(rs == n)
a = torch.full((n,), float(rank), device="cuda"); out = torch.empty_like(a); dist.all_to_all_single(out, a)
assert torch.equal(out, torch.arange(n, device="cuda").float())
sub = dist.new_group(list(range(n))); z = torch.ones(8, device="cuda"); dist.all_reduce(z, group=sub)
assert torch.all(z == n)
dist.barrier(); dist.destroy_process_group(); print("ok", rank)
