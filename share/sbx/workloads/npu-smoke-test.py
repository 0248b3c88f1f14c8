"""npu-smoke-test.py - the npu.smoke_test workload: MindSpore on an Ascend
device adds two 3-element tensors; prints sorted JSON {device_target, ok, result}."""
import json
import sys


def main():
    try:
        import mindspore as ms
        import numpy as np
        ms.set_context(device_target="Ascend")
        a = ms.Tensor(np.array([1.0, 2.0, 3.0], dtype=np.float32))
        b = ms.Tensor(np.array([4.0, 5.0, 6.0], dtype=np.float32))
        result = (a + b).asnumpy().tolist()
        print(json.dumps({"device_target": "Ascend", "ok": True, "result": result}, sort_keys=True))
        return 0
    except Exception as exc:  # the job's log carries the reason
        print(json.dumps({"device_target": "Ascend", "ok": False, "result": str(exc)}, sort_keys=True))
        return 1


if __name__ == "__main__":
    sys.exit(main())
