"""A session's frames are counted one way everywhere, and its stop names the nodes that sent nothing.

A real head and two real agents (node-a, node-b, each in a UTS namespace of its
own); node-b's agent is stopped before the session, which names both nodes
and asks 200 ms.  At the stop:

- the answer's `warning`, `jobscope session stop`'s stderr and the head's log
  say that node-b sent nothing (and not node-a, which did);
- the session's frames (one per period from its start to its stop) are the
  same number in `jobscope session list` (its FRAMES column and --json
  `frames`), the head's /status `frame_id_counter`,
  /api/v1/sessions/NAME `frames`, the JSON export's `session_frames`, and the
  frames of the exported gswarm file, counted here: (stop - start) / 200 ms;
- the JSON export's `frames` are node-a's samples in the window, as many as
  the head holds (its `frame_count`), which is why they are not the session's
  frames: an agent samples on its own clock.
"""
import json
import re
import subprocess

from harness import jobscope, run_tests, check, eq, wait_for
from head_harness import Head, node_id, start_agent, stop_agent, sql, store_exists

PERIOD_MS = 200


def session(head, *args):
    r = jobscope("session", *args, "--head", head.url)
    return r.returncode, r.stdout, r.stderr


def host_rows(db, host, t0, t1):
    return sql(db, "SELECT count(*) FROM host_samples WHERE node_id = ? AND ts_ms BETWEEN ? AND ?",
               node_id(db, host), t0, t1)[0][0]


def test_frames_agree_and_stop_names_silent_nodes(wd):
    if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        print("SKIP: cannot make UTS namespaces here (needs root)")
        return
    head = Head(wd)
    a = start_agent(wd, head, "node-a", extra=["--interval", "1s"])
    b = start_agent(wd, head, "node-b", extra=["--interval", "1s"])
    try:
        wait_for(lambda: store_exists(head.db) and len(sql(
            head.db, "SELECT DISTINCT n.hostname FROM agents g JOIN nodes n ON n.id = g.node_id"
                     " JOIN host_samples h ON h.node_id = n.id")) == 2,
            timeout=60, what="both agents' rows at the head")
        stop_agent(b[0], b[3])

        rc, out, err = session(head, "start", "s1", "--nodes", "node-a,node-b",
                               "--interval", "%dms" % PERIOD_MS)
        eq(rc, 0, "start s1: " + out + err)
        check("no agent" not in err, "both nodes are the head's agents: no warning: " + err)
        start_ms = sql(head.db, "SELECT start_ms FROM sessions WHERE name = 's1'")[0][0]
        # node-a at the session's interval: a few of its rows in the window
        wait_for(lambda: host_rows(head.db, "node-a", start_ms, start_ms + 10**9) >= 5,
                 timeout=60, what="node-a's rows in the session")

        rc, out, err = session(head, "stop", "s1")
        eq(rc, 0, "stop s1: " + out + err)
        check("Profiling stopped." in out, out)
        silent = "session 's1': node node-b sent nothing"
        check(silent in err, "the stop names node-b on stderr: " + err)
        check("node-a" not in err, "node-a sent: not named: " + err)
        wait_for(lambda: silent in open(head.log).read(), timeout=10,
                 what="the warning in the head's log")
        end_ms = sql(head.db, "SELECT end_ms FROM sessions WHERE name = 's1'")[0][0]
        frames = (end_ms - start_ms) // PERIOD_MS
        check(frames > 0, "%d frames" % frames)
        # every row of node-a's up to the stop at the head: one after it arrived
        wait_for(lambda: host_rows(head.db, "node-a", end_ms + 1, end_ms + 10**9) > 0,
                 timeout=60, what="node-a's rows after the stop")

        # the answer itself carries it, as the start's does (a second stop: nothing to stop)
        code, doc = head.post("/profiling/stop", b'{"name": "s1"}')
        eq((code, doc["success"], "warning" in doc), (200, False, False), "s1 is stopped")

        # list: --json and its FRAMES column
        r = jobscope("session", "list", "--json", "--head", head.url)
        eq(r.returncode, 0, r.stderr)
        listed = [s for s in json.loads(r.stdout)["sessions"] if s["name"] == "s1"][0]
        eq(listed["frames"], frames, "list --json: frames")
        r = jobscope("session", "list", "--head", head.url)
        eq(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        col = lines[0].split().index("FRAMES")
        row = [ln.split() for ln in lines[1:] if ln.split()[0] == "s1"][0]
        eq(row[col], str(frames), "list: the FRAMES column:\n" + r.stdout)

        # status (the latest session's), the session's own answer
        eq(head.get("/status")["frame_id_counter"], frames, "/status frame_id_counter")
        eq(head.get("/status")["output_filename"], "s1.json", "/status: s1 is the latest")
        eq(head.get("/api/v1/sessions/s1")["frames"], frames, "/api/v1/sessions/s1 frames")

        # the gswarm file: its frames, counted
        gs = wd.join("s1.json")
        r = jobscope("export", "--head", head.url, "--session", "s1", "--format", "gswarm",
                     "-o", gs)
        eq(r.returncode, 0, r.stderr)
        doc = json.load(open(gs))
        eq(len(doc["frames"]), frames, "the gswarm file's frames")
        eq([f["frame_id"] for f in doc["frames"]], list(range(1, frames + 1)), "frame ids")

        # the JSON export: the same session_frames; its frames are node-a's samples
        js = wd.join("s1-export.json")
        r = jobscope("export", "--head", head.url, "--session", "s1", "-o", js)
        eq(r.returncode, 0, r.stderr)
        exp = json.load(open(js))
        eq(exp["session_frames"], frames, "the JSON export's session_frames")
        eq(exp["frame_count"], len(exp["frames"]), "frame_count: the samples written")
        eq(exp["frame_count"], host_rows(head.db, "node-a", start_ms, end_ms),
           "the samples: node-a's rows in the window")
        eq({f["node"] for f in exp["frames"]}, {"node-a"}, "node-b sent nothing")

        # the text report says both
        r = jobscope("report", "--head", head.url, "--session", "s1")
        eq(r.returncode, 0, r.stderr)
        check(re.search(r"; %d frames \(one a %dms\), %d samples from its nodes" %
                        (frames, PERIOD_MS, exp["frame_count"]), r.stdout), r.stdout)

        # an all-node session: node-b, an agent of the head, named at its stop too
        rc, out, err = session(head, "start", "s2", "--interval", "%dms" % PERIOD_MS)
        eq(rc, 0, "start s2: " + out + err)
        s2 = sql(head.db, "SELECT start_ms FROM sessions WHERE name = 's2'")[0][0]
        wait_for(lambda: host_rows(head.db, "node-a", s2, s2 + 10**9) >= 2,
                 timeout=60, what="node-a's rows in s2")
        rc, out, err = session(head, "stop")
        eq(rc, 0, "stop: " + out + err)
        check("session 's2': node node-b sent nothing" in err, err)
        check("node-a" not in err, err)
    finally:
        stop_agent(a[0], a[3])
        head.kill()


if __name__ == "__main__":
    run_tests(globals())
