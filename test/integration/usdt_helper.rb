# The otel_memory probes (gc/sampling/usdt.h) as tools outside the process
# see them: the library under test's path, and its USDT notes as
# `readelf -n` prints them.
module UsdtHelper
  # The library this process loaded (test/run's RUBY_GC_LIBRARY: the child
  # Rubies load the same file).
  def usdt_library
    name = "librubygc.#{SamplingTestHelper::GC_LIBRARY}.so"
    path = File.readlines("/proc/self/maps").map { |l| l.split[5] }.compact.find { |p| File.basename(p) == name }
    path or flunk("#{name} is not mapped into this process")
  end

  # Whether this machine's compiler has <sys/sdt.h> (Debian's
  # systemtap-sdt-dev): then the build must have put the probes in.
  def usdt_header?
    cc = RbConfig::CONFIG["CC"].split.first
    _, status = Open3.capture2e(cc, "-fsyntax-only", "-x", "c", "-", stdin_data: "#include <sys/sdt.h>\n")
    status.success?
  end

  # The library's stapsdt notes: { "provider:name" => { semaphore:, arguments: } }.
  def usdt_notes(lib)
    out, status = Open3.capture2e("readelf", "-n", lib)
    assert status.success?, "readelf -n #{lib}: #{out}"
    notes = {}
    out.scan(/Provider: (\S+)\s+Name: (\S+)\s+Location: \S+, Base: \S+, Semaphore: (0x\h+)\s+Arguments: ([^\n]*)/) do |prov, name, sem, args|
      notes["#{prov}:#{name}"] = { semaphore: Integer(sem), arguments: args.strip }
    end
    notes
  end

  # Skips unless the library carries the probes (built without <sys/sdt.h>).
  def skip_unless_probes(lib)
    return if usdt_notes(lib).key?("otel_memory:alloc")
    skip "#{File.basename(lib)} was built without <sys/sdt.h> (tools/install-deps installs systemtap-sdt-dev)"
  end
end

class Minitest::Test
  include UsdtHelper
end
