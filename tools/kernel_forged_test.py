#!/usr/bin/python3
"""A neighbour on the same machine sends forged, truncated, malformed and oversized messages to every port of the
ane4j kernel; the kernel must drop each one (and log it) and go on answering the real client (issue 30, point 1;
docs/reliability.md; probes K6/K7 of the 2026-12-05 reliability report).

    JUPYTER_PATH=... /usr/bin/python3 tools/kernel_forged_test.py [KERNEL_NAME]   (default: ane4j)

Run by ane4j.notebook.JupyterClientTest (mvn test); needs Debian's python3-jupyter-client and python3-zmq.
Exit status 0 when every check passes.
"""
import hashlib
import hmac
import json
import os
import sys
import time
import uuid

import zmq
from jupyter_client.manager import start_new_kernel

KERNEL = sys.argv[1] if len(sys.argv) > 1 else "ane4j"
from kernel_client import check, finish, run, of

DELIM = b"<IDS|MSG>"


def header(msg_type):
    return json.dumps({"msg_id": uuid.uuid4().hex, "session": "forger", "username": "x",
                       "date": "2026-12-05T00:00:00.000000Z", "msg_type": msg_type, "version": "5.3"}).encode()


def sign(key, frames):
    h = hmac.new(key, digestmod=hashlib.sha256)
    for f in frames:
        h.update(f)
    return h.hexdigest().encode()


def cell_works(kc, code, expect, what):
    try:
        reply, msgs = run(kc, code, timeout=60)
        res = of(msgs, "execute_result")
        check(reply["status"] == "ok" and res and res[0]["data"]["text/plain"] == expect, what)
    except Exception as e:   # queue.Empty on a dead shell loop
        check(False, f"{what} ({type(e).__name__}: {e})")


def control_works(kc, what):
    try:
        msg = kc.session.msg("kernel_info_request")
        kc.control_channel.send(msg)
        deadline = time.monotonic() + 30
        while True:
            r = kc.get_control_msg(timeout=max(0.1, deadline - time.monotonic()))
            if r["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                break
        check(r["msg_type"] == "kernel_info_reply" and r["content"].get("status") == "ok", what)
    except Exception as e:
        check(False, f"{what} ({type(e).__name__}: {e})")


def main():
    env = dict(os.environ)
    env["ANE4J_KERNEL_MAX_MESSAGE_MB"] = "1"   # so that an oversized frame is cheap to send
    km, kc = start_new_kernel(kernel_name=KERNEL, startup_timeout=60, env=env)
    ctx = zmq.Context()
    marker = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"ane4j-forged-{os.getpid()}")
    try:
        info = json.load(open(km.connection_file))
        key = info["key"].encode()
        cell_works(kc, "1 + 1", "2", "a cell before any forged message")

        def port(name):
            return f"tcp://{info['ip']}:{info[name]}"

        kernel_info = [header("kernel_info_request"), b"{}", b"{}", b"{}"]
        shutdown = [header("shutdown_request"), b"{}", b"{}", json.dumps({"restart": False}).encode()]
        evil_exec = [header("execute_request"), b"{}", b"{}",
                     json.dumps({"code": f'java.nio.file.Files.writeString(java.nio.file.Path.of("{marker}"), "ran")',
                                 "silent": False, "store_history": True, "user_expressions": {},
                                 "allow_stdin": False, "stop_on_error": True}).encode()]
        forgeries = {
            "wrong HMAC": lambda body: [DELIM, b"0" * 64] + body,
            "empty signature": lambda body: [DELIM, b""] + body,
            "truncated signature": lambda body: [DELIM, sign(key, body)[:20]] + body,
            "truncated message (signature only)": lambda body: [DELIM, sign(key, body)],
            "truncated message (2 of 4 frames)": lambda body: [DELIM, sign(key, body[:2])] + body[:2],
            "no <IDS|MSG> delimiter": lambda body: [b"id", sign(key, body)] + body,
            "a single empty frame": lambda body: [b""],
            "signed, header not JSON": lambda body: [DELIM, sign(key, [b"{nope", *body[1:]]), b"{nope", *body[1:]],
            "signed, header a JSON array": lambda body: [DELIM, sign(key, [b"[1]", *body[1:]]), b"[1]", *body[1:]],
            "signed, unknown msg_type": lambda body: [DELIM, sign(key, [header("frob_request"), *body[1:]]), header("frob_request"), *body[1:]],
            "signed, content not an object": lambda body: [DELIM, sign(key, [*body[:3], b"[[["]), *body[:3], b"[[["],
            "signed, not UTF-8": lambda body: [DELIM, sign(key, [b"\xff\xfe", *body[1:]]), b"\xff\xfe", *body[1:]],
            "oversized frame (2 MB, limit 1 MB)": lambda body: [DELIM, b"0" * 64, b"x" * (2 << 20)] + body[1:],
        }
        for chan in ("shell_port", "control_port", "stdin_port"):
            s = ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(port(chan))
            for name, make in forgeries.items():
                for body in (kernel_info, shutdown, evil_exec):
                    s.send_multipart(make(body))
            time.sleep(1.0)
            s.close()
            cell_works(kc, "2 + 3", "5", f"the shell answers after forged messages on the {chan.split('_')[0]} port")
            control_works(kc, f"the control port answers after forged messages on the {chan.split('_')[0]} port")
        check(not os.path.exists(marker), "no forged execute_request ran")

        # a correctly signed message replayed byte for byte is dropped (ipykernel's digest history)
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(port("shell_port"))
        replay_marker = marker + "-replay"
        body = [header("execute_request"), b"{}", b"{}",
                json.dumps({"code": f'java.nio.file.Files.writeString(java.nio.file.Path.of("{replay_marker}"), "x", '
                                    f'java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND)',
                            "silent": False, "store_history": True, "user_expressions": {},
                            "allow_stdin": False, "stop_on_error": True}).encode()]
        frames = [DELIM, sign(key, body)] + body
        s.send_multipart(frames)
        s.recv_multipart()   # execute_reply of the first (genuine) copy
        s.send_multipart(frames)
        time.sleep(1.0)
        s.close()
        cell_works(kc, "3 + 4", "7", "the shell answers after a replayed message")
        ran = open(replay_marker).read() if os.path.exists(replay_marker) else ""
        check(ran == "x", f"a replayed signed message is run once, not twice (marker holds {ran!r})")

        # heartbeat and iopub: junk does not stop the heartbeat or publishing
        hb = ctx.socket(zmq.REQ)
        hb.setsockopt(zmq.LINGER, 0)
        hb.setsockopt(zmq.RCVTIMEO, 5000)
        hb.connect(port("hb_port"))
        hb.send_multipart([b"a", b"b", b"c"])
        try:
            hb.recv_multipart()
        except zmq.Again:
            pass
        hb.close()
        junk = ctx.socket(zmq.DEALER)
        junk.setsockopt(zmq.LINGER, 0)
        junk.connect(port("hb_port"))
        junk.send_multipart([b"x" * (2 << 20)])
        junk.close()
        pub = ctx.socket(zmq.PUB)
        pub.setsockopt(zmq.LINGER, 0)
        pub.connect(port("iopub_port"))
        pub.send_multipart([DELIM, b"0" * 64, header("status"), b"{}", b"{}", b"{}"])
        pub.close()
        time.sleep(0.5)
        check(kc.is_alive() and km.is_alive(), "the kernel process is alive")
        hb2 = ctx.socket(zmq.REQ)
        hb2.setsockopt(zmq.LINGER, 0)
        hb2.setsockopt(zmq.RCVTIMEO, 5000)
        hb2.connect(port("hb_port"))
        hb2.send(b"ping")
        try:
            check(hb2.recv() == b"ping", "the heartbeat echoes after junk")
        except zmq.Again:
            check(False, "the heartbeat echoes after junk (no answer in 5 s)")
        hb2.close()
        cell_works(kc, "6 * 7", "42", "a cell after junk on the heartbeat and iopub ports")

        # input(): a forged input_reply on stdin while a cell waits for input is dropped; the real reply is taken
        msg_id = kc.execute('new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine()',
                            allow_stdin=True)
        req = kc.get_stdin_msg(timeout=60)
        check(req["msg_type"] == "input_request", "the cell asks for input")
        st = ctx.socket(zmq.DEALER)
        st.setsockopt(zmq.LINGER, 0)
        st.connect(port("stdin_port"))
        fake = [header("input_reply"), b"{}", b"{}", json.dumps({"value": "forged"}).encode()]
        st.send_multipart([DELIM, b"0" * 64] + fake)
        time.sleep(0.5)
        st.close()
        kc.input("genuine")
        result = None
        while True:
            m = kc.get_iopub_msg(timeout=60)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "execute_result":
                result = m["content"]["data"]["text/plain"]
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
        check(result in ('"genuine"', "genuine"), f"the cell reads the genuine input, not the forged one (got {result})")
        cell_works(kc, "8 + 1", "9", "a cell after the input")
    finally:
        for f in (marker, marker + "-replay"):
            if os.path.exists(f):
                os.remove(f)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        ctx.term()
    finish()


if __name__ == "__main__":
    main()
