#!/usr/bin/env python3
"""Fault-injecting TCP proxy for the testbed (stdlib asyncio).

Listens on loopback and forwards every connection to TARGET (a testbed node's
sshd, e.g. 10.200.1.10:22), injecting faults:

    --drop-after-bytes N   abort a connection once N bytes have gone through it
                           (both directions counted; --direction up|down narrows it)
    --stall-after-bytes N  stop forwarding after N bytes but keep the socket open
    --latency-ms MS        delay every forwarded chunk by MS (+ up to --jitter-ms)
    SIGUSR1                abort every open connection now
    SIGUSR2                toggle stalling of every connection (a network "freeze")
    SIGTERM / SIGINT       stop; so does --lifetime S (default 600) running out

Bounded: at most --max-connections at once (more are refused), a fixed
lifetime, loopback listen address only, and targets only on loopback or the
testbed's 10.200.0.0/16. The chosen port is written to --port-file.

Example, ssh through the proxy to node0 of a testbed:
    proxy.py --target 10.200.1.10:22 --port-file /tmp/p --drop-after-bytes 20000 &
    ssh -F DIR/ssh/ssh_config -o HostName=127.0.0.1 -o Port=$(cat /tmp/p) \
        -o HostKeyAlias=node0 node0 true
"""

import argparse
import asyncio
import ipaddress
import os
import random
import signal
import sys
import time

CHUNK = 65536
TESTBED_NET = ipaddress.ip_network("10.200.0.0/16")


def log(args, message):
    if args.quiet:
        return
    stamp = time.strftime("%H:%M:%S")
    print(f"[{stamp}] proxy: {message}", file=sys.stderr, flush=True)


class Connection:
    def __init__(self, proxy, number, client_writer):
        self.proxy = proxy
        self.number = number
        self.client_writer = client_writer
        self.target_writer = None
        self.transferred = 0
        self.aborted = False
        self.dead = asyncio.Event()

    def abort(self, why):
        if self.aborted:
            return
        self.aborted = True
        self.dead.set()
        log(self.proxy.args, f"connection {self.number}: dropped ({why}) after {self.transferred} bytes")
        for writer in (self.client_writer, self.target_writer):
            if writer is not None:
                writer.transport.abort()


class Proxy:
    def __init__(self, args):
        self.args = args
        self.connections = set()
        self.count = 0
        self.stalled = False
        self.resume = asyncio.Event()
        self.resume.set()

    async def handle(self, client_reader, client_writer):
        self.count += 1
        connection = Connection(self, self.count, client_writer)
        if len(self.connections) >= self.args.max_connections:
            log(self.args, f"connection {self.count}: refused (max {self.args.max_connections})")
            client_writer.transport.abort()
            return
        host, port = self.args.target
        try:
            target_reader, target_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), timeout=5)
        except (OSError, asyncio.TimeoutError) as error:
            log(self.args, f"connection {self.count}: target {host}:{port} unreachable: {error}")
            client_writer.transport.abort()
            return
        connection.target_writer = target_writer
        self.connections.add(connection)
        log(self.args, f"connection {self.count}: open")
        try:
            await asyncio.gather(
                self.pipe(connection, client_reader, target_writer, "up"),
                self.pipe(connection, target_reader, client_writer, "down"),
            )
        finally:
            self.connections.discard(connection)
            for writer in (client_writer, target_writer):
                writer.close()
            log(self.args, f"connection {connection.number}: closed, {connection.transferred} bytes")

    async def pipe(self, connection, reader, writer, direction):
        args = self.args
        counted = args.direction in ("both", direction)
        try:
            while not connection.aborted:
                data = await reader.read(CHUNK)
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                if counted and args.drop_after_bytes is not None:
                    room = args.drop_after_bytes - connection.transferred
                    if len(data) >= room:
                        if room > 0:
                            writer.write(data[:room])
                            await writer.drain()
                        connection.transferred += max(room, 0)
                        connection.abort(f"--drop-after-bytes {args.drop_after_bytes}")
                        return
                stall_limit = args.stall_after_bytes
                if counted and stall_limit is not None and connection.transferred + len(data) > stall_limit:
                    log(args, f"connection {connection.number}: stalled after {connection.transferred} bytes")
                    await connection.dead.wait()
                    return
                while self.stalled and not connection.aborted:
                    waiters = [asyncio.ensure_future(self.resume.wait()),
                               asyncio.ensure_future(connection.dead.wait())]
                    _done, pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                    for waiter in pending:
                        waiter.cancel()
                if args.latency_ms:
                    await asyncio.sleep((args.latency_ms + random.uniform(0, args.jitter_ms)) / 1000)
                if counted:
                    connection.transferred += len(data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            connection.abort("peer reset")

    def drop_all(self):
        for connection in list(self.connections):
            connection.abort("SIGUSR1")

    def toggle_stall(self):
        self.stalled = not self.stalled
        if self.stalled:
            self.resume.clear()
        else:
            self.resume.set()
        log(self.args, "all connections " + ("stalled" if self.stalled else "resumed") + " (SIGUSR2)")


def parse_target(text):
    host, _, port = text.rpartition(":")
    address = ipaddress.ip_address(host.strip("[]"))
    if not (address.is_loopback or address in TESTBED_NET):
        raise argparse.ArgumentTypeError(f"target {host} is neither loopback nor in {TESTBED_NET}")
    return str(address), int(port)


def parse_listen(text):
    host, _, port = text.rpartition(":")
    if not ipaddress.ip_address(host.strip("[]")).is_loopback:
        raise argparse.ArgumentTypeError("the proxy listens on loopback only")
    return host.strip("[]"), int(port)


async def serve(args):
    proxy = Proxy(args)
    server = await asyncio.start_server(proxy.handle, *args.listen)
    port = server.sockets[0].getsockname()[1]
    if args.port_file:
        temporary = f"{args.port_file}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(f"{port}\n")
        os.replace(temporary, args.port_file)
    log(args, f"listening on {args.listen[0]}:{port} -> {args.target[0]}:{args.target[1]}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, proxy.drop_all)
    loop.add_signal_handler(signal.SIGUSR2, proxy.toggle_stall)
    try:
        await asyncio.wait_for(stop.wait(), timeout=args.lifetime)
        log(args, "stopping (signal)")
    except asyncio.TimeoutError:
        log(args, f"stopping (--lifetime {args.lifetime} s)")
    server.close()
    proxy.drop_all()
    await server.wait_closed()


def main(argv):
    parser = argparse.ArgumentParser(description="testbed fault-injecting TCP proxy")
    parser.add_argument("--target", required=True, type=parse_target, help="HOST:PORT to forward to")
    parser.add_argument("--listen", default="127.0.0.1:0", type=parse_listen,
                        help="loopback HOST:PORT (port 0 picks one)")
    parser.add_argument("--port-file", help="write the listening port here")
    parser.add_argument("--drop-after-bytes", type=int)
    parser.add_argument("--stall-after-bytes", type=int)
    parser.add_argument("--direction", choices=["both", "up", "down"], default="both",
                        help="which bytes count for --drop/--stall-after-bytes (up = client to target)")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--jitter-ms", type=float, default=0.0)
    parser.add_argument("--max-connections", type=int, default=64)
    parser.add_argument("--lifetime", type=float, default=600.0, help="seconds before it stops by itself")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    asyncio.run(serve(args))


if __name__ == "__main__":
    main(sys.argv[1:])
