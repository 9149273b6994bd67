# bench_fastpath.rb: phase 3 of bench.rb: the allocation fast path's
# machine code (objdump) in the sampling library against a reference
# build of default.c with the hooks empty (fastpath.md).  Loaded by
# bench.rb after its options and configurations.

# ---- 3. fast path ----

# lib: a library's name in GC_DIR, or a path.  Each instruction as
# [offset in the function, text]: the address column dropped, symbolic
# jump targets kept (function-relative).
def listing(lib, fn)
  path = lib.include?("/") ? lib : File.join(GC_DIR, "librubygc.#{lib}.so")
  out, st = Open3.capture2("objdump", "-d", "--no-show-raw-insn", "--disassemble=#{fn}", path)
  raise "objdump failed" unless st.success?
  on = false
  start = nil
  out.lines.filter_map do |l|
    if l =~ /\A(\h+) <#{Regexp.escape(fn)}>:/ then on = true; start = $1.to_i(16); next
    elsif on && l.strip.empty? then on = false; next
    end
    next unless on && l =~ /\A\s*(\h+):/
    [$1.to_i(16) - start, l.sub(/\A\s*\h+:\s*/, "").sub(/\b\h+ <([^>]+)>/, '<\1>').sub(/#\s*\h+\s*</, "# <").rstrip]
  end
end

# The instructions (indices) on the fast path.  Basic blocks end at every
# jump and ret and start at every jump target; a block is off the fast
# path ("doomed") if it calls or tail-calls newobj_cache_miss,
# sampling_take (3.4's single-Ractor sample, asked in newobj_alloc),
# newobj_slowpath_* (in a GC or under GC.stress), or, on 4.0, adds the
# cache's allocation count to its heap (a `lock add`: once in 1,024
# allocations, or at a sample point, where the library calls
# sampling_take), or if every block it can go on to is doomed
# (the tests that lead only there).  The fast path
# is what the entry reaches without entering a doomed block.
def fast_path(ins, fn)
  off = ->(t) { t =~ /<#{Regexp.escape(fn)}(?:\+0x(\h+))?>/ ? ($1 || "0").to_i(16) : nil }
  at = ins.each_with_index.to_h { |(o, _), i| [o, i] }
  leaders = [0]
  ins.each_with_index do |(_, t), i|
    next unless t =~ /\A(j\w*|ret)\b/
    leaders << i + 1 if i + 1 < ins.size
    leaders << at[off.(t)] if t.start_with?("j") && at[off.(t)]
  end
  starts = leaders.uniq.sort
  blocks = starts.each_with_index.map { |s, k| (s..((starts[k + 1] || ins.size) - 1)) }
  block_of = {}
  blocks.each_with_index { |r, b| r.each { block_of[_1] = b } }
  succ = blocks.map do |r|
    last = ins[r.last][1]
    n = []
    n << block_of[r.last + 1] if r.last + 1 < ins.size && last !~ /\A(jmp|ret)\b/
    n << block_of[at[off.(last)]] if last.start_with?("j") && at[off.(last)]
    n.compact.uniq
  end
  miss = /\A((call|jmp)\s+<(newobj_cache_miss|sampling_take|newobj_slowpath_\w+)>|lock add)/
  doomed = blocks.map { |r| r.any? { ins[_1][1] =~ miss } }
  loop do
    grew = false
    blocks.each_index do |b|
      next if doomed[b] || succ[b].empty? || !succ[b].all? { doomed[_1] }
      doomed[b] = grew = true
    end
    break unless grew
  end
  seen = {}
  todo = [0]
  until todo.empty?
    b = todo.pop
    next if seen[b] || doomed[b]
    seen[b] = true
    todo.concat(succ[b])
  end
  seen.keys.flat_map { blocks[_1].to_a }.to_h { [_1, true] }
end

REGS = /%(r[a-ds]x|e[a-ds]x|[a-d]l|[a-d]x|r[sd]i|e[sd]i|[sd]il|r[sb]p|e[sb]p|[sb]pl|r\d+[dwb]?)\b/
def regnorm(lines) = lines.map { |l| l.gsub(REGS, "%REG") }
# jump targets inside the function: their offsets move with any code before them
def offnorm(lines) = lines.map { |l| l.sub(/<([\w.]+)\+0x\h+>/, '<\1+OFF>') }

def diff(a, b, label_a = REF_LABEL)
  File.write(fa = File.join(WORK, "fp-a.s"), a.join("\n") + "\n")
  File.write(fb = File.join(WORK, "fp-b.s"), b.join("\n") + "\n")
  out, = Open3.capture2("diff", "-u", "--label", label_a, "--label", "librubygc.sampling.so", fa, fb)
  out
end

# The reference the sampling library's fast path is compared with:
# default.c compiled as sampling.c compiles it (shared_object.h's
# replacements, extconf.rb's flags), with the patch series' hooks left
# empty. Ruby's own librubygc.default.so calls gc.c's no-op helpers, which
# the sampling library does not (shared_object.h), so against it the fast
# path differs by that call; against the reference, by the hooks alone.
REF_LABEL = "reference (default.c as sampling.c compiles it, hooks empty)"
SAMPLING_SRC = File.join(File.dirname(BENCH_DIR), "gc", "sampling")
def build_reference
  dir = File.join(WORK, "fastpath-reference")
  FileUtils.rm_rf(dir)
  FileUtils.mkdir_p(dir)
  File.write(File.join(dir, "reference.c"), <<~C)
    #include "ruby/internal/config.h"
    #include "ruby/ruby.h"
    #include "ruby_version.h"
    #if SAMPLING_INCLUDE_SANITIZERS
    # include "internal/sanitizers.h"
    #endif
    #include "internal/static_assert.h"
    #include "shared_object.h"
    #include "gc/default/default.c"
  C
  # 4.1's default.c includes yjit.h, hence vm_core.h and its generated
  # id.h (and probes.h): in the source tree of a tarball, in the build
  # tree (the project's layout: src/ruby beside obj) of a git checkout.
  gen = [SRC, File.join(File.dirname(File.dirname(SRC)), "obj")].find { File.exist?(File.join(_1, "id.h")) }
  File.write(File.join(dir, "extconf.rb"), <<~RUBY)
    require "mkmf"
    $INCFLAGS << " -I#{SRC} -I#{SAMPLING_SRC}#{" -I#{gen}" if gen && gen != SRC}"
    $CPPFLAGS << " -DBUILDING_MODULAR_GC"
    append_cflags("-fPIC")
    append_cflags("-fno-semantic-interposition")  # as gc/sampling/extconf.rb
    create_makefile("librubygc.reference")
  RUBY
  _, st = Open3.capture2e(RUBY, "extconf.rb", chdir: dir)
  out, st = Open3.capture2e("make", chdir: dir) if st.success?
  raise "building the fast-path reference failed, see #{dir}: #{out.to_s.lines.grep(/error/).first(3).join}" unless st.success?
  COMMANDS << "# fastpath reference: #{rel(dir)}/reference.c, extconf.rb (written by bench.rb)\n(cd #{rel(dir)} && #{rel(RUBY)} extconf.rb && make)"
  File.join(dir, "librubygc.reference.so")
end

def fastpath_phase
  fn = "rb_gc_impl_new_obj"
  la = listing(build_reference, fn)
  lb = listing(SAMPLING_LIB, fn)
  lstock = listing("default", fn)
  a, b, stock = [la, lb, lstock].map { |l| l.map(&:last) }
  on_fast = {}.compare_by_identity
  on_fast[a] = fast_path(la, fn); on_fast[b] = fast_path(lb, fn); on_fast[stock] = fast_path(lstock, fn)
  stock_diff = diff(offnorm(regnorm(stock)), offnorm(regnorm(b)), "librubygc.default.so")
  exact = diff(a, b)
  norm = diff(offnorm(regnorm(a)), offnorm(regnorm(b)))
  # Each line only one side has, with what follows it: padding (nop) or the
  # block it belongs to, named by the call or jump that ends the block.
  padding = /\A(nop|xchg\s+%ax,%ax|data16|cs nop)/
  only = { "+" => [], "-" => [] }
  ai = bi = 0
  norm.lines.each do |l|
    if l =~ /\A@@ -(\d+)(?:,\d+)? \+(\d+)/ then ai = $1.to_i - 1; bi = $2.to_i - 1
    elsif l.start_with?("+++", "---") then next
    elsif l.start_with?("+") then only["+"] << b_i = bi; bi += 1
    elsif l.start_with?("-") then only["-"] << ai; ai += 1
    else ai += 1; bi += 1
    end
  end
  describe = lambda do |lines, i|
    return "`#{lines[i]}` (padding)" if lines[i] =~ padding
    nxt = lines[i..].find { |x| x =~ /\A(call|jmp|ret)/ }
    "`#{lines[i]}` (in the block ending `#{nxt}`)"
  end
  # off the fast path (fast_path above): the miss branch and the slow path
  in_miss = ->(lines, i) { !on_fast[lines][i] }
  fast = ->(lines) { lines.each_index.count { |i| lines[i] !~ padding && on_fast[lines][i] } }
  added = only["+"]; removed = only["-"]
  ctx = added.map { |i| describe.(b, i) } + removed.map { |i| "only in default: " + describe.(a, i) }
  only_miss = added.all? { |i| b[i] =~ padding || in_miss.(b, i) } &&
              removed.all? { |i| a[i] =~ padding || in_miss.(a, i) }
  md = +"# The allocation fast path: machine code of `#{fn}`\n\n"
  md << "Generated by `benchmark/run` on #{Time.now.utc.iso8601}. `objdump -d --no-show-raw-insn --disassemble=#{fn}` "
  md << "of both libraries in `#{rel(GC_DIR)}`; addresses dropped (jump targets kept as `<function+offset>`).\n\n"
  md << "The sampling library is compared with a reference built by this phase: `default.c` compiled as `sampling.c` compiles it "
  md << "(`gc/sampling/shared_object.h`'s replacements of gc.c's helpers, `extconf.rb`'s flags), with the patch series' hooks "
  md << "left empty; so a difference is the hooks' doing. Ruby's own `librubygc.default.so` is shown too: its fast path also "
  md << "calls gc.c's `rb_asan_unpoison_object` (a no-op without ASan, on 3.4) through the PLT, which the sampling library does not.\n\n"
  md << "| | librubygc.default.so | reference | librubygc.sampling.so |\n|---|---|---|---|\n"
  md << "| instructions in `#{fn}` | #{stock.size} | #{a.size} | #{b.size} |\n"
  md << "| of which on the fast path (not the miss branch or the slow path; padding left out) | #{fast.(stock)} | #{fast.(a)} | #{fast.(b)} |\n\n"
  md << "`#{fn}` holds the whole allocation fast path (size-pool choice, `ractor_cache_allocate_slot`'s pop of the "
  md << "free list, `newobj_init`); `newobj_cache_miss` is out of line (NOINLINE) in both. The fast path is found on "
  md << "the control-flow graph: basic blocks end at every jump and `ret` and start at every jump target; a block that "
  md << "calls or tail-calls `newobj_cache_miss`, `sampling_take` (3.4's single-Ractor sample, asked in `newobj_alloc` "
  md << "before `newobj_cache_miss`) or `newobj_slowpath_*` (in a GC or under `GC.stress`) is off it, so is, on 4.0, "
  md << "the block that adds the cache's allocation count to its heap (its `lock add`: once in 1,024 allocations, or at "
  md << "a sample point, where the sampling library calls `sampling_take`), and so is a "
  md << "block whose every successor is off it (the tests that lead only there); the fast path is what the entry "
  md << "reaches through the others. Jump offsets inside the function are written `+OFF` in the comparison: they "
  md << "move with any code laid out before their target.\n\n"
  pushes = ->(l) { l.count { _1.start_with?("push") } }
  calls = ->(l) { l.grep(/\Acall/).map { _1.sub(/\Acall\s+/, "") }.uniq }
  md << "## Summary\n\n"
  md << "- Against Ruby's `librubygc.default.so`: #{stock.size} instructions there, #{b.size} here; calls only there: "
  md << "#{(calls.(stock) - calls.(b)).map { "`#{_1}`" }.join(", ").then { _1.empty? ? "none" : _1 }}; only here: "
  md << "#{(calls.(b) - calls.(stock)).map { "`#{_1}`" }.join(", ").then { _1.empty? ? "none" : _1 }}; callee-saved registers pushed: #{pushes.(stock)} there, #{pushes.(b)} here.\n"
  md << "- Against the reference: #{a.size} instructions there, #{b.size} here; callee-saved registers pushed: #{pushes.(a)} there, #{pushes.(b)} here"
  md << (pushes.(b) > pushes.(a) ? " (the hook's `klass` and `flags`, kept for the call to `newobj_cache_miss`, take one more: a push and a pop on every allocation)" : "") << ".\n\n"
  md << "## With register names normalised (every register written `%REG`, jump offsets `+OFF`)\n\n"
  if added.empty? && removed.empty?
    md << "**Identical.**\n\n"
  else
    md << "#{removed.size} line(s) only in default, #{added.size} only in sampling:\n\n"
    ctx.each { |c| md << "- #{c}\n" }
    md << "\n"
    if only_miss
      md << "**Verdict: the fast path is identical.** Every extra instruction is off it: the two more arguments "
      md << "(`klass`, `flags`, the `GC_HOOK_NEWOBJ_PARAMS` of the patch) for `newobj_cache_miss`, and the "
      md << "single-Ractor sample check with its call to `sampling_take`; differing `nop` padding is alignment.\n\n"
    else
      differ = added.reject { |i| b[i] =~ padding || in_miss.(b, i) }.map { "`#{b[_1]}`" } +
               removed.reject { |i| a[i] =~ padding || in_miss.(a, i) }.map { "only in the reference: `#{a[_1]}`" }
      md << "**Verdict: on the fast path the listings differ by #{differ.size} line(s): #{differ.join(", ")}**; "
      md << "everything else that differs is off it. Read the diff below.\n\n"
    end
    md << "```diff\n#{norm}```\n\n"
  end
  md << "## Exact (registers as allocated)\n\n"
  md << "The compiler picked different callee-saved registers for the same values (the miss call has two more "
  md << "arguments to keep live); instruction for instruction the code is otherwise the same.\n\n" unless exact.empty?
  md << (exact.empty? ? "**Identical.**\n" : "```diff\n#{exact}```\n")
  md << "\n## Against Ruby's librubygc.default.so (registers normalised)\n\n"
  md << (stock_diff.empty? ? "**Identical.**\n" : "```diff\n#{stock_diff}```\n")
  md << "\n## Full listing (sampling)\n\n```\n#{b.join("\n")}\n```\n"
  File.write(File.join(OUT, "fastpath.md"), md)
  log "fastpath: #{a.size} vs #{b.size} instructions (#{fast.(a)} vs #{fast.(b)} on the fast path); " \
      "#{added.size}+/#{removed.size}- after normalisation; #{only_miss ? "fast path identical" : "fast path differs"}"
end
