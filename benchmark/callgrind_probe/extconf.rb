# CallgrindProbe.collect { ... }: count instructions only inside the block
# when run under valgrind --tool=callgrind --collect-atstart=no.
require "mkmf"
$CFLAGS << " -O2 -Wall"
abort "valgrind/callgrind.h not found (apt-get install valgrind)" unless have_header("valgrind/callgrind.h")
create_makefile("callgrind_probe")
