#!/bin/sh
# run.sh RUBY LIB DIR: workload.rb on RUBY under RUBY_GC_LIBRARY=LIB at a
# fixed seed (poisson, 4 KiB), its profiles written to DIR (the
# allocations pprof at exit by out=), less the clock and the pid
# (normalize.rb), then each file's sha256.  Compare two libraries'
# lists: every reader's output, byte for byte.
#   benchmark/profile_bytes/run.sh RUBY before /tmp/a; ... after /tmp/b; diff /tmp/a/SUMS /tmp/b/SUMS
set -e
ruby=$1 lib=$2 dir=$3
here=$(cd "$(dirname "$0")" && pwd)
# The run writes to one fixed place (what it mallocs depends on its
# paths: the same for every library), with no gems, no environment but
# what it needs, and no address randomisation.
work=/tmp/profile_bytes.run
rm -rf "$work" "$dir"; mkdir -p "$work" "$dir"
cp "$here/workload.rb" "$work/"
(cd "$work" && env -i PATH=/usr/bin:/bin RUBY_GC_LIBRARY=$lib ${PROFILE_BYTES_ENV:-} \
    RUBY_GC_SAMPLING="interval=4k,mode=poisson,seed=7,malloc=${PROFILE_BYTES_MALLOC:-0},out=$work/alloc.pb.gz" \
    setarch "$(uname -m)" -R "$ruby" --disable-gems workload.rb "$work")
for f in alloc.pb.gz heap.pb.gz; do gzip -dc "$work/$f" > "$dir/${f%.gz}"; done
cp "$work"/dhat.json "$work"/report.txt "$work"/collapsed.txt "$work"/stats.txt "$dir/"
"$ruby" --disable-gems "$here/normalize.rb" "$dir"/alloc.pb "$dir"/heap.pb "$dir"/dhat.json "$dir"/report.txt
(cd "$dir" && sha256sum alloc.pb heap.pb dhat.json report.txt collapsed.txt stats.txt > SUMS)
cat "$dir/SUMS"
