# With Ractors present the walk stops them at the VM barrier, gives no
# unshareable object to Ruby code (hop[:object] is nil), and the program
# and the collector go on after.
require_relative "helper"

class TestRetentionRactors < Minitest::Test
  def test_with_ractors
    out, err, status = run_ruby(<<~'RUBY')
      Warning[:experimental] = false
      S = ObjectSpace::AllocationSampler
      S.start(interval: 256, mode: :fixed)
      $kept = Array.new(100) { |i| "main #{i}" }
      rs = Array.new(2) do
        Ractor.new do
          a = []
          20_000.times { |i| a << "ractor #{i}"; a.shift if a.size > 100 }
          a.size
        end
      end
      3.times do
        r = S.retention
        raise "no samples" if r[:samples].empty?
        r[:samples].each do |s|
          s.retention_path.each do |h|
            o = h[:object]
            raise "an unshareable object handed out: #{h[:label]}" if o && !Ractor.shareable?(o)
          end
        end
        S.pprof(view: :retention)
      end
      rs.each { |r| r.respond_to?(:value) ? r.value : r.take }
      GC.verify_internal_consistency
      puts "ok #{S.retention[:samples].size}"
    RUBY
    assert status.success?, "#{out}\n#{err}"
    assert_match(/\Aok \d+/, out)
  end
end
