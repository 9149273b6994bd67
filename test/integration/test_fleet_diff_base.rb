# go tool pprof -diff_base of two scrapes of /debug/pprof/allocs shows the
# site that grew between them, by what it allocated in between: requests
# to /b only, so Object#make_b grows by exactly its share of the second
# scrape less the first (read field by field), and Object#make_a, which
# allocated before both scrapes, does not show.
require_relative "helper"
require "tmpdir"

class TestFleetDiffBase < Minitest::Test
  include RackServerHelper

  # alloc_space of the samples with a frame of method in a scrape.
  def alloc_space_under(bytes, method)
    p = FleetHelper::Reader.read(bytes)
    i = sample_type_index(p, "alloc_space")
    p.samples.select { |s| stack_of(p, s).any? { |f, _, _| f == method } }.sum { |s| s.values[i] }
  end

  def test_diff_base_shows_the_site_that_grew
    Dir.mktmpdir do |dir|
      with_rack_server do |port|
        %w[/a /b /a /b].each { |p| assert_equal "200", http_get(port, p).code }
        before = scrape(port, "/debug/pprof/allocs")
        5.times { assert_equal "200", http_get(port, "/b").code }
        after = scrape(port, "/debug/pprof/allocs")
        File.binwrite("#{dir}/before.pb.gz", before)
        File.binwrite("#{dir}/after.pb.gz", after)

        top = pprof("-top", "-cum", "-nodecount=1000", "-sample_index=alloc_space", "-unit=B",
                    "-diff_base", "#{dir}/before.pb.gz", "#{dir}/after.pb.gz")
        cum = top.lines.to_h do |line|
          cols = line.split(/\s+/, 7)
          [cols[6].to_s.strip, cols[4].to_s.delete_suffix("B")]
        end
        grew = alloc_space_under(after, "Object#make_b") - alloc_space_under(before, "Object#make_b")
        assert_operator grew, :>, 0, "/b allocated between the scrapes"
        assert_equal grew.to_s, cum["Object#make_b"], "make_b's growth in the diff:\n#{top}"
        assert_includes [nil, "0"], cum["Object#make_a"], "make_a did not grow:\n#{top}"
      end
    end
  end
end
