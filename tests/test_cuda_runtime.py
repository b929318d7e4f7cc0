"""The CUDA runtime's parts that need no GPU (issue 16): what happens
without one, the choice of NVRTC target, the disk cache's key and files,
the caching allocator's logic (on a fake address space), numdyn.device's
arguments. tests/test_cuda_device.py covers the GPU itself."""
import os

import numpy as np
import pytest

import numdyn
from numdyn import _C

NO_GPU = not numdyn.cuda.is_available()


@pytest.mark.skipif(not NO_GPU, reason="a GPU is present")
def test_without_a_gpu_every_entry_says_why():
    why = numdyn.cuda.unavailable_reason()
    assert why and isinstance(why, str)
    with pytest.raises(numdyn.CudaError, match="CUDA is not available") as e:
        with numdyn.device("cuda"):
            pass
    assert why in str(e.value)
    assert not _C._cuda_device_active()  # a failed entry leaves no GPU mode behind
    fn = numdyn.compile(lambda a: a * 2, backend="cuda")
    with pytest.raises(numdyn.CudaError, match="CUDA is not available"):
        fn(np.ones(3))
    with pytest.raises(numdyn.CudaError, match="CUDA is not available"):
        numdyn.cuda.get_device_properties(0)
    assert numdyn.cuda.device_count() == 0
    assert isinstance(numdyn.CudaError(), RuntimeError)
    assert numdyn.cuda.memory_stats()["allocated_bytes"] == 0


def test_cuda_is_a_builtin_backend():
    assert "cuda" in numdyn.list_backends()
    with pytest.raises(ValueError, match="'cuda'"):
        numdyn.compile(lambda a: a, backend="no_such_backend")
    with pytest.raises(ValueError, match="built in"):
        numdyn.register_backend(lambda g, x: g, name="cuda")


def test_device_names():
    assert numdyn.device("cuda").kind == "cuda"
    assert numdyn.device("cuda:0").index == 0
    for bad in ("gpu", "cuda:x", "cpu:1", "cuda:-1"):
        with pytest.raises(ValueError, match="unknown device"):
            numdyn.device(bad)
    with pytest.raises(TypeError):
        numdyn.device(0)


def test_cpu_device_inside_is_the_host():
    with numdyn.device("cpu"):
        assert not _C._cuda_device_active()
        assert np.allclose(numdyn.compile(lambda a: a + 1)(np.ones(4)), 2)


def test_target_architecture():
    archs = [75, 80, 86, 87, 89, 90, 100, 103, 120]
    assert _C._cuda_pick_arch(90, archs) == "sm_90"      # a cubin for the device itself
    assert _C._cuda_pick_arch(80, archs) == "sm_80"
    assert _C._cuda_pick_arch(121, archs) == "compute_120"  # newer than NVRTC: PTX, the driver JITs
    assert _C._cuda_pick_arch(88, [75, 80, 86, 90]) == "compute_86"
    assert _C._cuda_pick_arch(70, archs) == ""            # older than anything NVRTC knows
    assert _C._cuda_pick_arch(90, []) == "sm_90"          # NVRTC cannot tell: try the device's


def test_disk_cache_key_covers_text_arch_driver_and_nvrtc():
    k = _C._cuda_unit_key("kernel text", "sm_90", 13000, 13000)
    assert k == _C._cuda_unit_key("kernel text", "sm_90", 13000, 13000)
    others = {_C._cuda_unit_key("kernel text2", "sm_90", 13000, 13000),
              _C._cuda_unit_key("kernel text", "sm_80", 13000, 13000),
              _C._cuda_unit_key("kernel text", "compute_90", 13000, 13000),
              _C._cuda_unit_key("kernel text", "sm_90", 12080, 13000),
              _C._cuda_unit_key("kernel text", "sm_90", 13000, 12090)}
    assert k not in others and len(others) == 5


def test_disk_blobs_are_checked(tmp_path, monkeypatch):
    d = tmp_path / "c"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("NUMDYN_CACHE_DIR", str(d))
    data = bytes(range(256)) * 40
    assert _C._cuda_blob_roundtrip(0x1234, ".cubin", data) == data
    f = d / ("%016x.cubin" % 0x1234)
    assert f.exists() and (f.stat().st_mode & 0o777) == 0o600
    assert not [p for p in os.listdir(d) if ".tmp" in p]  # written under a temporary name
    # a damaged file reads as absent (the unit is compiled again)
    raw = bytearray(f.read_bytes())
    raw[100] ^= 0xFF
    f.write_bytes(bytes(raw))
    assert _C._cuda_blob_roundtrip(0x1234, ".cubin", b"") is None
    f.write_bytes(bytes(raw[:50]))
    assert _C._cuda_blob_roundtrip(0x1234, ".cubin", b"") is None
    # a file others may write is not trusted
    assert _C._cuda_blob_roundtrip(0x99, ".ptx", b"ptx text\0") == b"ptx text\0"
    os.chmod(d / ("%016x.ptx" % 0x99), 0o666)
    assert _C._cuda_blob_roundtrip(0x99, ".ptx", b"") is None
    # numdyn.utils.clear_cache removes them
    numdyn.utils.clear_cache()
    assert not [p for p in os.listdir(d) if p.endswith((".cubin", ".ptx"))]
    # a directory others can write is refused, as for the C kernels
    os.chmod(d, 0o777)
    with pytest.raises(PermissionError):
        _C._cuda_blob_roundtrip(0x1234, ".cubin", b"")
    os.chmod(d, 0o700)


def test_allocator_size_classes():
    cls = _C._cuda_alloc_class
    assert cls(0) == 512 and cls(1) == 512 and cls(512) == 512 and cls(513) == 1024
    assert cls(1 << 20) == 1 << 20 and cls((1 << 20) + 1) == 2 << 20
    assert cls(3 << 20) == 4 << 20 and cls(5 << 20) == 6 << 20


def test_allocator_reuses_freed_blocks_of_a_class():
    sim = _C._cuda_alloc_sim
    res, st = sim([("alloc", 1000), ("alloc", 1000)], 1 << 30)
    a, b = res
    assert a != b and st["driver_allocs"] == 2 and st["allocated_bytes"] == 2048
    res, st = sim([("alloc", 1000), ("free", 0x100000), ("alloc", 900), ("alloc", 5000)], 1 << 30)
    assert res[2] == res[0] == 0x100000            # the freed 1 KiB block again
    assert res[3] != res[0]                         # another class: a new block
    assert st["cache_hits"] == 1 and st["driver_allocs"] == 2 and st["alloc_calls"] == 3
    assert st["peak_allocated_bytes"] == 1024 + 8192 and st["blocks_in_use"] == 2


def test_allocator_releases_its_cache_when_the_device_is_full():
    sim = _C._cuda_alloc_sim
    cap = 4 << 20
    # 2 MiB cached in the 2 MiB class; a 4 MiB request does not fit beside it
    ops = [("alloc", 2 << 20), ("free", 0x100000), ("alloc", 4 << 20)]
    res, st = sim(ops, cap)
    assert res[2] is not None and st["driver_frees"] == 1 and st["reserved_bytes"] == 4 << 20
    res, st = sim([("alloc", 3 << 20), ("alloc", 2 << 20)], cap)
    assert res[1] is None  # out of memory even with nothing cached: the caller raises CudaError
    res, st = sim([("alloc", 512), ("free", 0x100000), ("empty",)], cap)
    assert st["reserved_bytes"] == 0 and st["blocks_cached"] == 0 and st["device_bytes_used"] == 0
    with pytest.raises(ValueError, match="no live block"):
        sim([("free", 0x5000)], cap)


def test_allocator_many_blocks():
    ops = [("alloc", 100 + i) for i in range(3000)]
    res, st = _C._cuda_alloc_sim(ops, 1 << 30)
    assert len(set(res)) == 3000 and st["blocks_in_use"] == 3000
    ops += [("free", p) for p in res] + [("alloc", 100 + i) for i in range(3000)]
    res2, st = _C._cuda_alloc_sim(ops, 1 << 30)
    assert set(res2[6000:]) == set(res) and st["cache_hits"] == 3000 and st["driver_allocs"] == 3000


def test_config_switch_and_explain_field():
    assert numdyn.config.cuda_host_fallback in (True, False)
    out = numdyn.explain(numdyn.compile(lambda a: a + 1))(np.ones(3))
    assert out.gpu == []  # nothing ran on a GPU


@pytest.mark.skipif(not NO_GPU, reason="a GPU is present")
def test_wrap_numpy_of_a_dlpack_only_cuda_array_says_why():
    """A CUDA array that speaks DLPack only (no __cuda_array_interface__),
    whose __dlpack_device__ is Python code: wrap_numpy must not call it with
    the host import's BufferError pending (torch CUDA tensors gave a
    SystemError on the GPU, session 21) and takes it as a CUDA array."""
    import sys
    import types
    mod = types.ModuleType("nd_fake_cuda_lib")
    mod.from_dlpack = lambda x: x
    sys.modules[mod.__name__] = mod

    class DeviceArray:
        __module__ = mod.__name__

        def __dlpack__(self, *a, **k):
            raise BufferError("the array is on a CUDA device")

        def __dlpack_device__(self):
            return (2, [0, 0][-1])   # a list index fails with an exception pending

    f = numdyn.wrap_numpy(lambda a: a * 2)
    try:
        with pytest.raises(numdyn.CudaError, match="CUDA is not available"):
            f(DeviceArray())
    finally:
        del sys.modules[mod.__name__]
