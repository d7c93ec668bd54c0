#!/usr/bin/env python3
# Not run by ctest: a measurement (docs/frontends.md, "Measured"). Usage:
#   AGENT_GATEWAY_BINARY=build/agent-gateway python3 tests/frontends/ag-ui/fanout_cpu.py contract ag_ui
# 100 streams of one run: the first POST starts it, 99 more with the same key attach
# (replay then live). Server CPU (utime+stime from /proc) per delivered session event.
import json, os, subprocess, sys, threading, time, http.client, re, tempfile
BIN = os.environ.get("AGENT_GATEWAY_BINARY", "build/agent-gateway")
def start():
    d = tempfile.mkdtemp()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    env.update(GATEWAY_HOST="127.0.0.1", GATEWAY_PORT="0", GATEWAY_DB_PATH=d + "/db", GATEWAY_LOG_LEVEL="warn")
    p = subprocess.Popen([BIN], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    return p, int(re.search(r":(\d+)", line.split()[-1]).group(1))
def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def req(port, method, path, body, headers):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request(method, path, body, {"Content-Type": "application/json", **headers})
    r = c.getresponse(); data = r.read(); c.close(); return r.status, data
def run(kind, n_subs, tokens):
    p, port = start()
    try:
        _, s = req(port, "POST", "/sessions", json.dumps({"config": {"mock": {"tokens": tokens, "tokens_per_second": 4000}}}), {})
        sid = json.loads(s)["id"]
        if kind == "ag_ui":
            path, body, hdr = f"/ag-ui/{sid}", json.dumps({"runId": "bench-1", "messages": [{"role": "user", "content": "go"}]}), {}
        else:
            path, body, hdr = f"/sessions/{sid}/messages", json.dumps({"content": "go"}), {"Idempotency-Key": "bench-1"}
        c0 = cpu(p.pid); t0 = time.time()
        sizes = []
        first = threading.Thread(target=lambda: sizes.append(req(port, "POST", path, body, hdr)))
        first.start(); time.sleep(0.05)
        ts = [threading.Thread(target=lambda: sizes.append(req(port, "POST", path, body, hdr))) for _ in range(n_subs - 1)]
        for t in ts: t.start()
        for t in [first] + ts: t.join()
        c1 = cpu(p.pid); t1 = time.time()
        last = json.loads(req(port, "GET", f"/sessions/{sid}", None, {})[1])["last_event_id"]
        ok = sum(1 for st, _ in sizes if st == 200)
        byts = sum(len(d) for _, d in sizes)
        print(f"{kind:8s} streams={ok}/{n_subs} events/run={last} cpu={c1-c0:.2f}s wall={t1-t0:.2f}s "
              f"cpu/event-delivery={(c1-c0)/(last*ok)*1e6:.2f}us bytes={byts}")
    finally:
        p.terminate(); p.wait(10)
for kind in sys.argv[1:]:
    run(kind, 100, 20000)
