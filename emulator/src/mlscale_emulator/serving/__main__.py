"""`python -m mlscale_emulator.serving --model-dir D --port P`: one model container, on loopback."""

from __future__ import annotations

import argparse
import json
import os
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from mlscale_emulator.serving.handlers import HandlerChain, HandlerError, default_accept, framework_of

MAX_BODY = 6 * 1024 * 1024  # 6 MB, the real-time limit; Batch Transform raises it with SAGEMAKER_MAX_PAYLOAD_IN_MB


def make_handler(chain: HandlerChain, max_body: int, framework: str = "pytorch"):
    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: bytes = b"", content_type: str = "application/json"):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/ping":
                return self._send(200)
            if self.path == "/execution-parameters":
                params = {
                    "MaxConcurrentTransforms": int(os.environ.get("SAGEMAKER_MAX_CONCURRENT_TRANSFORMS", 1)),
                    "BatchStrategy": os.environ.get("SAGEMAKER_BATCH_STRATEGY", "MULTI_RECORD"),
                    "MaxPayloadInMB": int(os.environ.get("SAGEMAKER_MAX_PAYLOAD_IN_MB", 6)),
                }
                return self._send(200, json.dumps(params).encode())
            self._send(404, b'{"error": "not found"}')

        def do_POST(self):
            if self.path != "/invocations":
                return self._send(404, b'{"error": "not found"}')
            length = int(self.headers.get("Content-Length", 0))
            if length > max_body:
                return self._send(
                    413,
                    json.dumps({"error": "PayloadTooLarge", "error-message": f"{length} bytes > {max_body}"}).encode(),
                )
            body = self.rfile.read(length)
            accept = self.headers.get("Accept") or "*/*"
            accept = default_accept(framework) if accept == "*/*" else accept
            try:
                result, kind = chain(body, self.headers.get("Content-Type", ""), accept)
                self._send(200, result, kind)
            except HandlerError as error:
                self._send(
                    error.status, json.dumps({"error": type(error).__name__, "error-message": str(error)}).encode()
                )
            except Exception as error:  # the user's code failed: 500 with its reason, as the toolkits answer
                status = getattr(error, "status_code", 500)
                payload = {
                    "error": type(error).__name__,
                    "error-message": str(error),
                    "stack-trace": traceback.format_exc(),
                }
                print(payload["stack-trace"], flush=True)
                self._send(status, json.dumps(payload).encode())

        def log_message(self, fmt, *args):  # one line per request on stdout, like the model servers
            print(f"{self.command} {self.path} {args[1] if len(args) > 1 else ''}", flush=True)

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--code-dir")
    parser.add_argument("--image", default="", help="the container image: picks the framework's default handlers")
    parser.add_argument("--port", type=int, default=int(os.environ.get("SAGEMAKER_BIND_TO_PORT", 8080)))
    args = parser.parse_args()
    framework = framework_of(args.image)
    chain = HandlerChain(
        Path(args.model_dir),
        Path(args.code_dir) if args.code_dir else None,
        os.environ.get("SAGEMAKER_PROGRAM", "inference.py"),
        framework,
    )
    max_body = MAX_BODY
    if os.environ.get("SAGEMAKER_BATCH") == "true":
        megabytes = int(os.environ.get("SAGEMAKER_MAX_PAYLOAD_IN_MB", 6))
        max_body = megabytes * 1024 * 1024 if megabytes else 2**63  # 0: chunked, no limit
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(chain, max_body, framework))
    print(f"model server ready on 127.0.0.1:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
