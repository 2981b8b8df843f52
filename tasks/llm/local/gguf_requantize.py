"""Re-encode a GGUF file's quantized weights into another llama.cpp format, once, with the ``gguf`` package.

Every tensor stored as Q4_1 (the embedded model's format) is decoded to
float32 and encoded again as the target (Q8_0 keeps it almost exactly; Q4_0
is smaller and faster but rounds once more). Other tensors and all metadata
are copied unchanged. The result is cached by source file and target, under
``cache_dir()/gguf``, and written atomically, so a killed conversion leaves no
half file behind.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from rpbench.tasks.core.paths import cache_dir, one_writer

log = logging.getLogger("rpbench.local_model")


def _source_id(path: Path) -> str:
    stat = path.stat()
    return hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]


def requantized(path: Path, target: str) -> Path:
    """``path`` with its Q4_1 tensors re-encoded as ``target`` ("q8_0" or "q4_0"); converted on first use."""
    out = cache_dir() / "gguf" / f"{path.stem}.{_source_id(path)}.{target}.gguf"
    with one_writer(out):
        if not out.is_file():
            log.info("re-encoding %s as %s (once; cached at %s)", path.name, target, out)
            tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
            try:
                _convert(path, tmp, target)
                tmp.replace(out)
            finally:
                tmp.unlink(missing_ok=True)
    return out


def _convert(src: Path, dst: Path, target: str) -> None:
    import gguf
    from gguf import quants

    kind = gguf.GGMLQuantizationType[target.upper()]
    reader = gguf.GGUFReader(str(src))
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE)
    if arch is None:
        raise RuntimeError(f"{src}: not a model GGUF (no {gguf.Keys.General.ARCHITECTURE})")
    writer = gguf.GGUFWriter(str(dst), arch=arch.contents(), endianess=reader.endianess)
    for fld in reader.fields.values():
        # The writer adds the architecture and GGUF.* itself; the file type would now be wrong.
        if fld.name in (gguf.Keys.General.ARCHITECTURE, gguf.Keys.General.FILE_TYPE) or fld.name.startswith("GGUF."):
            continue
        sub_type = fld.types[-1] if fld.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(fld.name, fld.contents(), fld.types[0], sub_type=sub_type)
    tensors = []
    for tensor in reader.tensors:
        if tensor.tensor_type == gguf.GGMLQuantizationType.Q4_1:
            data = quants.quantize(quants.dequantize(tensor.data, tensor.tensor_type), kind)
            tensors.append((tensor.name, data, kind))
        else:
            tensors.append((tensor.name, tensor.data, tensor.tensor_type))
    for name, data, kind_ in tensors:
        writer.add_tensor_info(name, data.shape, data.dtype, data.nbytes, kind_)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, data, _ in tensors:
        writer.write_tensor_data(data)
    writer.close()
