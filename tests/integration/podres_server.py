"""A stand-in for the kubelet's pod-resources server, for test_agent_podres.

Run with Debian's /usr/bin/python3 (python3-grpcio, python3-grpc-tools):
    podres_server.py SOCKET STUBS_DIR ANSWER_JSON
It serves v1.PodResourcesLister on the unix socket SOCKET with the real
grpcio server and the stubs protoc made of tests/integration/proto/
podresources_v1.proto into STUBS_DIR.  ANSWER_JSON (re-read at each call,
so a test can change it) is
    {"pods": [{"namespace": N, "name": P, "containers": [{"name": C,
      "devices": [{"resource": R, "ids": [ID, ...]}]}]}],
     "status": 0, "delay_s": 0}
a non-zero "status" answers that gRPC status code instead; "delay_s"
holds the answer back.  Each call appends a line to ANSWER_JSON + ".calls".
"""
import json
import sys
import time
from concurrent import futures

import grpc

sock, stubs, answer = sys.argv[1:4]
sys.path.insert(0, stubs)
import podresources_v1_pb2 as pb  # noqa: E402
import podresources_v1_pb2_grpc as pb_grpc  # noqa: E402


class Lister(pb_grpc.PodResourcesListerServicer):
    def List(self, request, context):
        with open(answer + ".calls", "a") as f:
            f.write("%f\n" % time.time())
        with open(answer) as f:
            spec = json.load(f)
        if spec.get("delay_s"):
            time.sleep(spec["delay_s"])
        if spec.get("status"):
            code = next(c for c in grpc.StatusCode if c.value[0] == spec["status"])
            context.abort(code, spec.get("message", "stand-in says no"))
        out = pb.ListPodResourcesResponse()
        for p in spec.get("pods", []):
            pr = out.pod_resources.add(name=p["name"], namespace=p["namespace"])
            for c in p.get("containers", []):
                cr = pr.containers.add(name=c["name"], cpu_ids=c.get("cpu_ids", []))
                for d in c.get("devices", []):
                    cr.devices.add(resource_name=d["resource"], device_ids=d["ids"])
        return out


server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
pb_grpc.add_PodResourcesListerServicer_to_server(Lister(), server)
server.add_insecure_port("unix:" + sock)
server.start()
print("serving", flush=True)
server.wait_for_termination()
