"""The test host's CPU: its model and the widest vector instructions it has, for the suite's header and CI's log.

XLA:CPU compiles for the host's own CPU, and its AVX-512 code rounds floats differently from its AVX2 code: a
learning run then ends as if it had another seed. A failure on one host type can only be told from a failure on
all if the log says which host ran it. `python3 -m tests.host` prints the line (standard library only: `.ci/run`
calls it before any virtual environment exists).
"""

import platform

X86 = ("x86_64", "amd64", "i686", "x86")


def cpu_fields() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (`model name`, `cpu family`, `flags`, ...); empty elsewhere."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read().split("\n\n")[0]
    except OSError:
        return {}
    fields = (line.partition(":") for line in text.splitlines())
    return {name.strip(): value.strip() for name, _, value in fields}


def is_x86() -> bool:
    return platform.machine().lower() in X86


def widest_isa(flags: set[str]) -> str:
    """The widest of XLA:CPU's x86 vector ISAs that `flags` (/proc/cpuinfo's) name."""
    if "avx512f" in flags:
        return "AVX-512"
    if "avx2" in flags:
        return "AVX2"
    return "AVX" if "avx" in flags else "SSE"


def describe() -> str:
    """One line: the CPU's model, family and model numbers, and its widest vector ISA (or its architecture)."""
    fields = cpu_fields()
    model = fields.get("model name") or platform.processor() or "an unknown CPU"
    numbers = ", ".join(f"{name} {fields[name]}" for name in ("cpu family", "model") if name in fields)
    isa = widest_isa(set(fields.get("flags", "").split())) if is_x86() else platform.machine()
    return f"{model}{f' ({numbers})' if numbers else ''}, {isa}"


if __name__ == "__main__":
    print(f"host: {describe()}")
