"""Matrix-multiply throughput on GPU 0: the figure a benchmark gate reads.

BENCH_DTYPE (bfloat16 by default) is the variable an env change can set to slow it.
"""
import os
import time

import torch

dtype = getattr(torch, os.environ.get("BENCH_DTYPE", "bfloat16"))
n = 8192
a = torch.randn(n, n, device="cuda", dtype=dtype)
b = torch.randn(n, n, device="cuda", dtype=dtype)
for _ in range(5):
    a @ b
torch.cuda.synchronize()
runs = 50
start = time.perf_counter()
for _ in range(runs):
    a @ b
torch.cuda.synchronize()
seconds = time.perf_counter() - start
print(f"dtype {dtype}, {runs} runs of {n}x{n}")
print(f"matmul throughput: {2 * n**3 * runs / seconds / 1e12:.1f} TFLOP/s")
