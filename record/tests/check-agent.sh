#!/bin/sh
# Checks the injected agent's hygiene: it exports only the three injection entry
# points (CUDA, NVTX, NVTX extensions) and pulls nothing but CUPTI and libc into the application's process.
# Environment: BUILD (build directory, default build).
B=${BUILD:-build}
so=$B/lib/libtracekit-agent.so
fail=0
[ -f "$so" ] || { echo "check-agent: $so not built"; exit 1; }
exports=$(nm -D --defined-only "$so" | awk '$2 == "T" || $2 == "D" || $2 == "B" {print $3}' | sort | tr '\n' ' ')
[ "$exports" = "InitializeInjection InitializeInjectionNvtx2 InitializeInjectionNvtxExtension " ] || { echo "check-agent: unexpected exports: $exports"; fail=1; }
needed=$(readelf -d "$so" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')
for lib in $needed; do
    case $lib in
        libcupti.so.13|libc.so.6|libpthread.so.0|libdl.so.2|ld-linux-x86-64.so.2) ;;
        *) echo "check-agent: unexpected dependency $lib"; fail=1 ;;
    esac
done
[ $fail = 0 ] && echo "record: agent exports and dependencies ok ($needed)"
exit $fail
