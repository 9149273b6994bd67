#!/bin/bash
# benchmark/malloc_bench.sh: the callgrind runs behind benchmark/results/malloc.md.
# Usage: benchmark/malloc_bench.sh RUBY EXT_DIR NAME... (names below); prints
# "NAME instructions" per run.  EXT_DIR holds callgrind_probe (make bench builds it).
set -eu
ruby=$1 ext=$2; shift 2
top=$(cd "$(dirname "$0")/.." && pwd)
run() { # name lib profiler malloc workload n-var n
    local name=$1 lib=$2 prof=$3 m=$4 wl=$5 nv=$6 n=$7
    local out
    out=$(env -u RUBY_GC_LIBRARY RUBY_GC_LIBRARY=$lib BENCH_PROFILER=$prof ${m:+BENCH_MALLOC=$m} BENCH_EXT_DIR=$ext \
          $nv=$n valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file=/dev/null \
          "$ruby" "$top/benchmark/lib/runner.rb" "$top/benchmark/workloads/$wl" 2>&1 | sed -n 's/.*Collected : *//p')
    echo "$name $out"
}
for name in "$@"; do
    case $name in
        malloc-default) run $name default none "" malloc_micro.rb MALLOC_MICRO_N 20000 ;;
        malloc-stopped) run $name sampling none "" malloc_micro.rb MALLOC_MICRO_N 20000 ;;
        malloc-s512k) run $name sampling sampler:524288:poisson 1 malloc_micro.rb MALLOC_MICRO_N 20000 ;;
        malloc-s512k-slots) run $name sampling sampler:524288:poisson 0 malloc_micro.rb MALLOC_MICRO_N 20000 ;;
        micro-default) run $name default none "" alloc_micro.rb ALLOC_MICRO_N 50000 ;;
        micro-s512k) run $name sampling sampler:524288:poisson 1 alloc_micro.rb ALLOC_MICRO_N 50000 ;;
        micro-s512k-slots) run $name sampling sampler:524288:poisson 0 alloc_micro.rb ALLOC_MICRO_N 50000 ;;
        micro-s512k-lib) run $name sampling sampler:524288:poisson "" alloc_micro.rb ALLOC_MICRO_N 50000 ;;
        micro-stopped) run $name sampling none "" alloc_micro.rb ALLOC_MICRO_N 50000 ;;
        micro-s4k|micro-s32k) i=${name#micro-s}; i=$(( ${i%k} * 1024 ))
            run $name sampling sampler:$i:poisson 1 alloc_micro.rb ALLOC_MICRO_N 50000 ;;
        micro-s4k-slots|micro-s32k-slots) i=${name#micro-s}; i=${i%-slots}; i=$(( ${i%k} * 1024 ))
            run $name sampling sampler:$i:poisson 0 alloc_micro.rb ALLOC_MICRO_N 50000 ;;
        *) echo "unknown run $name" >&2; exit 2 ;;
    esac
done
