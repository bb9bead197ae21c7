"""A small GPU server for `upgrade verify` on a real node: it logs its progress the
way SGLang does, runs a matrix multiply on every visible GPU, serves `GET /health`
and prints SGLang's ready line. Copy it to the path the manifest names."""
import argparse
import datetime
import http.server
import sys

import torch


def log(message):
    print(f"[{datetime.datetime.now():%Y-%m-%d %H:%M:%S}] {message}", flush=True)


parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, default=30000)
arguments = parser.parse_args()
log(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.device_count()} GPU(s)")
for index in range(torch.cuda.device_count()):
    device = torch.device("cuda", index)
    a = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16)
    checksum = float((a @ a).float().abs().mean())
    torch.cuda.synchronize(device)
    log(f"GPU {index} {torch.cuda.get_device_name(index)} sm_{''.join(map(str, torch.cuda.get_device_capability(index)))}: matmul ok ({checksum:.3f})")


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", arguments.port), Health)
log("The server is fired up and ready to roll!")
sys.stdout.flush()
server.serve_forever()
